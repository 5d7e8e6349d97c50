"""Procedural bugs: AST mutations with libcst (formatting preserved).

`candidates()` walks every function and class of a file, keeps the sites on lines some test executes
(the coverage map), applies one operator (factory/operators.py) at one site at a time, and yields the
mutated source.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from bugforge.factory.operators import OPERATORS, STRATEGY_OF, Operator


@dataclass
class Mutation:
    strategy: str
    function: str
    line_span: tuple[int, int]
    source: str
    """The whole mutated file."""


@dataclass
class _Site:
    unit: cst.CSTNode  # the function or class the site is in
    qualname: str
    node: cst.CSTNode
    line_span: tuple[int, int]


class _Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self):
        self.stack: list[tuple[cst.CSTNode, str]] = []
        self.sites: list[tuple[Operator, _Site]] = []

    def _qual(self, name: str) -> str:
        return ".".join([q for _, q in self.stack[-1:]] + [name]) if self.stack else name

    def on_visit(self, node) -> bool:
        pos = self.get_metadata(PositionProvider, node, None)
        span = (pos.start.line, pos.end.line) if pos else (0, 0)
        if isinstance(node, cst.ClassDef):
            for op in OPERATORS:
                if op.scope == "class" and op.match(node):
                    self.sites.append((op, _Site(node, self._qual(node.name.value), node, span)))
        if self.stack and isinstance(self.stack[-1][0], cst.FunctionDef):
            unit, q = self.stack[-1]
            for op in OPERATORS:
                if op.scope == "function" and op.match(node):
                    self.sites.append((op, _Site(unit, q, node, span)))
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.stack.append((node, self._qual(node.name.value)))
        return True

    def on_leave(self, original_node) -> None:
        if self.stack and self.stack[-1][0] is original_node:
            self.stack.pop()


class _Replace(cst.CSTTransformer):
    def __init__(self, target: cst.CSTNode, op: Operator):
        self.target, self.op, self.done = target, op, False

    def on_leave(self, original_node, updated_node):
        if original_node is self.target:
            self.done = True
            return self.op.mutate(updated_node)
        return updated_node


@dataclass
class Site:
    """A place one operator can break, not yet applied (applying costs a tree transform)."""

    strategy: str
    function: str
    line_span: tuple[int, int]
    _module: cst.Module
    _node: cst.CSTNode
    _op: Operator

    def make(self) -> Mutation | None:
        try:
            new = self._module.visit(_Replace(self._node, self._op)).code
        except (StopIteration, IndexError, AttributeError, TypeError, ValueError, cst.CSTValidationError):
            return None
        if new == self._module.code:
            return None
        return Mutation(self.strategy, self.function, self.line_span, new)


def sites(source: str, covered: set[int], strategies: set[str] | None = None) -> list[Site]:
    """Every single-site mutation of `source` at a covered site, in file order (not yet applied).

    A function-level site counts when its first line was executed by some test; a class-level one,
    or a default argument, when some line of its function or class was."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return []
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    col = _Collector()
    wrapper.visit(col)
    positions = wrapper.resolve(PositionProvider)
    out = []
    for op, site in col.sites:
        name = STRATEGY_OF.get(op.name, op.name)
        if strategies is not None and name not in strategies:
            continue
        upos = positions.get(site.unit)
        unit_lines = set(range(upos.start.line, upos.end.line + 1)) if upos else set()
        wide = op.scope == "class" or op.name == "wrong_default"
        if unit_lines & covered if wide else site.line_span[0] in covered:
            out.append(Site(name, site.qualname, site.line_span, module, site.node, op))
    return out


def candidates(source: str, covered: set[int], strategies: set[str] | None = None) -> Iterator[Mutation]:
    """Every single-site mutation of `source` at a covered site, applied, in file order."""
    for site in sites(source, covered, strategies):
        m = site.make()
        if m is not None:
            yield m
