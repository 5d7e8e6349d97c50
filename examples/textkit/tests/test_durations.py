import pytest

from textkit import durations as d
from textkit.durations import DateError, DurationError


@pytest.mark.parametrize(
    "source, expected",
    [
        ("45s", 45),
        ("1m", 60),
        ("1h30m", 5400),
        ("2d 4h", 187200),
        ("1w", 604800),
        ("1w1d1h1m1s", 694861),
        ("-45s", -45),
        (" 10M ", 600),
        ("0s", 0),
        ("120m", 7200),
    ],
)
def test_parse_duration(source, expected):
    assert d.parse_duration(source) == expected


@pytest.mark.parametrize(
    "source, message",
    [
        ("", "empty duration"),
        ("   ", "empty duration"),
        ("h", "missing number"),
        ("1h2h", "given twice"),
        ("1m1h", "out of order"),
        ("10", "trailing number"),
        ("1h5", "trailing number"),
        ("1x", "invalid character"),
        ("1.5h", "invalid character"),
    ],
)
def test_parse_duration_errors(source, message):
    with pytest.raises(DurationError, match=message):
        d.parse_duration(source)


@pytest.mark.parametrize(
    "seconds, largest, expected",
    [
        (0, "d", "0s"),
        (59, "d", "59s"),
        (60, "d", "1m"),
        (3661, "d", "1h 1m 1s"),
        (93784, "d", "1d 2h 3m 4s"),
        (-3661, "d", "-1h 1m 1s"),
        (90000, "h", "25h"),
        (700000, "w", "1w 1d 2h 26m 40s"),
        (700000, "d", "8d 2h 26m 40s"),
        (125, "s", "125s"),
        (86400, "d", "1d"),
    ],
)
def test_format_duration(seconds, largest, expected):
    assert d.format_duration(seconds, largest) == expected


def test_format_duration_default_largest_is_days():
    assert d.format_duration(14 * 86400) == "14d"


def test_format_duration_bad_unit():
    with pytest.raises(DurationError):
        d.format_duration(5, "y")


@pytest.mark.parametrize("seconds", [1, 59, 61, 3600, 86399, 694861, -7322])
def test_duration_roundtrip(seconds):
    assert d.parse_duration(d.format_duration(seconds, "w")) == seconds


@pytest.mark.parametrize(
    "year, expected",
    [(2024, True), (2023, False), (1900, False), (2000, True), (2100, False), (1996, True)],
)
def test_is_leap_year(year, expected):
    assert d.is_leap_year(year) is expected


@pytest.mark.parametrize(
    "year, month, expected",
    [(2023, 1, 31), (2023, 2, 28), (2024, 2, 29), (1900, 2, 28), (2023, 4, 30), (2023, 12, 31)],
)
def test_days_in_month(year, month, expected):
    assert d.days_in_month(year, month) == expected


@pytest.mark.parametrize("month", [0, 13])
def test_days_in_month_invalid(month):
    with pytest.raises(DateError):
        d.days_in_month(2023, month)


def test_parse_date():
    assert d.parse_date(" 2024-02-29 ") == (2024, 2, 29)
    assert d.parse_date("0001-01-01") == (1, 1, 1)


@pytest.mark.parametrize(
    "source, message",
    [
        ("2024-02-30", "day out of range"),
        ("2023-02-29", "day out of range"),
        ("2024-01-00", "day out of range"),
        ("2024-13-01", "month out of range"),
        ("2024-00-10", "month out of range"),
        ("24-01-01", "expected YYYY-MM-DD"),
        ("2024-01", "expected YYYY-MM-DD"),
        ("2024-aa-01", "non-numeric"),
    ],
)
def test_parse_date_errors(source, message):
    with pytest.raises(DateError, match=message):
        d.parse_date(source)


def test_format_date():
    assert d.format_date((2024, 3, 7)) == "2024-03-07"
    assert d.format_date((5, 12, 25)) == "0005-12-25"


@pytest.mark.parametrize(
    "date, expected",
    [((2023, 1, 1), 1), ((2023, 3, 1), 60), ((2024, 3, 1), 61), ((2024, 12, 31), 366), ((2023, 12, 31), 365)],
)
def test_day_of_year(date, expected):
    assert d.day_of_year(date) == expected


@pytest.mark.parametrize(
    "date, ordinal",
    [
        ((1, 1, 1), 1),
        ((1, 12, 31), 365),
        ((2, 1, 1), 366),
        ((401, 1, 1), 146098),
        ((1600, 3, 1), 584083),
        ((1970, 1, 1), 719163),
        ((2000, 2, 29), 730179),
        ((2024, 3, 1), 738946),
        ((9999, 12, 31), 3652059),
    ],
)
def test_ordinal_roundtrip(date, ordinal):
    assert d.to_ordinal(date) == ordinal
    assert d.from_ordinal(ordinal) == date


@pytest.mark.parametrize("ordinal", [0, -5])
def test_from_ordinal_invalid(ordinal):
    with pytest.raises(DateError):
        d.from_ordinal(ordinal)


def test_days_between():
    assert d.days_between((2024, 1, 1), (2024, 3, 1)) == 60
    assert d.days_between((2023, 1, 1), (2023, 3, 1)) == 59
    assert d.days_between((2024, 3, 1), (2024, 1, 1)) == -60


@pytest.mark.parametrize(
    "date, days, expected",
    [
        ((2023, 12, 31), 1, (2024, 1, 1)),
        ((2024, 2, 28), 1, (2024, 2, 29)),
        ((2023, 2, 28), 1, (2023, 3, 1)),
        ((2024, 3, 1), -1, (2024, 2, 29)),
        ((2024, 1, 31), 30, (2024, 3, 1)),
        ((2000, 1, 1), 366, (2001, 1, 1)),
        ((2024, 5, 5), 0, (2024, 5, 5)),
    ],
)
def test_add_days(date, days, expected):
    assert d.add_days(date, days) == expected


@pytest.mark.parametrize(
    "date, expected",
    [
        ((1, 1, 1), "Monday"),
        ((1970, 1, 1), "Thursday"),
        ((2000, 1, 1), "Saturday"),
        ((2024, 2, 29), "Thursday"),
        ((2024, 3, 3), "Sunday"),
        ((2023, 12, 25), "Monday"),
    ],
)
def test_weekday(date, expected):
    assert d.weekday(date) == expected
