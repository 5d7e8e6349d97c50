"""bugforge's test server, run inside a warm container (copied to /opt/bugforge/bugforge_zygote.py).
It imports pytest once, then serves requests on stdin (one JSON object a line): for each, it runs a
setup command (e.g. `git apply`), forks a child that runs pytest with the probe plugin, waits with a
timeout (killing the child's whole process group on expiry), restores the tree, and answers on
stdout with one JSON line. A fork costs milliseconds; a fresh interpreter with pytest costs hundreds.
Runs under the image's Python (3.9+): no bugforge imports, no newer syntax.

Request:  {"args": [...], "env": {...}, "cwd": "/testbed", "timeout": 60, "setup": "git apply ...",
           "restore": "git checkout -q -- . && git clean -fdq", "report": "/tmp/.../report.jsonl"}
Response: {"setup_rc": 0, "exit": 1, "timed_out": false, "report": "...", "log": "..."}
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest  # noqa: F401  (the point: imported once, inherited by every child)
import _pytest.config  # noqa: F401


def _tail(path, n=3000):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def serve_one(req):
    cwd = req.get("cwd", "/testbed")
    report = req["report"]
    log = report + ".log"
    for p in (report, log):
        if os.path.exists(p):
            os.remove(p)
    for path, text in req.get("files", {}).items():
        with open(path, "w") as f:
            f.write(text)
    if req.get("restore"):
        subprocess.call(["bash", "-c", req["restore"]], cwd=cwd)
    if req.get("setup"):
        rc = subprocess.call(["bash", "-c", req["setup"]], cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        if rc != 0:
            return {"setup_rc": rc}
    pid = os.fork()
    if pid == 0:  # child: a fresh process group, output to the log, run pytest, never return
        try:
            os.setsid()
            os.chdir(cwd)
            os.environ.update(req.get("env", {}))
            sys.dont_write_bytecode = True
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.path[:0] = [p for p in req.get("env", {}).get("PYTHONPATH", "").split(":") if p]
            code = pytest.main(req["args"])
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(int(code))
        except BaseException:
            os._exit(99)
    deadline = time.monotonic() + float(req.get("timeout", 60))
    timed_out, status = False, 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.002)
    try:  # anything the run left behind in its process group
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    out = {"setup_rc": 0, "exit": code, "timed_out": timed_out, "report": _tail(report, 10 ** 8), "log": _tail(log)}
    if req.get("restore"):
        subprocess.call(["bash", "-c", req["restore"]], cwd=cwd)
    return out


def main():
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sys.stdout.write(json.dumps({"ready": True}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            resp = serve_one(json.loads(line))
        except Exception as e:  # answer, never die
            resp = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
