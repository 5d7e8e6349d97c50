"""Closed integer/float intervals and operations on collections of them."""


class Interval:
    """A closed interval [start, end]."""

    __slots__ = ("start", "end")

    def __init__(self, start, end):
        if start > end:
            raise ValueError("start must not exceed end: %r > %r" % (start, end))
        self.start = start
        self.end = end

    @property
    def length(self):
        return self.end - self.start

    def contains(self, value):
        return self.start <= value <= self.end

    def overlaps(self, other):
        return self.start <= other.end and other.start <= self.end

    def intersect(self, other):
        """Return the overlapping interval or None."""
        if not self.overlaps(other):
            return None
        return Interval(max(self.start, other.start), min(self.end, other.end))

    def union(self, other):
        """Return the merged interval; the two must overlap or touch."""
        if not self.overlaps(other):
            raise ValueError("intervals are disjoint")
        return Interval(min(self.start, other.start), max(self.end, other.end))

    def shift(self, offset=1):
        return Interval(self.start + offset, self.end + offset)

    def split(self, at):
        if not self.start < at < self.end:
            raise ValueError("split point must lie strictly inside the interval")
        return Interval(self.start, at), Interval(at, self.end)

    def __eq__(self, other):
        if not isinstance(other, Interval):
            return NotImplemented
        return self.start == other.start and self.end == other.end

    def __lt__(self, other):
        return (self.start, self.end) < (other.start, other.end)

    def __hash__(self):
        return hash((self.start, self.end))

    def __repr__(self):
        return "Interval(%r, %r)" % (self.start, self.end)


def merge(intervals):
    """Merge overlapping or touching intervals; result is sorted."""
    result = []
    for iv in sorted(intervals):
        if result and iv.start <= result[-1].end:
            last = result[-1]
            result[-1] = Interval(last.start, max(last.end, iv.end))
        else:
            result.append(iv)
    return result


def total_length(intervals):
    """Total length covered by the intervals (overlaps counted once)."""
    return sum(iv.length for iv in merge(intervals))


def gaps(intervals, lo=None, hi=None):
    """Uncovered intervals between merged intervals, optionally within [lo, hi]."""
    merged = merge(intervals)
    result = []
    if not merged:
        if lo is not None and hi is not None and lo < hi:
            result.append(Interval(lo, hi))
        return result
    if lo is not None and lo < merged[0].start:
        result.append(Interval(lo, merged[0].start))
    for prev, cur in zip(merged, merged[1:]):
        result.append(Interval(prev.end, cur.start))
    if hi is not None and hi > merged[-1].end:
        result.append(Interval(merged[-1].end, hi))
    return result


def chunk_range(start, stop, size):
    """Split the half-open integer range [start, stop) into chunks of `size`.

    Returns a list of (chunk_start, chunk_stop) pairs; the last chunk may be short.
    """
    if size <= 0:
        raise ValueError("size must be positive")
    chunks = []
    for lo in range(start, stop, size):
        chunks.append((lo, min(lo + size, stop)))
    return chunks


def find_containing(intervals, value):
    """Indices of the intervals that contain `value`."""
    return [i for i, iv in enumerate(intervals) if iv.contains(value)]
