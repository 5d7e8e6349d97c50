"""The verdict channel (channel.py) and the monitor that holds it (monitor.py), with real processes and
real sockets: the collector accepts records only from the process it started, carrying the run's token
(which only the monitor has), only until its `finish`, each test's once and after its `start`; the
process must exit with the status it reported; the monitor sends only what the probe's emit gives it."""

from __future__ import annotations

import json
import os
import sys

from bugforge.incontainer import channel, monitor
from bugforge.incontainer.channel import Collector, pair


def _emit(record):  # stands for the probe's Report.emit: the only code the monitor takes records from
    sys.audit(monitor.RECORD, record)


def _collect(tmp_path, child_body):
    """Run `child_body(raw descriptor)` in a forked child that set up the monitor and the channel as the
    probe does; return (records, tamper reasons)."""
    mine, theirs = pair()
    report = tmp_path / "report.jsonl"
    collector = Collector(mine, str(report))
    pid = os.fork()
    if pid == 0:
        collector.forget()
        try:
            fd = theirs.detach()
            # the rest is pytest's (its engine client's pooled connections among them): a forgery that writes
            # to every descriptor must not reach them (it garbled the next API request: test_ownership's 400)
            os.closerange(3, fd)
            os.closerange(fd + 1, 1 << 16)
            codes = {monitor.RECORD: _emit.__code__, monitor.CHANNEL: channel.sender.__code__}
            # (this file stands for the probe's own; every file counts as installed)
            monitor.install(str(tmp_path), os.path.dirname(__file__) + "/", ("/",), codes)
            os.environ[channel.ENV] = str(fd)
            channel.sender()
            code = child_body() or 0
        except BaseException:  # noqa: BLE001 - a forked child must never return into pytest: any failure is exit 99
            code = 99
        os._exit(code)
    theirs.close()
    collector.expect(pid)
    _, status = os.waitpid(pid, 0)
    collector.poll(0.1)
    collector.exited(os.WEXITSTATUS(status))
    collector.close()
    records = [json.loads(line) for line in report.read_text().splitlines()]
    return [r for r in records if r["event"] != "tamper"], [r["reason"] for r in records if r["event"] == "tamper"]


def _run(*records):
    for r in records:
        for one in r if isinstance(r, tuple) else (r,):
            _emit(one)


START, FINISH = {"event": "start", "nodeid": "t::a"}, {"event": "finish", "exitstatus": 0}
PHASE = {"event": "phase", "nodeid": "t::a", "when": "call", "outcome": "passed", "wasxfail": False, "duration": 0.1}
PHASE.update(raised=False, failure=False)  # (what pytest's call of the phase did)
PASSED = (PHASE, {"event": "end", "nodeid": "t::a"})  # what the probe sends for a passing call


def test_the_started_process_records_are_taken(tmp_path):
    records, tamper = _collect(tmp_path, lambda: _run(START, PASSED, FINISH))
    assert [r["event"] for r in records] == ["start", "test", "finish"] and tamper == []
    assert records[1] == {"event": "test", "nodeid": "t::a", "outcome": "passed", "duration": 0.1, "message": ""}


def test_the_collector_folds_phases_and_holds_them_to_what_pytest_saw(tmp_path):
    raised = dict(PHASE, raised=True, failure=True)
    records, tamper = _collect(tmp_path, lambda: _run(START, raised, {"event": "end", "nodeid": "t::a"}, FINISH))
    assert tamper == ["t::a: its call raised, yet was reported passed"]
    skipped = dict(raised, outcome="skipped")
    records, tamper = _collect(tmp_path, lambda: _run(START, skipped, {"event": "end", "nodeid": "t::a"}, FINISH))
    assert tamper == ["t::a: its call raised, yet was reported skipped"]
    failed = dict(raised, outcome="failed", message="m")
    records, tamper = _collect(tmp_path, lambda: _run(START, failed, {"event": "end", "nodeid": "t::a"}, FINISH))
    assert tamper == [] and records[1]["outcome"] == "failed" and records[1]["message"] == "m"


def test_records_without_the_token_or_from_elsewhere_are_refused(tmp_path):
    def forge():
        """What code of the tree could do: write to every descriptor, send through the monitor itself."""
        for fd in range(3, 1 << 16):
            try:
                os.write(fd, json.dumps({"event": "start", "nodeid": "t::b"}).encode())
            except OSError:
                pass
        sys.audit(monitor.RECORD, {"event": "start", "nodeid": "t::c"})
        _run(START, PASSED, FINISH)

    records, tamper = _collect(tmp_path, forge)
    assert {r.get("nodeid") for r in records} == {"t::a", None}
    assert "a record came without the run's token (not from the probe)" in tamper
    assert "a record was sent from outside the probe" in tamper


def test_a_record_from_another_process_is_tampering(tmp_path):
    def body():
        child = os.fork()
        if child == 0:  # a process the test process started: its records are refused
            _run({"event": "start", "nodeid": "t::b"})
            os._exit(0)
        os.waitpid(child, 0)
        _run(START, PASSED, FINISH)

    records, tamper = _collect(tmp_path, body)
    assert "t::b" not in {r.get("nodeid") for r in records}


def test_late_twice_unstarted_and_wrong_exit_are_tampering(tmp_path):
    _, tamper = _collect(tmp_path, lambda: _run(START, PASSED, FINISH, PASSED))
    assert tamper == ["a record arrived after the test session finished"]  # (once, for its first record)
    _, tamper = _collect(tmp_path, lambda: _run(START, PASSED, PASSED, FINISH))
    assert tamper == ["t::a was reported twice"]
    _, tamper = _collect(tmp_path, lambda: _run(PASSED, FINISH))
    assert tamper == ["t::a was reported without having started"]
    _, tamper = _collect(tmp_path, lambda: _run(START, PASSED, FINISH) or 3)
    assert tamper == ["the test process exited with 3 after reporting 0"]


def test_a_phase_reported_again_keeps_its_failure(tmp_path):
    """A phase reported more than once (subtests) folds each: a failure is not undone by a later pass."""
    failed = dict(PHASE, outcome="failed", raised=True, failure=True)
    records, tamper = _collect(tmp_path, lambda: _run(START, failed, PHASE, {"event": "end", "nodeid": "t::a"}, FINISH))
    assert tamper == [] and records[1]["outcome"] == "failed"


def test_the_test_process_may_not_exec(tmp_path):
    def body():
        _run(START)
        try:
            os.execv(sys.executable, [sys.executable, "-c", "pass"])
        except PermissionError:
            pass
        _run(PASSED, FINISH)

    records, tamper = _collect(tmp_path, body)
    assert tamper == ["the test process tried to run another program in its place"]


def test_only_the_probes_kinds_of_record_are_taken_from_the_process(tmp_path):
    """A `test` record is the collector's own fold (round 21 sent signed passed ones, which the report's
    readers took as the last word); a kind the probe never sends is tampering too, not written through."""
    forged = {"event": "test", "nodeid": "t::a", "outcome": "passed", "duration": 0.1, "message": ""}
    records, tamper = _collect(tmp_path, lambda: _run(START, PASSED, forged, {"event": "note", "x": 1}, FINISH))
    assert [r["event"] for r in records] == ["start", "test", "finish"]
    assert tamper == [
        "the test process sent a record of a kind the probe never sends (test)",
        "the test process sent a record of a kind the probe never sends (note)",
    ]
