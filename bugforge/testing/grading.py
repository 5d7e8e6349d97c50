"""Grading: pure functions over per-test outcomes. One module, used three times: by the factory (is
this bug valid? which tests are its labels?), by training (reward) and by evaluation (resolved?).

The rules are SWE-bench's (pass_and_fail): a FAIL_TO_PASS test succeeds when it passed (or xfailed);
a PASS_TO_PASS test succeeds when it passed, xfailed or was skipped; a missing test has failed.
Resolved (FULL) = every FAIL_TO_PASS and every PASS_TO_PASS test succeeded."""

from __future__ import annotations

from dataclasses import dataclass, field

F2P_OK = ("passed", "xfailed")
P2P_OK = ("passed", "xfailed", "skipped")
FULL, PARTIAL, NO = "RESOLVED_FULL", "RESOLVED_PARTIAL", "RESOLVED_NO"


def usable(test_id: str) -> bool:
    """A test id SWE-bench's log parser reads back whole (it splits summary lines on whitespace)."""
    return not any(c.isspace() for c in test_id)


def labels(baseline_passing: set[str], outcomes: dict[str, str], ran: set[str]) -> tuple[list[str], list[str]]:
    """FAIL_TO_PASS and PASS_TO_PASS of a bug. `baseline_passing`: tests that pass (never flaky) at
    the base commit; `outcomes`: the run with the bug; `ran`: the tests that run covered (tests not
    in `ran` could not see the change and keep their baseline outcome)."""
    f2p, p2p = [], []
    for t in sorted(baseline_passing):
        if not usable(t):
            continue
        if t in ran and outcomes.get(t, "missing") not in F2P_OK:
            f2p.append(t)
        elif t not in ran or outcomes.get(t) == "passed":
            p2p.append(t)
    return f2p, p2p


@dataclass
class Grade:
    resolved: bool
    status: str
    """RESOLVED_FULL | RESOLVED_PARTIAL | RESOLVED_NO"""
    FAIL_TO_PASS: dict[str, list[str]] = field(default_factory=dict)
    """{"success": [...], "failure": [...]}"""
    PASS_TO_PASS: dict[str, list[str]] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)

    @property
    def f2p_fraction(self) -> float:
        n = len(self.FAIL_TO_PASS["success"]) + len(self.FAIL_TO_PASS["failure"])
        return len(self.FAIL_TO_PASS["success"]) / n if n else 1.0

    @property
    def p2p_ok(self) -> bool:
        return not self.PASS_TO_PASS["failure"]


def grade(f2p: list[str], p2p: list[str], outcomes: dict[str, str]) -> Grade:
    """Grade a run's per-test outcomes against an instance's labels."""
    f = {
        "success": [t for t in f2p if outcomes.get(t) in F2P_OK],
        "failure": [t for t in f2p if outcomes.get(t) not in F2P_OK],
    }
    p = {
        "success": [t for t in p2p if outcomes.get(t) in P2P_OK],
        "failure": [t for t in p2p if outcomes.get(t) not in P2P_OK],
    }
    f_rate = len(f["success"]) / len(f2p) if f2p else 1.0
    p_rate = len(p["success"]) / len(p2p) if p2p else 1.0
    if f_rate == 1 and p_rate == 1:
        status = FULL
    elif f_rate > 0 and p_rate == 1:
        status = PARTIAL
    else:
        status = NO
    return Grade(status == FULL, status, f, p, {t: outcomes.get(t, "missing") for t in (*f2p, *p2p)})
