"""A runtime's open sessions, the same for every backend (sandbox/runtime.py's Docker sessions,
sandbox/process.py's bubblewrap ones): a runtime keeps `sessions` (id -> session) and `lock`."""

from __future__ import annotations

import time


class NoSession(KeyError):
    """No open session of that id in this runtime (the service answers 404 for this, and only this)."""

    def __init__(self, session_id: str):
        super().__init__(session_id)
        self.session_id = session_id

    def __str__(self) -> str:
        return f"no session {self.session_id}"


class SessionTable:
    """get / close / close_idle over a runtime's `sessions` and `lock`."""

    def get(self, session_id: str):
        s = self.sessions.get(session_id)
        if s is None:
            raise NoSession(session_id)
        return s

    def close(self, session_id: str) -> None:
        with self.lock:
            s = self.sessions.pop(session_id, None)
        if s:
            s.close()

    def close_idle(self, session_ttl: float | None) -> list[str]:
        """Close the sessions idle longer than `session_ttl` (none when it is None); their ids."""
        now, closed = time.time(), []
        if session_ttl is not None:
            for sid, s in list(self.sessions.items()):
                if now - s.last_used > session_ttl and not s.lock.locked():
                    self.close(sid)
                    closed.append(sid)
        return closed
