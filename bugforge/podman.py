"""Podman as bugforge's container engine, through its Docker-compatible API (docs/sandbox.md#podman-rootless).

Everything above `bugforge.engine.client()` (sessions, grading, warm grading; the factory is untested) talks docker-py to
Podman's service unchanged where the API is compatible; this module holds the code where it is not:

- where the service is: `socket_path()` (BUGFORGE_PODMAN_SOCKET, else CONTAINER_HOST, else the rootless user's
  `$XDG_RUNTIME_DIR/podman/podman.sock` (as root: BUGFORGE_PODMAN_USER's), else rootful /run/podman/podman.sock);
  `connect()` starts `podman system service --time=0` there when nothing answers and podman is installed;
- container creation (`spec`, `PodmanContainers`): through libpod's own create, because Podman 4.3's compatible
  create ignores rlimits (HostConfig.Ulimits) and drops the cgroup limits it cannot apply without a word. Podman's
  default rlimits exceed what a runtime without CAP_SYS_RESOURCE may set (runc: "error setting rlimits"), so a
  rootful service's containers get explicit `nofile` and `nproc` rlimits within this process's and the service's
  hard limits (a rootless service's keep its user's limits, which runc can always set). Where the service has no
  memory, pids or cpu cgroup controller (rootless on cgroups v1), memory becomes RLIMIT_DATA per process, and
  processes and CPU are not limited per container: RLIMIT_NPROC would be counted per user of podman's user
  namespace, where container root is the same user as podman's own service and conmon processes (one per exec,
  lingering `exit_command_delay`), so a small one made container starts fail at random (measured); only the
  rootless user's own RLIMIT_NPROC bounds them, for all its containers together. `Limits` says which hold."""

from __future__ import annotations

import os
import pwd
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

import docker
import docker.errors
from docker.models.containers import ContainerCollection

from bugforge.errors import BugforgeError

HINT = "run `sudo bash scripts/setup-podman.sh` (rootless user and service), or set BUGFORGE_PODMAN_SOCKET"
NOFILE = 65536  # per container, or this process's hard limit when lower
NPROC = 32768  # likewise: 4.3.1's service lowers its own hard RLIMIT_NPROC to this (its /proc/PID/limits)


def _user_socket(uid: int) -> str:
    return f"/run/user/{uid}/podman/podman.sock"


def socket_path() -> str:
    """The Podman API socket to use (module docstring): a path, no scheme."""
    explicit = os.environ.get("BUGFORGE_PODMAN_SOCKET") or os.environ.get("CONTAINER_HOST", "")
    if explicit:
        return explicit.removeprefix("unix://")
    if os.geteuid() != 0:
        return os.path.join(os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.geteuid()}", "podman/podman.sock")
    user = os.environ.get("BUGFORGE_PODMAN_USER")
    return _user_socket(pwd.getpwnam(user).pw_uid) if user else "/run/podman/podman.sock"


def _owner(sock: str) -> str | None:
    """The user whose rootless socket `sock` is (/run/user/UID/...), when it is not this process's own."""
    parts = sock.split("/")
    if len(parts) > 3 and parts[1:3] == ["run", "user"] and parts[3].isdigit() and int(parts[3]) != os.geteuid():
        try:
            return pwd.getpwuid(int(parts[3])).pw_name
        except KeyError:
            return None
    return None


def start_service(sock: str, wait_s: float = 20) -> None:
    """Start `podman system service --time=0 unix://SOCK` in the background (as the socket's rootless user when
    this process is root and the socket is another user's) and wait until it answers; raises BugforgeError
    when podman is missing or the service does not come up."""
    if not shutil.which("podman"):
        raise BugforgeError("podman is not installed", HINT)
    user, cmd = _owner(sock), ["podman", "system", "service", "--time=0", f"unix://{sock}"]
    if user:
        home, run = pwd.getpwnam(user).pw_dir, os.path.dirname(os.path.dirname(sock))
        cmd = ["runuser", "-u", user, "--", "env", f"XDG_RUNTIME_DIR={run}", f"HOME={home}", *cmd]
    if not user:
        os.makedirs(os.path.dirname(sock), exist_ok=True)
    elif not os.path.isdir(os.path.dirname(sock)):  # made by setup-podman.sh, owned by that user
        raise BugforgeError(f"{os.path.dirname(sock)} does not exist (user {user}'s runtime folder)", HINT)
    log = os.path.join(os.path.dirname(os.path.dirname(sock)), "podman-service.log")
    with open(log, "ab") as err:  # a file, not a pipe: the service outlives this process and keeps writing
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if os.path.exists(sock) and _answers(sock):
            return
        if proc.poll() is not None:
            said = open(log, "rb").read().decode(errors="replace").strip().splitlines()
            raise BugforgeError(f"podman system service exited: {said[-1] if said else proc.returncode}", HINT)
        time.sleep(0.2)
    raise BugforgeError(f"podman's API service did not answer on {sock} within {wait_s:.0f} s", HINT)


def _answers(sock: str) -> bool:
    try:
        docker.DockerClient(base_url=f"unix://{sock}", timeout=5).ping()
        return True
    except (docker.errors.DockerException, OSError):
        return False


@dataclass(frozen=True)
class Limits:
    """What the service enforces: which cgroup controllers it can use, and whether it runs rootless."""

    rootless: bool
    memory: bool
    pids: bool
    cpu: bool


def limits(api) -> Limits:
    """The service's Limits, from libpod's own info (the compat /info claims every limit works)."""
    info = api._result(api._get(api.base_url + "/v4.0.0/libpod/info"), json=True)["host"]
    have = set(info.get("cgroupControllers") or [])
    return Limits(bool(info["security"]["rootless"]), "memory" in have, "pids" in have, "cpu" in have)


def _hard(which: int, want: int) -> int:
    hard = resource.getrlimit(which)[1]
    return want if hard == resource.RLIM_INFINITY else min(want, hard)


KNOWN = {"detach", "init", "labels", "mem_limit", "memswap_limit", "nano_cpus", "pids_limit", "network_mode"}
KNOWN |= {"stop_signal", "user", "working_dir", "environment"}


def spec(image: str, command, kwargs: dict, lim: Limits) -> dict:
    """libpod's container spec for docker-py's containers.create(image, command, **kwargs) (the options bugforge
    uses: KNOWN; any other is refused, never dropped), with explicit rlimits (module docstring): nofile and nproc
    within this process's hard limits for a rootful service (a rootless one keeps its user's); memory as RLIMIT_DATA (private writable memory per process) where the
    service has no memory cgroup controller; without a pids or cpu controller those are not limited."""
    unknown = set(kwargs) - KNOWN
    if unknown or kwargs.get("network_mode", "none") != "none":
        raise BugforgeError(f"the podman backend does not map container options {sorted(unknown) or ['network_mode']}")
    sig = kwargs.get("stop_signal")
    out = {
        "image": image,
        "command": [command] if isinstance(command, str) else list(command or []) or None,
        "netns": {"nsmode": "none"},
        "labels": kwargs.get("labels") or {},
        "env": kwargs.get("environment") or {},
        "work_dir": kwargs.get("working_dir"),
        "user": kwargs.get("user"),
        "stop_signal": int(signal.Signals[sig]) if isinstance(sig, str) else sig,
        "init": bool(kwargs.get("init")),
    }
    res, mem, pids = {}, kwargs.get("mem_limit"), kwargs.get("pids_limit")
    rlimits = {}  # rootless: the service's own limits (its user's), within which runc can set any
    if not lim.rootless:  # rootful: Podman's defaults may exceed what runc may set; ours are safe
        rlimits = {"nofile": _hard(resource.RLIMIT_NOFILE, NOFILE), "nproc": _hard(resource.RLIMIT_NPROC, NPROC)}
    size = docker.utils.parse_bytes(mem) if isinstance(mem, str) else mem
    if size and lim.memory:
        res["memory"] = {"limit": size, "swap": size}
    elif size:
        rlimits["data"] = size
    if pids and lim.pids:  # else none: RLIMIT_NPROC would count podman's own conmons (docstring)
        res["pids"] = {"limit": pids}
    if kwargs.get("nano_cpus") and lim.cpu:
        res["cpu"] = {"quota": kwargs["nano_cpus"] // 10_000, "period": 100_000}
    out["resource_limits"] = res or None
    out["r_limits"] = [{"type": k, "soft": v, "hard": v} for k, v in rlimits.items()]
    return {k: v for k, v in out.items() if v is not None}


class PodmanContainers(ContainerCollection):
    """docker-py's containers, created through libpod's API from `spec` (Podman 4.3's compatible create ignores
    HostConfig.Ulimits); `run` creates through `create`, everything else is the compatible API's."""

    def create(self, image, command=None, **kwargs):
        api = self.client.api
        try:
            made = api._result(
                api._post_json(
                    api.base_url + "/v4.0.0/libpod/containers/create",
                    data=spec(image, command, kwargs, self.client.limits),
                ),
                json=True,
            )
        except docker.errors.APIError as e:  # libpod says "image not known" (a 404 or a 500), docker-py misses it
            if e.status_code == 404 or "image not known" in str(e.explanation or ""):
                raise docker.errors.ImageNotFound(str(e), response=e.response, explanation=e.explanation) from None
            raise
        return self.get(made["Id"])


class PodmanClient(docker.DockerClient):
    """A docker-py client for Podman's compatible API; `limits` are the service's (Limits)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.limits = limits(self.api)

    @property
    def containers(self) -> PodmanContainers:
        return PodmanContainers(client=self)


def connect(timeout: int = 300) -> PodmanClient:
    """A client for Podman's service at socket_path(), started first when nothing answers there."""
    sock = socket_path()
    if not (os.path.exists(sock) and _answers(sock)):
        start_service(sock)
    try:
        return PodmanClient(base_url=f"unix://{sock}", version="auto", timeout=timeout)
    except (docker.errors.DockerException, KeyError) as e:
        raise BugforgeError(f"podman's API at {sock} answers, but not as podman 4+ ({e})", HINT) from None
