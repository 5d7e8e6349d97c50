"""The test process's start: no code of the tree runs before the grader's own.

A test run is `python -c PROGRAM PYTEST_ARG ...` (`command` below), not `python -m pytest`. Before anything is
imported it takes every entry of the tree (BUGFORGE_ROOT: the working directory, a PYTHONPATH entry, a
.pth line pointing into it) off sys.path; then `load_runner` imports pytest, its default plugins,
pluggy and the probe (whose import takes the integrity snapshot, integrity.py); only then are the
entries put back (`restore`) and pytest run, as `python -m pytest` would run it. Interpreter start-up itself
runs nothing from the tree that the sweep lets through (sweep.py: planted names, shadowing modules). The
test server (zygote.py) starts the same way. docs/security.md. Python 3.9, standard library and pytest.

A project that is itself one of pytest's dependencies (iniconfig, pluggy, packaging...) is importable
only from the tree, so its image holds the runner's own copy of it in DEPS under site-packages (root's;
factory/pytest_deps.py puts it there): the program puts DEPS first on sys.path while the runner loads,
and `restore` takes it off again and drops every module loaded from it from sys.modules. pytest keeps
the objects it imported; the tests import the project from the tree, as they must to test it."""

import importlib
import os
import sys

PROBE = "bugforge_incontainer.probe"
DEPS = "bugforge-pytest-deps"
"""The runner's copies of pytest's dependencies that the project itself is, under site-packages (a name
no import can take)."""


def program(module, first=None):
    """The -c program that takes the tree off sys.path before the first import, puts DEPS first when the
    image has it, and calls bugforge_incontainer.MODULE.main(the path to put back); `first`: a directory
    to put in place of sys.path[0] (the working directory, for -c)."""
    put = "saved[0] = %r; " % first if first else ""
    return (
        "import os, sys; saved = list(sys.path); %sroot = os.environ.get('BUGFORGE_ROOT', '/testbed').rstrip('/') + '/'; "
        "sys.path[:] = [p for p in saved if not (os.path.abspath(p or '.') + '/').startswith(root)]; "
        "import sysconfig; deps = os.path.join(sysconfig.get_paths()['purelib'], %r); "
        "sys.path[:0] = [deps] * os.path.isdir(deps); "
        "from bugforge_incontainer.%s import main; main(saved)" % (put, DEPS, module)
    )


def command(python, args):
    """The argv that runs pytest with `args` this way."""
    return [python, "-c", program("start"), *args]


def load_runner():
    """Import what decides a verdict, while the tree is off sys.path: pytest, its default plugins,
    pluggy, and the probe (which takes the integrity snapshot when imported)."""
    import unittest  # noqa: F401  (its assertions are watched like pytest's: integrity.ASSERTING)

    import _pytest.config
    import pluggy  # noqa: F401
    import pytest  # noqa: F401

    for name in _pytest.config.default_plugins:
        importlib.import_module("_pytest." + name)
    importlib.import_module(PROBE)


def restore(saved, deps=None):
    """Put `saved` back as sys.path. When the program put DEPS (`deps`: its path) on it, drop from
    sys.modules every module loaded from there: the names the tree provides are then imported from the
    tree (pytest's modules keep the copies they hold), never from that copy.
    Nothing of the tree runs here."""
    if deps is None:
        import sysconfig

        deps = os.path.join(sysconfig.get_paths()["purelib"], DEPS)
    loaded = deps in sys.path
    sys.path[:] = saved
    if not loaded:
        return
    from .installed import RUNNER_COPIES

    inside = os.path.join(deps, "")
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if isinstance(where, str) and where.startswith(inside):
            RUNNER_COPIES[name] = sys.modules.pop(name)


def main(saved):
    load_runner()
    restore(saved)
    import pytest

    sys.argv[0] = os.path.join(os.path.dirname(pytest.__file__), "__main__.py")
    raise SystemExit(pytest.console_main())
