import pytest

from textkit.parsing import (
    DuplicateKeyError,
    MissingSectionError,
    ParseError,
    QuoteError,
    convert_value,
    dump_ini,
    parse_csv,
    parse_ini,
    split_csv_line,
)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("yes", True),
        (" ON ", True),
        ("true", True),
        ("1", True),
        ("no", False),
        ("Off", False),
        ("0", False),
        ("42", 42),
        ("-7", -7),
        ("3.5", 3.5),
        ("1e3", 1000.0),
        ('"quoted"', "quoted"),
        ("'single'", "single"),
        ("'mismatch\"", "'mismatch\""),
        ("plain text ", "plain text"),
        ('"', '"'),
        ('""', ""),
        ("'x'", "x"),
    ],
)
def test_convert_value(raw, expected):
    result = convert_value(raw)
    assert result == expected
    assert type(result) is type(expected)


def test_error_hierarchy():
    for cls in (DuplicateKeyError, MissingSectionError, QuoteError):
        assert issubclass(cls, ParseError)


def test_parse_error_message_with_line():
    err = ParseError("bad thing", 4)
    assert str(err) == "line 4: bad thing"
    assert err.message == "bad thing"
    assert err.line == 4


def test_parse_error_message_without_line():
    err = ParseError("bad thing")
    assert str(err) == "bad thing"
    assert err.line is None


INI = """
# comment
[Server]
Host = example.org
port = 8080
debug = off

; another comment
[paths]
root = /var/www
ratio=0.25
"""


def test_parse_ini():
    assert parse_ini(INI) == {
        "server": {"host": "example.org", "port": 8080, "debug": False},
        "paths": {"root": "/var/www", "ratio": 0.25},
    }


def test_parse_ini_without_conversion():
    result = parse_ini(INI, convert=False)
    assert result["server"]["port"] == "8080"
    assert result["server"]["debug"] == "off"


def test_parse_ini_value_with_equals_sign():
    assert parse_ini("[a]\nexpr = x=1")["a"]["expr"] == "x=1"


def test_parse_ini_reopened_section_merges():
    assert parse_ini("[a]\nx=1\n[b]\ny=2\n[A]\nz=3\n") == {"a": {"x": True, "z": 3}, "b": {"y": 2}}


def test_parse_ini_empty_section():
    assert parse_ini("[empty]\n") == {"empty": {}}


def test_parse_ini_missing_section():
    with pytest.raises(MissingSectionError) as info:
        parse_ini("\nkey = 1\n")
    assert info.value.line == 2


def test_parse_ini_duplicate_key():
    with pytest.raises(DuplicateKeyError) as info:
        parse_ini("[s]\na = 1\nA = 2\n")
    assert info.value.line == 3
    assert "duplicate key 'a'" in str(info.value)


def test_parse_ini_allow_duplicates_last_wins():
    assert parse_ini("[s]\na = 1\na = 2\n", allow_duplicates=True) == {"s": {"a": 2}}


@pytest.mark.parametrize(
    "source, line, message",
    [
        ("[open\n", 1, "unterminated section header"),
        ("[s]\n[  ]\n", 2, "empty section name"),
        ("[s]\njunk\n", 2, "expected key = value"),
        ("[s]\n\n = 3\n", 3, "empty key"),
    ],
)
def test_parse_ini_errors(source, line, message):
    with pytest.raises(ParseError) as info:
        parse_ini(source)
    assert info.value.line == line
    assert info.value.message == message
    assert type(info.value) is ParseError


def test_dump_ini():
    data = {"b": {"x": 1, "flag": True}, "a": {"off": False, "name": "n"}}
    assert dump_ini(data) == "[a]\noff = false\nname = n\n\n[b]\nx = 1\nflag = true\n"


def test_dump_ini_roundtrip():
    data = {"main": {"count": 3, "enabled": True, "title": "hello"}}
    assert parse_ini(dump_ini(data)) == data


def test_dump_ini_empty():
    assert dump_ini({}) == "\n"


@pytest.mark.parametrize(
    "line, expected",
    [
        ("a,b,c", ["a", "b", "c"]),
        ("a,,c", ["a", "", "c"]),
        ("", [""]),
        ("a,", ["a", ""]),
        ('"x,y",z', ["x,y", "z"]),
        ('"say ""hi""",2', ['say "hi"', "2"]),
        ('""', [""]),
        ('"a""b"', ['a"b']),
        ('"""",x', ['"', "x"]),
        ('a"b"c', ["abc"]),
    ],
)
def test_split_csv_line(line, expected):
    assert split_csv_line(line) == expected


def test_split_csv_line_custom_delimiter():
    assert split_csv_line("a;b,c;d", delimiter=";") == ["a", "b,c", "d"]


def test_split_csv_line_custom_quote():
    assert split_csv_line("'a,b',c", quote="'") == ["a,b", "c"]


def test_split_csv_line_unterminated():
    with pytest.raises(QuoteError):
        split_csv_line('"abc,d')


def test_parse_csv_with_header():
    source = "name, age\nann,31\n\nbob,42\n"
    assert parse_csv(source) == [{"name": "ann", "age": "31"}, {"name": "bob", "age": "42"}]


def test_parse_csv_without_header():
    assert parse_csv("1,2\n3,4", header=False) == [["1", "2"], ["3", "4"]]


def test_parse_csv_delimiter():
    assert parse_csv("a|b\n1|2", delimiter="|") == [{"a": "1", "b": "2"}]


def test_parse_csv_strict_field_count():
    with pytest.raises(ParseError) as info:
        parse_csv("a,b\n1,2\n1,2,3\n")
    assert info.value.line == 3
    assert info.value.message == "expected 2 fields, got 3"


def test_parse_csv_lenient_pads_and_truncates():
    rows = parse_csv("a,b,c\n1\n1,2,3,4\n", strict=False)
    assert rows == [{"a": "1", "b": "", "c": ""}, {"a": "1", "b": "2", "c": "3"}]


def test_parse_csv_quote_error_has_line():
    with pytest.raises(QuoteError) as info:
        parse_csv('a\n"ok"\n"broken\n')
    assert info.value.line == 3


def test_parse_csv_header_only():
    assert parse_csv("a,b\n") == []
