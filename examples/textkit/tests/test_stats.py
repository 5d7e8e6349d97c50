import math

import pytest

from textkit import stats
from textkit.stats import StatisticsError


def test_statistics_error_is_value_error():
    assert issubclass(StatisticsError, ValueError)


@pytest.mark.parametrize(
    "data, expected",
    [([1, 2, 3, 4], 2.5), ([5], 5.0), ([-1, 1], 0.0), ([2, 2, 8], 4.0)],
)
def test_mean(data, expected):
    assert stats.mean(data) == expected


def test_mean_accepts_generator():
    assert stats.mean(x for x in [1, 2, 6]) == 3.0


@pytest.mark.parametrize(
    "func", [stats.mean, stats.median, stats.mode, stats.data_range]
)
def test_empty_raises(func):
    with pytest.raises(StatisticsError):
        func([])


@pytest.mark.parametrize(
    "data, expected",
    [
        ([3, 1, 2], 2),
        ([4, 1, 3, 2], 2.5),
        ([7], 7),
        ([1, 10], 5.5),
        ([5, 3, 1, 4, 2], 3),
        ([1, 2, 100, 101], 51.0),
    ],
)
def test_median(data, expected):
    assert stats.median(data) == expected


@pytest.mark.parametrize(
    "data, expected",
    [
        ([1, 2, 2, 3], 2),
        ([4, 4, 1, 1], 4),
        ([1, 1, 4, 4, 4], 4),
        (["b", "a", "a"], "a"),
        ([9], 9),
        ([3, 1, 2], 3),
    ],
)
def test_mode(data, expected):
    assert stats.mode(data) == expected


def test_frequencies():
    assert stats.frequencies([3, 1, 3, 2, 3, 1]) == {3: 3, 1: 2, 2: 1}
    assert stats.frequencies("abca") == {"a": 2, "b": 1, "c": 1}
    assert stats.frequencies([]) == {}


def test_variance_sample():
    assert stats.variance([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(32 / 7)


def test_variance_population():
    assert stats.variance([2, 4, 4, 4, 5, 5, 7, 9], sample=False) == 4.0


def test_variance_sample_needs_two():
    with pytest.raises(StatisticsError):
        stats.variance([1])


def test_variance_population_single():
    assert stats.variance([5], sample=False) == 0.0


def test_variance_small_exact():
    assert stats.variance([1, 3]) == 2.0


def test_stdev():
    assert stats.stdev([2, 4, 4, 4, 5, 5, 7, 9], sample=False) == 2.0
    assert stats.stdev([1, 3]) == math.sqrt(2)


@pytest.mark.parametrize(
    "p, expected",
    [(0, 10), (25, 17.5), (50, 25), (75, 32.5), (100, 40), (10, 13.0), (90, 37.0)],
)
def test_percentile(p, expected):
    assert stats.percentile([40, 10, 30, 20], p) == pytest.approx(expected)


def test_percentile_single_value():
    assert stats.percentile([7], 30) == 7


def test_percentile_two_values():
    assert stats.percentile([0, 10], 50) == 5.0
    assert stats.percentile([0, 10], 99) == pytest.approx(9.9)


@pytest.mark.parametrize("p", [-0.1, 100.5, 200])
def test_percentile_out_of_range(p):
    with pytest.raises(StatisticsError):
        stats.percentile([1, 2, 3], p)


def test_percentile_empty():
    with pytest.raises(StatisticsError):
        stats.percentile([], 50)


def test_data_range():
    assert stats.data_range([3, -2, 8, 1]) == 10
    assert stats.data_range([4]) == 0


def test_moving_average_default_window():
    assert stats.moving_average([1, 2, 3, 4, 5, 6]) == [2.0, 3.0, 4.0, 5.0]


def test_moving_average_window_two():
    assert stats.moving_average([1, 3, 5, 9], 2) == [2.0, 4.0, 7.0]


def test_moving_average_full_window():
    assert stats.moving_average([1, 2, 6], 3) == [3.0]


def test_moving_average_window_one():
    assert stats.moving_average([4, 5], 1) == [4.0, 5.0]


@pytest.mark.parametrize("window", [0, 4])
def test_moving_average_invalid_window(window):
    with pytest.raises(StatisticsError):
        stats.moving_average([1, 2, 3], window)
