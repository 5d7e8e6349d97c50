from __future__ import annotations

import copy
import json

import pytest


@pytest.fixture(scope="module")
def easy_instance(instances):
    """A crafted easy task from a real instance: its FAIL_TO_PASS test already passes in the image, so
    any patch that applies resolves it and an empty one does not — rewards then vary within a group."""
    inst = copy.deepcopy(instances[0])
    p2p = json.loads(inst["PASS_TO_PASS"])
    inst["FAIL_TO_PASS"], inst["PASS_TO_PASS"] = json.dumps(p2p[:1]), json.dumps(p2p[1:])
    inst["instance_id"] += "-easy"
    inst["problem_statement"] = "Write the word fixed into NOTES.txt, then submit."
    return inst
