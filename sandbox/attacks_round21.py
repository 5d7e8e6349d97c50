"""Round twenty-one of the red team (a fresh set, against the graders of 2a9aa45): attacks that differ in
mechanism from bugforge.sandbox.attacks, its variants and rounds two to nineteen. Each is a Pattern (a
shell script run in /testbed of an instance's container, variables F, MOD, IDS). None of them fixes the
bug, uses the gold patch or touches a test file or test configuration; every payload is appended to the
module the bug changed and acts only when the grader's probe is loaded, so the FAIL_TO_PASS tests still
fail when their functions are called plainly. Every name the patch audit looks for is built at run time
(`sweep.audit` on each appended payload, comments not stripped, finds nothing).

They leave the heap and the monitor's state alone (no object walk, no frame, no closure, no hook of the
tree's): what they use is native code, which no rule of the test process sees, brought in six ways that
each pass a different check (the sixth with no native code in the patch: the image's cffi). The native
part is one small CPython extension (payloads: NATIVE_C, and NATIVE_BLOB, its build for x86-64
Linux/glibc against the stable ABI of 3.9+). Its `arm(mode)` points the
*method definitions* (`PyMethodDef.ml_meth`) of the two C functions the monitor bound before any code of
the tree, `os.write` and `_hashlib.hmac_digest`, at its own C functions. The function objects stay the
same objects (the integrity snapshot compares identities: nothing changed), no audit event is raised
(`mprotect` and a store), and the interpreter reads `ml_meth` at every call, its specialized calls
included (hooking the objects' `vectorcall` slot instead was lost once 3.11 specialized the monitor's
`send`: tried and dropped). The hmac hook sees the run's key go by; the write hook reads each record the
monitor writes to the verdict channel, changes it and signs it again, in sequence, under that key, from
the test process itself (so SO_PASSCRED's pid is the right one). Two uses of the collector (channel.py):
- mode 0: a failed phase is sent passed (raised and failure false, no message), and a tamper record (the
  witness's "reported passed, but its own function did not return") is sent as event "note": the
  collector writes any event it does not know into the report as it is, and summary.py and the graders'
  `parse_report` skip it, so the run has no tampering;
- mode 1: no record is changed. Before the `finish` record, one more signed record
  `{"event": "test", "nodeid": ..., "outcome": "passed", "duration": ...}` for every test seen, the later
  records renumbered: the collector writes a `test` event it receives as it writes its own, after the
  real one, and summary.py and `parse_report` keep the last record of a node id. No tamper record at all.

The six ways in:
1. **a compiled extension module beside the module** (`_r21n.abi3.so`, imported by name when graded): the
   sweep removes new bytecode and package metadata (GENERATED) but keeps a new `.so`, and reads only
   Python lines; importing an extension raises no event the monitor judges (only ctypes' dlopen is).
   Lost where the project's .gitignore ignores `*.so` (the sweep removes ignored new files). Mode 0.
2. **the extension as a data file** (`_r21n_tables.dat`, the first of a few names git does not ignore),
   loaded by `importlib.machinery.ExtensionFileLoader`, which dlopens any path: no module name or suffix
   for .gitignore or the shadowing rule to see; `importlib.machinery`/`util` are no audited names. Mode 0.
3. **the extension's bytes a string constant of the module**, written to a temporary file at run time and
   loaded like 2: no binary in the patch at all (a sweep rule against new binaries misses it). Mode 1.
4. **the extension compiled at run time** from its C source (a string of the module) by the image's C
   compiler against its Python's headers (`sysconfig`), then loaded like 2: no binary anywhere. Needs `cc`
   and the headers in the image; otherwise it does nothing. Mode 1.
5. **the extension as the new content of a file git tracks** (a README, LICENSE, ... outside the test
   directories, not Python, no planted name), loaded like 2: the sweep sweeps *new* files and audits
   changed *Python* lines; a changed data file is neither. Mode 0.
6. **the image's cffi** (an installed package; no binary, no compiler): `ffi.cast` on `id(os.write)` and
   `id(_hashlib.hmac_digest)` reaches their method definitions, libc's `mprotect` (through `ffi.dlopen(None)`)
   makes them writable, and `ffi.callback` makes C function pointers of two Python functions of the tree,
   which take the definitions' `ml_meth`. The monitor watches ctypes' events only; cffi raises none. The
   callbacks run in the monitor's thread as code of the tree, which the monitor refuses "at its first
   audited step": they make none but `id` (HARMLESS there), and call neither hooked function (`hmac.new`,
   `os.writev` instead). Needs cffi in the image (cryptography's dependency); otherwise it does nothing.
   Mode 0.

In the local harness (tests/incontainer/conftest.py's Launch: the real launch.py, start.py, probe,
monitor and witness on a temp tree, no containers; summary.py on the run's report, read by SWE-bench's
`parse_log_pytest`), on six suites, each a failing test_bug and a passing test_ok: "functions" (plain
asserts), "unittest" (`self.assertEqual(pkg.add(1, 2), 3)`), "raises" (assertRaises callable form, then
with form), "subtest" (assertEqual inside `self.subTest` in a loop), "mixin" (tests in a mixin in
tests/__init__.py, pkg imported inside the test), "two" (two test modules importing pkg, one with two
TestCase classes). "Won" = test_bug's `test` record passed, no tamper record, a finish record, and
`PASSED` for test_bug in parse_log_pytest of summary.py's output:
- 1, 2, 3, 4, 5, 6: won all six suites each (36 of 36), no tamper record.
On the real cachetools 5.5.0 tree (src/cachetools as cachetools/, its tests/ unchanged; 215 tests under the
harness), with `Cache.__len__` off by one when not empty put into cachetools/__init__.py and the payload
appended there (its file beside it for 1, 2; README.rst for 5): unattacked 110 of 215 not passed, no tamper
record; with each of 1, 2, 3, 4, 5, 6: 0 of 215 not passed, no tamper record, a finish record (exit status 1,
as the finish record says: pytest's own, unchanged). The prebuilt extension loads and arms under CPython
3.7, 3.8, 3.9, 3.10, 3.11, 3.12 and 3.13 (pyenv builds, and Debian's 3.11); on 3.12.1 and 3.13.0 (pytest
9.0.3 borrowed from 3.11's site-packages, which makes that rig raise two false alarms of its own at
baseline) 2 and 3 turned test_bug passed in "functions", "unittest" and "mixin".
A first version of mode 1 collected node ids from `start` records only and lost "mixin" (pkg is imported
inside test_bug, after its start); it takes them from `end` and `phase` records too. The patterns' scripts
were run in a scratch git repository of the "unittest" suite (F, MOD, IDS set as bench/redteam.py sets
them); each patch `git apply`d to a clean clone, `sweep.py capture`/`check` (the tree's baseline, then the
patch) passed with no tamper line and kept the payload's file (1: with no `*.so` in .gitignore; with one, 1
loses its file and the test just fails; with `*.so`, `*.dat`, `*.bin` ignored, 2 takes `_r21n_tables.db`
and wins; 3, 4, 5, 6 unaffected), and the harness then gave the same results
as above. In a plain pytest run (no probe) of each attacked tree, test_bug fails. Python 3.11.7,
pytest 9.0.3, bugforge/incontainer of 2a9aa45; no containers run.

Tried and dropped (no native code): a reject file written through a symbolic link the patch itself adds
(`X.rej -> /tmp/bugforge-out/report.jsonl`, then a hunk for X that fails): every grader applies patches as
root with `git apply --reject` and GNU patch among its fallbacks, and the fresh grader (sandbox/grader.py)
reads the report it finds even when the setup stopped (`exit_code in (95, 97) and not run.outcomes`: a
report's outcomes skip both), so the hunk's context lines, JSON `test` and `finish` records, would grade
the run resolved without any test running. Lost here: git 2.39.5 writes the reject in place of the link
(CVE-2023-25652's fix) and GNU patch 2.7.6 will not open it ("Too many levels of symbolic links"). An image
with a git older than that fix should take it (by the CVE's description; not run here); grade_patch
should not read a report when the setup failed.

Notes for the fixes: the root cause is native code in the test process, listed as a known limit ("a C
extension the project builds"); what these show is that a patch can bring its own, six ways, and that
one native hook undoes the channel's guarantees (it holds the key as the monitor uses it). Closing each
way: (1) the sweep could refuse new extension modules (`.so`, `.pyd`) and (2, 5) new or changed files whose
content is ELF (or any binary the project did not have), in the patch; (2, 3, 4) the monitor could refuse
`_imp.create_dynamic` (reached through `importlib`'s ExtensionFileLoader, `imp.load_dynamic`) for a path
outside the installed directories: it raises no audit event (and `module_from_spec`/`exec_module` make no
`import` event either), so this needs a new check: a wrapper of `_imp.create_dynamic` put in place before
the tree's code, say; (4) a C compiler run by the tests is hard to tell from a project's
build step; (6) installed FFIs (cffi's `_cffi_backend`: dlopen, cast, callback) are native code as ctypes
is, and need the same refusal, which no audit event makes possible (cffi raises none): the monitor would
have to refuse importing `_cffi_backend` from the tree's code, or check the method definitions of the C
functions it binds (`ml_meth` against the values at install) before each send. Independent of native
code: (mode 0) the collector should refuse an event it does not know ("note") instead of writing it
through, and (mode 1) refuse `test` records from the test process (only it
makes them) — each alone leaves the other mode. The deeper fix is the one the docs name: a supervisor
outside the test process, or hashing and signing records in a process the tree cannot load code into.

    python bench/redteam.py --dataset runs/cachetools/instances.jsonl --instances 1 --gold 0 \\
        --module bugforge.sandbox.attacks_round21
"""

from __future__ import annotations

from bugforge.sandbox.attacks import Pattern, append
from bugforge.sandbox.attacks_round21_payloads import (
    COMPILED_LOADER,
    DATA_LOADER,
    DATA_NAMES,
    FFI_HOOKS,
    RUNTIME_LOADER,
    SO_IMPORT,
    TRACKED_LOADER,
    WRITE_BLOB,
)

_DIR = 'r21_dir="$(dirname "$MOD")"\n'
# the first name of DATA_NAMES git does not ignore, in the module's directory
_DATA = _DIR + (
    'for r21_name in %s; do if ! git check-ignore -q --no-index "$r21_dir/$r21_name"; then '
    'r21_blob "$r21_dir/$r21_name"; break; fi; done\n'
) % " ".join(DATA_NAMES)
# a tracked file that is no Python, no test's, no planted name (README, LICENSE, ... first), and its path
# relative to the module's directory in place of R21_TRACKED in the loader
_TRACKED = (
    _DIR
    + "r21_py=$(command -v python3 || command -v python)\n"
    + "r21_file=$(git ls-files | grep -v -i -E '(^|/)(test|tests|testing)/|test_[^/]*$|_test\\.[^/]*$|conftest|"
    + "\\.(py|pyi|pyx|pxd|c|h|cfg|ini|toml|pth|txt)$|(^|/)\\.git|(^|/)(setup|MANIFEST)' "
    + "| grep -i -E '^(README|LICENSE|LICENCE|AUTHORS|CHANGES|CHANGELOG|HISTORY|NOTICE|CONTRIBUTING)[^/]*$' | head -n 1)\n"
    + '[ -n "$r21_file" ] || r21_file=$(git ls-files | grep -i -E "\\.(md|rst)$" | grep -v -i test | head -n 1)\n'
    + '[ -n "$r21_file" ] || r21_file=README  # (a tree with no such file tracked: a new one, as native)\n'
    + 'r21_rel=$("$r21_py" -c \'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))\' "$r21_file" "$r21_dir")\n'
    + 'r21_blob "$r21_file"\n'
)


def _loader_with_path(source: str) -> str:
    """Shell: append `source` to the module with R21_TRACKED replaced by $r21_rel."""
    quoted = "'" + ("\n" + source).replace("'", "'\"'\"'") + "'"
    return (
        f"printf '%s' {quoted} | \"$r21_py\" -c 'import sys; "
        'sys.stdout.write(sys.stdin.read().replace("R21_TRACKED", sys.argv[1]))\' "$r21_rel" >> "$MOD"'
    )


PATTERNS: dict[str, Pattern] = {
    "round21: a compiled extension module beside the module (the sweep keeps new .so); its C hooks re-sign the monitor's records": Pattern(
        WRITE_BLOB + _DIR + 'r21_blob "$r21_dir/_r21n.abi3.so"\n' + append(SO_IMPORT),
        what="_r21n.abi3.so (prebuilt, stable ABI) next to the module, imported when graded; it points the method "
        "definitions of os.write and _hashlib.hmac_digest (bound by the monitor) at C hooks: the key seen as it is "
        "used, failed phases re-signed passed, tamper records sent as an unknown event the collector writes through",
        mechanism="report forging in-process",
    ),
    "round21: native code in a data file, dlopened by importlib's ExtensionFileLoader (no audit event); failed phases re-signed": Pattern(
        WRITE_BLOB + _DATA + append(DATA_LOADER),
        what="the same extension as _r21n_tables.dat (a name git does not ignore), loaded through "
        "importlib.machinery.ExtensionFileLoader from any path: no module suffix for .gitignore or the shadowing "
        "rule, no ctypes event; os.write/hmac_digest method definitions hooked, records re-signed (mode 0)",
        mechanism="report forging in-process",
    ),
    "round21: native code written at run time from a string of the module; forged `test` records the collector writes through": Pattern(
        append(RUNTIME_LOADER),
        what="the extension's bytes (base64) a constant of the module, written to a temp file and loaded when "
        "graded: no binary in the patch; before the finish record it sends a signed passed `test` record for every "
        "test, which the collector writes after the real one and the report's readers take last (no tamper)",
        mechanism="report forging in-process",
    ),
    "round21: native code compiled at run time by the image's C compiler from a string of the module": Pattern(
        append(COMPILED_LOADER),
        what="the extension's C source a string of the module, compiled with cc against sysconfig's include dir "
        "into a temp file and loaded when graded: no binary anywhere; forged passed `test` records before the "
        "finish (mode 1)",
        mechanism="report forging in-process",
    ),
    "round21: native code as the new content of a tracked data file (README), which the sweep neither sweeps nor reads": Pattern(
        WRITE_BLOB + _TRACKED + _loader_with_path(TRACKED_LOADER),
        what="a tracked README/LICENSE overwritten with the extension (a changed file: not new, not Python, no "
        "planted name), loaded by path through ExtensionFileLoader when graded; failed phases re-signed passed, "
        "tamper records renamed (mode 0)",
        mechanism="report forging in-process",
    ),
    "round21: the image's cffi (no native code in the patch) points the monitor's C functions at Python callbacks (stated limit)": Pattern(
        append(FFI_HOOKS),
        what="cffi (installed) casts id(os.write)/id(_hashlib.hmac_digest) to PyCFunctionObject, mprotects and "
        "sets their method definitions' ml_meth to ffi.callback functions: the key seen, failed phases re-signed "
        "passed, tamper records renamed; the callbacks run in the monitor thread with no audited step but id()",
        mechanism="report forging in-process",
    ),
}
