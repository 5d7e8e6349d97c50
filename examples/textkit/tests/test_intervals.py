import pytest

from textkit.intervals import (
    Interval,
    chunk_range,
    find_containing,
    gaps,
    merge,
    total_length,
)

I = Interval


def test_construct_and_length():
    iv = I(2, 7)
    assert (iv.start, iv.end, iv.length) == (2, 7, 5)


def test_degenerate_interval_allowed():
    assert I(3, 3).length == 0


def test_interval_uses_slots():
    iv = I(1, 2)
    assert not hasattr(iv, "__dict__")
    with pytest.raises(AttributeError):
        iv.label = "x"


def test_invalid_interval():
    with pytest.raises(ValueError):
        I(5, 4)


@pytest.mark.parametrize("value, expected", [(1, False), (2, True), (5, True), (7, True), (8, False)])
def test_contains(value, expected):
    assert I(2, 7).contains(value) is expected


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (I(1, 3), I(2, 5), True),
        (I(1, 3), I(3, 5), True),
        (I(1, 3), I(4, 5), False),
        (I(4, 5), I(1, 3), False),
        (I(1, 10), I(2, 3), True),
    ],
)
def test_overlaps(a, b, expected):
    assert a.overlaps(b) is expected
    assert b.overlaps(a) is expected


def test_intersect():
    assert I(1, 5).intersect(I(3, 8)) == I(3, 5)
    assert I(3, 8).intersect(I(1, 5)) == I(3, 5)


def test_intersect_disjoint():
    assert I(1, 2).intersect(I(3, 4)) is None


def test_union():
    assert I(1, 5).union(I(3, 8)) == I(1, 8)
    assert I(3, 8).union(I(1, 5)) == I(1, 8)


def test_union_disjoint_raises():
    with pytest.raises(ValueError):
        I(1, 2).union(I(3, 4))


def test_shift_default_and_explicit():
    assert I(1, 2).shift() == I(2, 3)
    assert I(1, 2).shift(-5) == I(-4, -3)


def test_split():
    assert I(0, 10).split(4) == (I(0, 4), I(4, 10))


@pytest.mark.parametrize("at", [0, 10, -1, 11])
def test_split_outside_raises(at):
    with pytest.raises(ValueError):
        I(0, 10).split(at)


def test_equality_and_hash():
    assert I(1, 2) == I(1, 2)
    assert I(1, 2) != I(1, 3)
    assert I(1, 2) != I(0, 2)
    assert I(1, 2) != (1, 2)
    assert len({I(1, 2), I(1, 2), I(2, 3)}) == 2


def test_ordering():
    assert I(1, 5) < I(2, 3)
    assert I(1, 2) < I(1, 3)
    assert not I(1, 3) < I(1, 3)


def test_repr():
    assert repr(I(1, 2.5)) == "Interval(1, 2.5)"


def test_merge_overlapping_and_touching():
    assert merge([I(5, 7), I(1, 3), I(3, 4), I(6, 9)]) == [I(1, 4), I(5, 9)]


def test_merge_contained():
    assert merge([I(1, 10), I(2, 3)]) == [I(1, 10)]


def test_merge_disjoint_sorted():
    assert merge([I(8, 9), I(1, 2), I(4, 5)]) == [I(1, 2), I(4, 5), I(8, 9)]


def test_merge_empty():
    assert merge([]) == []


def test_total_length():
    assert total_length([I(0, 5), I(3, 8), I(10, 12)]) == 10


def test_total_length_empty():
    assert total_length([]) == 0


def test_gaps_between():
    assert gaps([I(1, 2), I(4, 5), I(7, 9)]) == [I(2, 4), I(5, 7)]


def test_gaps_with_bounds():
    assert gaps([I(2, 3), I(5, 6)], lo=0, hi=10) == [I(0, 2), I(3, 5), I(6, 10)]


def test_gaps_many_intervals_with_hi():
    assert gaps([I(0, 1), I(2, 3), I(4, 5)], hi=9) == [I(1, 2), I(3, 4), I(5, 9)]


def test_gaps_bounds_inside_coverage():
    assert gaps([I(0, 10)], lo=0, hi=10) == []
    assert gaps([I(0, 10)], lo=2, hi=8) == []


def test_gaps_empty_with_bounds():
    assert gaps([], lo=1, hi=4) == [I(1, 4)]


def test_gaps_empty_without_bounds():
    assert gaps([]) == []
    assert gaps([], lo=3, hi=3) == []
    assert gaps([], lo=3) == []


@pytest.mark.parametrize(
    "start, stop, size, expected",
    [
        (0, 10, 3, [(0, 3), (3, 6), (6, 9), (9, 10)]),
        (0, 9, 3, [(0, 3), (3, 6), (6, 9)]),
        (5, 7, 10, [(5, 7)]),
        (4, 4, 2, []),
        (1, 2, 1, [(1, 2)]),
    ],
)
def test_chunk_range(start, stop, size, expected):
    assert chunk_range(start, stop, size) == expected


@pytest.mark.parametrize("size", [0, -2])
def test_chunk_range_invalid(size):
    with pytest.raises(ValueError, match="size must be positive"):
        chunk_range(0, 5, size)


def test_find_containing():
    ivs = [I(0, 2), I(1, 5), I(6, 8)]
    assert find_containing(ivs, 1) == [0, 1]
    assert find_containing(ivs, 2) == [0, 1]
    assert find_containing(ivs, 5.5) == []
    assert find_containing(ivs, 8) == [2]
