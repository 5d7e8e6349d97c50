"""Harbor's reward for an exported bugforge task, computed inside the task's container.

    python -I -S reward.py EVAL_LOG LABELS_JSON REPORT_JSON

Reads the log of the row's eval_script and the task's FAIL_TO_PASS / PASS_TO_PASS labels; prints 1
when the eval script reached its end marker, reported no tampering, and every FAIL_TO_PASS and
PASS_TO_PASS test passed (the eval script prints PASSED only for a test that passed, or had the gold
patch's outcome: bugforge.testing.grading), else 0; writes the per-test grading to REPORT_JSON. Standard library only,
Python 3.9."""

import json
import sys

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
TAMPER = "bugforge-tamper: "
F2P_OK = P2P_OK = ("PASSED",)


def parse(log):
    """(per-test status, tamper reasons, whether the summary was complete)"""
    lines = log.splitlines()
    tamper = [line.split(TAMPER, 1)[1].strip() for line in lines if TAMPER in line]
    if START not in lines or END not in lines:
        return {}, tamper or ["the eval script did not run to its end marker"], False
    statuses = {}
    for line in lines[lines.index(START) + 1 : lines.index(END)]:
        status, _, nodeid = line.partition(" ")
        if nodeid:
            statuses[nodeid] = status
    return statuses, tamper, True


def main(log_path, labels_path, report_path):
    with open(log_path, encoding="utf-8", errors="replace") as f:
        statuses, tamper, complete = parse(f.read())
    with open(labels_path, encoding="utf-8") as f:
        labels = json.load(f)
    report = {"instance_id": labels["instance_id"], "tamper": tamper, "complete": complete}
    ok = complete and not tamper
    for key, good in (("FAIL_TO_PASS", F2P_OK), ("PASS_TO_PASS", P2P_OK)):
        tests = labels[key]
        report[key] = {
            "success": [t for t in tests if statuses.get(t) in good],
            "failure": [t for t in tests if statuses.get(t) not in good],
        }
        ok = ok and not report[key]["failure"]
    report["resolved"] = ok
    with open(report_path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
    print(1 if ok else 0)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
