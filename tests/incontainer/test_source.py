"""source.py's reading of Python source: lines numbered as Python numbers them."""

from __future__ import annotations

from bugforge.incontainer.source import gap_body, python_lines


def test_lines_end_where_python_ends_them():
    assert python_lines("a\r\nb\rc\n\n") == ["a", "b", "c", ""]
    assert python_lines("x = 1\x0c\ny = '\x1c\u2028'\n") == ["x = 1\x0c", "y = '\x1c\u2028'"]


def test_a_form_feed_does_not_shift_the_gap_of_a_function_body():
    old = "def f():\n    return 1\n\x0c\n\ndef g():\n    return 2\n"
    new = "def f():\n    return 1\n\x0c\n\ndef g():\n    return 3\n"
    # a form feed on line 3 is no line break to Python: line 5 is g's def (str.splitlines made it a blank
    # line in f's gap), and the line after the file's end is in g's
    assert gap_body(old, new, 4) == (2, 2)
    assert gap_body(old, new, 5) is None
    assert gap_body(old, new, 7) == (6, 6)
