"""File operations of a session, the same for every backend (sandbox/runtime.py's Docker sessions,
sandbox/process.py's bubblewrap ones)."""

from __future__ import annotations

import json

from bugforge.errors import BugforgeError


class FileOps:
    """read / write / edit / list through the in-container file helper (incontainer/files.py), the same
    for every backend: a session gives `_helper(request) -> the helper's output`."""

    def _files(self, **req) -> dict:
        out = self._helper(req)
        try:
            answer = json.loads(out or b"{}")
        except json.JSONDecodeError:
            answer = {"ok": False, "error": f"file helper failed: {out[-300:]!r}"}
        if not answer.get("ok"):
            raise BugforgeError(answer.get("error", "file operation failed"))
        return answer

    def read(self, path: str, max_bytes: int = 1 << 20) -> str:
        return self._files(op="read", path=path, max_bytes=max_bytes)["content"]

    def write(self, path: str, content: str) -> None:
        self._files(op="write", path=path, content=content)

    def edit(self, path: str, old: str, new: str) -> None:
        """Replace `old` by `new`; `old` must occur exactly once."""
        self._files(op="edit", path=path, old=old, new=new)

    def list(self, path: str = ".") -> list[dict]:
        return self._files(op="list", path=path)["entries"]
