"""Build sites from expressions: the forms that combine terms of one universe.

A *site* is an ``or`` chain (``a.is_x() or a.is_y()``), a negated chain (``not (a or b)``),
an ``and`` of negations (``not a and not b``), an ``==``/``!=`` chain, a membership test
(``x in ("a", "b")``), a ``match`` case listing members (``case "a" | "b":``), or a single
term tested on its own (judged only by sibling consensus). Terms narrowed by a condition the
canonical families do not carry (``is_mori_epv2()``) count as other operands.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from ..model import Operand, Role, Site, Span, Universe
from .names import source_text
from .receivers import ReceiverScope
from .terms import Term, TermReader, single_value

Segment = Callable[[ast.AST], str]


def span_of(node: ast.AST) -> Span:
    """The node's source range (``ast`` positions)."""
    return Span(
        node.lineno,  # type: ignore[attr-defined]
        node.col_offset,  # type: ignore[attr-defined]
        node.end_lineno or node.lineno,  # type: ignore[attr-defined]
        node.end_col_offset or 0,  # type: ignore[attr-defined]
    )


@dataclass
class Shape:
    """What an expression is, before it is placed: its form, polarity and terms."""

    form: str
    polarity: str
    terms: list[Term]
    helpers: list[Term] = field(default_factory=list)
    other: bool = False
    constant: str | None = None


class SiteBuilder:
    """Recognises sites of one universe; remembers the nodes a chain already consumed."""

    def __init__(self, universe: Universe) -> None:
        self.universe = universe
        self.reader = TermReader(universe)
        self.ambient = universe.ambient
        self.consumed: set[int] = set()

    def term(
        self, node: ast.expr, scope: ReceiverScope, constants: dict[str, frozenset[str]]
    ) -> Term | None:
        """A term of this universe that counts as a plain test of its members."""
        term = self.reader.term(node, scope, constants)
        if term is None or term.kind == "helper":
            return term
        if any(set(texts) - self.ambient for _, texts in term.conditions):
            return None
        return term

    def shape(
        self, node: ast.expr, scope: ReceiverScope, constants: dict[str, frozenset[str]]
    ) -> Shape | None:
        """The site ``node`` is, if any (chains mark their inner nodes consumed)."""
        if id(node) in self.consumed:
            return None
        if isinstance(node, (ast.Call, ast.Attribute)) or (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
        ):
            term = self.term(node, scope, constants)
            if term is not None and term.kind == "helper" and not isinstance(node, ast.Compare):
                return Shape("helper", "positive", [], helpers=[term])
            if term is None or term.kind == "helper" or len(term.members) != 1:
                return None
            return Shape("single", "negative" if term.negated else "positive", [term])
        if isinstance(node, ast.Compare):
            term = self.term(node, scope, constants)
            if term is None or term.kind == "helper" or len(term.members) < 2:
                return None
            right = node.comparators[0]
            constant = right.id if isinstance(right, ast.Name) else None
            polarity = "negative" if term.negated else "positive"
            return Shape("not-in" if term.negated else "in", polarity, [term], constant=constant)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = node.operand
            if isinstance(inner, ast.BoolOp) and isinstance(inner.op, ast.Or):
                chain = self._chain(inner, scope, constants, want_negated=False)
                if chain is None:
                    return None
                self.consumed.add(id(inner))
                return Shape("not-or", "negative", *chain)
            return None
        if isinstance(node, ast.BoolOp):
            negated = isinstance(node.op, ast.And)
            chain = self._chain(node, scope, constants, want_negated=negated)
            if chain is None:
                return None
            terms = chain[0]
            plain = all(t.kind in ("string", "enum") for t in terms)
            if negated:
                form = "ne-chain" if plain else "and-not"
            else:
                form = "eq-chain" if plain else "or-chain"
            return Shape(form, "negative" if negated else "positive", *chain)
        return None

    def _flatten(self, node: ast.BoolOp) -> list[ast.expr]:
        out: list[ast.expr] = []
        for value in node.values:
            if isinstance(value, ast.BoolOp) and type(value.op) is type(node.op):
                self.consumed.add(id(value))
                out.extend(self._flatten(value))
            else:
                out.append(value)
        return out

    def _chain(
        self,
        node: ast.BoolOp,
        scope: ReceiverScope,
        constants: dict[str, frozenset[str]],
        want_negated: bool,
    ) -> tuple[list[Term], list[Term], bool] | None:
        terms: list[Term] = []
        helpers: list[Term] = []
        other = False
        for operand in self._flatten(node):
            term = self.term(operand, scope, constants)
            if term is None or term.negated != want_negated:
                other = True
                continue
            (helpers if term.kind == "helper" else terms).append(term)
        terms, helpers = self._unions(terms, helpers)
        members = set().union(*(t.members for t in terms)) if terms else set()
        if len(members) >= 2 or (helpers and members):
            for term in [*terms, *helpers]:
                self.consumed.add(id(term.node))
                if isinstance(term.node, ast.UnaryOp):
                    self.consumed.add(id(term.node.operand))
            return terms, helpers, other
        return None

    def _unions(self, terms: list[Term], helpers: list[Term]) -> tuple[list[Term], list[Term]]:
        """A chain that calls every predicate of a union canonical (``c.use_x_v1 or
        c.use_x_v2``) calls the canonical: those terms become calls of it, not a hand copy."""
        for family in self.universe.families:
            if family.access != "union" or " | " not in family.name:
                continue
            parts = set(family.name.split(" | "))
            called = [t for t in terms if t.kind in ("property", "method") and t.predicate in parts]
            if {t.predicate for t in called} != parts:
                continue
            ids = {id(t) for t in called}
            terms = [t for t in terms if id(t) not in ids]
            helpers = helpers + [
                Term(t.node, "helper", family.member_set, t.negated, family.name, family.conditions)
                for t in called
            ]
        return terms, helpers

    def match_cases(
        self, stmt: ast.Match, scope: ReceiverScope
    ) -> list[tuple[ast.match_case, Shape]]:
        """The cases of ``match <value>:`` whose patterns name members of this universe."""
        if not scope.is_value_expr(stmt.subject):
            return []
        found = []
        for case in stmt.cases:
            terms = self._patterns(case.pattern)
            if terms:
                found.append(
                    (case, Shape("match", "positive", terms, other=case.guard is not None))
                )
        return found

    def _patterns(self, pattern: ast.pattern) -> list[Term]:
        alternatives = pattern.patterns if isinstance(pattern, ast.MatchOr) else [pattern]
        terms = []
        for alternative in alternatives:
            if not isinstance(alternative, ast.MatchValue):
                continue
            single = single_value(alternative.value, self.universe)
            if single is not None:
                terms.append(Term(alternative.value, "pattern", frozenset({single[1]}), False))
        return terms


def make_site(
    shape: Shape,
    node: ast.AST,
    *,
    path: str,
    symbol: str,
    context: str,
    role: str,
    enumerator: str | None,
    segment: Segment,
    statement_line: int,
    universe: str,
) -> Site:
    """The :class:`Site` for a shape found at ``node``."""
    members: set[str] = set()
    for term in shape.terms:
        members |= term.members
    operands = tuple(
        Operand(
            kind=t.kind,  # type: ignore[arg-type]
            members=t.members,
            span=span_of(t.node),
            text=segment(t.node),
            predicate=t.predicate,
        )
        for t in [*shape.terms, *shape.helpers]
    )
    return Site(
        path=path,
        symbol=symbol,
        form=shape.form,  # type: ignore[arg-type]
        polarity=shape.polarity,  # type: ignore[arg-type]
        span=span_of(node),
        members=frozenset(members),
        operands=operands,
        receiver=_receiver_text(shape.terms),
        helpers=tuple(dict.fromkeys(h.predicate or "" for h in shape.helpers)),
        context=context,
        enumerator=enumerator,
        constant=shape.constant,
        role=Role(name=role),
        text=segment(node),
        has_other_terms=shape.other,
        statement_line=statement_line,
        universe=universe,
    )


def _receiver_text(terms: list[Term]) -> str:
    for term in terms:
        node = term.node.operand if isinstance(term.node, ast.UnaryOp) else term.node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return source_text(node.func.value)
        if isinstance(node, ast.Attribute) and term.kind == "property":
            return source_text(node.value)
        if isinstance(node, ast.Compare):
            return source_text(node.left)
    return ""
