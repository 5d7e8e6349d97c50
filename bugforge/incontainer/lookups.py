"""The probe's method-lookup watching (a lookup run: BUGFORGE_LOOKUPS set, no coverage). As each class
is built (builtins.__build_class__), its plain, static and class methods and properties (not dunder
names, nor test* ones, which pytest collects) are replaced in the class __dict__ by descriptors that
note the lookup in the Tracker's current context and give what the original gives; classes built
plainly (by `type` or ABCMeta, no base with __init_subclass__) are noted too. Not watched: other
metaclasses, bases defining __init_subclass__, methods a base declares abstract; dir(), vars() and
__dict__ bypass the descriptors. docs/probe.md.
Python 3.9, standard library only."""

import abc
import builtins
import os
import types

TEST_FILE_PREFIXES = ("test_", "conftest.py")


class _Watched:
    """Stands in a class __dict__ for a method: notes each lookup, then gives what the method gives."""

    __slots__ = ("method", "key", "note")

    def __init__(self, method, key, note):
        self.method, self.key, self.note = method, key, note

    def __get__(self, obj, owner=None):
        self.note("attr", self.key)
        return self.method.__get__(obj, owner)

    def __call__(self, *args, **kwargs):  # (code that took it from __dict__)
        self.note("attr", self.key)
        return self.method(*args, **kwargs)

    def __getattr__(self, name):  # __isabstractmethod__, __func__, __wrapped__, fget, ...
        if name in _Watched.__slots__:  # (not set yet: a copy being made)
            raise AttributeError(name)
        return getattr(self.method, name)


class _WatchedProperty(_Watched):
    """A property is a data descriptor: so is what stands in for it."""

    __slots__ = ()

    def __set__(self, obj, value):
        self.note("attr", self.key)
        self.method.__set__(obj, value)

    def __delete__(self, obj):
        self.note("attr", self.key)
        self.method.__delete__(obj)


WATCH = {types.FunctionType: _Watched, staticmethod: _Watched, classmethod: _Watched, property: _WatchedProperty}


class Watcher:
    """Watches the methods of the project's classes (under `tracker.root`, not tests) as they are built."""

    def __init__(self, tracker):
        self.tracker = tracker
        self.plain_build_class = None

    def install(self):
        self.plain_build_class = builtins.__build_class__
        builtins.__build_class__ = self.build_class

    def build_class(self, func, name, *bases, **kwargs):
        cls = self.plain_build_class(func, name, *bases, **kwargs)
        if isinstance(cls, type):
            try:
                self.watch(cls, func.__code__.co_filename)
            except Exception:  # noqa: BLE001 (a class this cannot watch stays as it was, unwatched)
                pass
        return cls

    def watch(self, cls, filename):
        seen, root = self.tracker.seen, self.tracker.root
        rel = os.path.relpath(filename, root)
        name = os.path.basename(filename)
        if (
            rel.startswith("..")
            or "site-packages" in rel
            or name.startswith(TEST_FILE_PREFIXES)
            or name.endswith("_test.py")
            or type(cls) not in (type, abc.ABCMeta)
            or any("__init_subclass__" in vars(b) for b in cls.__mro__[1:] if b is not object)
        ):
            return
        seen.setdefault("class:%s:%s" % (rel, cls.__qualname__), set())  # built plainly: nothing read its bases
        abstract = set()
        for b in cls.__mro__[1:]:
            abstract.update(getattr(b, "__abstractmethods__", ()))
        for attr, value in list(vars(cls).items()):
            kind = WATCH.get(type(value))
            if kind is None or (attr.startswith("__") and attr.endswith("__")) or attr in abstract:
                continue
            if attr.startswith("test"):  # pytest collects these from class dicts and warns on what is not a
                continue  # function (a test helper's base class in a file not named test_*.py)
            key = "%s:%s.%s" % (rel, cls.__qualname__, attr)
            seen.setdefault("attr:" + key, set())
            type.__setattr__(cls, attr, kind(value, key, self.tracker.note))
