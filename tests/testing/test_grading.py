"""The grading rules (bugforge.testing.grading): how a bug's labels are computed from a run, and every
status a graded run can get. Pure functions, no containers."""

from __future__ import annotations

import pytest

from bugforge.testing.grading import FULL, NO, PARTIAL, grade, labels, succeeded, usable


def test_only_passed_succeeds_unless_gold_had_that_outcome():
    """xfailed and skipped do not pass: a patch can make a failing test end either way at run time.
    A test the gold patch left with another outcome (recorded per test) succeeds with that outcome."""
    for outcome in ("xfailed", "skipped", "xpassed", "failed", "error", None):
        assert not succeeded("t::a", outcome)
    assert succeeded("t::a", "passed")
    assert succeeded("t::a", "skipped", {"t::a": "skipped"}) and not succeeded("t::a", "xfailed", {"t::a": "skipped"})
    assert not succeeded("t::b", "skipped", {"t::a": "skipped"})
    assert grade(["t::f"], ["t::p"], {"t::f": "passed", "t::p": "skipped"}, {"t::p": "skipped"}).resolved


def test_test_ids_with_whitespace_are_not_usable():
    assert usable("tests/t.py::test_a[x-1]")
    for bad in ("tests/t.py::test_p[a b]", "t::x\ty", "t::x\n"):
        assert not usable(bad)


def test_labels_of_a_bug():
    """A baseline-passing test that ran and did not pass (skipped, xfailed, missing) is FAIL_TO_PASS;
    one that did not run keeps its baseline pass, one that ran and passed stays passing: PASS_TO_PASS.
    Tests that did not pass at baseline, and ids with whitespace, are never labels. Both lists come sorted."""
    baseline = {"t::c_fail", "t::a_err", "t::gone", "t::b_pass", "t::not_run", "t::skip", "t::xfail", "t::sp ace"}
    outcomes = {
        "t::c_fail": "failed",
        "t::a_err": "error",
        "t::b_pass": "passed",
        "t::skip": "skipped",
        "t::xfail": "xfailed",
        "t::sp ace": "failed",
        "t::flaky": "failed",  # not passing at baseline: not a label
    }
    ran = set(outcomes) | {"t::gone"}  # ran, but no outcome came back
    f2p, p2p = labels(baseline, outcomes, ran)
    assert f2p == ["t::a_err", "t::c_fail", "t::gone", "t::skip", "t::xfail"]
    assert p2p == ["t::b_pass", "t::not_run"]


def test_labels_when_every_test_ran_and_passed_or_none_ran():
    baseline = {"t::a", "t::b"}
    assert labels(baseline, {"t::a": "passed", "t::b": "passed"}, baseline) == ([], ["t::a", "t::b"])
    assert labels(baseline, {}, set()) == ([], ["t::a", "t::b"])  # nothing could see the change
    assert labels(set(), {"t::a": "failed"}, {"t::a"}) == ([], [])


F2P, P2P = ["t::f1", "t::f2"], ["t::p1", "t::p2"]


@pytest.mark.parametrize(
    "outcomes,status,f2p_success,p2p_failure",
    [
        # every FAIL_TO_PASS and PASS_TO_PASS test passed
        ({"t::f1": "passed", "t::f2": "passed", "t::p1": "passed", "t::p2": "passed"}, FULL, F2P, []),
        # xfailed or skipped is not passing, for either list
        ({"t::f1": "passed", "t::f2": "xfailed", "t::p1": "passed", "t::p2": "passed"}, PARTIAL, ["t::f1"], []),
        ({"t::f1": "passed", "t::f2": "passed", "t::p1": "xfailed", "t::p2": "skipped"}, NO, F2P, P2P),
        # some FAIL_TO_PASS tests pass, none of PASS_TO_PASS broke: partial
        ({"t::f1": "passed", "t::f2": "failed", "t::p1": "passed", "t::p2": "passed"}, PARTIAL, ["t::f1"], []),
        ({"t::f1": "passed", "t::p1": "passed", "t::p2": "passed"}, PARTIAL, ["t::f1"], []),  # f2 missing
        # a FAIL_TO_PASS test skipped has not passed
        ({"t::f1": "skipped", "t::f2": "skipped", "t::p1": "passed", "t::p2": "passed"}, NO, [], []),
        # no FAIL_TO_PASS test passes
        ({"t::f1": "failed", "t::f2": "error", "t::p1": "passed", "t::p2": "passed"}, NO, [], []),
        # every FAIL_TO_PASS test passes but a PASS_TO_PASS one broke (or went missing): no
        ({"t::f1": "passed", "t::f2": "passed", "t::p1": "failed", "t::p2": "passed"}, NO, F2P, ["t::p1"]),
        ({"t::f1": "passed", "t::f2": "passed", "t::p1": "passed"}, NO, F2P, ["t::p2"]),
        # some pass, and a PASS_TO_PASS test broke: no, not partial
        ({"t::f1": "passed", "t::f2": "failed", "t::p1": "error", "t::p2": "passed"}, NO, ["t::f1"], ["t::p1"]),
        ({}, NO, [], P2P),  # nothing ran
    ],
)
def test_grade_statuses(outcomes, status, f2p_success, p2p_failure):
    g = grade(F2P, P2P, outcomes)
    assert g.status == status and g.resolved == (status == FULL)
    assert g.FAIL_TO_PASS == {"success": f2p_success, "failure": [t for t in F2P if t not in f2p_success]}
    assert g.PASS_TO_PASS == {"success": [t for t in P2P if t not in p2p_failure], "failure": p2p_failure}
    assert g.f2p_fraction == len(f2p_success) / 2 and g.p2p_ok == (not p2p_failure)
    # the grade keeps every label's outcome, a test with none as "missing", and nothing else
    assert g.outcomes == {t: outcomes.get(t, "missing") for t in F2P + P2P}


def test_grade_with_empty_labels():
    """No FAIL_TO_PASS tests count as all of them passing (rate 1); no PASS_TO_PASS tests, none broken."""
    g = grade([], ["t::p"], {"t::p": "passed"})
    assert g.status == FULL and g.resolved and g.f2p_fraction == 1.0
    assert grade([], ["t::p"], {"t::p": "failed"}).status == NO
    g = grade(["t::f"], [], {"t::f": "passed", "t::other": "failed"})
    assert g.status == FULL and g.p2p_ok and g.outcomes == {"t::f": "passed"}
    g = grade([], [], {})
    assert g.status == FULL and g.resolved and g.outcomes == {}
