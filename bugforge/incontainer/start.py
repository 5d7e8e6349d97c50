"""The test process's start: no code of the tree runs before the grader's own.

A test run is `python -c PROGRAM PYTEST_ARG ...` (`command` below), not `python -m pytest`. Before anything is
imported it takes every entry of the tree (BUGFORGE_ROOT: the working directory, a PYTHONPATH entry, a
.pth line pointing into it) off sys.path; then `load_runner` imports pytest, its default plugins,
pluggy and the probe (whose import takes the integrity snapshot, integrity.py); only then are the
entries put back and pytest run, as `python -m pytest` would run it. Interpreter start-up itself runs
nothing from the tree that the sweep lets through (sweep.py: planted names, shadowing modules). The
test server (zygote.py) starts the same way. docs/security.md. Python 3.9, standard library and pytest."""

import importlib
import os
import sys

PROBE = "bugforge_incontainer.probe"


def program(module, first=None):
    """The -c program that takes the tree off sys.path before the first import and calls
    bugforge_incontainer.MODULE.main(the path to put back); `first`: a directory to put in place of
    sys.path[0] (the working directory, for -c)."""
    put = "saved[0] = %r; " % first if first else ""
    return (
        "import os, sys; saved = list(sys.path); %sroot = os.environ.get('BUGFORGE_ROOT', '/testbed').rstrip('/') + '/'; "
        "sys.path[:] = [p for p in saved if not (os.path.abspath(p or '.') + '/').startswith(root)]; "
        "from bugforge_incontainer.%s import main; main(saved)" % (put, module)
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


def main(saved):
    load_runner()
    sys.path[:] = saved
    import pytest

    sys.argv[0] = os.path.join(os.path.dirname(pytest.__file__), "__main__.py")
    raise SystemExit(pytest.console_main())
