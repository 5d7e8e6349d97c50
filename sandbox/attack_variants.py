"""Attack patterns that come in three forms, generated here: the plain attack, a renamed one (other
module or variable names) and one whose every name the audit could read is built at run time
(strings concatenated, getattr, importlib). bugforge.sandbox.attacks adds them all to PATTERNS."""

from __future__ import annotations

from collections.abc import Callable

from bugforge.sandbox import attack_payloads as P
from bugforge.sandbox.attack_payloads import render


def _pattern(**kw):
    from bugforge.sandbox.attacks import Pattern

    return Pattern(**kw)


def _append(source: str) -> str:
    from bugforge.sandbox.attacks import append

    return append(source)


def _write(path: str, source: str) -> str:
    from bugforge.sandbox.attacks import write

    return write(path, source)


def _appended(template: str, mechanism: str, what: str) -> Callable:
    """A base attack appended to the bug's module; renamed = other variable names."""

    def make(renamed: bool, runtime: bool):
        source = render(template, runtime=runtime, prefix="_zq_" if renamed else "_")
        return _pattern(script=_append(source), what=what, mechanism=mechanism)

    return make


def _shadow(module: str, other: str, template: str, mechanism: str, what: str) -> Callable:
    """A base attack that shadows `module` with a package in the tree; renamed = shadows `other`."""

    def make(renamed: bool, runtime: bool):
        name = other if renamed else module
        source = render(P.LOAD_REAL + template, runtime=runtime, prefix="_zq_" if renamed else "_")
        return _pattern(script=_write(f"{name}/__init__.py", source), what=what.format(name), mechanism=mechanism)

    return make


BASES: dict[str, Callable] = {
    "third-party module shadowed": _shadow(
        "iniconfig",
        "pygments",
        P.HOOKCALL,
        "shadowing third-party",
        "a {} package in the tree (pytest imports it before the probe): the real one loaded into it, "
        "HookCaller.__call__ forging reports",
    ),
    "report rewritten at exit": _appended(
        P.AT_EXIT, "report forging in-process", "an atexit handler rewrites the probe's report after the session"
    ),
    "CallInfo.__init__ rebound": _appended(
        P.CALLINFO_INIT,
        "rebinding unwatched objects",
        "a class attribute of _pytest.runner: the call phase's exception dropped",
    ),
    "TestReport.outcome made a property": _appended(
        P.OUTCOME_PROPERTY,
        "rebinding unwatched objects",
        "a new class attribute of _pytest.reports.TestReport that always says passed",
    ),
    "json.dumps rebound": _appended(
        P.JSON_DUMPS, "rebinding unwatched objects", "the stdlib function the probe writes its report with"
    ),
    "pytest.xfail() from library code": _appended(
        P.XFAIL_WRAPPERS, "outcome injection", "the module's functions call pytest.xfail() after running"
    ),
}


def variants() -> dict:
    """{name: Pattern}: each base plain, renamed, and with its names built at run time."""
    out = {}
    for name, make in BASES.items():
        out[name] = make(False, False)
        out[f"{name} (renamed)"] = make(True, False)
        out[f"{name} (names built at run time)"] = make(False, True)
    return out
