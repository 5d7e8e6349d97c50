"""Print a probe report as SWE-bench's pytest log parser reads it: one `STATUS node-id` line per test.

    python -I -S summary.py REPORT SELECT [GOLD]

SELECT is the run's selection (a node id a line: the eval_script's select.txt). Only a test that
passed prints PASSED (or one whose outcome is the one GOLD, a file of `NODE ID<TAB>OUTCOME` lines,
records for the gold patch at export); any other outcome prints FAILED, since the harness would count
XFAIL as passing and a patch can make a failing test end xfailed at run time, and so does a selected
test with no outcome. The exported eval_script prints this between the harness's markers instead of
pytest's console, so nothing a test prints can pose as a result. A report that records tampering, or
has no end-of-run record, prints the reasons (`bugforge-tamper: ...`) and every selected test FAILED,
as the graders do: the marked block always holds results, so the harness never falls back to reading
the whole log. Every line goes through lines.py: a reason is escaped after its fixed prefix, and a node
id that is not plain (whitespace, a control, a marker) prints only FAILED, escaped. Each line is one
write: the harness reads standard output and error as one stream, and a line split across two writes
could take the shell's trace of the next command into its middle (a gold patch graded unresolved).
Standard library only, Python 3.9."""

import json
import os
import sys

if __package__:  # imported (the host's tests)
    from .lines import TAMPERED, guarded, say, shown, status
else:  # run as a script: -I puts no script's directory on sys.path (as launch.py)
    sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    from bugforge_incontainer.lines import TAMPERED, guarded, say, shown, status  # noqa: E402


def _lines(path, split=str.splitlines):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return split(f.read())
    except OSError:
        return []


def _rows(path):
    """A file of one row a line, as the eval_script's heredoc writes it (a node id holds no newline)."""
    return [line for line in _lines(path, lambda text: text.split("\n")) if line]


def _gold(path):
    out = {}
    for line in _rows(path) if path else []:
        nodeid, _, outcome = line.rpartition("\t")
        if nodeid:
            out[nodeid] = outcome
    return out


def _report(path):
    """(outcomes, tamper reasons, whether the run finished) of a report."""
    outcomes, tamper, finished = {}, [], False
    for line in _lines(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if not isinstance(r, dict):
            continue
        if r.get("event") == "test" and isinstance(r.get("nodeid"), str):
            outcomes[r["nodeid"]] = r.get("outcome")
        elif r.get("event") == "tamper":
            tamper.append(str(r.get("reason", "")))
        elif r.get("event") == "finish":
            finished = True
    return outcomes, tamper, finished


def main(path, select_path, gold_path=None):
    gold = _gold(gold_path)
    selected = _rows(select_path)
    outcomes, tamper, finished = _report(path)
    if not finished:  # the process ended before the probe's checks ran: as the graders, no result
        tamper.append("the test run ended before pytest's session finished")
    for reason in tamper:
        say(TAMPERED + shown(reason))
    if tamper:  # every selected test failed: a block with no result would send the harness to the whole log
        for nodeid in sorted(set(selected)):
            say(status(False, nodeid))
        return 0
    for nodeid in sorted(set(outcomes) | set(selected)):
        outcome = outcomes.get(nodeid)
        say(status(outcome is not None and (outcome == "passed" or gold.get(nodeid) == outcome), nodeid))
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        say(TAMPERED + "usage: summary.py REPORT SELECT [GOLD]", 2)
        sys.exit(2)
    sys.exit(guarded(main, TAMPERED, *sys.argv[1:]))
