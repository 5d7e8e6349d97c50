"""Round twenty-two of the red team (a fresh set, against the graders of 14fb73b): attacks that differ in
mechanism from bugforge.sandbox.attacks, its variants and rounds two to twenty-one. Each is a Pattern (a
shell script run in /testbed of an instance's container, variables F, MOD, IDS). None of them fixes the
bug, uses the gold patch or touches a test file or test configuration in the patch; every payload is
appended to the module the bug changed and acts only when the grader's probe is loaded, so the
FAIL_TO_PASS tests still fail when their functions are called plainly. Every name the patch audit looks
for is built at run time (`sweep.audit` on each appended payload, comments not stripped, finds nothing).

(Filled in below with the mechanisms and results.)
"""

from __future__ import annotations

from bugforge.sandbox.attacks import Pattern, append, write
from bugforge.sandbox.attacks_round22_payloads import (
    REGISTER_AID,
    RELOAD_IMPORTER,
    RETURN_FIRST,
    STATIC_AID_FILE,
    STATIC_AID_USE,
    STEALTH_RELOAD,
)

_AID_DIR = '"$(dirname "$MOD")/testing"'
_IDS = ' && sed -i "s|@R22_F2P@|$(paste -sd, <<< "$IDS")|" "$MOD"'

PATTERNS: dict[str, Pattern] = {
    "round22: the module, imported during collection, puts a `return` at the top of the failing tests' bodies in test files not yet read": Pattern(
        append(RETURN_FIRST) + _IDS,
        what="at import (a conftest's or an earlier test module's import of the module) the FAIL_TO_PASS tests' "
        "files, and the other .py files of their directory, not yet imported, are rewritten on disk: a `return` "
        "line before each failing test's first statement; the grader compiles and witnesses them as they now are",
        mechanism="changing tests/config",
    ),
    "round22: the test module importing the module is rewritten on disk and imported again under its name; pytest collects the new one": Pattern(
        append(RELOAD_IMPORTER) + _IDS,
        what="as the first, and the test module being executed (it imports the module: its spec is _initializing) "
        "too: its file gets the `return` lines, its sys.modules entry is dropped and the module imported again "
        "through pytest's (and the grader's) rewriting hook; the import pytest started returns the entry as it "
        "is at its end, the new module, whose failing tests return at once",
        mechanism="changing tests/config",
    ),
    "round22: a helper written into the test directory at run time is compiled by the grader as the tests' own, and registers no-op asserters": Pattern(
        append(REGISTER_AID) + _IDS,
        what="the module's functions are wrapped; their first call (inside a test) writes test_r22aid.py into the "
        "failing tests' directory and imports it through pytest's hook (the witness compiles it: its code is the "
        "tests' own by identity); it finds the running TestCase up the stack and calls addTypeEqualityFunc for "
        "int, str, list, ... with a function that returns None: assertEqual's registry lookup vouches for them",
        mechanism="rebinding unwatched objects",
    ),
    "round22: the same helper shipped in the patch as <package>/testing/: the witness's test directories are not the sweep's": Pattern(
        write(_AID_DIR + '"/__init__.py"', "")
        + " && "
        + write(_AID_DIR + '"/_r22aid.py"', STATIC_AID_FILE)
        + " && "
        + append(STATIC_AID_USE),
        what="a new package `testing` beside the module (any directory named test/tests/testing is a test directory "
        "to the witness's rewriting hook; the sweep's are only the instance's test files' own, so the file is kept "
        "and audited like other code, names built at run time): imported by the wrapped functions, compiled by "
        "the grader, it registers no-op asserters on the running TestCase as the third does; no file written at run time",
        mechanism="rebinding unwatched objects",
    ),
    "round22: as the second, leaving the test files as they were: `return; ` on a failing test's first line, the file put back after its import": Pattern(
        append(STEALTH_RELOAD) + _IDS,
        what="the failing tests' first statements get `return; ` on their own line (lines unmoved; a compound first "
        "statement gets a line of its own and that file is left so), the importing test module is imported again, "
        "and the file is put back at once (files not yet read: at the module's first call, after collection): the "
        "def check reads the commit's text at the lines the grader compiled; nothing is left on disk",
        mechanism="changing tests/config",
    ),
}
