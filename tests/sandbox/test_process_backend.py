"""Issue 37, the `process` backend's own: sessions with no container engine, from the root file systems that
`bugforge images rootfs` exports (conftest's rootfs). Real bubblewrap, git and pytest; the root file system comes
from the factory-made calc example (the engine is used only to export it and to compare with the instance image
and the Docker grader's verdicts). What every backend shares (the shell, confined files, a session's diff graded,
run-agent and eval with no engine) is test_backends.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bugforge import sandbox
from bugforge.engine import client
from bugforge.errors import BugforgeError
from bugforge.sandbox.grader import grade_patch
from bugforge.sandbox.process import NotGraded, ProcessRuntime
from bugforge.sandbox.runtime import NoSession, Runtime, SandboxConfig

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/bwrap"), reason="needs bubblewrap (Debian's bubblewrap)")


@pytest.fixture
def runtime(rootfs, tmp_path):
    rt = ProcessRuntime(SandboxConfig(command_timeout=20, mem_limit="1g"), rootfs=rootfs, work_dir=tmp_path)
    yield rt
    rt.shutdown()
    assert list(tmp_path.glob("bugforge-process.*")) == []  # its folder went with it


def alive(pid: int) -> bool:
    try:
        return "Z" not in open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False


def test_rootfs_export_is_complete_and_resumable(cli, calc_runs, rootfs, instances):
    manifest = json.loads((rootfs / "manifest.json").read_text())
    env = instances[0]["env_image"]
    entry = manifest["images"][env]
    tree = rootfs / entry["dir"]
    assert (tree / "testbed" / ".git").is_dir() and (tree / "opt" / "bugforge").is_dir()
    assert any(e.startswith("PATH=") for e in entry["env"])
    assert not list(rootfs.glob("*.partial"))
    assert [r["instance_id"] for r in map(json.loads, (rootfs / "instances.jsonl").read_text().splitlines())] == [
        r["instance_id"] for r in instances
    ]
    r = cli("images", "rootfs", str(calc_runs / "calc"), "--out", str(rootfs))  # complete: skipped
    assert r.returncode == 0 and "0 exported, 1 already there" in r.stdout, r.stdout + r.stderr
    r = cli("images", "rootfs", str(calc_runs / "nothing-here"))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and r.stderr.startswith("error: "), r.stderr
    assert client().containers.list(all=True, filters={"label": "bugforge=rootfs"}) == []


def test_session_has_the_instance_images_commit_and_objects(runtime, instances):
    inst = instances[0]
    s = runtime.create(instance_id=inst["instance_id"])
    assert (s.unconfined, s.base_commit) == (False, inst["base_commit"])
    # the same commit and the same objects as the instance image: the fix is not in the session's .git
    objects = "git cat-file --batch-all-objects --batch-check | sort"
    image = client().containers.run(inst["image"], ["bash", "-c", objects], network_mode="none", remove=True)
    assert s.run(objects).output == image.decode()


def test_session_is_confined(runtime, instances):
    a = runtime.create(instance_id=instances[0]["instance_id"])
    b = runtime.create(image=instances[0]["image"])  # an instance's image names the same instance
    assert b.base_commit == instances[0]["base_commit"]
    r = a.run("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)\"")
    assert r.exit_code != 0 and "unreachable" in r.output.lower(), r.output
    for target in ("/usr/evil", "/evil", "/etc/evil", "/opt/bugforge/evil"):
        r = a.run(f"touch {target}")
        assert r.exit_code != 0 and "Read-only file system" in r.output, (target, r.output)
    assert a.run("touch /tmp/mine ~/mine /testbed/mine && echo ok").output == "ok\n"
    r = a.run("python3 -c \"x = bytearray(2 * 1024**3); print('allocated')\"")  # past mem_limit (RLIMIT_AS)
    assert "MemoryError" in r.output and r.exit_code != 0, r.output
    assert a.run("ls /proc | grep -c '^[0-9]'").output.strip() in {str(n) for n in range(2, 8)}  # its own pids
    a.run("mkdir -p /testbed/ro && chmod 500 /testbed/ro")  # close() must cope with what an agent leaves
    # the other session sees none of it: its own /testbed, /tmp and HOME
    assert b.run("ls /tmp/mine ~/mine /testbed/mine 2>&1 | grep -c 'No such file'").output == "3\n"
    folder, shell = a.jail.home, a.shell.stream.proc.pid
    runtime.close(a.id)
    assert not folder.exists() and not alive(shell)
    with pytest.raises(NoSession):
        runtime.get(a.id)
    assert b.run("echo b alive").output == "b alive\n"


def diffs_for(runtime, inst: dict) -> dict[str, str]:
    """Diffs of each kind, made in a session: the gold fix, no fix (a comment appended to the buggy
    module, so the tests still fail), and none at all."""
    s = runtime.create(instance_id=inst["instance_id"])
    s.write("fix.diff", inst["patch"])
    assert s.run("git apply fix.diff && rm fix.diff").exit_code == 0
    gold = s.diff()
    s.run(f"git checkout -q -- . && echo '# looked at it' >> {inst['files'][0]}")
    unfixed = s.diff()
    runtime.close(s.id)
    return {"gold": gold, "unfixed": unfixed, "empty": ""}


def verdict(g) -> tuple:
    return g.status, g.resolved, g.FAIL_TO_PASS, g.PASS_TO_PASS, bool(g.tamper)


def test_grading_equals_the_docker_fresh_grader(runtime, instances):
    """Gold resolves, an unfixed diff does not, and every verdict (status, per-test sets, tampering)
    equals the Docker fresh grader's for the same diff on the same instance. The first instance: the
    other's gold, unfixed and empty diffs are graded under each backend by test_backends.py (statuses;
    gold's per-test sets in its agent run)."""
    inst = instances[0]
    for kind, diff in diffs_for(runtime, inst).items():
        mine, docker = runtime.grade(inst["instance_id"], diff), grade_patch(inst, diff)
        assert verdict(mine) == verdict(docker), (inst["instance_id"], kind, mine.log, docker.log)
        assert mine.resolved == (kind == "gold"), (inst["instance_id"], kind, mine.status)
    assert list(runtime._folder().glob("grade-*")) == []  # each grading's copy is gone


# out of band (processes left running, the report file), in-process forging, start-up files, changed tests
RED = (
    "report rewritten by a double-forked daemon",
    "round2: exec keeps the pid and speaks on the channel",
    "pytest reports patched from library code",
    "exit 0 at import",
    "conftest forcing passes",
    "sitecustomize",
)


def test_red_team_patterns_are_not_resolved(runtime, instances):
    from bugforge.sandbox.redteam import patch_for

    inst = instances[0]
    for name in RED:
        patch = patch_for(inst, name)
        mine, docker = runtime.grade(inst, patch, timeout=60), grade_patch(inst, patch, timeout=60)
        assert not mine.resolved and mine.status == docker.status, (name, mine.status, docker.status, mine.log)


CAPS = """import os
def eff():
    return int(next(x for x in open("/proc/self/status") if x.startswith("CapEff")).split()[1], 16)
print(os.getuid(), eff(), flush=True)
if os.fork() == 0:
    os.setgroups([]); os.setgid(1000); os.setuid(1000); print(os.getuid(), eff(), flush=True); os._exit(0)
os.wait()
"""


def test_grading_jail_is_root_with_six_capabilities_and_the_tests_user_has_none(runtime, instances):
    from bugforge.sandbox.confine import GRADING_CAPS
    from bugforge.sandbox.trees import populate

    rootfs, marker = runtime.grader._tree(instances[0])
    jail = runtime.grader._jail(rootfs, marker, runtime._folder() / "caps", "/home/agent")
    populate(jail, "/testbed")
    (jail.home / "tests-home").mkdir()
    r = jail.run(["python3", "-c", CAPS])
    want = sum(1 << n for n in (0, 1, 3, 5, 6, 7))  # CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID
    assert len(GRADING_CAPS) == 6 and r.stdout.decode().split() == ["0", str(want), "1000", "0"], r


def test_grading_refuses_in_one_line_where_it_cannot_keep_the_guarantees(rootfs, instances, tmp_path):
    rt = ProcessRuntime(rootfs=rootfs, bwrap="/nonexistent/bwrap", work_dir=tmp_path, unconfined=True)
    try:
        s = rt.create(instance_id=instances[0]["instance_id"])
        with pytest.raises(NotGraded, match="unconfined process sessions cannot be graded") as e:
            s.submit()
        assert "\n" not in e.value.line()
    finally:
        rt.shutdown()
    # not root: a user namespace where this process is uid 1000 (bubblewrap would map that one user only)
    code = (
        "import sys; from bugforge.sandbox.process import ProcessRuntime, NotGraded\n"
        f"rt = ProcessRuntime(rootfs={str(rootfs)!r}, work_dir={str(tmp_path)!r})\n"
        f"try:\n    rt.grade({instances[0]['instance_id']!r}, 'x')\n"
        "except NotGraded as e:\n    print(e.line())"
    )
    r = subprocess.run(
        ["unshare", "--user", "--map-user=1000", "--map-group=1000", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.stdout.startswith("error: the process backend grades only as root") and r.stdout.count("\n") == 1, (
        r.stdout + r.stderr
    )
    # there, run-agent still runs the episodes (sessions need no second user) and says they are not graded
    preds = tmp_path / "preds.jsonl"
    r = subprocess.run(
        ["unshare", "--user", "--map-user=1000", "--map-group=1000", "bugforge", "run-agent", "--backend", "process",
         "--rootfs", str(rootfs), "--dataset", str(rootfs / "instances.jsonl"), "--model", "oracle",
         "--out", str(preds), "--workers", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = " ".join(r.stdout.split())
    assert r.returncode == 0 and "episodes are not graded here: the process backend grades only as root" in out, out
    assert len(preds.read_text().splitlines()) == len(instances) and "graded" not in out.split("episodes (")[-1]


def test_refuses_without_bubblewrap_unless_unconfined(rootfs, instances, tmp_path):
    rt = ProcessRuntime(rootfs=rootfs, bwrap="/nonexistent/bwrap", work_dir=tmp_path)
    with pytest.raises(BugforgeError, match="bubblewrap .* is not installed") as e:
        rt.create(instance_id=instances[0]["instance_id"])
    assert "unconfined=True" in e.value.line() and "\n" not in e.value.line()
    rt = ProcessRuntime(rootfs=rootfs, bwrap="/nonexistent/bwrap", work_dir=tmp_path, unconfined=True)
    try:
        s = rt.create(instance_id=instances[0]["instance_id"])
        assert s.unconfined and s.workdir == str(s.jail.home / "testbed")
        assert s.run("pwd").output == s.workdir + "\n"
        assert s.run("git rev-parse HEAD").output.strip() == instances[0]["base_commit"]
        s.write("n.txt", "n\n")
        assert "+n" in s.diff()
        with pytest.raises(BugforgeError, match="outside the workspace"):
            s.read("/etc/passwd")
    finally:
        rt.shutdown()


def test_connect_selects_the_backend(rootfs, tmp_path):
    assert isinstance(sandbox.connect(backend="process", rootfs=rootfs, work_dir=tmp_path), ProcessRuntime)
    assert isinstance(sandbox.connect(), Runtime)  # the default stays docker
    with pytest.raises(BugforgeError, match="unknown sandbox backend"):
        sandbox.connect(backend="podman-ish")
    with pytest.raises(BugforgeError, match="needs rootfs"):
        sandbox.connect(backend="process")
    with pytest.raises(BugforgeError, match="not a rootfs folder"):
        sandbox.connect(backend="process", rootfs=tmp_path)


def test_unknown_images_and_instances_are_one_line_errors(runtime):
    for kw, words in (
        ({"instance_id": "nope"}, "unknown instance"),
        ({"image": "bugforge/env.other:x"}, "neither an environment"),
        ({}, "needs an image"),
    ):
        with pytest.raises(BugforgeError, match=words):
            runtime.create(**kw)


def test_run_agent_without_rootfs_is_a_one_line_error(cli, rootfs):
    r = cli("run-agent", "--dataset", str(rootfs / "instances.jsonl"), "--model", "oracle", "--backend", "process")
    assert r.returncode == 1 and r.stderr.startswith("error: the process backend needs rootfs=DIR"), r.stderr
