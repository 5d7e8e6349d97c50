"""The Python client of the sandbox service: the same interface as the in-process Runtime and Session,
so code switches between them with one argument (`sandbox.connect(url)` vs `sandbox.connect(None)`)."""

from __future__ import annotations

from types import SimpleNamespace

import httpx

from bugforge.errors import BugforgeError
from bugforge.sandbox.shell import RunResult


class RemoteSession:
    def __init__(self, client: SandboxClient, info: dict):
        self._c, self.id, self.image, self.user = client, info["id"], info["image"], info.get("user")
        self.instance_id = info.get("instance_id")

    def run(self, command: str, timeout: float | None = None) -> RunResult:
        return RunResult(**self._c._post(f"/sessions/{self.id}/run", {"command": command, "timeout": timeout}))

    def read(self, path: str, max_bytes: int = 1 << 20) -> str:
        return self._c._post(f"/sessions/{self.id}/read", {"path": path, "max_bytes": max_bytes})["content"]

    def write(self, path: str, content: str) -> None:
        self._c._post(f"/sessions/{self.id}/write", {"path": path, "content": content})

    def edit(self, path: str, old: str, new: str) -> None:
        self._c._post(f"/sessions/{self.id}/edit", {"path": path, "old": old, "new": new})

    def list(self, path: str = ".") -> list[dict]:
        return self._c._post(f"/sessions/{self.id}/list", {"path": path})["entries"]

    def diff(self) -> str:
        return self._c._get(f"/sessions/{self.id}/diff")["patch"]

    def submit(self):
        return SimpleNamespace(**self._c._post(f"/sessions/{self.id}/submit", {}))

    def close(self) -> None:
        self._c._request("DELETE", f"/sessions/{self.id}")


class SandboxClient:
    def __init__(self, base_url: str, token: str, timeout: float = 3700):
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)

    def _request(self, method: str, path: str, body: dict | None = None) -> dict:
        try:
            r = self.http.request(method, path, json=body)
        except httpx.HTTPError as e:
            raise BugforgeError(
                f"sandbox service unreachable at {self.http.base_url}: {e}", "start it with `bugforge sandbox serve`"
            ) from None
        if r.status_code >= 400:
            try:
                detail = r.json().get("detail")
            except ValueError:
                detail = r.text[:300]
            raise BugforgeError(f"sandbox service: {r.status_code} {detail}")
        return r.json()

    def _post(self, path: str, body: dict) -> dict:
        return self._request("POST", path, body)

    def _get(self, path: str) -> dict:
        return self._request("GET", path)

    def create(self, image: str | None = None, instance_id: str | None = None) -> RemoteSession:
        return RemoteSession(self, self._post("/sessions", {"image": image, "instance_id": instance_id}))

    def sessions(self) -> list[dict]:
        return self._get("/sessions")

    def health(self) -> dict:
        return self._get("/health")

    def close(self, session_id: str) -> None:
        self._request("DELETE", f"/sessions/{session_id}")
