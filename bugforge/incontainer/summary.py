"""Print a probe report as SWE-bench's pytest log parser reads it: one `STATUS node-id` line per test.

    python -I -S summary.py REPORT [GOLD]

Only a test that passed prints PASSED (or one whose outcome is the one GOLD, a file of `NODE ID<TAB>
OUTCOME` lines, records for the gold patch at export); any other outcome prints FAILED, since the
harness would count XFAIL as passing and a patch can make a failing test end xfailed at run time.
The exported eval_script prints this between the harness's markers instead of pytest's console, so
nothing a test prints can pose as a result. A report that records tampering, or has no end-of-run
record, prints the reasons (`bugforge-tamper: ...`) and no result, as the graders do. Each line is one
write: the harness reads standard output and error as one stream, and a line split across two writes
could take the shell's trace of the next command into its middle (a gold patch graded unresolved).
Standard library only, Python 3.9."""

import json
import os
import sys


def _line(text):
    os.write(1, (text + "\n").encode("utf-8", "replace"))


def _gold(path):
    out = {}
    if path:
        with open(path, encoding="utf-8") as f:
            for line in f:
                nodeid, _, outcome = line.rstrip("\n").rpartition("\t")
                if nodeid:
                    out[nodeid] = outcome
    return out


def main(path, gold_path=None):
    gold = _gold(gold_path)
    outcomes, tamper, finished = {}, [], False
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("event") == "test":
            outcomes[r["nodeid"]] = r["outcome"]
        elif r.get("event") == "tamper":
            tamper.append(r.get("reason", ""))
        elif r.get("event") == "finish":
            finished = True
    if not finished:  # the process ended before the probe's checks ran: as the graders, no result
        tamper.append("the test run ended before pytest's session finished")
    for reason in tamper:
        _line("bugforge-tamper: %s" % reason)
    if not tamper:
        for nodeid, outcome in sorted(outcomes.items()):
            ok = outcome == "passed" or gold.get(nodeid) == outcome
            _line("%s %s" % ("PASSED" if ok else "FAILED", nodeid))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
