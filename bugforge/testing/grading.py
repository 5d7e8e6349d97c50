"""Grading: pure functions over per-test outcomes. One module, used three times: by the factory (is
this bug valid? which tests are its labels?), by training (reward) and by evaluation (resolved?).

The rules are SWE-bench's (pass_and_fail) with one change: a FAIL_TO_PASS or PASS_TO_PASS test
succeeds only when it passed, unless the gold patch gave it the same other outcome at export (`gold`:
test -> outcome, recorded per test); xfailed and skipped are not passing, since a patch can make a
failing test end either way at run time (docs/security.md). A missing test has failed.
Resolved (FULL) = every FAIL_TO_PASS and every PASS_TO_PASS test succeeded."""

from __future__ import annotations

from dataclasses import dataclass, field

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
        if t in ran and outcomes.get(t, "missing") != "passed":
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


def succeeded(test: str, outcome: str | None, gold: dict[str, str] | None = None) -> bool:
    """Whether a labelled test succeeded: it passed, or had the outcome the gold patch gave it."""
    return outcome == "passed" or (outcome is not None and (gold or {}).get(test) == outcome)


def grade(f2p: list[str], p2p: list[str], outcomes: dict[str, str], gold: dict[str, str] | None = None) -> Grade:
    """Grade a run's per-test outcomes against an instance's labels; `gold`: the non-pass outcomes the
    gold patch gave labelled tests at export (an instance's `gold_outcomes`; none for bugforge's own)."""
    f = {
        "success": [t for t in f2p if succeeded(t, outcomes.get(t), gold)],
        "failure": [t for t in f2p if not succeeded(t, outcomes.get(t), gold)],
    }
    p = {
        "success": [t for t in p2p if succeeded(t, outcomes.get(t), gold)],
        "failure": [t for t in p2p if not succeeded(t, outcomes.get(t), gold)],
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
