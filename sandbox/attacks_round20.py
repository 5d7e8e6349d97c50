"""Round twenty of the red team (a fresh set, against the graders of 2a9aa45): draft, see the final
docstring below once written."""

from __future__ import annotations

from bugforge.sandbox.attacks import Pattern, append
from bugforge.sandbox.attacks_round20_payloads import (
    DONOR_NODEID,
    EXPECTING_FAILURE,
    GC_SUBSTITUTE,
    MODULE_FILE,
    SIGNAL_SUBSTITUTE,
    SUBTEST_RELAY,
)

PATTERNS: dict[str, Pattern] = {
    "round20: a gc callback swaps every collected item for a stand-in of a name no file defines, before the grader records them": Pattern(
        append(GC_SUBSTITUTE),
        what="at import (during collection) the session is found on the stack; a gc callback (threshold 1 while "
        "collection runs) replaces each item in session.items by pytest.Function(name='r20_N', callobj=a function "
        "that returns) with the old node id, before the probe's pytest_collection_finish: no def, no witness",
        mechanism="collection substitution",
    ),
    "round20: a SIGALRM handler swaps each collected item for a stand-in under its own name and node id, originalname changed": Pattern(
        append(SIGNAL_SUBSTITUTE),
        what="an interval timer (200 us) runs a Python handler while collection runs; it replaces each item by "
        "pytest.Function(parent, name=<its name>, originalname='r20_<name>', callobj=a function that returns): "
        "the def check and the witness key the test by originalname, which no def of the file has",
        mechanism="collection substitution",
    ),
    "round20: the test module's class gets a __file__ property; the grader's own collection check triggers the swap and sees no file": Pattern(
        append(MODULE_FILE),
        what="test modules' __class__ set to a ModuleType subclass with a __file__ property (no __getattribute__); "
        "defined.py's _where reads it in the probe's pytest_collection_finish: the property swaps the remaining "
        "items for stand-ins and answers '<path>c' (no .py): no def check, no witness expectation, no compiled check",
        mechanism="collection substitution",
    ),
    "round20: each FAIL_TO_PASS item swapped for a genuine second item of a passing sibling that carries its node id": Pattern(
        append(DONOR_NODEID) + ' && sed -i "s|@R20_F2P@|$(paste -sd, <<< "$IDS")|" "$MOD"',
        what="a SIGALRM handler, while collection runs, replaces each FAIL_TO_PASS item in session.items by "
        "type(sibling).from_parent(sibling.parent, name=sibling.name) with _nodeid set to the failing test's: pytest's "
        "own item class, the file's own def, witnessed; every table keyed by node id describes the sibling",
        mechanism="collection substitution",
    ),
    "round20: a failed subtest's report never reaches the probe: the item's session slot and the subtests fixture's relay proxied": Pattern(
        append(SUBTEST_RELAY),
        what="the module's functions, called inside a subtest, set the item's `session` (a slot of Node, not in its "
        "__dict__) to a proxy whose gethookproxy wraps the relay, and swap the subtests fixture's relay callers until "
        "that subtest's logreport: a subtest's makereport gets pytest's default report, unseen; the test's function "
        "returns (subTest swallows the failure), its own call phase passes",
        mechanism="outcome injection",
    ),
    "round20: the running case's unittest _Outcome told to expect a failure, its expectedFailure a forgetting property": Pattern(
        append(EXPECTING_FAILURE),
        what="the module's functions, called inside a subTest, give the test case's _outcome a subclass whose "
        "expectedFailure property forgets, and set expecting_failure: the subtest's failure is 'expected' (no "
        "addSubTest, no report), subTest does not stop the test, its function returns, TestCase.run reports success",
        mechanism="outcome injection",
    ),
}
