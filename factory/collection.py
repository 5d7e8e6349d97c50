"""Collecting a suite in an image (`pytest --collect-only`, no tests run, no network), and comparing two
collections: the repair loop keeps a step only when the collection after it is no worse (factory/repair.py,
docs/environments.md "Repair")."""

from __future__ import annotations

import io
import json
import re
import shlex
import tarfile
from dataclasses import dataclass, field

import docker.errors
import requests

from bugforge.engine import LABEL, client
from bugforge.records import Recipe
from bugforge.testing.tools import dir_archive, file_archive

COLLECT_DIR = "/tmp/bugforge-collect"
# A pytest plugin (Python 3.9+, standard library only) that writes the collected node ids and the
# collection errors; pytest's own console text is read only for what happens before plugins load.
COLLECTOR = f"""
import json
items, errors = [], {{}}
def pytest_collectreport(report):
    if report.failed:
        errors[report.nodeid] = str(report.longrepr)[-4000:]
def pytest_collection_finish(session):
    items.extend(i.nodeid for i in session.items)
def pytest_unconfigure(config):
    with open({COLLECT_DIR + "/collected.json"!r}, "w") as f:
        json.dump({{"items": items, "errors": errors}}, f)
"""


@dataclass
class Collection:
    """What `pytest --collect-only --continue-on-collection-errors` found in an image."""

    items: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """node id (a file or directory) -> the collection error's text."""
    log: str = ""
    """The console's last lines (startup failures happen before any plugin can report)."""
    timed_out: bool = False

    def files(self) -> set[str]:
        return {i.split("::")[0] for i in self.items}


def collect(image: str, recipe: Recipe, timeout: float) -> Collection:
    """Collect the suite of `image` as every run would (recipe.pytest_args, test_files), with no network."""
    args = ["--collect-only", "-q", "--continue-on-collection-errors", *recipe.pytest_args, *recipe.test_files]
    script = (
        f"cd /testbed && PYTHONPATH={COLLECT_DIR}${{PYTHONPATH:+:$PYTHONPATH}} PYTHONDONTWRITEBYTECODE=1 "
        f"python -m pytest -p bugforge_collect {' '.join(shlex.quote(a) for a in args)}"
    )
    c = client().containers.create(
        image, ["bash", "-c", script], network_mode="none", labels={LABEL: "testrun"}, working_dir="/testbed"
    )
    try:
        c.put_archive("/tmp", dir_archive(COLLECT_DIR.rsplit("/", 1)[1]))
        c.put_archive(COLLECT_DIR, file_archive("bugforge_collect.py", COLLECTOR.encode()))
        c.start()
        col = Collection()
        try:
            c.wait(timeout=timeout)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            col.timed_out = True
            c.kill()
        col.log = c.logs(tail=60).decode(errors="replace")
        try:
            stream, _ = c.get_archive(COLLECT_DIR + "/collected.json")
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                data = json.loads(tar.extractfile(tar.getmembers()[0]).read())
            col.items, col.errors = data["items"], data["errors"]
        except (docker.errors.NotFound, tarfile.TarError, ValueError, KeyError, IndexError, TypeError, AttributeError):
            pass  # no (whole) collected.json: pytest stopped before its session (a plugin or conftest failed to load)
        return col
    finally:
        c.remove(force=True)


def last_line(text: str) -> str:
    """The error's own line: the last non-empty line, without pytest's `E   ` prefix."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return re.sub(r"^E\s+", "", lines[-1])[:300] if lines else "unknown error"


def worse(before: Collection, after: Collection) -> str | None:
    """Why `after` is a worse collection than `before` (fewer tests; an error in a file that collected
    before; nothing collected and no error reported where something was), or None when it is not."""
    if len(after.items) < len(before.items):
        return f"{len(before.items)} tests collected before it, {len(after.items)} after"
    broken = sorted(n for n in after.errors if n.split("::")[0] in before.files())
    if broken:
        return f"{broken[0]} collected before it, now: {last_line(after.errors[broken[0]])}"
    if (before.items or before.errors) and not (after.items or after.errors):
        return f"the whole collection failed: {last_line(after.log)}"
    return None
