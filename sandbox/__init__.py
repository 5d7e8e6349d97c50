"""The sandbox: sessions in containers (runtime), the same over HTTP (service + client), and grading.

`connect(url=None)` gives the in-process Runtime; `connect(url, token)` the HTTP client; `connect(ray=ADDRESS,
workers=N)` sessions on N Ray actors (sandbox/ray_sandbox.py); `connect(backend="process", rootfs=DIR)` sessions
with no container engine, from the root file systems `bugforge images rootfs` exported (sandbox/process.py;
`unconfined=True` where bubblewrap cannot run); `connect(backend="podman")` the in-process Runtime on Podman's
Docker-compatible API (rootless; bugforge.podman), which it makes this process's engine (bugforge.engine.select).
All have `create(image=..., instance_id=...)` -> a session with run/read/write/edit/list/diff/submit/close. The
default backend (None) is the process's engine: BUGFORGE_ENGINE, else "docker"."""

from __future__ import annotations

BACKENDS = ("docker", "podman", "process")


def connect(
    url: str | None = None,
    token: str | None = None,
    *,
    ray: str | None = None,
    backend: str | None = None,
    **runtime_kwargs,
):
    if backend is not None and backend not in BACKENDS:
        from bugforge.errors import BugforgeError

        raise BugforgeError(f"unknown sandbox backend {backend!r}", f"use one of {', '.join(BACKENDS)}")
    if backend == "process":
        from bugforge.errors import BugforgeError
        from bugforge.sandbox.process import ProcessRuntime

        if url or ray:
            raise BugforgeError(
                "the process backend runs sessions in this process",
                "leave out url/ray (start `bugforge sandbox serve` on the other machine for remote sessions)",
            )
        if not runtime_kwargs.get("rootfs"):
            raise BugforgeError(
                "the process backend needs rootfs=DIR", "make DIR with `bugforge images rootfs runs/NAME --out DIR`"
            )
        return ProcessRuntime(**runtime_kwargs)
    if backend in ("docker", "podman"):
        from bugforge import engine
        from bugforge.errors import BugforgeError

        if backend == "podman" and (url or ray):
            raise BugforgeError(
                "backend='podman' chooses this process's engine", "leave out url/ray (the service has its own)"
            )
        engine.select(backend)
    if ray:
        from bugforge.sandbox.ray_sandbox import RaySandbox

        return RaySandbox(ray, **runtime_kwargs)
    if url:
        from bugforge.sandbox.client import SandboxClient

        return SandboxClient(url, token or "")
    from bugforge.sandbox.runtime import Runtime

    return Runtime(**runtime_kwargs)
