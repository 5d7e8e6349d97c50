"""bugforge's pytest plugin, copied into every environment image at /opt/bugforge/bugforge_probe.py and
loaded with `-p bugforge_probe`. It runs inside the container, under the image's Python (3.9+): keep it
free of bugforge imports and of newer syntax.

It writes a structured report (JSON lines, appended as tests finish, so a killed run still tells
which tests finished and which one was running) and, when asked, a per-test coverage map built with
coverage.py dynamic contexts (one context per test node id).

Environment: BUGFORGE_REPORT (path of the JSONL report), BUGFORGE_COVERAGE (path of the coverage map
JSON; unset = no coverage), BUGFORGE_ROOT (source root, default /testbed), BUGFORGE_SELECT (a file of
node ids to run; unset = all collected).
"""
import json
import os
import time

import pytest

_report_path = os.environ.get("BUGFORGE_REPORT")
_cov_path = os.environ.get("BUGFORGE_COVERAGE")
_root = os.environ.get("BUGFORGE_ROOT", "/testbed")
_out = open(_report_path, "a", buffering=1) if _report_path else None
_cov = None
_results = {}
_current = [""]  # the node id of the test running now
_fixture_users = {}  # fixture name -> node ids of the tests that use it

if _cov_path:
    import coverage

    _cov = coverage.Coverage(data_file=None, config_file=False, source=[_root], branch=False)
    _cov.start()


def pytest_collection_modifyitems(session, config, items):
    """BUGFORGE_SELECT names a file of node ids: run exactly those (the rest are deselected)."""
    path = os.environ.get("BUGFORGE_SELECT")
    if not path:
        return
    with open(path) as f:
        wanted = set(line.rstrip("\n") for line in f if line.strip())
    keep = [i for i in items if i.nodeid in wanted]
    drop = [i for i in items if i.nodeid not in wanted]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def _emit(record):
    if _out is not None:
        _out.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _emit({"event": "start", "nodeid": item.nodeid, "t": time.time()})
    if _cov is not None:
        for name in getattr(item, "fixturenames", ()):
            _fixture_users.setdefault(name, []).append(item.nodeid)
        _cov.switch_context(item.nodeid)
    _current[0] = item.nodeid
    yield
    _current[0] = ""
    if _cov is not None:
        _cov.switch_context("")
    r = _results.pop(item.nodeid, None)
    if r is not None:
        _emit(r)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Lines run while setting up a fixture wider than one test belong to every test that uses it
    (they run once, in whichever test comes first); give them a context of their own."""
    wide = _cov is not None and fixturedef.scope != "function"
    if wide:
        _cov.switch_context("fixture:" + fixturedef.argname)
    yield
    if wide:
        _cov.switch_context(_current[0])


def pytest_runtest_logreport(report):
    r = _results.setdefault(report.nodeid, {"event": "test", "nodeid": report.nodeid, "outcome": "passed",
                                            "duration": 0.0, "message": ""})
    r["duration"] += report.duration
    wasxfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if wasxfail:
            r["outcome"] = "xpassed" if report.passed else "xfailed"
        elif report.skipped:
            r["outcome"] = "skipped"
        elif report.failed:
            r["outcome"] = "failed"
    elif report.failed and r["outcome"] in ("passed", "skipped"):
        r["outcome"] = "error"  # setup or teardown failed
    elif report.when == "setup" and report.skipped:
        r["outcome"] = "xfailed" if wasxfail else "skipped"
    if report.failed and not r["message"]:
        r["message"] = _message(report)


def pytest_collectreport(report):
    if report.failed:
        _emit({"event": "collect_error", "nodeid": report.nodeid, "message": _message(report)})


def _message(report):
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None:
        return "%s:%s: %s" % (os.path.relpath(crash.path, _root) if crash.path else "", crash.lineno, crash.message)
    return str(getattr(report, "longrepr", ""))[-2000:]


def pytest_sessionfinish(session, exitstatus):
    _emit({"event": "finish", "exitstatus": int(exitstatus)})
    if _cov is None:
        return
    _cov.stop()
    data = _cov.get_data()
    files, import_lines = {}, {}
    for path in data.measured_files():
        if not path.startswith(_root + "/"):
            continue
        rel = os.path.relpath(path, _root)
        by_line = data.contexts_by_lineno(path)
        lines = {str(n): sorted(c for c in ctx if c) for n, ctx in by_line.items()}
        lines = {n: c for n, c in lines.items() if c}
        if lines:
            files[rel] = lines
        # lines run outside any test (imports, collection): a change there can affect every test
        outside = sorted(n for n, ctx in by_line.items() if "" in ctx)
        if outside:
            import_lines[rel] = outside
    with open(_cov_path, "w") as f:
        json.dump({"files": files, "import_lines": import_lines, "fixtures": _fixture_users}, f)
