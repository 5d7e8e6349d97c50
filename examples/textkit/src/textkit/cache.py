"""An LRU cache and a memoizing decorator built on it."""

import functools
from collections import OrderedDict

_MISSING = object()


class BaseCache:
    """Common bookkeeping for caches: hit/miss counters and capacity checks."""

    def __init__(self, capacity=128):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.hits = 0
        self.misses = 0

    def record(self, hit):
        if hit:
            self.hits += 1
        else:
            self.misses += 1

    def hit_ratio(self):
        total = self.hits + self.misses
        if total == 0:
            return 0.0
        return self.hits / total

    def is_full(self):
        return len(self) >= self.capacity

    def __len__(self):
        raise NotImplementedError


class LRUCache(BaseCache):
    """Least-recently-used cache with a fixed capacity."""

    def __init__(self, capacity=128):
        super().__init__(capacity)
        self._data = OrderedDict()
        self.evictions = 0

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        return key in self._data

    def get(self, key, default=None):
        value = self._data.get(key, _MISSING)
        if value is _MISSING:
            self.record(False)
            return default
        self._data.move_to_end(key)
        self.record(True)
        return value

    def put(self, key, value):
        if key in self._data:
            self._data.move_to_end(key)
        elif self.is_full():
            self._data.popitem(last=False)
            self.evictions += 1
        self._data[key] = value

    def pop(self, key, default=_MISSING):
        if key in self._data:
            return self._data.pop(key)
        if default is _MISSING:
            raise KeyError(key)
        return default

    def keys(self):
        """Keys from least to most recently used."""
        return list(self._data.keys())

    def peek_oldest(self):
        if not self._data:
            return None
        return next(iter(self._data))

    def clear(self):
        self._data.clear()
        self.hits = 0
        self.misses = 0
        self.evictions = 0


class TTLCache(LRUCache):
    """LRU cache whose entries expire after `ttl` ticks of a caller-driven clock."""

    def __init__(self, capacity=128, ttl=10, clock=None):
        super().__init__(capacity)
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.ttl = ttl
        self._clock = clock if clock is not None else (lambda: 0)
        self._stamps = {}

    def put(self, key, value):
        super().put(key, value)
        self._stamps[key] = self._clock()

    def get(self, key, default=None):
        stamp = self._stamps.get(key)
        if stamp is not None and self._clock() - stamp >= self.ttl:
            self._data.pop(key, None)
            del self._stamps[key]
        return super().get(key, default)


def memoize(capacity=128):
    """Decorator caching results of a function of hashable positional args."""

    def decorator(func):
        cache = LRUCache(capacity)

        @functools.wraps(func)
        def wrapper(*args):
            result = cache.get(args, _MISSING)
            if result is _MISSING:
                result = func(*args)
                cache.put(args, result)
            return result

        wrapper.cache = cache
        return wrapper

    return decorator
