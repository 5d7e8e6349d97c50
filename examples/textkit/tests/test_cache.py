import pytest

from textkit.cache import BaseCache, LRUCache, TTLCache, memoize


def test_default_capacity():
    assert LRUCache().capacity == 128
    assert BaseCache().capacity == 128
    assert TTLCache().capacity == 128


@pytest.mark.parametrize("capacity", [0, -1])
def test_invalid_capacity(capacity):
    with pytest.raises(ValueError):
        LRUCache(capacity)


def test_capacity_one_allowed():
    cache = LRUCache(1)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.keys() == ["b"]


def test_put_and_get():
    cache = LRUCache(2)
    cache.put("a", 1)
    assert cache.get("a") == 1
    assert len(cache) == 1
    assert "a" in cache
    assert "b" not in cache


def test_get_missing_default():
    cache = LRUCache(2)
    assert cache.get("x") is None
    assert cache.get("x", 42) == 42


def test_eviction_of_least_recently_used():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("a")
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]
    assert cache.evictions == 1


def test_put_existing_key_updates_without_eviction():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)
    assert cache.keys() == ["b", "a"]
    assert cache.get("a") == 10
    assert cache.evictions == 0
    assert len(cache) == 2


def test_is_full():
    cache = LRUCache(2)
    assert not cache.is_full()
    cache.put(1, 1)
    assert not cache.is_full()
    cache.put(2, 2)
    assert cache.is_full()


def test_hits_and_misses():
    cache = LRUCache(3)
    cache.put("a", 1)
    cache.get("a")
    cache.get("a")
    cache.get("b")
    assert (cache.hits, cache.misses) == (2, 1)
    assert cache.hit_ratio() == pytest.approx(2 / 3)


def test_hit_ratio_empty():
    assert LRUCache(2).hit_ratio() == 0.0


def test_cached_none_value_is_a_hit():
    cache = LRUCache(2)
    cache.put("n", None)
    assert cache.get("n", "default") is None
    assert cache.hits == 1


def test_pop():
    cache = LRUCache(2)
    cache.put("a", 1)
    assert cache.pop("a") == 1
    assert len(cache) == 0


def test_pop_missing_with_default():
    assert LRUCache(2).pop("zz", 7) == 7


def test_pop_missing_raises():
    with pytest.raises(KeyError):
        LRUCache(2).pop("zz")


def test_peek_oldest():
    cache = LRUCache(3)
    assert cache.peek_oldest() is None
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.peek_oldest() == "a"
    cache.get("a")
    assert cache.peek_oldest() == "b"


def test_clear_resets_counters():
    cache = LRUCache(1)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("b")
    cache.get("a")
    cache.clear()
    assert len(cache) == 0
    assert (cache.hits, cache.misses, cache.evictions) == (0, 0, 0)


def test_base_cache_len_not_implemented():
    with pytest.raises(NotImplementedError):
        len(BaseCache(1))


def test_base_cache_record():
    base = BaseCache(5)
    base.record(True)
    base.record(False)
    base.record(False)
    assert (base.hits, base.misses) == (1, 2)


class FakeClock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def test_ttl_entry_valid_before_expiry():
    clock = FakeClock()
    cache = TTLCache(4, ttl=5, clock=clock)
    cache.put("a", 1)
    clock.now = 4
    assert cache.get("a") == 1


def test_ttl_entry_expires_at_ttl():
    clock = FakeClock()
    cache = TTLCache(4, ttl=5, clock=clock)
    cache.put("a", 1)
    clock.now = 5
    assert cache.get("a", "gone") == "gone"
    assert "a" not in cache
    assert cache.misses == 1


def test_ttl_put_refreshes_stamp():
    clock = FakeClock()
    cache = TTLCache(4, ttl=5, clock=clock)
    cache.put("a", 1)
    clock.now = 3
    cache.put("a", 2)
    clock.now = 7
    assert cache.get("a") == 2


def test_ttl_inherits_lru_eviction():
    cache = TTLCache(2, ttl=100, clock=FakeClock())
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert cache.keys() == ["b", "c"]


@pytest.mark.parametrize("ttl", [0, -3])
def test_ttl_invalid(ttl):
    with pytest.raises(ValueError, match="ttl must be positive"):
        TTLCache(2, ttl=ttl)


def test_ttl_of_one_expires_next_tick():
    clock = FakeClock()
    cache = TTLCache(2, ttl=1, clock=clock)
    cache.put("a", 1)
    assert cache.get("a") == 1
    clock.now = 1
    assert cache.get("a") is None


def test_ttl_default_clock_never_expires():
    cache = TTLCache(2)
    assert cache.ttl == 10
    cache.put("a", 1)
    assert cache.get("a") == 1


def test_memoize_caches_results():
    calls = []

    @memoize(capacity=2)
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9
    assert square(3) == 9
    assert calls == [3]
    assert square.cache.hits == 1
    assert square.cache.misses == 1


def test_memoize_respects_capacity():
    calls = []

    @memoize(capacity=2)
    def ident(x):
        calls.append(x)
        return x

    for x in [1, 2, 3, 1]:
        ident(x)
    assert calls == [1, 2, 3, 1]
    assert ident.cache.keys() == [(3,), (1,)]


def test_memoize_preserves_metadata():
    @memoize()
    def documented(a, b):
        """Adds things."""
        return a + b

    assert documented.__name__ == "documented"
    assert documented.__doc__ == "Adds things."
    assert documented(1, 2) == 3
    assert documented.cache.capacity == 128


def test_memoize_caches_none_results():
    calls = []

    @memoize()
    def nothing(x):
        calls.append(x)
        return None

    nothing(1)
    nothing(1)
    assert calls == [1]
