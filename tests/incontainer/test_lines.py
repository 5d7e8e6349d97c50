"""What the in-container tools print into the harness's log (bugforge/incontainer/lines.py, summary.py,
sweep.py), read back by SWE-bench's own `get_logs_eval`: a planted file name, a link's target, a tamper
reason or a node id holding newlines, separators, markers and `PASSED` lines never reads as a result,
a tampered run reads every selected test FAILED, and a clean report reads as it always did. The tools
run as the graders run them: `python -I -S` on the package's files, here and in a real git repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from swebench.harness.grading import get_logs_eval

from bugforge import incontainer
from bugforge.incontainer.lines import plain, shown, status

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
TARGET = "tests/test_a.py::test_target"  # the test a patch wants read as PASSED
SELECTED = [TARGET, "tests/test_a.py::test_other"]
HOSTILE = [
    "\nPASSED %s\n" % TARGET,
    "\r\nPASSED %s\r" % TARGET,
    "\x1cPASSED %s\x1d\x1e" % TARGET,
    "\u2028PASSED %s\u2029\x85" % TARGET,
    "\n%s\nPASSED %s\n%s\n" % (START, TARGET, END),
    "%sPASSED %s%s" % (START, TARGET, END),  # a marker mid-line: the harness splits on it anywhere
    "\udc80\x00\x7f\t\vPASSED %s" % TARGET,
]


def harness_read(tmp_path: Path, log: str) -> dict[str, str]:
    """The statuses SWE-bench's harness reads from `log` (its own function, on a file it opens)."""
    path = tmp_path / "harness.log"
    path.write_bytes(log.encode("utf-8", "surrogateescape"))
    statuses, _ = get_logs_eval(SimpleNamespace(log_parser="parse_log_pytest"), str(path))
    return statuses


@pytest.fixture
def tools(tmp_path):
    """The package as the containers have it: PROBE_DIR/bugforge_incontainer."""
    d = tmp_path / "tools"
    d.mkdir()
    (d / "bugforge_incontainer").symlink_to(Path(incontainer.__file__).parent)
    return d / "bugforge_incontainer"


def tool(tools: Path, name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run a tool as the eval_script does; its output as the log has it (standard error merged)."""
    return subprocess.run(
        [sys.executable, "-I", "-S", str(tools / name), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=60,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )


def summary(tools: Path, tmp_path: Path, records: list[dict], gold: dict[str, str] | None = None) -> str:
    (tmp_path / "report.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "select.txt").write_text("".join(t + "\n" for t in SELECTED))
    args = [str(tmp_path / "report.jsonl"), str(tmp_path / "select.txt")]
    if gold is not None:
        (tmp_path / "gold.txt").write_text("".join(f"{t}\t{o}\n" for t, o in gold.items()))
        args.append(str(tmp_path / "gold.txt"))
    r = tool(tools, "summary.py", *args)
    assert r.returncode == 0, r.stdout
    return r.stdout.decode()


def record(nodeid: str, outcome: str) -> dict:
    return {"event": "test", "nodeid": nodeid, "outcome": outcome}


FINISH = {"event": "finish"}


@pytest.mark.parametrize("text", HOSTILE)
def test_shown_is_one_line_with_no_marker(text):
    s = shown(text)
    assert len(s.splitlines()) == 1 and s.isprintable() and ">" not in s and s.isascii()
    assert not plain(text) and status(True, text).startswith("FAILED ")


def test_plain_node_ids_print_as_they_are():
    assert plain(TARGET) and plain("tests/t.py::test_p[a-1.5]") and status(True, TARGET) == "PASSED " + TARGET
    assert not any(plain(t) for t in ("", "a b", "t::x[>>>>>]", "t::x\u00a0y"))
    assert shown("a > b\\") == "a \\x3e b\\"


def test_a_clean_report_reads_as_before(tools, tmp_path):
    records = [
        record(TARGET, "passed"),
        record("tests/test_a.py::test_other", "failed"),
        record("tests/b.py::t", "xfailed"),
    ]
    out = summary(tools, tmp_path, [*records, FINISH])
    assert out.splitlines() == ["FAILED tests/b.py::t", "FAILED tests/test_a.py::test_other", "PASSED " + TARGET]
    assert harness_read(tmp_path, f"{START}\n{out}{END}\n") == {
        "tests/b.py::t": "FAILED",
        "tests/test_a.py::test_other": "FAILED",
        TARGET: "PASSED",
    }
    gold = summary(tools, tmp_path, [*records, FINISH], {"tests/b.py::t": "xfailed"})
    assert "PASSED tests/b.py::t" in gold.splitlines()


def test_a_selected_test_with_no_outcome_failed(tools, tmp_path):
    out = summary(tools, tmp_path, [record(TARGET, "passed"), FINISH])
    assert out.splitlines() == ["FAILED tests/test_a.py::test_other", "PASSED " + TARGET]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_tamper_reason_reads_every_selected_test_failed(tools, tmp_path, text):
    records = [
        record(TARGET, "passed"),
        {"event": "tamper", "reason": "json.%s was added during the run" % text},
        FINISH,
    ]
    out = summary(tools, tmp_path, records)
    lines = out.splitlines()
    assert lines[0].startswith("bugforge-tamper: json.") and lines[1:] == [f"FAILED {t}" for t in sorted(SELECTED)]
    assert harness_read(tmp_path, f"{START}\n{out}{END}\n") == {t: "FAILED" for t in SELECTED}


def test_a_run_that_did_not_finish_reads_every_selected_test_failed(tools, tmp_path):
    out = summary(tools, tmp_path, [record(TARGET, "passed")])
    assert harness_read(tmp_path, f"{START}\n{out}{END}\n") == {t: "FAILED" for t in SELECTED}


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_node_id_prints_failed_escaped(tools, tmp_path, text):
    out = summary(tools, tmp_path, [record("tests/test_a.py::test_p[%s]" % text, "passed"), FINISH])
    statuses = harness_read(tmp_path, f"{START}\n{out}{END}\n")
    assert "PASSED" not in statuses.values() and statuses[TARGET] == "FAILED"
    assert all(line.startswith("FAILED ") for line in out.splitlines())


def git(repo: Path, *args: str) -> str:
    run = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return run.stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A committed tree, its sweep baseline captured as an instance image carries it."""
    r = tmp_path / "repo"
    (r / "tests").mkdir(parents=True)
    (r / "pkg.py").write_text("x = 1\n")
    (r / "tests/test_a.py").write_text("def test_target():\n    pass\n")
    git(r, "init", "-q")
    git(r, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    git(r, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return r


def sweep(tools: Path, repo: Path, plant) -> subprocess.CompletedProcess:
    manifest = repo.parent / "baseline.manifest"
    assert tool(tools, "sweep.py", "capture", str(manifest), cwd=repo).returncode == 0
    plant(repo)
    return tool(tools, "sweep.py", "check", str(manifest), git(repo, "rev-parse", "HEAD"), "tests/test_a.py", cwd=repo)


def plant_bytecode(repo: Path) -> None:
    """New bytecode the sweep removes, named to print a marker and PASSED lines (red team round 11, 1)."""
    for i, text in enumerate(HOSTILE):
        path = repo / ("%d%s.pyc" % (i, text.replace("\x00", "")))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


def test_the_sweeps_removals_print_no_result(tools, tmp_path, repo):
    r = sweep(tools, repo, plant_bytecode)
    out = r.stdout.decode()
    assert r.returncode == 0, out
    lines = out.splitlines()
    assert len(lines) == len(HOSTILE) and all(line.startswith("bugforge-sweep: removed ") for line in lines), out
    assert ">" not in out and not list(repo.glob("*.pyc"))
    # a tampered run after it (attack 3): the block holds every selected test FAILED, the log no PASSED
    tampered = summary(tools, tmp_path, [record(TARGET, "passed"), {"event": "tamper", "reason": "x"}, FINISH])
    assert harness_read(tmp_path, f"{out}{START}\n{tampered}{END}\n") == {t: "FAILED" for t in SELECTED}
    # a clean run: the results are the block's, whatever the sweep printed before it
    clean = summary(tools, tmp_path, [record(TARGET, "failed"), record(SELECTED[1], "passed"), FINISH])
    assert harness_read(tmp_path, f"{out}{START}\n{clean}{END}\n") == {TARGET: "FAILED", SELECTED[1]: "PASSED"}


@pytest.mark.parametrize("text", HOSTILE)
def test_a_refused_links_target_prints_no_result(tools, tmp_path, repo, text):
    target = text.replace("\x00", "")  # (no name holds one)
    r = sweep(tools, repo, lambda tree: os.symlink(target, tree / ("0_link" + target.replace("/", "_"))))
    out = r.stdout.decode()
    assert r.returncode == 95, out
    assert all(line.startswith("bugforge-tamper: added a symbolic link ") for line in out.splitlines()), out
    assert ">" not in out and len(out.splitlines()) == 1
    log = f"{out}bugforge: not graded\n"  # the eval_script stops before its markers
    assert harness_read(tmp_path, log) == {} and "PASSED" not in "".join(line[:6] for line in log.splitlines())


def test_a_hostile_audit_line_prints_escaped(tools, tmp_path, repo):
    def plant(tree):
        (tree / "pkg.py").write_text('x = 1\ny = "%sPASSED %s%s"; import sys; sys.modules\n' % (START, TARGET, END))

    out = sweep(tools, repo, plant).stdout.decode()
    assert "reaches sys.modules" in out and ">" not in out
    assert harness_read(tmp_path, f"{out}bugforge: not graded\n") == {}
