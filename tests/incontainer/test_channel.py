"""The verdict channel (bugforge/incontainer/channel.py) with real processes and real sockets: the
collector accepts records only from the process it started, only until its `finish`, each test's once
and after its `start`, and the process must exit with the status it reported."""

from __future__ import annotations

import json
import os

from bugforge.incontainer.channel import Collector, pair, send


def _collect(tmp_path, child_body):
    """Run `child_body(sock)` in a forked child holding the channel; return (records, tamper reasons)."""
    mine, theirs = pair()
    report = tmp_path / "report.jsonl"
    collector = Collector(mine, str(report))
    pid = os.fork()
    if pid == 0:
        mine.close()
        try:
            code = child_body(theirs) or 0
        except BaseException:
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


def _run(sock, *records):
    for r in records:
        send(sock, r)


START, PASSED = {"event": "start", "nodeid": "t::a"}, {"event": "test", "nodeid": "t::a", "outcome": "passed"}
FINISH = {"event": "finish", "exitstatus": 0}


def test_the_started_process_records_are_taken(tmp_path):
    records, tamper = _collect(tmp_path, lambda s: _run(s, START, PASSED, FINISH))
    assert [r["event"] for r in records] == ["start", "test", "finish"] and tamper == []


def test_a_record_from_another_process_is_tampering(tmp_path):
    def body(sock):
        child = os.fork()
        if child == 0:  # a process the test process started: its records are refused
            _run(sock, {"event": "test", "nodeid": "t::b", "outcome": "passed"})
            os._exit(0)
        os.waitpid(child, 0)
        _run(sock, START, PASSED, FINISH)

    records, tamper = _collect(tmp_path, body)
    assert "t::b" not in {r.get("nodeid") for r in records}
    assert len(tamper) == 1 and "not the test process" in tamper[0]


def test_late_twice_unstarted_and_wrong_exit_are_tampering(tmp_path):
    _, tamper = _collect(tmp_path, lambda s: _run(s, START, PASSED, FINISH, PASSED))
    assert tamper == ["a record arrived after the test session finished"]
    _, tamper = _collect(tmp_path, lambda s: _run(s, START, PASSED, PASSED, FINISH))
    assert tamper == ["t::a was reported twice"]
    _, tamper = _collect(tmp_path, lambda s: _run(s, PASSED, FINISH))
    assert tamper == ["t::a was reported without having started"]
    _, tamper = _collect(tmp_path, lambda s: _run(s, START, PASSED, FINISH) or 3)
    assert tamper == ["the test process exited with 3 after reporting 0"]
