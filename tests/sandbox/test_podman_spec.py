"""bugforge.podman.spec, engine-free: how docker-py's create options become libpod's container spec for a rootless
service without cgroup controllers (cgroups v1) and for one with them (rootful). The real service's behaviour is
tests/sandbox/test_podman_backend.py's."""

from __future__ import annotations

import pytest

from bugforge.errors import BugforgeError
from bugforge.podman import Limits, spec

OPTIONS = dict(
    network_mode="none", mem_limit="1g", memswap_limit="1g", nano_cpus=2 * 10**9, pids_limit=256,
    labels={"bugforge": "session"}, working_dir="/testbed", stop_signal="SIGKILL", init=False, detach=True,
)  # fmt: skip


def test_rootless_without_controllers_limits_memory_by_rlimit_only():
    s = spec("img", ["sleep", "infinity"], OPTIONS, Limits(rootless=True, memory=False, pids=False, cpu=False))
    assert s["r_limits"] == [{"type": "data", "soft": 2**30, "hard": 2**30}]  # no nproc: podman's own count
    assert "resource_limits" not in s
    assert (s["netns"], s["stop_signal"], s["work_dir"], s["labels"]) == (
        {"nsmode": "none"}, 9, "/testbed", {"bugforge": "session"},
    )  # fmt: skip


def test_rootful_uses_cgroups_and_explicit_rlimits():
    s = spec("img", "true", OPTIONS, Limits(rootless=False, memory=True, pids=True, cpu=True))
    assert s["resource_limits"] == {
        "memory": {"limit": 2**30, "swap": 2**30}, "pids": {"limit": 256}, "cpu": {"quota": 200_000, "period": 100_000},
    }  # fmt: skip
    assert {r["type"] for r in s["r_limits"]} == {"nofile", "nproc"} and s["command"] == ["true"]


def test_options_it_does_not_map_are_refused():
    with pytest.raises(BugforgeError, match="does not map"):
        spec("img", None, {"privileged": True}, Limits(True, False, False, False))
    with pytest.raises(BugforgeError, match="network_mode"):
        spec("img", None, {"network_mode": "host"}, Limits(True, False, False, False))
