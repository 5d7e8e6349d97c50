"""Ray as the engine of fan-out jobs (`--ray ADDRESS`; docs/scale.md). Ray is imported here, lazily,
only when a job is given an address: without one nothing of Ray is loaded.

`fan_out` runs `call(worker, item)` for every item on long-lived actors, each holding one `worker`
(made once by `make()` on its node: a warm Workbench, a grader) and each needing one unit of the
custom resource RESOURCE, which only nodes with a Docker engine advertise (`ray start --resources
'{"docker": N}'`). It yields `(key, result)` once per key, on the driver, which writes the records
itself: a call whose actor or node was lost is run again on another actor, and a result for a key
already yielded is dropped, so nothing is lost or duplicated."""

from __future__ import annotations

import collections
import logging
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bugforge.errors import BugforgeError

RESOURCE = "docker"
log = logging.getLogger("bugforge.cluster")


@dataclass
class ClusterConfig:
    """How a job uses a Ray cluster."""

    address: str | None = None
    """`auto` (the running cluster this machine belongs to), `ray://HOST:10001`, or HOST:PORT; None: no Ray."""
    resource: str = RESOURCE
    """The custom resource a worker actor needs one unit of (nodes with a Docker engine advertise it)."""
    attempts: int = 3
    """Runs of one item at most when its actor dies under it (a lost node, an out-of-memory kill)."""


def connect(address: str):
    """ray, initialised against the cluster at `address` (once per process)."""
    try:
        import ray
    except ImportError:
        raise BugforgeError("--ray needs Ray", "pip install 'bugforge[ray]'") from None
    if not ray.is_initialized():
        hint = "start one with `ray start --head`, or pass --ray auto on a node of a running cluster"
        host, _, port = address.rpartition(":")
        if host and port.isdigit() and "://" not in address:  # Ray itself would retry for minutes
            try:
                socket.create_connection((host, int(port)), timeout=10).close()
            except OSError as e:
                raise BugforgeError(f"no Ray cluster answers at {address} ({e.strerror or e})", hint) from None
        try:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        except (ConnectionError, RuntimeError) as e:
            raise BugforgeError(f"no Ray cluster at {address!r} ({str(e).splitlines()[0][:160]})", hint) from None
    return ray


class _Host:
    """The body of a worker actor: holds one worker, made on its node, and runs calls on it."""

    def __init__(self, make: Callable[[], Any], image: str | None, refs: Sequence[str] = ()):
        self.worker, self.error = None, None  # a worker that cannot start says why at its first call
        self.pulled: set[str] = set()
        try:
            if image:
                require_image(image, refs)
            self.worker = make()
        except Exception as e:  # noqa: BLE001 - kept and raised at the first call (an actor whose __init__ raises is restarted forever)
            self.error = e

    def call(self, fn: Callable[[Any, Any], Any], item: Any) -> Any:
        if self.error is not None:
            raise self.error
        self.pull_for(item)
        return fn(self.worker, item)

    def pull_for(self, item: Any) -> None:
        """Pull the images of the dataset rows in `item` (a row, or a tuple holding rows) that this node
        lacks and a registry has (a pushed dataset's rows: docs/scale.md); images that name no registry
        are left to the call, which reports them as before."""
        from bugforge.images.registry import dataset_images, ensure

        rows = [item] if isinstance(item, dict) else []
        if isinstance(item, tuple):
            rows = [x for x in item if isinstance(x, dict)]
        for name, ref in dataset_images(rows):
            if ref and name not in self.pulled:
                ensure(name, [ref], where=f"node {socket.gethostname()}")
                self.pulled.add(name)

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def close(self) -> None:
        close = getattr(self.worker, "close", None)
        if close:
            close()


def require_image(image: str, refs: Sequence[str] = ()) -> None:
    """Image `image` on this node: present, or pulled (by its own name when it names a registry, else
    from the first of `refs`, then tagged `image`); one line naming the image and the node if neither."""
    from bugforge.images.registry import ensure

    ensure(image, refs, where=f"node {socket.gethostname()}")


def fan_out(
    address: str,
    make: Callable[[], Any],
    call: Callable[[Any, Any], Any],
    items: Iterable[tuple[str, Any]],
    *,
    workers: int,
    image: str | None = None,
    config: ClusterConfig | None = None,
) -> Iterator[tuple[str, Any]]:
    """`(key, call(worker, item))` for each `(key, item)`, as results land, each key once. `workers`
    actors (spread over the nodes that have the resource) each hold `make()` and run one item at a time.
    `make` and `call` travel to the nodes by pickle: module-level functions or partials of them.
    `image` must be on each actor's node; a node without it pulls it from a registry reference this
    engine knows for it (`bugforge images push` records them), else the actor fails with one line. An
    item that is a dataset row, or a tuple holding rows, has its rows' registry images pulled on the node
    first (a pushed dataset: docs/scale.md)."""
    cfg = config or ClusterConfig(address=address)
    ray = connect(address)
    pending = collections.deque(items)
    if not pending:
        return
    job = _FanOut(ray, cfg, make, call, pending, workers, image)
    try:
        yield from job.results()
    finally:
        job.close()


_RETRY = object()  # a call whose actor died: run again


class _FanOut:
    """One fan_out: its actors, the calls running on them, and how often each key was tried."""

    def __init__(self, ray, cfg: ClusterConfig, make, call, pending: collections.deque, workers: int, image):
        from bugforge.images.registry import local_refs

        self.ray, self.cfg, self.pending = ray, cfg, pending
        Actor = ray.remote(_Host).options(
            num_cpus=0, resources={cfg.resource: 1}, max_restarts=-1, max_task_retries=0, scheduling_strategy="SPREAD"
        )
        self.fn = ray.put(call)
        refs = local_refs(image) if image else []  # where the nodes can pull it from (a push recorded them)
        self.actors = [Actor.remote(make, image, refs) for _ in range(max(1, min(workers, len(pending))))]
        self.running: dict[Any, tuple[Any, str, Any]] = {}  # object ref -> (actor, key, item)
        self.tries: collections.Counter = collections.Counter()
        self.seen: set[str] = set()

    def submit(self, actor) -> None:
        while self.pending:
            key, item = self.pending.popleft()
            if key not in self.seen:
                self.running[actor.call.remote(self.fn, item)] = (actor, key, item)
                self.tries[key] += 1
                return

    def results(self) -> Iterator[tuple[str, Any]]:
        for a in self.actors:
            self.submit(a)
        while self.running:
            ready, _ = self.ray.wait(list(self.running), num_returns=1)
            actor, key, item = self.running.pop(ready[0])
            result = self._get(ready[0], key, item)
            if result is not _RETRY and key not in self.seen:
                self.seen.add(key)
                yield key, result
            self.submit(actor)  # (a dead actor: Ray restarts it, on another node if its own is gone)

    def _get(self, ref, key: str, item: Any) -> Any:
        """The call's result; _RETRY (the item queued again) when its actor or node died under it."""
        from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

        try:
            return self.ray.get(ref)
        except RayTaskError as e:  # the call raised: the worker's fault, not the node's
            if isinstance(e.cause, BugforgeError):
                raise e.cause from None
            raise
        except (RayActorError, WorkerCrashedError):  # the actor (or its node) died: run it again
            if self.tries[key] >= self.cfg.attempts:
                raise BugforgeError(f"{key}: its worker died {self.tries[key]} times", "see `ray status`") from None
            self.pending.appendleft((key, item))
            return _RETRY

    def close(self) -> None:
        """Close each actor's worker (a failure is logged: it must not mask the job's own result), then kill it."""
        from ray.exceptions import RayError

        for a in self.actors:
            try:
                self.ray.get(a.close.remote(), timeout=60)
            except (RayError, TimeoutError) as e:
                log.warning("fan_out: closing a worker failed: %s", str(e).splitlines()[0][:200] if str(e) else e)
            self.ray.kill(a)
