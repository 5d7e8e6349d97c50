"""factory/package_index.py: when a release was published (the index's upload time, else its sdist's
newest member mtime), and a release with wheels only."""

from __future__ import annotations

import json
import zipfile
from datetime import datetime, timedelta, timezone

import pytest

from bugforge.errors import BugforgeError
from bugforge.factory.fallbacks import period_date
from bugforge.factory.package_index import archive_time, release_time, sdist_from_index, wheels_only

MAR_1 = datetime(2021, 3, 1, tzinfo=timezone.utc)
FILES = {"PKG-INFO": "Name: dated\nVersion: 1.0\n", "dated.py": "X = 1\n", "tests/test_dated.py": "def test(): pass\n"}


def test_an_sdists_newest_member_mtime_is_its_build_time(tmp_path, sdist):
    """Placeholder times of reproducible builds (poetry-core 2's 1970, hatchling's 2020-02-02) and times in
    the future are not build times; a .zip sdist's times count as UTC; an archive with none gives None."""
    mtimes = {"PKG-INFO": 0, "dated.py": 1580601600, "tests/test_dated.py": MAR_1.timestamp() - 86400}
    got = archive_time(sdist(tmp_path / "dated-1.0.tar.gz", FILES, mtimes))
    assert got == MAR_1 - timedelta(days=1)
    future = {"dated.py": (datetime.now(timezone.utc) + timedelta(days=400)).timestamp()}
    assert archive_time(sdist(tmp_path / "later-1.0.tar.gz", FILES, future)) == MAR_1
    with zipfile.ZipFile(tmp_path / "dated-1.0.zip", "w") as z:
        z.writestr(zipfile.ZipInfo("dated-1.0/PKG-INFO", (2019, 5, 1, 12, 30, 0)), FILES["PKG-INFO"])
        z.writestr(zipfile.ZipInfo("dated-1.0/old.py", (1980, 1, 1, 0, 0, 0)), "")
    assert archive_time(tmp_path / "dated-1.0.zip") == datetime(2019, 5, 1, 12, 30, tzinfo=timezone.utc)
    only_placeholders = {name: 1580601600 for name in FILES}
    assert archive_time(sdist(tmp_path / "hatch-1.0.tar.gz", FILES, only_placeholders)) is None
    (tmp_path / "broken-1.0.tar.gz").write_bytes(b"not an archive")
    assert archive_time(tmp_path / "broken-1.0.tar.gz") is None


def test_a_release_of_the_last_recent_days_has_no_period_date(tmp_path, sdist):
    recent = {name: (datetime.now(timezone.utc) - timedelta(days=3)).timestamp() for name in FILES}
    when = archive_time(sdist(tmp_path / "new-1.0.tar.gz", FILES, recent))
    assert when is not None and period_date(when) is None
    assert period_date(MAR_1 + timedelta(hours=5, seconds=7)) == "2021-03-01T05:00:07Z"
    assert period_date(datetime(2021, 3, 1, 6, tzinfo=timezone(timedelta(hours=1)))) == "2021-03-01T05:00:00Z"


def test_the_index_upload_time_comes_before_the_archive(tmp_path, sdist, package_index, monkeypatch):
    """The index's PEP 700 upload-time of the sdist (not of a wheel, nor of another release) is the date;
    an index that gives none, or that cannot be reached, leaves the sdist's own build time."""
    archive = sdist(tmp_path / "dated-1.0.tar.gz", FILES)
    entry = lambda f, t: {"filename": f, "url": f"../../f/{f}", "hashes": {}, "upload-time": t}  # noqa: E731
    files = [
        entry("dated-1.0-py3-none-any.whl", "2022-01-01T00:00:00.000000Z"),
        entry("dated-1.0.tar.gz", "2021-03-04T05:06:07.123456Z"),
        entry("dated-1.1.tar.gz", "2023-01-01T00:00:00.000000Z"),
    ]
    routes = {"/simple/dated/": json.dumps({"meta": {"api-version": "1.1"}, "files": files}).encode()}
    package_index(routes)
    assert release_time("dated", "1.0", archive) == datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=timezone.utc)
    del files[1]["upload-time"]
    routes["/simple/dated/"] = json.dumps({"files": files}).encode()
    assert release_time("Dated", "1.0", archive) == MAR_1
    routes["/simple/dated/"] = b"<html>an index without the JSON API</html>"
    assert release_time("dated", "1.0", archive) == MAR_1
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens there
    assert release_time("dated", "1.0", archive) == MAR_1


TRITON_FILES = [  # triton's index entries: wheels of each release, never an sdist (fresh sample, issue 38)
    "triton-3.8.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "triton-3.9.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "triton-3.9.0-cp313-cp313-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
]


def test_a_release_with_wheels_only_is_one_not_applicable_line(tmp_path, package_index):
    assert wheels_only(TRITON_FILES, "triton", "3.9.0") and not wheels_only(TRITON_FILES, "triton", "3.10.0")
    both = ["python_docx-1.2.0-py3-none-any.whl", "python_docx-1.2.0.tar.gz"]
    assert not wheels_only(both, "python-docx", "1.2.0") and wheels_only(both[:1], "Python.Docx", "1.2.0")
    listing = json.dumps({"files": [{"filename": f, "url": f"../../f/{f}", "hashes": {}} for f in TRITON_FILES]})
    package_index({"/simple/triton/": listing.encode()})
    with pytest.raises(BugforgeError) as e:
        sdist_from_index("triton", "3.9.0", tmp_path)
    assert sdist_from_index("triton", "3.10.0", tmp_path) is None  # not listed at all: pip's error stands
    assert "\n" not in e.value.line() and "not a pure-Python project with an sdist" in e.value.what
    assert not list(tmp_path.iterdir())
