"""Round twenty of the red team (a fresh set, against the graders of 2a9aa45): attacks that differ in
mechanism from bugforge.sandbox.attacks, its variants and rounds two to nineteen. (Draft: see below.)"""

from __future__ import annotations

from bugforge.sandbox.attacks import Pattern, append
from bugforge.sandbox.attacks_round20_payloads import GC_SUBSTITUTE

PATTERNS: dict[str, Pattern] = {
    "round20: a gc callback swaps every collected item for a stand-in of a name no file defines, before the grader records them": Pattern(
        append(GC_SUBSTITUTE),
        what="at import (during collection) the session is found on the stack; a gc callback (threshold 1 while "
        "collection runs) replaces each item in session.items by pytest.Function(name='r20_N', callobj=a function "
        "that returns) with the old node id, before the probe's pytest_collection_finish: no def, no witness",
        mechanism="collection substitution",
    ),
}
