"""Duration strings and simple calendar arithmetic without the datetime module."""

UNITS = {"w": 7 * 24 * 3600, "d": 24 * 3600, "h": 3600, "m": 60, "s": 1}
UNIT_ORDER = "wdhms"
DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


class DurationError(ValueError):
    pass


class DateError(ValueError):
    pass


def parse_duration(text):
    """Parse strings such as '1h30m', '2d 4h', '-45s' into seconds."""
    s = text.strip().lower().replace(" ", "")
    if not s:
        raise DurationError("empty duration")
    sign = 1
    if s[0] == "-":
        sign = -1
        s = s[1:]
    total = 0
    number = ""
    seen = ""
    for ch in s:
        if ch.isdigit():
            number += ch
        elif ch in UNITS:
            if not number:
                raise DurationError("missing number before %r" % ch)
            if ch in seen:
                raise DurationError("unit %r given twice" % ch)
            if seen and UNIT_ORDER.index(ch) < UNIT_ORDER.index(seen[-1]):
                raise DurationError("units out of order")
            total += int(number) * UNITS[ch]
            seen += ch
            number = ""
        else:
            raise DurationError("invalid character %r" % ch)
    if number:
        raise DurationError("trailing number without unit")
    return sign * total


def format_duration(seconds, largest="d"):
    """Format seconds as e.g. '1d 2h 3m 4s'; zero parts are omitted."""
    if largest not in UNITS:
        raise DurationError("unknown unit %r" % largest)
    if seconds == 0:
        return "0s"
    prefix = ""
    if seconds < 0:
        prefix = "-"
        seconds = -seconds
    parts = []
    for unit in UNIT_ORDER[UNIT_ORDER.index(largest):]:
        amount, seconds = divmod(seconds, UNITS[unit])
        if amount:
            parts.append("%d%s" % (amount, unit))
    return prefix + " ".join(parts)


def is_leap_year(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    if not 1 <= month <= 12:
        raise DateError("month out of range: %d" % month)
    if month == 2 and is_leap_year(year):
        return 29
    return DAYS_IN_MONTH[month - 1]


def parse_date(text):
    """Parse 'YYYY-MM-DD' into a (year, month, day) tuple with validation."""
    parts = text.strip().split("-")
    if len(parts) != 3 or len(parts[0]) != 4:
        raise DateError("expected YYYY-MM-DD: %r" % text)
    try:
        year, month, day = (int(p) for p in parts)
    except ValueError:
        raise DateError("non-numeric date component in %r" % text)
    if not 1 <= day <= days_in_month(year, month):
        raise DateError("day out of range: %d" % day)
    return (year, month, day)


def format_date(date):
    year, month, day = date
    return "%04d-%02d-%02d" % (year, month, day)


def day_of_year(date):
    year, month, day = date
    return sum(days_in_month(year, m) for m in range(1, month)) + day


def to_ordinal(date):
    """Days since 0001-01-01 (which is day 1), like datetime.date.toordinal."""
    year, _, _ = date
    y = year - 1
    return y * 365 + y // 4 - y // 100 + y // 400 + day_of_year(date)


def from_ordinal(ordinal):
    if ordinal < 1:
        raise DateError("ordinal must be positive")
    year = (ordinal - 1) // 366 + 1
    ordinal -= to_ordinal((year, 1, 1)) - 1
    while True:
        length = 366 if is_leap_year(year) else 365
        if ordinal <= length:
            break
        ordinal -= length
        year += 1
    month = 1
    while ordinal > days_in_month(year, month):
        ordinal -= days_in_month(year, month)
        month += 1
    return (year, month, ordinal)


def days_between(a, b):
    return to_ordinal(b) - to_ordinal(a)


def add_days(date, days):
    return from_ordinal(to_ordinal(date) + days)


def weekday(date):
    """Name of the weekday; 0001-01-01 was a Monday."""
    return WEEKDAYS[(to_ordinal(date) - 1) % 7]
