"""Descriptive statistics helpers."""

import math


class StatisticsError(ValueError):
    pass


def _require_data(data, minimum=1):
    values = list(data)
    if len(values) < minimum:
        raise StatisticsError("need at least %d data point(s)" % minimum)
    return values


def mean(data):
    values = _require_data(data)
    return sum(values) / len(values)


def median(data):
    values = sorted(_require_data(data))
    n = len(values)
    mid = n // 2
    if n % 2 == 1:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2


def frequencies(data):
    """Map each distinct value to the number of times it occurs."""
    counts = {}
    for v in data:
        counts[v] = counts.get(v, 0) + 1
    return counts


def mode(data):
    """Most frequent value; ties go to the value seen first."""
    values = _require_data(data)
    counts = frequencies(values)
    best = values[0]
    for v in values:
        if counts[v] > counts[best]:
            best = v
    return best


def variance(data, sample=True):
    values = _require_data(data, 2 if sample else 1)
    m = mean(values)
    squares = sum((x - m) ** 2 for x in values)
    denominator = len(values) - 1 if sample else len(values)
    return squares / denominator


def stdev(data, sample=True):
    return math.sqrt(variance(data, sample))


def percentile(data, p):
    """Linear-interpolation percentile, p in [0, 100]."""
    if not 0 <= p <= 100:
        raise StatisticsError("percentile must be between 0 and 100")
    values = sorted(_require_data(data))
    rank = (len(values) - 1) * p / 100
    low = int(math.floor(rank))
    high = min(low + 1, len(values) - 1)
    fraction = rank - low
    return values[low] + (values[high] - values[low]) * fraction


def data_range(data):
    values = _require_data(data)
    return max(values) - min(values)


def moving_average(data, window=3):
    values = list(data)
    if window < 1 or window > len(values):
        raise StatisticsError("invalid window size")
    result = []
    total = sum(values[:window])
    result.append(total / window)
    for i in range(window, len(values)):
        total += values[i] - values[i - window]
        result.append(total / window)
    return result
