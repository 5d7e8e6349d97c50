"""The one way the in-container tools print into a grader's log (sweep.py, summary.py).

SWE-bench's harness finds its markers (`>>>>> Start Test Output`) anywhere in the log's text, not only
at a line's start, reads every line that starts with a status word as `STATUS node-id`, and parses the
whole log when the marked block yields no result. So every line these tools print is either a
diagnostic, `shown` text after a fixed prefix (`bugforge-sweep: `, `bugforge-tamper: `): one line with
no `>` and nothing a reader could take for a line break; or a status line whose node id is `plain`
(`status` prints any other id FAILED, escaped). Each line is one write (`say`): the harness reads
standard output and error as one stream, and a line split across two writes could take another
process's output into its middle. Standard library only, Python 3.9."""

import os
import traceback

MARK = ">>>>>"  # what every marker of the harness starts with
SWEPT, TAMPERED = "bugforge-sweep: ", "bugforge-tamper: "  # the diagnostics' prefixes


def shown(text):
    """`text` as one line that cannot pose as a result or a marker: every character that is not
    printable (line and record separators, controls, surrogates) and every `>` as its escape."""
    return "".join(c if c.isprintable() and c != ">" else ascii(c)[1:-1].replace(">", "\\x3e") for c in str(text))


def plain(nodeid):
    """Whether a node id may be printed as it is after a status word: printable, no whitespace (the
    parser splits on it: bugforge.testing.grading.usable) and no marker."""
    return bool(nodeid) and nodeid.isprintable() and not any(c.isspace() for c in nodeid) and MARK not in nodeid


def say(text, fd=1):
    """Write `text` and a newline in one write. The caller makes `text` one line (`shown`, `status`)."""
    data = (text + "\n").encode("utf-8", "backslashreplace")
    while data:  # a pipe takes a line this short whole; a short write is only a full disk's
        data = data[os.write(fd, data) :]


def status(passed, nodeid):
    """A result line: `PASSED id` only for a plain id that passed; `FAILED id` (escaped if not plain)."""
    if passed and plain(nodeid):
        return "PASSED %s" % nodeid
    return "FAILED %s" % (nodeid if plain(nodeid) else shown(nodeid))


def guarded(main, prefix, *args):
    """main(*args), with an error's traceback printed as `prefix` lines (Python's own would print a
    path or a name, with its `>`, as it is); exits 1 then."""
    try:
        return main(*args)
    except Exception:  # noqa: BLE001 (any error: its traceback, escaped, and exit 1)
        for line in traceback.format_exc().splitlines():
            say(prefix + shown(line), 2)
        return 1
