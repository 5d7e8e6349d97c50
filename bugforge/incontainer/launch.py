"""Run pytest with the probe and collect its verdict (fresh containers and the exported eval_script):

    python -I -S launch.py [--user USER] REPORT -- PYTEST_ARG ...

Run as root in the tree. It makes the verdict channel (channel.py), starts the test process in a
process group of its own (start.py: no tree code before the grader's), as USER when given (the tree's
contents, not .git, are given to USER first), and writes the records it accepts to REPORT, a file of its
own. When the test process exits, every process of USER (of the group, without USER) is killed before
the last records are read, so nothing the run left behind can speak after it. Exits with the test
process's status. docs/security.md. Python 3.9, standard library only; run isolated (-I -S)."""

import os
import pwd
import signal
import sys

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]

from bugforge_incontainer.channel import ENV, Collector, pair  # noqa: E402
from bugforge_incontainer.guard import become, give_tree, kill_user  # noqa: E402
from bugforge_incontainer.start import command  # noqa: E402


def _child(theirs, pw, args):
    """In the forked child: a group of its own, USER, the channel's end, then the test interpreter."""
    try:
        os.setsid()
        if pw is not None:
            become(pw)
        os.set_inheritable(theirs.fileno(), True)
        os.environ[ENV] = str(theirs.fileno())
        os.execv(sys.executable, command(sys.executable, args))
    finally:
        os._exit(99)


def run(report, args, user=None):
    pw = pwd.getpwnam(user) if user else None
    if pw is not None:
        give_tree(pw, os.getcwd())
    mine, theirs = pair()
    pid = os.fork()
    if pid == 0:
        mine.close()
        _child(theirs, pw, args)
    theirs.close()
    collector = Collector(mine, report)
    collector.expect(pid)
    while True:
        collector.poll(0.02)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    if pw is not None:
        kill_user(pw.pw_uid, pw.pw_gid)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    collector.exited(code)
    collector.close()
    return code


def main(argv):
    user = None
    if argv[:1] == ["--user"]:
        user, argv = argv[1], argv[2:]
    if len(argv) < 2 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    return run(argv[0], argv[2:], user)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
