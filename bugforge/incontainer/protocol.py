"""The test server's requests and responses: one JSON object a line each way, read and written through
these two types on both sides (the server in zygote.py, the host's bugforge.testing.workbench).

A field at its default is left out of the JSON, and a key left out reads as the default: an absent key
and a default value mean the same on both sides (a response's defaults are all None: it carries exactly
the fields the server set). Both types also read like the JSON object they are
(`resp["exit"]`, `resp.get("lost")`, `"exit" in resp`, `{**req, "after": ...}`), for callers that build
or read plain dicts; `Request.of` / `Response.of` take either. An unknown key is an error.
docs/test-server.md describes what each field does. Python 3.9, standard library only."""

import json
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Dict, List, Optional


class _Message(Mapping):
    """A dataclass that reads like its JSON object: the fields not at their default."""

    def to_dict(self):
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != _default(f)}

    def to_json(self):
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d):
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError("unknown fields in a %s: %s" % (cls.__name__, ", ".join(sorted(unknown))))
        return cls(**d)

    @classmethod
    def from_json(cls, line):
        return cls.from_dict(json.loads(line))

    @classmethod
    def of(cls, message):
        return message if isinstance(message, cls) else cls.from_dict(message)

    def __getitem__(self, key):
        return self.to_dict()[key]

    def __iter__(self):
        return iter(self.to_dict())

    def __len__(self):
        return len(self.to_dict())


def _default(f):
    return f.default_factory() if f.default is MISSING else f.default


@dataclass(eq=True)
class Request(_Message):
    """Each step is optional; they run in this order. A run (`args`) needs `report`; a preload, `log`; a
    guard, `out` (need() raises KeyError for a missing one, as reading the JSON object would)."""

    files: Dict[str, str] = field(default_factory=dict)  # {path: text}, written fresh as root
    before: str = ""  # shell, e.g. restoring the tree
    setup: str = ""  # shell, e.g. `git apply`; a non-zero status stops the request there
    capture: str = ""  # shell whose stdout comes back as `captured`
    args: Optional[List[str]] = None  # pytest arguments: a child runs pytest with the probe
    env: Dict[str, str] = field(default_factory=dict)  # the run's (or the preload's) environment
    cwd: str = "/testbed"
    timeout: float = 60  # seconds the run may take; then its process group is killed
    report: Optional[str] = None  # the probe's report; the run's log is this + ".log"
    user: Optional[str] = None  # run unprivileged as this user (after a guard request for it)
    hot: Optional[List[str]] = None  # changed .py files: swap their code into the preloaded modules
    after: str = ""  # shell, e.g. restoring the tree again
    preload: Optional[List[str]] = None  # pytest arguments: collect once in-process and hold the session
    log: Optional[str] = None  # the preload's log
    guard: Optional[str] = None  # the user whose later runs this server guards
    out: Optional[str] = None  # (guard) the directory of the runs' output, left out of the guarded places

    def need(self, name):
        value = getattr(self, name)
        if value is None:
            raise KeyError(name)
        return value


@dataclass(eq=True)
class Response(_Message):
    """What one request did. `lost` is the host's own: the server stopped answering."""

    ready: Optional[bool] = None  # the server's first line: it has imported pytest
    error: Optional[str] = None  # the request raised: "TYPE: MESSAGE"
    lost: Optional[str] = None
    preloaded: Optional[int] = None  # (preload) how many of the project's modules it imported
    held: Optional[bool] = None  # (preload) the server holds the collected session
    guarded: Optional[str] = None  # (guard) the user now guarded
    setup_rc: Optional[int] = None
    setup_log: Optional[str] = None  # (a failed setup) its output's tail
    captured: Optional[str] = None
    not_swappable: Optional[bool] = None  # (hot) the change cannot be swapped in: nothing ran
    exit: Optional[int] = None  # pytest's exit status (a negative signal number when killed)
    timed_out: Optional[bool] = None
    report: Optional[str] = None  # the probe's report, whole
    log: Optional[str] = None  # the tail of the run's (or the preload's) output
    tainted: Optional[List[str]] = None  # (guarded runs) changed places git does not restore
