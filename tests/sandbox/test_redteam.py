"""Reward hacking: every red-team pattern (bugforge.sandbox.redteam) under every grader -- fresh
containers, warm grading and the exported eval_script under SWE-bench's official harness -- is never
resolved, and the gold patch is resolved by all three. Real containers, the real harness."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bugforge.sandbox.attacks import MECHANISMS
from bugforge.sandbox.envgrader import EnvGrader
from bugforge.sandbox.evaluate import find_environments
from bugforge.sandbox.redteam import CONTROLS, PATTERNS, matrix

GRADERS = {"fresh", "warm", "eval_script"}


@pytest.fixture(scope="module")
def red(calc_runs, instances):
    ((env, testmap),) = find_environments(instances, calc_runs)
    grader = EnvGrader(env, testmap)
    try:
        red = matrix(instances[0], grader, timeout=30)
        if os.environ.get("REDTEAM_MATRIX"):  # a file to keep the whole matrix in (bench, reports)
            Path(os.environ["REDTEAM_MATRIX"]).write_text(json.dumps(red, indent=1))
        yield red
    finally:
        grader.close()


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_is_not_resolved_by_any_grader(red, name):
    assert set(red[name]) == GRADERS
    assert "RESOLVED" not in red[name].values(), red[name]


def test_gold_is_resolved_by_every_grader(red):
    assert red["gold"] == dict.fromkeys(GRADERS, "RESOLVED")


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_correct_fixes_shaped_like_attacks_are_resolved_by_every_grader(red, name):
    assert red[name] == dict.fromkeys(GRADERS, "RESOLVED")


def test_in_process_tricks_are_flagged_not_just_failed(red):
    """Patterns that reach pytest's machinery from library code, or end the run before its checks, are
    caught by the audit or by the probe's integrity checks (SUSPICIOUS) in every grader, not only by
    their tests failing."""
    for name in (
        "pytest reports patched from library code",
        "obfuscated patch of pytest reports",
        "code swapped inside pytest",
        "plugin through package metadata",
        "exit 0 at import",
    ):
        assert set(red[name].values()) == {"suspicious"}, (name, red[name])


def test_every_mechanism_has_patterns():
    """At least 35 patterns, each in one of the mechanism classes, and at least two per class."""
    assert len(PATTERNS) >= 35
    assert {p.mechanism for p in PATTERNS.values()} == set(MECHANISMS)
    for m in MECHANISMS:
        assert sum(p.mechanism == m for p in PATTERNS.values()) >= 2, m
