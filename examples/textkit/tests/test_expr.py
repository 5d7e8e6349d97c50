import math

import pytest

from textkit import expr
from textkit.expr import (
    Add,
    BinOp,
    Call,
    Div,
    EvalError,
    ExprError,
    Mul,
    Mod,
    Name,
    Node,
    Number,
    ParseError,
    Parser,
    Pow,
    Sub,
    Token,
    TokenizeError,
    UnaryMinus,
)


def test_tokenize_simple():
    assert expr.tokenize("1 + x") == [
        Token("num", 1, 0),
        Token("op", "+", 2),
        Token("name", "x", 4),
        Token("end", None, 5),
    ]


def test_tokenize_positions():
    tokens = expr.tokenize("12 *  ab")
    assert [t.pos for t in tokens] == [0, 3, 6, 8]


def test_tokenize_float_and_int():
    tokens = expr.tokenize("3.25 7 .5")
    assert [t.value for t in tokens[:3]] == [3.25, 7, 0.5]
    assert isinstance(tokens[1].value, int)
    assert isinstance(tokens[0].value, float)


def test_tokenize_identifiers_with_underscore_and_digits():
    tokens = expr.tokenize("_a1 b_2")
    assert [(t.kind, t.value) for t in tokens] == [("name", "_a1"), ("name", "b_2"), ("end", None)]


def test_tokenize_bad_character():
    with pytest.raises(TokenizeError) as info:
        expr.tokenize("1 + $")
    assert info.value.char == "$"
    assert info.value.pos == 4
    assert str(info.value) == "unexpected character '$' at position 4"


def test_tokenize_two_dots():
    with pytest.raises(TokenizeError) as info:
        expr.tokenize("1.2.3")
    assert info.value.pos == 3


def test_tokenize_lone_dot():
    with pytest.raises(TokenizeError):
        expr.tokenize(" . ")


def test_token_uses_slots():
    tok = Token("num", 1, 0)
    assert not hasattr(tok, "__dict__")


def test_token_repr_and_eq():
    assert repr(Token("op", "+", 3)) == "Token('op', '+', 3)"
    assert Token("op", "+", 1) == Token("op", "+", 9)
    assert Token("op", "+", 1) != Token("op", "-", 1)
    assert Token("op", "+", 1) != "+"


def test_errors_share_base_class():
    assert issubclass(TokenizeError, ExprError)
    assert issubclass(ParseError, ExprError)
    assert issubclass(EvalError, ExprError)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("1 + 2", 3),
        ("7 - 10", -3),
        ("2 + 3 * 4", 14),
        ("(2 + 3) * 4", 20),
        ("10 - 4 - 3", 3),
        ("100 / 10 / 5", 2),
        ("8 / 2", 4),
        ("7 / 2", 3.5),
        ("10 % 4", 2),
        ("10 % 4 * 3", 6),
        ("17 % 5", 2),
        ("-7 % 3", 2),
        ("2 ^ 3", 8),
        ("2 ^ 3 ^ 2", 512),
        ("-2 ^ 2", -4),
        ("2 ^ -1", 0.5),
        ("--3", 3),
        ("-(1 + 2) * 3", -9),
        ("2 * -3", -6),
        ("1.5 * 4", 6.0),
        ("((4))", 4),
    ],
)
def test_evaluate(source, expected):
    assert expr.evaluate(source) == expected


def test_exact_division_returns_int():
    result = expr.evaluate("9 / 3")
    assert result == 3 and isinstance(result, int)


def test_float_division_stays_float():
    result = expr.evaluate("9.0 / 3")
    assert result == 3.0 and isinstance(result, float)


def test_variables():
    assert expr.evaluate("x * y + 1", {"x": 3, "y": 4}) == 13


def test_variable_shadows_constant():
    assert expr.evaluate("pi", {"pi": 3}) == 3


def test_constants():
    assert expr.evaluate("pi") == math.pi
    assert expr.evaluate("e") == math.e


def test_unknown_variable():
    with pytest.raises(EvalError, match="unknown variable: zz"):
        expr.evaluate("zz + 1")


@pytest.mark.parametrize(
    "source, expected",
    [
        ("abs(-5)", 5),
        ("max(1, 7, 3)", 7),
        ("min(4, 2, 9)", 2),
        ("sqrt(16)", 4.0),
        ("round(2.7)", 3),
        ("max(1, 2) + min(3, 4)", 5),
        ("abs(2 - 10) * 2", 16),
    ],
)
def test_functions(source, expected):
    assert expr.evaluate(source) == expected


def test_unknown_function():
    with pytest.raises(EvalError, match="unknown function: foo"):
        expr.evaluate("foo(1)")


def test_bad_function_call_wrapped():
    with pytest.raises(EvalError, match="bad call to sqrt"):
        expr.evaluate("sqrt(-1)")


def test_bad_function_arity_wrapped():
    with pytest.raises(EvalError, match="bad call to abs"):
        expr.evaluate("abs(1, 2)")


@pytest.mark.parametrize("source", ["1 / 0", "5 / (2 - 2)"])
def test_division_by_zero(source):
    with pytest.raises(EvalError, match="division by zero"):
        expr.evaluate(source)


def test_modulo_by_zero():
    with pytest.raises(EvalError, match="modulo by zero"):
        expr.evaluate("3 % 0")


@pytest.mark.parametrize(
    "source, message",
    [
        ("1 +", "unexpected token None at position 3"),
        ("(1 + 2", "expected ')' at position 6"),
        ("1 2", "unexpected token 2 at position 2"),
        ("max(1, 2", "expected ')' at position 8"),
        (")", "unexpected token ')' at position 0"),
        ("2 * * 3", "unexpected token '*' at position 4"),
    ],
)
def test_parse_errors(source, message):
    with pytest.raises(ParseError) as info:
        expr.parse(source)
    assert str(info.value) == message


def test_parse_tree_precedence():
    assert expr.parse("1 + 2 * 3") == Add(Number(1), Mul(Number(2), Number(3)))


def test_parse_tree_left_associative():
    assert expr.parse("1 - 2 - 3") == Sub(Sub(Number(1), Number(2)), Number(3))


def test_parse_tree_power_right_associative():
    assert expr.parse("2 ^ 3 ^ 4") == Pow(Number(2), Pow(Number(3), Number(4)))


def test_parse_tree_unary_and_call():
    assert expr.parse("-f(x, 1)") == UnaryMinus(Call("f", [Name("x"), Number(1)]))


def test_parse_tree_division():
    assert expr.parse("a / 2") == Div(Name("a"), Number(2))


def test_node_equality_requires_same_type():
    assert Add(Number(1), Number(2)) != Sub(Number(1), Number(2))
    assert Number(1) != Number(2)


@pytest.mark.parametrize(
    "source, count",
    [("1", 1), ("1 + 2", 3), ("-(1 + 2) * x", 6), ("max(1, 2, 3)", 4)],
)
def test_count_nodes(source, count):
    assert expr.parse(source).count_nodes() == count


def test_binop_symbols():
    assert BinOp.symbol == "?"
    assert [cls.symbol for cls in (Add, Sub, Mul, Div, Mod, Pow)] == ["+", "-", "*", "/", "%", "^"]


def test_binop_subclasses():
    for cls in (Add, Sub, Mul, Div, Mod, Pow):
        assert issubclass(cls, BinOp)


def test_base_node_not_implemented():
    with pytest.raises(NotImplementedError):
        BinOp(Number(1), Number(2)).evaluate({})


def test_base_node_evaluate_not_implemented():
    with pytest.raises(NotImplementedError):
        Node().evaluate({})
    assert Node().children() == []
    assert Node().count_nodes() == 1


def test_parser_accept_returns_booleans():
    parser = Parser(expr.tokenize("+ 1"))
    assert parser.accept("-") is False
    assert parser.pos == 0
    assert parser.accept("+") is True
    assert parser.pos == 1


def test_number_repr():
    assert repr(Number(2.5)) == "Number(2.5)"
