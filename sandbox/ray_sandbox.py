"""The sandbox on a Ray cluster (`sandbox.connect(ray=ADDRESS)`; docs/scale.md): the interface of the
in-process Runtime and of SandboxClient (`create(image=..., instance_id=...)` -> a session with
run/read/write/edit/list/diff/submit/close; `close(session_id)`, `grade`, `shutdown()`), with every
session in a container on a node of the cluster.

`RaySandbox` starts `workers` long-lived actors, each needing one unit of the custom resource
`docker` (bugforge.cluster.RESOURCE), spread over the nodes, each holding one in-process Runtime on
its node. A new session goes to the actor with the fewest open sessions; its calls go to that actor
and return what the in-process session returns (RunResult, GradeResult, ...). A call on a session
whose actor died (its node lost) raises BugforgeError; the actor is restarted, empty, for new
sessions. Ray is imported only when a RaySandbox is made."""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Any

from bugforge.cluster import ClusterConfig
from bugforge.errors import BugforgeError

log = logging.getLogger("bugforge.sandbox")

HINT = "its node or actor was lost (see `ray status`); the session's container went with it"


class _SessionHost:
    """The body of an actor: one in-process Runtime on its node, its sessions by id."""

    def __init__(self, instances: dict[str, dict], config, images: list[str]):
        from bugforge.cluster import require_image
        from bugforge.sandbox.runtime import Runtime

        self.runtime, self.error = Runtime(config, instances), None
        try:
            for image in images:
                require_image(image)
        except BugforgeError as e:  # said by ready(), before any session
            self.error = e

    def ready(self) -> None:
        if self.error is not None:
            raise self.error

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def create(self, image: str | None, instance_id: str | None) -> dict:
        s = self.runtime.create(image=image, instance_id=instance_id)
        return {"id": s.id, "image": s.image, "user": s.user, "instance_id": s.instance_id}

    def call(self, session_id: str, method: str, args: tuple, kwargs: dict) -> Any:
        try:
            session = self.runtime.get(session_id)
        except KeyError:
            raise BugforgeError(f"session {session_id} is not on this actor any more", HINT) from None
        return getattr(session, method)(*args, **kwargs)

    def close(self, session_id: str) -> None:
        self.runtime.close(session_id)

    def grade(self, instance: dict, patch: str, timeout: float):
        from bugforge.sandbox.grader import grade_patch

        return grade_patch(instance, patch, timeout=timeout)

    def shutdown(self) -> None:
        self.runtime.shutdown()


class RaySession:
    """A session on an actor: the methods of runtime.Session, one Ray call each."""

    def __init__(self, box: RaySandbox, actor: int, info: dict):
        self._box, self.actor = box, actor
        self.id, self.image, self.user = info["id"], info["image"], info["user"]
        self.instance_id = info.get("instance_id")

    def _call(self, method: str, *args, **kwargs):
        return self._box._get(self._box.actors[self.actor].call.remote(self.id, method, args, kwargs), self.id)

    def run(self, command: str, timeout: float | None = None):
        return self._call("run", command, timeout)

    def read(self, path: str, max_bytes: int = 1 << 20) -> str:
        return self._call("read", path, max_bytes)

    def write(self, path: str, content: str) -> None:
        self._call("write", path, content)

    def edit(self, path: str, old: str, new: str) -> None:
        self._call("edit", path, old, new)

    def list(self, path: str = ".") -> list[dict]:
        return self._call("list", path)

    def diff(self) -> str:
        return self._call("diff")

    def submit(self):
        return self._call("submit")

    def close(self) -> None:
        self._box.close(self.id)


class RaySandbox:
    """Sessions on `workers` actors of the Ray cluster at `address`. Thread-safe."""

    def __init__(
        self,
        address: str,
        workers: int = 4,
        instances: dict[str, dict] | None = None,
        config=None,
        *,
        images: list[str] = (),
        concurrency: int = 64,
        cluster: ClusterConfig | None = None,
    ):
        """`images`: checked present on every actor's node before this returns (one clear error if not)."""
        from bugforge.cluster import connect

        cfg = cluster or ClusterConfig(address=address)
        self.ray = connect(address)
        from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

        self._raised, self._lost = RayTaskError, (RayActorError, WorkerCrashedError)
        Actor = self.ray.remote(_SessionHost).options(
            num_cpus=0,
            resources={cfg.resource: 1},
            max_restarts=-1,
            max_task_retries=0,
            max_concurrency=concurrency,  # the sessions of one actor run their commands at once
            scheduling_strategy="SPREAD",
        )
        self.actors = [Actor.remote(instances or {}, config, list(images)) for _ in range(max(1, workers))]
        self.open: dict[str, int] = {}  # session id (or a pending key while one starts) -> actor index
        self.lock = threading.Lock()
        self._seq = itertools.count()
        self.created = 0
        """Sessions made so far."""
        try:
            self._get([a.ready.remote() for a in self.actors])
        except BaseException:
            self.shutdown()
            raise

    def _get(self, ref, session_id: str | None = None):
        try:
            return self.ray.get(ref)
        except self._raised as e:  # the call raised on the node: raise what it raised
            if isinstance(e.cause, Exception):
                raise e.cause from None
            raise
        except self._lost:
            what = f"session {session_id}" if session_id else "a sandbox actor"
            raise BugforgeError(f"{what}: its Ray actor died", HINT) from None

    def _least_loaded(self) -> int:
        load = [0] * len(self.actors)
        for i in self.open.values():
            load[i] += 1
        return min(range(len(load)), key=load.__getitem__)

    def create(self, image: str | None = None, instance_id: str | None = None) -> RaySession:
        """A session on the actor with the fewest open sessions (those starting count)."""
        with self.lock:
            i, pending = self._least_loaded(), f"pending-{next(self._seq)}"
            self.open[pending] = i
        try:
            info = self._get(self.actors[i].create.remote(image, instance_id))
        finally:
            with self.lock:
                self.open.pop(pending, None)
        with self.lock:
            self.open[info["id"]] = i
            self.created += 1
        return RaySession(self, i, info)

    def close(self, session_id: str) -> None:
        """Close a session; one whose actor died is gone already."""
        with self.lock:
            i = self.open.pop(session_id, None)
        if i is None:
            return
        try:
            self._get(self.actors[i].close.remote(session_id), session_id)
        except BugforgeError:
            pass

    def sessions(self) -> list[dict]:
        with self.lock:
            return [{"id": s, "actor": i} for s, i in self.open.items() if not s.startswith("pending-")]

    def nodes(self) -> list[str]:
        """The node id of each actor."""
        return self._get([a.node.remote() for a in self.actors])

    def grade(self, instance: dict, patch: str, timeout: float = 600):
        """sandbox.grader.grade_patch, run on the node of the actor with the fewest open sessions."""
        with self.lock:
            i = self._least_loaded()
        return self._get(self.actors[i].grade.remote(instance, patch, timeout))

    def shutdown(self) -> None:
        """Close every session and end the actors."""
        from ray.exceptions import RayError

        with self.lock:
            self.open.clear()
        for a in self.actors:
            try:
                self.ray.get(a.shutdown.remote(), timeout=120)
            except (RayError, TimeoutError) as e:  # logged: the actor is killed either way
                log.warning(
                    "ray sandbox: an actor's shutdown failed: %s", str(e).splitlines()[0][:200] if str(e) else e
                )
            self.ray.kill(a, no_restart=True)
        self.actors = []
