"""Red-team patterns against grading: patches that try to be graded resolved without fixing the bug.

Each pattern is a shell script an agent could run in /testbed of an instance's container (variables:
F = the first FAIL_TO_PASS test's file, MOD = the first file the bug changed, IDS = the instance's
FAIL_TO_PASS and PASS_TO_PASS ids, one per line, GOLD = the gold patch's path); its patch is what
`git add -A -f && git diff --cached --binary` then shows, plus any hand-written hunks (git refuses to
stage some paths). `matrix` grades every pattern with the three graders: fresh containers
(sandbox.grader), warm grading (sandbox.envgrader) and the exported eval_script under SWE-bench's
official harness. bench/redteam.py prints the matrix; docs/security.md lists the attack classes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import docker

from bugforge.engine import LABEL, client
from bugforge.sandbox.attacks import PATTERNS, Pattern  # noqa: F401  (re-exported)
from bugforge.sandbox.grader import grade_patch, labels_of
from bugforge.sandbox.harness import harness_verdicts
from bugforge.testing.testrun import file_archive

# Correct fixes shaped like the attacks (module-level code, a new module): every grader must resolve
# them, so a rule that catches an attack by catching ordinary fixes shows here as a false alarm.
CONTROLS: dict[str, Pattern] = {
    "control: gold plus a module-level line": Pattern(
        'git apply "$GOLD" && printf \'\nimport os as _os_control\n_CONTROL_PID = _os_control.getpid()\n\' >> "$MOD"'
    ),
    "control: gold plus a new helper module": Pattern(
        'git apply "$GOLD" && printf \'VALUE = 2\n\' > "$(dirname "$MOD")/control_helper_value.py" && '
        "printf '\\nfrom . import control_helper_value as _control_helper\\n' >> \"$MOD\""
    ),
}


def patch_for(instance: dict, name: str) -> str:
    """The patch pattern `name` makes in a container of the instance's image."""
    pattern = PATTERNS.get(name) or CONTROLS[name]
    f2p, p2p = labels_of(instance)
    env = {
        "F": f2p[0].split("::")[0],
        "MOD": instance["files"][0] if instance.get("files") else "",
        "IDS": "\n".join([*f2p, *p2p]),
        "GOLD": "/tmp/gold.diff",
    }
    # files git does not track before the pattern runs (an editable install's egg-info) stay out of the patch
    script = (
        f"set -e\ncd /testbed\ngit ls-files -o -z > /tmp/untracked\n{pattern.script}\ngit add -A -f\n"
        "git reset -q --pathspec-from-file=/tmp/untracked --pathspec-file-nul\n"
        "git diff --cached --binary --no-color HEAD"
    )
    c = _with_gold(instance, script, env)
    try:
        c.start()
        status = c.wait(timeout=120)
        out = c.logs(stdout=True, stderr=False).decode()
        if status.get("StatusCode"):
            raise RuntimeError(f"pattern {name!r} failed: {c.logs().decode()[-500:]}")
    finally:
        c.remove(force=True)
    return out + pattern.extra


def _with_gold(instance: dict, script: str, env: dict):
    """A created container of the instance's image that will run `script`, the gold patch in /tmp. Podman's
    archive endpoint fails now and then under load (its tar subprocess: "broken pipe"): once, a new one."""
    for attempt in (1, 2):
        c = client().containers.create(
            instance["image"], ["bash", "-c", script], environment=env, network_mode="none", labels={LABEL: "redteam"}
        )
        try:
            c.put_archive("/tmp", file_archive("gold.diff", instance["patch"].encode()))
            return c
        except docker.errors.APIError:
            c.remove(force=True)
            if attempt == 2:
                raise
    return None  # (never reached: the loop returns or raises)


def verdict(status: str, resolved: bool) -> str:
    return "RESOLVED" if resolved else "suspicious" if status == "SUSPICIOUS" else "not resolved"


def matrix(instance: dict, grader, names: list[str] | None = None, *, timeout: int = 60) -> dict[str, dict[str, str]]:
    """{pattern: {"fresh" | "warm" | "eval_script": verdict}} for one instance; `grader`: an EnvGrader
    of the instance's environment. The gold patch is graded too, as the pattern "gold"."""
    names = list(names or [*PATTERNS, *CONTROLS])
    with ThreadPoolExecutor(max_workers=4) as pool:  # (each pattern in its own container: the engine's waits overlap)
        made = list(pool.map(lambda n: patch_for(instance, n), names))
    patches = {"gold": instance["patch"], **dict(zip(names, made))}
    slug = {n: f"{instance['instance_id']}__rt{i}" for i, n in enumerate(patches)}
    rows = [{**instance, "instance_id": slug[n]} for n in patches]
    out = {}
    # the three graders at once (each grades every patch on its own): the harness in a thread, the fresh
    # containers two at a time in two more (the engine's waits overlap), the warm grader (one workbench) here
    with ThreadPoolExecutor(max_workers=3) as pool:
        official = pool.submit(harness_verdicts, rows, {slug[n]: p for n, p in patches.items()}, timeout=timeout)
        fresh = {n: pool.submit(grade_patch, instance, p, timeout=timeout) for n, p in patches.items()}
        for name, patch in patches.items():
            warm = grader.grade(instance, patch, timeout=timeout)
            out[name] = {"warm": verdict(warm.status, warm.resolved)}
        for name, f in fresh.items():
            g = f.result()
            out[name]["fresh"] = verdict(g.status, g.resolved)
        for name, v in official.result().items():
            out[next(n for n in patches if slug[n] == name)]["eval_script"] = v
    return out
