"""Fixtures of the agent's tests: `scripted`, a scripted policy (not a model) for testing the loop."""

from __future__ import annotations

import pytest

from bugforge.records import Turn


class _Scripted:
    """A SCRIPTED policy for testing the loop's limits: replies from a fixed list, forever. A reply is
    the text of a turn, or a whole Turn (tool calls, token ids)."""

    model = "scripted-test-policy"

    def __init__(self, replies):
        self.replies, self.i = replies, 0

    def complete(self, messages, tools=None):
        r = self.replies[self.i % len(self.replies)]
        self.i += 1
        return r if isinstance(r, Turn) else Turn(content=r)


@pytest.fixture(scope="session")
def scripted():
    """`scripted(replies)`: a scripted policy replying from `replies` in turn, forever."""
    return _Scripted
