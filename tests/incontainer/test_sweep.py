"""The sweep's static rules (bugforge/incontainer/sweep.py) on real files in a real git repository: the
audit reads Python tokens (a '#' in a string is no comment), and a new module or package named like one
importable from outside the tree (the standard library, site-packages, the runner) is shadowing."""

from __future__ import annotations

import os
import subprocess
import sys

from bugforge.incontainer.sweep import _comments, audit, dirs_of_tests, outside_names, shadowing


def test_audit_reads_tokens_not_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/core.py").write_text(
        'x = "#"; import gc\n'  # a '#' in a string hides nothing after it
        "y = 1  # sys.modules in a comment is fine\n"
        's = """\n# not a comment: sys.modules\n"""\n'
        "pattern = re.compile(r'a')\n"  # a method named compile is not the builtin
        "z = compile('1', 'f', 'eval')\n"
    )
    lines = list(enumerate((tmp_path / "pkg/core.py").read_text().splitlines(), 1))
    reasons = audit({"pkg/core.py": lines}, [])
    flagged = [r.split(": ", 1)[1] for r in reasons]
    assert flagged == ['x = "#"; import gc', "# not a comment: sys.modules", "z = compile('1', 'f', 'eval')"]


def test_audit_leaves_tests_alone_and_reads_unparsable_files_whole(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text("def f(:\n    return 1  # sys.modules\n")
    assert _comments("bad.py") is None
    changes = {"bad.py": [(2, "    return 1  # sys.modules")], "tests/helpers.py": [(1, "import _pytest.runner")]}
    assert len(audit(changes, ["tests/test_core.py"])) == 1


def test_new_modules_shadowing_outside_names_are_flagged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = outside_names(str(tmp_path))
    assert {"json", "os", "pytest", "_pytest", "pluggy", "bugforge_incontainer"} <= names
    for d in ("pkg", "tests", "src/newpkg"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "pkg/__init__.py").write_text("")
    new = {
        "json.py": "",  # a top-level stdlib name
        "tests/pluggy.py": "",  # a directory pytest puts on sys.path
        "pkg/json.py": "",  # inside a package: pkg.json, no shadowing
        "src/newpkg/ok.py": "",
        "_pytest/__init__.py": "",  # a new package named like the runner's
        "mylib_helpers.py": "",
    }
    for path, text in new.items():
        os.makedirs(tmp_path / os.path.dirname(path) if os.path.dirname(path) else tmp_path, exist_ok=True)
        (tmp_path / path).write_text(text)
    found = shadowing(list(new), names)
    assert [r.split(" is a new ")[0] for r in found] == ["_pytest", "json.py", "tests/pluggy.py"]


def test_test_directories_are_the_shallowest_named_test():
    assert dirs_of_tests(["tests/unit/test_a.py", "src/pkg/testing/test_b.py", "test_root.py", "src/test_c.py"]) == {
        "tests",
        "src/pkg/testing",
    }


def test_added_lines_are_numbered_as_python_and_git_number_them(tmp_path, monkeypatch):
    """A line holding U+001C and a forged hunk header, or a form feed, does not shift the line numbers
    the audit matches comments by (str.splitlines breaks at both; git and Python do not)."""
    from bugforge.incontainer.sweep import _added_lines

    monkeypatch.chdir(tmp_path)
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    (tmp_path / "core.py").write_text("a = 1\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (tmp_path / "core.py").write_text("a = 1\nb = '\x1c@@ -1 +900 @@'\n\x0c\nimport gc  # x\n")
    added = _added_lines("core.py", False)
    assert [n for n, _ in added] == [2, 3, 4]
    assert added[-1] == (4, "import gc  # x")
    assert audit({"core.py": added}, []) == audit({"core.py": [(4, "import gc  # x")]}, [])
    assert audit({"core.py": added}, [])


def test_native_code_in_the_patch_is_tampering(tmp_path, monkeypatch):
    """Round 21: an extension module beside the module, the same bytes under a data file's name, and a
    tracked README overwritten with them; what is not native (text, an empty file) is not flagged."""
    from bugforge.incontainer.sweep import _native

    monkeypatch.chdir(tmp_path)
    elf = open(os.path.realpath(sys.executable), "rb").read(64)  # (an ELF header: the loader's magic)
    for name, data in {
        "pkg/_n.abi3.so": elf,
        "pkg/tables.dat": elf,
        "README": elf,
        "a.py": b"x = 1\n",
        "e": b"",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    assert [p for p in ("pkg/_n.abi3.so", "pkg/tables.dat", "README", "a.py", "e", "missing") if _native(p)] == [
        "pkg/_n.abi3.so",
        "pkg/tables.dat",
        "README",
    ]


def test_new_files_under_any_directory_named_like_tests_are_removed(tmp_path, monkeypatch):
    """The witness compiles every module of a directory named test/tests/testing as the tests' own (a
    mixin's), so a patch may add none there, wherever it is (round 22 shipped a helper as pkg/testing/)."""
    from bugforge.incontainer.sweep import _sweep_new

    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q"], check=True)
    new = ["pkg/testing/_aid.py", "pkg/tests/x.py", "pkg/core_testing.py", "pkg/util.py"]
    for p in new:
        (tmp_path / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / p).write_text("x = 1\n")
    assert _sweep_new(new, ["tests/test_a.py"]) == ["pkg/core_testing.py", "pkg/util.py"]
    assert not (tmp_path / "pkg/testing/_aid.py").exists()
