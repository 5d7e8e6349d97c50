"""The sandbox: sessions in containers (runtime), the same over HTTP (service + client), and grading.

`connect(url=None)` gives the in-process Runtime; `connect(url, token)` the HTTP client; `connect(ray=ADDRESS,
workers=N)` sessions on N Ray actors (sandbox/ray_sandbox.py). All have `create(image=..., instance_id=...)`
-> a session with run/read/write/edit/list/diff/submit/close."""

from __future__ import annotations


def connect(url: str | None = None, token: str | None = None, *, ray: str | None = None, **runtime_kwargs):
    if ray:
        from bugforge.sandbox.ray_sandbox import RaySandbox

        return RaySandbox(ray, **runtime_kwargs)
    if url:
        from bugforge.sandbox.client import SandboxClient

        return SandboxClient(url, token or "")
    from bugforge.sandbox.runtime import Runtime

    return Runtime(**runtime_kwargs)
