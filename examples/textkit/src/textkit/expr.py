"""A small arithmetic expression calculator.

Grammar (recursive descent)::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/" | "%") unary)*
    unary   := "-" unary | power
    power   := atom ("^" unary)?
    atom    := NUMBER | NAME | NAME "(" args ")" | "(" expr ")"
    args    := expr ("," expr)*
"""

import math

OPERATORS = "+-*/%^(),"

FUNCTIONS = {
    "abs": abs,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "round": round,
}

CONSTANTS = {"pi": math.pi, "e": math.e}


class ExprError(Exception):
    """Base class for all calculator errors."""


class TokenizeError(ExprError):
    def __init__(self, char, pos):
        super().__init__("unexpected character %r at position %d" % (char, pos))
        self.char = char
        self.pos = pos


class ParseError(ExprError):
    pass


class EvalError(ExprError):
    pass


class Token:
    __slots__ = ("kind", "value", "pos")

    def __init__(self, kind, value, pos):
        self.kind = kind
        self.value = value
        self.pos = pos

    def __repr__(self):
        return "Token(%r, %r, %d)" % (self.kind, self.value, self.pos)

    def __eq__(self, other):
        if not isinstance(other, Token):
            return NotImplemented
        return (self.kind, self.value) == (other.kind, other.value)


def tokenize(source):
    """Turn source text into a list of Tokens (kinds: num, name, op, end)."""
    tokens = []
    i = 0
    n = len(source)
    while i < n:
        ch = source[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or ch == ".":
            start = i
            seen_dot = False
            while i < n and (source[i].isdigit() or source[i] == "."):
                if source[i] == ".":
                    if seen_dot:
                        raise TokenizeError(source[i], i)
                    seen_dot = True
                i += 1
            text = source[start:i]
            if text == ".":
                raise TokenizeError(".", start)
            value = float(text) if seen_dot else int(text)
            tokens.append(Token("num", value, start))
        elif ch.isalpha() or ch == "_":
            start = i
            while i < n and (source[i].isalnum() or source[i] == "_"):
                i += 1
            tokens.append(Token("name", source[start:i], start))
        elif ch in OPERATORS:
            tokens.append(Token("op", ch, i))
            i += 1
        else:
            raise TokenizeError(ch, i)
    tokens.append(Token("end", None, n))
    return tokens


class Node:
    """Base class of expression tree nodes."""

    def evaluate(self, env):
        raise NotImplementedError

    def children(self):
        return []

    def count_nodes(self):
        return 1 + sum(child.count_nodes() for child in self.children())

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__


class Number(Node):
    def __init__(self, value):
        self.value = value

    def evaluate(self, env):
        return self.value

    def __repr__(self):
        return "Number(%r)" % (self.value,)


class Name(Node):
    def __init__(self, name):
        self.name = name

    def evaluate(self, env):
        if self.name in env:
            return env[self.name]
        if self.name in CONSTANTS:
            return CONSTANTS[self.name]
        raise EvalError("unknown variable: %s" % self.name)


class UnaryMinus(Node):
    def __init__(self, operand):
        self.operand = operand

    def evaluate(self, env):
        return -self.operand.evaluate(env)

    def children(self):
        return [self.operand]


class BinOp(Node):
    """Base class for binary operators; subclasses implement `apply`."""

    symbol = "?"

    def __init__(self, left, right):
        self.left = left
        self.right = right

    def children(self):
        return [self.left, self.right]

    def evaluate(self, env):
        return self.apply(self.left.evaluate(env), self.right.evaluate(env))

    def apply(self, a, b):
        raise NotImplementedError


class Add(BinOp):
    symbol = "+"

    def apply(self, a, b):
        return a + b


class Sub(BinOp):
    symbol = "-"

    def apply(self, a, b):
        return a - b


class Mul(BinOp):
    symbol = "*"

    def apply(self, a, b):
        return a * b


class Div(BinOp):
    symbol = "/"

    def apply(self, a, b):
        if b == 0:
            raise EvalError("division by zero")
        result = a / b
        if isinstance(a, int) and isinstance(b, int) and a % b == 0:
            return a // b
        return result


class Mod(BinOp):
    symbol = "%"

    def apply(self, a, b):
        if b == 0:
            raise EvalError("modulo by zero")
        return a % b


class Pow(BinOp):
    symbol = "^"

    def apply(self, a, b):
        return a ** b


class Call(Node):
    def __init__(self, name, args):
        self.name = name
        self.args = args

    def children(self):
        return list(self.args)

    def evaluate(self, env):
        func = FUNCTIONS.get(self.name)
        if func is None:
            raise EvalError("unknown function: %s" % self.name)
        values = [arg.evaluate(env) for arg in self.args]
        try:
            return func(*values)
        except (TypeError, ValueError) as exc:
            raise EvalError("bad call to %s: %s" % (self.name, exc))


BINARY = {"+": Add, "-": Sub, "*": Mul, "/": Div, "%": Mod}


class Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos]

    def advance(self):
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def accept(self, value):
        tok = self.peek()
        if tok.kind == "op" and tok.value == value:
            self.pos += 1
            return True
        return False

    def expect(self, value):
        if not self.accept(value):
            tok = self.peek()
            raise ParseError("expected %r at position %d" % (value, tok.pos))

    def parse(self):
        node = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            raise ParseError("unexpected token %r at position %d" % (tok.value, tok.pos))
        return node

    def expr(self):
        node = self.term()
        while self.peek().kind == "op" and self.peek().value in "+-":
            op = self.advance().value
            node = BINARY[op](node, self.term())
        return node

    def term(self):
        node = self.unary()
        while self.peek().kind == "op" and self.peek().value in "*/%":
            op = self.advance().value
            node = BINARY[op](node, self.unary())
        return node

    def unary(self):
        if self.accept("-"):
            return UnaryMinus(self.unary())
        return self.power()

    def power(self):
        base = self.atom()
        if self.accept("^"):
            return Pow(base, self.unary())
        return base

    def atom(self):
        tok = self.advance()
        if tok.kind == "num":
            return Number(tok.value)
        if tok.kind == "name":
            if self.accept("("):
                args = [self.expr()]
                while self.accept(","):
                    args.append(self.expr())
                self.expect(")")
                return Call(tok.value, args)
            return Name(tok.value)
        if tok.kind == "op" and tok.value == "(":
            node = self.expr()
            self.expect(")")
            return node
        raise ParseError("unexpected token %r at position %d" % (tok.value, tok.pos))


def parse(source):
    return Parser(tokenize(source)).parse()


def evaluate(source, env=None):
    """Parse and evaluate `source` with optional variable bindings."""
    return parse(source).evaluate(env or {})
