"""The grading sweep, run inside the container after a patch is applied and before tests run, by every
grader (fresh, warm, the exported eval_script). docs/security.md states the rules and their limits.

    python -I -S sweep.py capture MANIFEST                  (before the patch: the baseline)
    python -I -S sweep.py reset MANIFEST                    (undo a failed try at applying it)
    python -I -S sweep.py check MANIFEST COMMIT [TEST_FILE ...]   (after it)

`capture` records every file git does not track (ignored ones too) with its hash, and git's own control
files. `check` restores from COMMIT every tracked test file, every file under a test directory, every
test configuration and planted name, and every .gitignore/.gitattributes; removes new files with a
planted name, new bytecode, new package metadata, new files under a test directory and new files git
ignores; then audits what the patch still changes and checks its new modules for shadowing. Anything
it cannot undo (git control files changed, a baseline untracked file changed or removed, a new
symbolic link, a new git repository inside the tree) or that reaches test machinery is tampering: it prints one
`bugforge-tamper: REASON` line each and exits 95. Every line it prints goes through lines.py: a fixed
prefix and the escaped text (a path or a link's target is the patch's to name). Standard library only,
Python 3.9, run isolated (-I -S) so nothing the patch planted in the tree or on sys.path runs first."""

import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import tokenize

if __package__:  # imported (the host's tests)
    from .lines import SWEPT, TAMPERED, guarded, say, shown
else:  # run as a script: -I puts no script's directory on sys.path (as launch.py)
    sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    from bugforge_incontainer.lines import SWEPT, TAMPERED, guarded, say, shown  # noqa: E402

TAMPER = 95
TEST_DIRS = frozenset(("test", "tests", "testing"))  # (directories whose modules the witness compiles as tests')
GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false"]
# names that change how Python or pytest start, or that pytest and the graders take for tests, wherever they are
PLANTED = re.compile(
    r"(^|/)(conftest\.py|sitecustomize\.py|usercustomize\.py|[^/]*\.pth|\.?pytest\.ini|pytest\.toml|\.pytest\.toml"
    r"|tox\.ini|setup\.cfg|pyproject\.toml|\.gitignore|\.gitattributes"
    # files named like tests: pytest collects them and the graders trust their code as the tests'
    r"|test_[^/]*\.py|[^/]*_test\.py)$"
)
# what Python or a test runner reads without it being source: bytecode and installed-package metadata
GENERATED = re.compile(r"(^|/)(__pycache__/|[^/]*\.pyc$|[^/]*\.pyo$|[^/]*\.(egg|dist)-info(/|$)|[^/]*\.egg-link$)")
GIT_CONTROL = ("config", "HEAD", "info", "hooks", "commondir", "gitdir")
# modules the test runner imports (some only when present) besides the standard library and site-packages
RUNNER_NAMES = {
    "pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "exceptiongroup", "tomli", "colorama", "pygments",
    "argcomplete", "coverage", "xdist", "bugforge_incontainer", "sitecustomize", "usercustomize",
}  # fmt: skip
MODULE_FILE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\.[A-Za-z0-9_-]+)*\.(py|pyw|so|pyd)$")
# added code in non-test files that reaches test machinery or the interpreter's own plumbing
AUDIT = [
    (
        re.compile(r"\b_pytest\b|\bpytest_[a-z_]+\s*\(|\bhookimpl\b|\bhookwrapper\b|\bpluginmanager\b"),
        "pytest internals",
    ),
    (re.compile(r"\bTestReport\b|\bCallInfo\b|\bruntestprotocol\b|\bcall_and_report\b"), "pytest reports"),
    (re.compile(r"\bsys\s*\.\s*modules\b"), "sys.modules"),
    (re.compile(r"\b__builtins__\b|\bimport\s+builtins\b|\bbuiltins\s*\."), "builtins"),
    (re.compile(r"\bmeta_path\b|\bpath_hooks\b|\bpath_importer_cache\b|\bimportlib\s*\.\s*abc\b"), "import hooks"),
    (re.compile(r"\bsettrace\b|\bsetprofile\b|\b_getframe\b|\bcurrentframe\b|\bf_back\b|\bf_locals\b"), "frames"),
    (re.compile(r"\bos\s*\.\s*_exit\b|\batexit\b|\bfaulthandler\b"), "exit hooks"),
    (re.compile(r"\bgc\s*\.\s*get_(objects|referrers|referents)\b|\bctypes\b"), "object walking"),
    (re.compile(r"(?<![\w.])(exec|eval|compile)\s*\(|\b__import__\b|\bimport_module\b"), "dynamic code"),
    (
        re.compile(r"\b__(code|globals|closure|subclasses|builtins)__\b|\bf_globals\b|\btb_frame\b|\bgi_frame\b"),
        "code objects",
    ),
    (re.compile(r"(^|;)\s*(import\s+gc\b|from\s+gc\s+import\b)|\b_current_frames\b"), "object walking"),
    (re.compile(r"/proc/self/fd|/proc/\d+/fd|\bfromfd\b"), "the process's descriptors"),
    (re.compile(r"bugforge|BUGFORGE_|PYTEST_CURRENT_TEST|PYTEST_ADDOPTS|PYTEST_PLUGINS"), "the grader's environment"),
]


def _git(*args, check=True):
    out = subprocess.run(GIT + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and out.returncode:
        say(SWEPT + shown("git %s failed: %s" % (" ".join(args), out.stderr.decode(errors="replace"))), 2)
        raise SystemExit(1)
    return out.stdout


def _untracked():
    """Every file git does not track, ignored ones too (nothing excluded)."""
    return [p for p in _git("ls-files", "-o", "-z").decode("utf-8", "surrogateescape").split("\0") if p]


def _digest(path):
    if os.path.islink(path):
        return "link:" + os.readlink(path)
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 16), b""):
                h.update(block)
    except OSError as e:
        return "unreadable:%s" % e.errno
    return h.hexdigest()


def _git_control():
    """git's own files that decide what git runs and ignores: config, HEAD, info/, hooks/."""
    out = {}
    for name in GIT_CONTROL:
        path = os.path.join(".git", name)
        if os.path.isdir(path) and not os.path.islink(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for f in sorted(files):
                    p = os.path.join(root, f)
                    out[p] = _digest(p)
        elif os.path.lexists(path):
            out[path] = _digest(path)
    return out


def capture(manifest):
    lines = ["u\t%s\t%s" % (_digest(p), p) for p in sorted(_untracked())]
    lines += ["g\t%s\t%s" % (d, p) for p, d in sorted(_git_control().items())]
    os.makedirs(os.path.dirname(manifest) or ".", exist_ok=True)
    with open(manifest, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write("\n".join(lines) + "\n")


def _read(manifest):
    untracked, control = {}, {}
    with open(manifest, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            kind, digest, path = line.rstrip("\n").split("\t", 2)
            (untracked if kind == "u" else control)[path] = digest
    return untracked, control


def dirs_of_tests(test_files):
    """The directories whose tracked files belong to the tests: each test file's shallowest ancestor
    named test* (tests/, testing/); a test file beside source code adds no directory."""
    out = set()
    for f in test_files:
        parts = f.split("/")[:-1]
        named = [i for i, p in enumerate(parts) if p.lower().startswith("test")]
        if named:
            out.add("/".join(parts[: named[0] + 1]))
    return out


def _restore(commit, test_files):
    tracked = [
        p
        for p in _git("ls-tree", "-r", "-z", "--name-only", commit).decode("utf-8", "surrogateescape").split("\0")
        if p
    ]
    dirs = dirs_of_tests(test_files)
    wanted = set(test_files)
    for p in tracked:
        if PLANTED.search(p) or any(p.startswith(d + "/") for d in dirs):
            wanted.add(p)
    wanted &= set(tracked)
    paths = sorted(wanted)
    for i in range(0, len(paths), 500):  # a path the patch made a directory or a link: checkout replaces it
        _git("checkout", "-q", "-f", commit, "--", *paths[i : i + 500])


def _ignored(paths):
    if not paths:
        return set()
    data = "\0".join(paths).encode("utf-8", "surrogateescape") + b"\0"
    out = subprocess.run(
        GIT + ["check-ignore", "--no-index", "-z", "--stdin"],
        input=data,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if out.returncode > 1:  # (git's message may name a path)
        say(SWEPT + shown("git check-ignore failed: %s" % out.stderr.decode(errors="replace")), 2)
    return {p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p}


def _added_lines(path, new):
    """The lines the patch adds to `path` (all of a new file's), as (line number, text)."""
    if new:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return list(enumerate(f.read().split("\n"), 1))  # (universal newlines: Python's own lines)
        except OSError:
            return []
    diff = _git("diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--", path, check=False)
    out, line = [], 0
    for text in diff.decode("utf-8", "replace").split("\n"):  # (git's lines: str.splitlines breaks at U+001C too)
        hunk = re.match(r"@@ -\S+ \+(\d+)", text)
        if hunk:
            line = int(hunk.group(1))
        elif text.startswith("+") and not text.startswith("+++"):
            out.append((line, text[1:]))
            line += 1
    return out


def _comments(path):
    """{line number: column where its comment starts}, read as Python tokens: a '#' in a string is no
    comment. None when the file does not read as Python (then every line is read whole)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            tokens = list(tokenize.generate_tokens(io.StringIO(f.read()).readline))
    except (OSError, SyntaxError, tokenize.TokenError, ValueError):
        return None
    return {t.start[0]: t.start[1] for t in tokens if t.type == tokenize.COMMENT}


def audit(changes, test_files, comments=None):
    """{path: [(line number, added line)]} -> the reasons a change to non-test Python reaches test
    machinery. `comments`: {path: what _comments gives} (read from the tree when not given)."""
    dirs = dirs_of_tests(test_files)
    reasons = []
    for path, lines in sorted(changes.items()):
        if not path.endswith(".py") or path in test_files or any(path.startswith(d + "/") for d in dirs):
            continue
        marks = (comments or {}).get(path) if comments is not None else _comments(path)
        for number, line in lines:
            code = line[: marks[number]] if marks and number in marks else line
            for pattern, what in AUDIT:
                if pattern.search(code):
                    reasons.append("%s reaches %s: %s" % (path, what, line.strip()[:120]))
                    break
    return reasons


def outside_names(root):
    """Top-level module names importable from outside the tree: the standard library, site-packages
    (and directories .pth files there name), built-in modules, and the runner's own (RUNNER_NAMES)."""
    names = set(sys.builtin_module_names) | set(getattr(sys, "stdlib_module_names", ())) | RUNNER_NAMES
    paths = sysconfig.get_paths()
    dirs = [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
    dirs.append(os.path.join(paths.get("platstdlib", ""), "lib-dynload"))
    for site in (paths.get("purelib"), paths.get("platlib")):
        for pth in _listdir(site):
            if pth.endswith(".pth"):
                dirs += [line.strip() for line in _read_lines(os.path.join(site, pth)) if line.startswith("/")]
    root = os.path.abspath(root).rstrip("/") + "/"
    for d in dirs:
        if (os.path.abspath(d).rstrip("/") + "/").startswith(root):
            continue
        for entry in _listdir(d):
            m = MODULE_FILE.match(entry)
            if m:
                names.add(m.group(1))
            elif "." not in entry and os.path.isdir(os.path.join(d, entry)):
                names.add(entry)
    return names


def _listdir(d):
    try:
        return os.listdir(d) if d else []
    except OSError:
        return []


def _read_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def shadowing(new_files, names):
    """The new modules and packages whose top-level import name is one of `names`: a new file whose
    directory is no package (any directory can be on sys.path: pytest puts test directories there), and
    a new package (or namespace directory) whose parent is none."""
    out = []
    for path in sorted(new_files):
        parts = path.split("/")
        m = MODULE_FILE.match(parts[-1])
        if m and not os.path.exists(os.path.join(*(parts[:-1] or ["."]), "__init__.py")) and m.group(1) in names:
            out.append("%s is a new module named %s, which shadows the module of that name" % (path, m.group(1)))
        for i in range(1, len(parts)):
            package, parent = "/".join(parts[:i]), "/".join(parts[: i - 1]) or "."
            if parts[i - 1] in names and not os.path.exists(os.path.join(parent, "__init__.py")):
                if not _tracked_under(package):
                    out.append(
                        "%s is a new package named %s, which shadows the module of that name" % (package, parts[i - 1])
                    )
                break
    return sorted(set(out))


def _tracked_under(directory):
    return bool(_git("ls-files", "--", directory, check=False).strip())


def check(manifest, commit, test_files):
    untracked, control = _read(manifest)
    now_control = _git_control()
    tamper = ["git's own file %s changed" % p for p in sorted(set(control) | set(now_control))
              if control.get(p) != now_control.get(p)]  # fmt: skip
    if tamper:  # git itself cannot be trusted to restore anything now
        return tamper
    refused = _refused_additions([p for p in _untracked() if p not in untracked])
    if refused:
        return refused
    _restore(commit, test_files)
    now = _untracked()  # again: a restore can replace a directory the patch made where a tracked file was
    new = [p for p in now if p not in untracked]
    for p in sorted(set(untracked) - set(now)):
        tamper.append("removed %s, which git does not track" % p)
    for p in now:
        if p in untracked and _digest(p) != untracked[p]:
            tamper.append("changed %s, which git does not track" % p)
    kept = _sweep_new(new, test_files)
    changed = _git("diff", "--name-only", "-z", "--no-renames", check=False).decode("utf-8", "surrogateescape")
    changes = {p: _added_lines(p, False) for p in changed.split("\0") if p}
    changes.update({p: _added_lines(p, True) for p in kept})
    tamper += ["the patch brings native code: %s" % p for p in sorted(changes) if _native(p)]
    return tamper + shadowing(kept, outside_names(os.getcwd())) + audit(changes, test_files)


def _native(path):
    """Whether a file is a native executable or library (ELF: what the loader maps, whatever its name;
    round 21 loaded one named as data, and one written over a tracked README)."""
    try:
        with open(path, "rb") as f:
            return not os.path.islink(path) and f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _refused_additions(new):
    """What of the new untracked paths `new` stops the sweep before git restores anything."""
    links = [p for p in new if os.path.islink(p)]
    if links:  # a link can stand in for a directory git would restore through
        return ["added a symbolic link %s -> %s" % (p, os.readlink(p)) for p in links]
    # git lists a repository inside the tree as one entry and shows none of its files
    return ["added a git repository inside the tree at %s" % p for p in new if p.endswith("/")]


def _sweep_new(new, test_files):
    """Remove the new files no patch may add (planted, generated, ignored, under a test directory: the
    tests are the instance's, as committed); the others, kept."""
    ignored = _ignored(new)
    test_dirs = dirs_of_tests(test_files)
    kept = []
    for p in new:  # (a directory named like a test directory anywhere: the witness compiles its modules as tests')
        named = not TEST_DIRS.isdisjoint(p.split("/")[:-1])
        if (
            PLANTED.search(p)
            or GENERATED.search(p)
            or p in ignored
            or named
            or any(p.startswith(d + "/") for d in test_dirs)
        ):
            os.remove(p)
            say(SWEPT + shown("removed %s" % p))
        else:
            kept.append(p)
    return kept


def reset(manifest):
    """Back to the index and the baseline's untracked files: undo a failed try at applying a patch."""
    untracked, _ = _read(manifest)
    _git("checkout", "-q", "-f", "--", ".")
    for p in _untracked():
        if p not in untracked and not p.endswith("/"):
            os.remove(p)


def main(argv):
    if len(argv) >= 2 and argv[0] in ("capture", "reset"):
        (capture if argv[0] == "capture" else reset)(argv[1])
        return 0
    if len(argv) >= 3 and argv[0] == "check":
        if not os.path.exists(argv[1]):
            say(TAMPERED + shown("no baseline manifest %s (export the instance again)" % argv[1]))
            return TAMPER
        reasons = check(argv[1], argv[2], argv[3:])
        for r in reasons:
            say(TAMPERED + shown(r))
        return TAMPER if reasons else 0
    for line in __doc__.splitlines():
        say(SWEPT + shown(line), 2)
    return 2


if __name__ == "__main__":
    sys.exit(guarded(main, SWEPT, sys.argv[1:]))
