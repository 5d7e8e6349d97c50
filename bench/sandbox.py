"""Sandbox latency and capacity, side by side on one task-instance image: (a) `docker exec` per command
(what mini-swe-agent does), (b) bugforge's runtime in-process, (c) bugforge's HTTP service through the
client, (d) SWE-ReX `run_in_session` when `pip install swe-rex` works (its server in the same image, on
the host network); plus session start (cold vs warm pool) and concurrent sessions.

    python bench/sandbox.py --n 200 [--image bugforge/task.textkit:...] [--sessions 64]
    python bench/sandbox.py --backends [docker,process,podman] --dataset runs/NAME [--rootfs DIR] [--n 300] [--starts 10]

`--backends`: session start, command latency and gold-patch grading for each backend (default docker,process;
podman needs the dataset's images in its store: `bugforge images save` / `images load --backend podman`)
side by side, in one run (bench/backends.py).

Figures: docs/figures.md, "Sandbox".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import docker.errors

from bugforge.cli.demo import free_port
from bugforge.engine import client
from bugforge.errors import BugforgeError
from bugforge.images import build_image
from bugforge.sandbox.runtime import Runtime, SandboxConfig


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def timed(fn, n: int) -> list[float]:
    for _ in range(5):
        fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def bench_docker_exec(image: str, n: int) -> list[float]:
    c = client().containers.run(image, ["sleep", "infinity"], detach=True, network_mode="none", stop_signal="SIGKILL")
    try:
        return timed(lambda: c.exec_run(["true"]), n)
    finally:
        c.remove(force=True)


def bench_service(image: str, n: int):
    import httpx

    port, token = free_port(), "bench"
    env = {**os.environ, "BUGFORGE_SANDBOX_TOKEN": token}
    p = subprocess.Popen(
        [sys.executable, "-m", "bugforge.cli", "sandbox", "serve", "--port", str(port), "--owner", "bench"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        from bugforge import sandbox

        remote = sandbox.connect(f"http://127.0.0.1:{port}", token)
        s = remote.create(image=image)
        lat = timed(lambda: s.run("true"), n)
        s.close()
        return lat
    finally:
        p.terminate()
        p.wait(30)


def bench_swerex(image: str, n: int) -> tuple[list[float] | None, str]:
    """SWE-ReX in the same image: install it into a derived image, run its server, time run_in_session.

    (latencies in ms, "") when it ran; (None, why) when it could not be installed or did not run.
    """
    why = _install_swerex()
    if why:
        return None, why
    tag = "bugforge/bench-swerex:" + image.split(":")[-1][:60]
    try:
        build_image(
            {"Dockerfile": f"FROM {image}\nRUN pip install -q swe-rex\n".encode()}, tag, what="the SWE-ReX image"
        )
    except (BugforgeError, docker.errors.DockerException, OSError) as e:
        return None, f"could not install SWE-ReX in the image: {e}"
    port = free_port()
    c = client().containers.run(
        tag,
        ["swerex-remote", "--port", str(port), "--auth-token", "t"],
        detach=True,
        network_mode="host",
        stop_signal="SIGKILL",
    )
    try:
        return asyncio.run(_swerex_latencies(port, n)), ""
    except Exception as e:  # noqa: BLE001 - SWE-ReX's client re-raises whatever its server raised; any failure is this column's note
        return None, f"SWE-ReX did not run: {type(e).__name__}: {e}"
    finally:
        c.remove(force=True)


def _install_swerex() -> str:
    """Make SWE-ReX's client importable here (pip install when it is not); "" on success, else why not."""
    try:
        import swerex  # noqa: F401
    except ImportError:
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "swe-rex"], capture_output=True, text=True)
        if r.returncode:
            return "pip install swe-rex failed: " + r.stderr.strip().splitlines()[-1]
    return ""


async def _swerex_latencies(port: int, n: int) -> list[float]:
    """Wait up to 20 s for the SWE-ReX server on `port`, open a bash session, and time `n` runs of `true`
    (after 5 unmeasured), in ms."""
    from swerex.runtime.abstract import BashAction, CreateBashSessionRequest
    from swerex.runtime.remote import RemoteRuntime

    rt = RemoteRuntime(host="http://127.0.0.1", port=port, auth_token="t")
    for _ in range(100):
        # is_alive answers "not alive" while the server cannot be reached; it raises only what the server raised
        if await rt.is_alive():
            break
        await asyncio.sleep(0.2)
    await rt.create_session(CreateBashSessionRequest())
    lat = []
    for i in range(n + 5):
        t = time.perf_counter()
        await rt.run_in_session(BashAction(command="true"))
        if i >= 5:
            lat.append((time.perf_counter() - t) * 1000)
    return lat


def bench_starts(image: str, k: int):
    rt = Runtime(SandboxConfig(owner="bench", pool_size=0))
    try:
        cold = []
        for _ in range(k):
            t = time.perf_counter()
            s = rt.create(image)
            cold.append((time.perf_counter() - t) * 1000)
            rt.close(s.id)
        rt.warm(image, k)  # the pool, filled ahead of demand
        warm = []
        for _ in range(k):
            t = time.perf_counter()
            s = rt.create(image)
            warm.append((time.perf_counter() - t) * 1000)
            rt.close(s.id)
        return cold, warm
    finally:
        rt.shutdown()


def bench_concurrency(image: str, n_sessions: int):
    """Start n sessions, then have every one run a command at the same time; count the answers."""
    rt = Runtime(SandboxConfig(owner="bench", mem_limit="256m"))
    sessions, answered = [], []
    try:
        t0 = time.perf_counter()
        for _ in range(n_sessions):
            sessions.append(rt.create(image))
        start_s = time.perf_counter() - t0
        lat = []
        lock = threading.Lock()

        def one(s):
            t = time.perf_counter()
            r = s.run("echo $((6*7))", timeout=60)
            with lock:
                lat.append((time.perf_counter() - t) * 1000)
                if r.output.strip() == "42":
                    answered.append(s.id)

        threads = [threading.Thread(target=one, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return len(answered), start_s, lat
    finally:
        rt.shutdown()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", help="task-instance image (default: the first row of runs/textkit/instances.jsonl)")
    ap.add_argument("--n", type=int, default=300, help="commands per latency measurement")
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--skip-swerex", action="store_true")
    ap.add_argument(
        "--backends",
        nargs="?",
        const="docker,process",
        help="backends side by side, comma-separated: docker, process, podman (bench/backends.py)",
    )
    ap.add_argument("--dataset", help="with --backends: a run folder or dataset JSONL (its first row is used)")
    ap.add_argument("--rootfs", help="with --backends: its `bugforge images rootfs` folder (default: exported now)")
    a = ap.parse_args()
    if a.backends:
        import backends

        names = [b for b in a.backends.split(",") if b]
        unknown = set(names) - set(backends.BACKENDS)
        if unknown:
            raise SystemExit(f"error: unknown backend(s) {sorted(unknown)} — use {', '.join(backends.BACKENDS)}")
        print(backends.table(backends.measure(a.dataset, a.rootfs, n=a.n, k=a.starts, backends=names), pct))
        return 0
    image = a.image or json.loads(Path("runs/textkit/instances.jsonl").open().readline())["image"]
    rows = []
    lat = bench_docker_exec(image, a.n)
    rows.append(("(a) docker exec", lat))
    rt = Runtime(SandboxConfig(owner="bench"))
    s = rt.create(image)
    rows.append(("(b) runtime, in-process", timed(lambda: s.run("true"), a.n)))
    rt.shutdown()
    rows.append(("(c) HTTP service", bench_service(image, a.n)))
    note = "skipped"
    if not a.skip_swerex:
        sw, note = bench_swerex(image, a.n)
        if sw:
            rows.append(("(d) SWE-ReX run_in_session", sw))
    base = statistics.median(rows[0][1])
    print(f"image: {image}\n\nlatency of a trivial command (`true`), {a.n} runs each")
    print(f"{'path':<30}{'p50 ms':>10}{'p99 ms':>10}{'x faster than exec (p50)':>27}")
    for name, xs in rows:
        print(f"{name:<30}{pct(xs, 50):>10.3f}{pct(xs, 99):>10.3f}{base / pct(xs, 50):>27.1f}")
    if note:
        print(f"SWE-ReX: {note}")
    cold, warm = bench_starts(image, a.starts)
    print(
        f"\nsession start ({a.starts} each): cold p50 {pct(cold, 50):.1f} ms p99 {pct(cold, 99):.1f} ms;"
        f" warm pool p50 {pct(warm, 50):.2f} ms p99 {pct(warm, 99):.2f} ms"
    )
    ok, start_s, clat = bench_concurrency(image, a.sessions)
    print(
        f"concurrent sessions: {ok}/{a.sessions} answered a command issued to all at once "
        f"(started in {start_s:.1f} s; answer p50 {pct(clat, 50):.1f} ms, max {max(clat):.1f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
