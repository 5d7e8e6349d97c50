"""Tiny INI-style and CSV parsers with error reporting."""

COMMENT_CHARS = "#;"
TRUE_WORDS = ("yes", "true", "on", "1")
FALSE_WORDS = ("no", "false", "off", "0")


class ParseError(Exception):
    """Base class for parsing errors; remembers the 1-based line number."""

    def __init__(self, message, line=None):
        self.message = message
        self.line = line
        if line is not None:
            message = "line %d: %s" % (line, message)
        super().__init__(message)


class DuplicateKeyError(ParseError):
    pass


class MissingSectionError(ParseError):
    pass


class QuoteError(ParseError):
    pass


def convert_value(raw):
    """Convert a raw string to bool, int, float or a stripped string."""
    text = raw.strip()
    lowered = text.lower()
    if lowered in TRUE_WORDS:
        return True
    if lowered in FALSE_WORDS:
        return False
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def parse_ini(text, convert=True, allow_duplicates=False):
    """Parse INI text into {section: {key: value}}.

    Keys before any section header raise MissingSectionError.  Comments start
    with '#' or ';'.  Section and key names are lowercased.
    """
    result = {}
    section = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in COMMENT_CHARS:
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise ParseError("unterminated section header", lineno)
            name = line[1:-1].strip().lower()
            if not name:
                raise ParseError("empty section name", lineno)
            section = result.setdefault(name, {})
            continue
        if "=" not in line:
            raise ParseError("expected key = value", lineno)
        if section is None:
            raise MissingSectionError("key outside of any section", lineno)
        key, _, value = line.partition("=")
        key = key.strip().lower()
        if not key:
            raise ParseError("empty key", lineno)
        if key in section and not allow_duplicates:
            raise DuplicateKeyError("duplicate key %r" % key, lineno)
        section[key] = convert_value(value) if convert else value.strip()
    return result


def dump_ini(data):
    """Serialize {section: {key: value}} back to INI text (sorted sections)."""
    lines = []
    for name in sorted(data):
        if lines:
            lines.append("")
        lines.append("[%s]" % name)
        for key, value in data[name].items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            lines.append("%s = %s" % (key, value))
    return "\n".join(lines) + "\n"


def split_csv_line(line, delimiter=",", quote='"'):
    """Split one CSV line, honouring quoted fields and doubled quotes."""
    fields = []
    field = ""
    in_quotes = False
    i = 0
    while i < len(line):
        ch = line[i]
        if in_quotes:
            if ch == quote:
                if i + 1 < len(line) and line[i + 1] == quote:
                    field += quote
                    i += 1
                else:
                    in_quotes = False
            else:
                field += ch
        elif ch == quote:
            in_quotes = True
        elif ch == delimiter:
            fields.append(field)
            field = ""
        else:
            field += ch
        i += 1
    if in_quotes:
        raise QuoteError("unterminated quoted field")
    fields.append(field)
    return fields


def parse_csv(text, delimiter=",", header=True, strict=True):
    """Parse CSV text into a list of dicts (header=True) or lists."""
    rows = []
    columns = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            fields = split_csv_line(line, delimiter)
        except QuoteError as exc:
            raise QuoteError(exc.message, lineno)
        if header and columns is None:
            columns = [f.strip() for f in fields]
            continue
        if header:
            if len(fields) != len(columns):
                if strict:
                    raise ParseError(
                        "expected %d fields, got %d" % (len(columns), len(fields)), lineno
                    )
                fields = (fields + [""] * len(columns))[: len(columns)]
            rows.append(dict(zip(columns, fields)))
        else:
            rows.append(fields)
    return rows
