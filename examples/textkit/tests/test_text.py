import pytest

from textkit import text


@pytest.mark.parametrize(
    "source, expected",
    [
        ("hello world", ["hello", "world"]),
        ("  spaced   out  ", ["spaced", "out"]),
        ("Don't stop", ["Don't", "stop"]),
        ("a,b;c", ["a", "b", "c"]),
        ("snake_case x1", ["snake_case", "x1"]),
        ("", []),
    ],
)
def test_tokenize(source, expected):
    assert text.tokenize(source) == expected


def test_tokenize_keep_punct():
    assert text.tokenize("Hi, you!", keep_punct=True) == ["Hi", ",", "you", "!"]


def test_tokenize_keep_punct_ignores_whitespace():
    assert text.tokenize("a -  b", keep_punct=True) == ["a", "-", "b"]


def test_word_count_ignores_case_by_default():
    assert text.word_count("The the THE cat") == {"the": 3, "cat": 1}


def test_word_count_case_sensitive():
    assert text.word_count("The the cat", ignore_case=False) == {"The": 1, "the": 1, "cat": 1}


def test_most_common_default_is_one():
    assert text.most_common("b a b c b a") == [("b", 3)]


def test_most_common_ties_alphabetical():
    assert text.most_common("d c c d a b", 3) == [("c", 2), ("d", 2), ("a", 1)]


def test_most_common_zero():
    assert text.most_common("a b", 0) == []


def test_most_common_negative_raises():
    with pytest.raises(ValueError):
        text.most_common("a", -1)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("Hello World", "hello-world"),
        ("  Hello,   World!  ", "hello-world"),
        ("Python 3.9 rocks", "python-3-9-rocks"),
        ("Crème brûlée", "cr-me-br-l-e"),
        ("---", ""),
        ("abc", "abc"),
    ],
)
def test_slugify(source, expected):
    assert text.slugify(source) == expected


def test_slugify_custom_separator():
    assert text.slugify("One Two Three", sep="_") == "one_two_three"


def test_slugify_max_length_strips_trailing_separator():
    assert text.slugify("hello world again", max_length=6) == "hello"


def test_slugify_max_length_exact():
    assert text.slugify("hello world", max_length=11) == "hello-world"


def test_slugify_max_length_cuts():
    assert text.slugify("hello world", max_length=8) == "hello-wo"


@pytest.mark.parametrize(
    "name, expected",
    [
        ("CamelCase", "camel_case"),
        ("mixedCase", "mixed_case"),
        ("getHTTPResponse", "get_http_response"),
        ("HTML", "html"),
        ("already_snake", "already_snake"),
        ("kebab-case-name", "kebab_case_name"),
        ("two words", "two_words"),
        ("version2Update", "version2_update"),
        ("A", "a"),
        ("ABc", "a_bc"),
        ("loadHTMLFile", "load_html_file"),
        ("Foo-Bar", "foo_bar"),
    ],
)
def test_snake_case(name, expected):
    assert text.snake_case(name) == expected


@pytest.mark.parametrize(
    "name, upper, expected",
    [
        ("hello_world", False, "helloWorld"),
        ("hello_world", True, "HelloWorld"),
        ("kebab-case-name", False, "kebabCaseName"),
        ("HELLO_there", False, "helloThere"),
        ("__private__name", False, "privateName"),
        ("single", True, "Single"),
        ("__", False, ""),
    ],
)
def test_camel_case(name, upper, expected):
    assert text.camel_case(name, upper_first=upper) == expected


def test_camel_case_default_lower_first():
    assert text.camel_case("abc_def") == "abcDef"


@pytest.mark.parametrize(
    "source, width, expected",
    [
        ("abcdefghij", 10, "abcdefghij"),
        ("abcdefghij", 9, "abcdef..."),
        ("abcdefghij", 3, "..."),
        ("short", 100, "short"),
    ],
)
def test_truncate(source, width, expected):
    assert text.truncate(source, width) == expected


def test_truncate_custom_ellipsis():
    assert text.truncate("abcdefghij", 5, ellipsis="~") == "abcd~"


def test_truncate_width_too_small():
    with pytest.raises(ValueError):
        text.truncate("abcdef", 2)


def test_truncate_width_equal_to_ellipsis_ok():
    assert text.truncate("abcdef", 3, ellipsis="..") == "a.."


def test_wrap_basic():
    assert text.wrap("the quick brown fox jumps over the lazy dog", 10) == [
        "the quick",
        "brown fox",
        "jumps over",
        "the lazy",
        "dog",
    ]


def test_wrap_exact_fit():
    assert text.wrap("aa bb cc", 5) == ["aa bb", "cc"]


def test_wrap_long_word_on_own_line():
    assert text.wrap("a supercalifragilistic b", 5) == ["a", "supercalifragilistic", "b"]


def test_wrap_default_width():
    assert text.wrap("one two three four five six") == ["one two three four", "five six"]


def test_wrap_default_width_fits_exactly_twenty():
    assert text.wrap("aaaaaaaaa bbbbbbbbbb") == ["aaaaaaaaa bbbbbbbbbb"]
    assert text.wrap("aaaaaaaaaa bbbbbbbbbb") == ["aaaaaaaaaa", "bbbbbbbbbb"]


def test_wrap_width_one():
    assert text.wrap("a b", 1) == ["a", "b"]


def test_wrap_empty():
    assert text.wrap("   ") == []


def test_wrap_invalid_width():
    with pytest.raises(AssertionError):
        text.wrap("abc", 0)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("A man, a plan, a canal: Panama", True),
        ("racecar", True),
        ("ab", False),
        ("abca", False),
        ("x", True),
        ("", False),
        ("!!", False),
    ],
)
def test_is_palindrome(source, expected):
    assert text.is_palindrome(source) is expected
