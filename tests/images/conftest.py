"""Fixtures of the registry tests: a real registry (Debian's `docker-registry`) on 127.0.0.1 with its own
storage, and a second Docker engine with its own storage, standing for a second node. Both are started
here and stopped (their files removed) after the module."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen, grace: float = 30) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="module")
def registry():
    """`HOST:PORT` of a registry on 127.0.0.1 (the engines treat 127.0.0.0/8 as insecure: plain HTTP)."""
    binary = shutil.which("docker-registry")
    if not binary:
        pytest.skip("no docker-registry binary: apt-get install docker-registry (scripts/setup.sh installs it)")
    root = Path(tempfile.mkdtemp(prefix="bf-registry-"))
    port = _free_port()
    (root / "config.yml").write_text(
        f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {root / 'data'}\nhttp:\n  addr: 127.0.0.1:{port}\n"
    )
    log = open(root / "registry.log", "w")
    proc = subprocess.Popen([binary, "serve", str(root / "config.yml")], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"docker-registry exited: {(root / 'registry.log').read_text()[-500:]}")
                time.sleep(0.2)
        else:
            pytest.fail("docker-registry did not answer in 20 s")
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Engine:
    host: str
    """DOCKER_HOST of this engine (unix://...)."""
    client: docker.DockerClient


@pytest.fixture(scope="module")
def second_engine(engine):
    """A second Docker engine with its own storage (--data-root, --exec-root, --pidfile, its own socket),
    started empty, standing for another node; stopped and its storage removed afterwards."""
    binary = shutil.which("dockerd")
    if not binary:
        pytest.skip("no dockerd binary: the second engine needs Debian's docker.io")
    root = Path(tempfile.mkdtemp(prefix="bf-node-", dir="/tmp"))  # short: a unix socket path has 108 bytes
    sock = f"unix://{root}/docker.sock"
    log = open(root / "dockerd.log", "w")
    proc = subprocess.Popen(
        [
            binary,
            "--data-root", f"{root}/data",
            "--exec-root", f"{root}/exec",
            "--pidfile", f"{root}/docker.pid",
            "-H", sock,
            "--bridge=none",
            "--iptables=false",
            "--ip-masq=false",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = None
    try:
        for _ in range(120):
            try:
                client = docker.DockerClient(base_url=sock, version="auto", timeout=300)
                client.ping()
                break
            except docker.errors.DockerException:
                if proc.poll() is not None:
                    pytest.fail(f"second dockerd exited: {(root / 'dockerd.log').read_text()[-800:]}")
                time.sleep(0.5)
        else:
            pytest.fail("second dockerd did not answer in 60 s")
        yield Engine(sock, client)
    finally:
        if client is not None:
            for c in client.containers.list(all=True):
                c.remove(force=True)
            client.close()
        _stop(proc)
        log.close()
        for line in reversed(Path("/proc/mounts").read_text().splitlines()):  # never rm through a mount
            where = line.split()[1]
            if where.startswith(str(root) + "/"):
                subprocess.run(["umount", "-l", where], check=False)
        shutil.rmtree(root, ignore_errors=True)
