"""Fixtures of the factory's tests: fixture repositories (mini, deco), their environments (built once
per package or module), `edit`, a hand-written candidate, and `sdist` and `package_index`: a release and the index serving it."""

from __future__ import annotations

import http.server
import io
import tarfile
import textwrap
import threading
from pathlib import Path

import pytest

from bugforge.factory import build_environment
from bugforge.records import Candidate
from bugforge.testing.patches import changed_lines, file_diff, patch_id

MINI = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "mini"
        version = "0.1"
        requires-python = ">=3.9"
        [project.optional-dependencies]
        test = ["pytest"]
        """,
    "src/mini/__init__.py": """
        def f(x):
            y = x + 1
            return y * 2


        def g(x):
            return x - 1


        def h(x):
            return x * 10
        """,
    "tests/test_shared.py": """
        import pytest

        from mini import h


        @pytest.fixture(scope="module")
        def ten():
            return h(1)


        def test_uses_ten(ten):
            assert ten == 10


        def test_uses_ten_too(ten):
            assert ten + 1 == 11
        """,
    "tests/test_mini.py": """
        from mini import f, g


        def test_f():
            assert f(1) == 4


        def test_g():
            assert g(1) == 0


        def test_constant():
            assert 2 + 2 == 4
        """,
}


@pytest.fixture(scope="session")
def mini_files() -> dict[str, str]:
    """The mini fixture repository's files (copy before changing them)."""
    return dict(MINI)


def _edit(repo: Path, path: str, old: str, new: str, strategy="manual") -> Candidate:
    text = (repo / path).read_text()
    assert old in text
    after = text.replace(old, new, 1)
    patch = file_diff(path, text, after)
    return Candidate(patch_id(patch), strategy, patch, [path], {path: sorted(changed_lines(text, after))}, "f")


@pytest.fixture(scope="session")
def edit():
    """`edit(repo, path, old, new, strategy="manual")`: the candidate replacing `old` (once) by `new`."""
    return _edit


@pytest.fixture(scope="session")
def environment_of(base_image, tmp_path_factory, git_repo):
    """`environment_of(name, files)`: the environment of a fixture repository, built from a fresh git repo."""

    def build(name: str, files: dict[str, str]):
        root = tmp_path_factory.mktemp(name)
        git_repo(root / name, files)
        env, _ = build_environment(str(root / name), out=root / "runs", log=lambda m: None)
        return env

    return build


@pytest.fixture(scope="package")
def calc_env(environment_of, calc_files):
    """The calc repository's environment, shared by the factory's tests (none of them changes it)."""
    return environment_of("calc", calc_files)


# --- the preloaded test server: function bodies swapped in place of a re-import ----------------------

DECO = {
    "setup.py": "from setuptools import setup, find_packages\nsetup(name='deco', packages=find_packages())\n",
    "deco/__init__.py": "",
    "deco/core.py": """
        import functools
        import sys

        REGISTRY = {}


        def logged(f):
            @functools.wraps(f)
            def wrapper(*a):
                return f(*a)
            return wrapper


        def register(f):
            REGISTRY[f.__name__] = f
            return f


        @logged
        def double(x):
            return x * 2


        @register
        def triple(x):
            return x * 3


        class Base:
            def name(self):
                return "base"


        class Child(Base):
            def name(self):
                return "child:" + super().name()


        def make_adder(n, extra=0):
            def add(x):
                return x + n + extra
            return add


        ADD2 = make_adder(2)


        def scale(x, factor=10, *, offset=0):
            return x * factor + offset


        class Greeter:
            def greet(self, name, punct="!"):
                return "hi " + name + punct

            @staticmethod
            def shout(s, times=2):
                return s.upper() * times


        def late(x, k=1):
            return x + k


        late.__defaults__ = (5,)  # set at import: a changed literal would not change it


        class Counter:
            def __init__(self):
                self.n = 0

            def bump(self):
                self.n += 1
                return self.n

            def where(self):
                return sys._getframe().f_lineno


        COUNTER = Counter()  # __init__ runs at import


        class Maker(object):
            @classmethod
            def make(cls):
                return cls()

            def spare(self):
                return 1


        MADE = Maker.make()  # looked up at import
        """,
    "deco/lazy.py": """
        FACTOR = 3


        def scaled(x):
            return x * FACTOR
        """,
    "deco/extra.py": "LOADED = True\n",
    # collected first: a later test depends on the import its collection did (a selected run collects
    # what the whole suite collects, or test_collected_first fails there alone)
    "tests/test_aaa.py": "import deco.extra\n\n\ndef test_extra():\n    assert deco.extra.LOADED\n",
    "tests/test_zzz.py": "import sys\n\n\ndef test_collected_first():\n    assert 'deco.extra' in sys.modules\n",
    # a test that leaves ignored files behind, and fails if one is there: every run must start without
    # them, in an ignored directory that was there at the start (its collection made it) too; and one
    # that removes a file its module's collection wrote (untracked, not ignored): a held session's runs
    # do not collect, so every run must start with that file as collection left it
    ".gitignore": "*.mark\nstash/\n",
    "tests/test_zzz_mark.py": (
        "import os\n\nos.makedirs('stash', exist_ok=True)\n"
        "with open('tests/made.txt', 'w') as f:\n    f.write('42')\n\n\n"
        "def test_leaves_an_ignored_file():\n"
        "    open('run.mark', 'x').close()\n    open('stash/run.mark', 'x').close()\n\n\n"
        "def test_takes_a_file_collection_made():\n"
        "    with open('tests/made.txt') as f:\n        assert f.read() == '42'\n"
        "    os.remove('tests/made.txt')\n"
    ),
    "tests/test_core.py": """
        from deco.core import ADD2, MADE, REGISTRY, Child, Counter, Greeter, double, late, scale


        def test_double():
            assert double(2) == 4


        def test_triple():
            assert REGISTRY["triple"](2) == 6


        def test_child():
            assert Child().name() == "child:base"


        def test_add2():
            assert ADD2(1) == 3


        def test_scale():
            assert scale(2) == 20 and scale(2, offset=1) == 21


        def test_greet():
            assert Greeter().greet("a") == "hi a!"


        def test_shout():
            assert Greeter.shout("a") == "AA"


        def test_late():
            assert late(0) == 5


        def test_bump():
            assert Counter().bump() == 1


        def test_where():
            assert Counter().where() == WHERE


        def test_made():
            assert MADE.spare() == 1


        def test_lazy_first():
            from deco.lazy import scaled  # the first import of deco.lazy: its body runs now
            assert scaled(1) == 3


        def test_lazy_second():
            from deco.lazy import FACTOR
            assert FACTOR == 3
        """,
}
DECO["tests/test_core.py"] = DECO["tests/test_core.py"].replace(
    "WHERE",
    str(
        1
        + textwrap.dedent(DECO["deco/core.py"])
        .lstrip("\n")
        .splitlines()
        .index("        return sys._getframe().f_lineno")
    ),
)


@pytest.fixture(scope="module")
def deco_env(environment_of):
    return environment_of("deco", DECO)


@pytest.fixture
def package_index(monkeypatch):
    """`package_index(routes)`: a package index on 127.0.0.1 serving `routes` ({path: bytes}; a path
    ending in `/` as PEP 691 JSON, anything else 404), set as PIP_INDEX_URL; returns that URL (`.../simple`).
    `routes` is read at each request, so a test may change it."""
    servers = []

    def serve(routes: dict[str, bytes]) -> str:
        class Index(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                body = routes.get(self.path)
                self.send_response(200 if body is not None else 404)
                json_ = self.path.endswith("/")
                self.send_header(
                    "Content-Type", "application/vnd.pypi.simple.v1+json" if json_ else "application/octet-stream"
                )
                self.end_headers()
                self.wfile.write(body if body is not None else b"{}")

            def log_message(self, *a):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        url = f"http://127.0.0.1:{server.server_address[1]}/simple"
        monkeypatch.setenv("PIP_INDEX_URL", url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # (a proxy the environment sets never serves it)
        return url

    yield serve
    for server in servers:
        server.shutdown()


@pytest.fixture(scope="session")
def sdist():
    """`sdist(path, files, mtimes)`: writes a .tar.gz sdist at `path` (its members under NAME-VERSION/, from
    the file name) holding {name: text}, each member's mtime from {name: seconds} (default: 2021-03-01)."""

    def make(path: Path, files: dict[str, str], mtimes: dict[str, float] | None = None) -> Path:
        top = path.name.removesuffix(".tar.gz")
        with tarfile.open(path, "w:gz") as tar:
            for name, text in files.items():
                data = textwrap.dedent(text).lstrip().encode()
                member = tarfile.TarInfo(f"{top}/{name}")
                member.size, member.mtime = len(data), (mtimes or {}).get(name, 1614556800)
                tar.addfile(member, io.BytesIO(data))
        return path

    return make
