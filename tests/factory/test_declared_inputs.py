"""What bugforge reads from a project's own files without running it: setup.cfg's requirement lists
(split as setuptools splits them), the repository an sdist names. Pure functions on real projects'
lines; no engine."""

from __future__ import annotations

import configparser

from bugforge.factory import project_files
from bugforge.factory.declarations import base_requirements, extras
from bugforge.factory.project_files import code_repository, repository_in, setup_cfg_list

# stack-data 0.6.3's setup.cfg, as its sdist ships it (fresh sample, issue 38)
STACK_DATA_CFG = """[metadata]
name = stack_data

[options]
packages = stack_data
install_requires =
\texecuting>=1.2.0
\tasttokens>=2.1.0
\tpure_eval
setup_requires = setuptools>=44; setuptools_scm[toml]>=3.4.3
include_package_data = True
tests_require = pytest; typeguard; pygments; littleutils

[options.extras_require]
tests = pytest; typeguard; pygments; littleutils; cython
"""


def _cfg(text: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    cp.read_string(text)
    return cp


def test_one_line_setup_cfg_list_is_split_at_semicolons(tmp_path):
    cfg = _cfg(STACK_DATA_CFG)
    assert setup_cfg_list(cfg["options.extras_require"]["tests"]) == [
        "pytest",
        "typeguard",
        "pygments",
        "littleutils",
        "cython",
    ]
    assert project_files.tests_require(tmp_path, cfg) == ["pytest", "typeguard", "pygments", "littleutils"]
    (found,) = extras(tmp_path, {}, cfg)
    assert (found.name, found.requirements) == ("tests", ("pytest", "typeguard", "pygments", "littleutils", "cython"))
    assert base_requirements(tmp_path, {}, cfg) == ["executing>=1.2.0", "asttokens>=2.1.0", "pure_eval"]


def test_a_marker_survives_on_its_own_line_and_not_on_one_line(tmp_path):
    """setuptools' rule: text with a newline is one entry a line (`;` then starts a PEP 508 marker); a
    one-line value is split at every `;`, so its "marker" becomes an entry that is not a requirement."""
    cfg = _cfg('[options]\ntests_require =\n    pytest\n    mock; python_version < "3.3"\n    # a comment\n')
    assert setup_cfg_list(cfg["options"]["tests_require"]) == ["pytest", 'mock; python_version < "3.3"']
    one_line = 'importlib-metadata; python_version < "3.8"'
    assert setup_cfg_list(one_line) == ["importlib-metadata", 'python_version < "3.8"']
    assert project_files.tests_require(tmp_path, _cfg(f"[options]\ntests_require = {one_line}\n")) == [
        "importlib-metadata"
    ]


def test_a_file_directive_reads_the_files_inside_the_project(tmp_path):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "test.txt").write_text("pytest>=7\n# pinned\nhypothesis; python_version >= '3.9'\n")
    (tmp_path.parent / "outside.txt").write_text("evil\n")
    value = "file: requirements/test.txt, missing.txt, ../outside.txt"
    assert setup_cfg_list(value, tmp_path) == ["pytest>=7", "hypothesis; python_version >= '3.9'"]


# loguru 0.7.3's PKG-INFO, its URL headers as the sdist ships them (fresh sample, issue 38)
LOGURU_PKG_INFO = """Metadata-Version: 2.3
Name: loguru
Version: 0.7.3
Project-URL: Changelog, https://github.com/Delgan/loguru/blob/master/CHANGELOG.rst
Project-URL: Documentation, https://loguru.readthedocs.io/en/stable/index.html
Project-URL: Homepage, https://github.com/Delgan/loguru
"""


def test_the_repository_is_chosen_by_label_not_by_the_first_code_host_url():
    assert repository_in(LOGURU_PKG_INFO) == "https://github.com/Delgan/loguru"
    source_first = LOGURU_PKG_INFO + "Project-URL: Source Code, https://gitlab.com/grp/sub/loguru/-/tree/main\n"
    assert repository_in(source_first) == "https://gitlab.com/grp/sub/loguru"
    docs_home = (
        "Name: x\nProject-URL: Homepage, https://x.rtfd.io\nProject-URL: Issues, https://github.com/o/x/issues\n"
    )
    assert repository_in(docs_home) == "https://github.com/o/x"  # no labelled one: any code-host URL, cut
    assert repository_in("Name: x\nHome-page: http://github.com/o/x/\n") == "https://github.com/o/x"
    assert repository_in("Name: x\nProject-URL: Documentation, https://x.rtfd.io\n") is None


def test_code_host_web_urls_are_cut_to_the_repository_root():
    assert code_repository("https://github.com/o/r/tree/v1.0/src?x=1#top") == "https://github.com/o/r"
    assert code_repository("https://bitbucket.org/o/r/issues") == "https://bitbucket.org/o/r"
    assert code_repository("https://gitlab.com/g/r/blob/main/README.md") == "https://gitlab.com/g/r"
    assert code_repository("https://git.example/o/r/tree/x") == "https://git.example/o/r/tree/x"
