"""What a rewrite changes: the backends for which the predicate's value flips.

The original and the rewritten expression are both evaluated for every enum member with
:mod:`driftcheck.interpret` (never executed). The site's receivers (``_a2a_backend``,
``self._a2a``, ``cfg.moe_a2a_backend``) are the backend. Operands that are not backend terms
(``self._is_moe_layer``, ``not _is_npu``: anything the interpreter cannot evaluate) are free
booleans: both expressions are evaluated under every setting of them, and of the enum methods'
narrowings, and a member flips when the two values differ under *some* setting. Past
:data:`MAX_FREE` of them (a chain of 10,000 operands) each side's backend terms are evaluated
and folded away instead, and only the free operands both remaining sides read are tried. So
``(b.is_deepep() or b.is_mori()) and self._is_moe_layer`` + ``b.is_deepep_v2()`` flips
deepep_v2 (when ``self._is_moe_layer`` is true).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from driftcheck.interpret import Interpreter, Scope, Unproven
from driftcheck.model import Site, Universe
from driftcheck.sites.names import source_text

from .fragment import Fragment, FragmentError
from .spelling import member_of

BACKEND = "__driftcheck_backend__"
MAX_FREE = 10  # free operands whose every setting is tried
MAX_TRIED = 10  # past MAX_FREE: free operands both folded sides read, whose settings are tried


class FlipError(Exception):
    """The change could not be computed; the message says which construct stopped it."""


@dataclass(frozen=True)
class Change:
    """The members whose value flips, each with its direction (``False -> True``)."""

    directions: tuple[tuple[str, str], ...]

    @property
    def flips(self) -> tuple[str, ...]:
        """The flipped members, in universe order."""
        return tuple(member for member, _ in self.directions)

    def describe(self) -> str:
        """``False -> True for deepep_v2, pplx`` (groups by direction, ``; ``-separated)."""
        if not self.directions:
            return "no backend changes"
        groups: dict[str, list[str]] = {}
        for member, direction in self.directions:
            groups.setdefault(direction, []).append(member)
        return "; ".join(
            f"{direction} for {', '.join(members)}" for direction, members in groups.items()
        )


def site_receivers(site: Site, universe: Universe) -> set[str]:
    """The source texts (``ast.unparse`` form) that denote the backend in ``site``."""
    receivers: set[str] = set()
    for operand in site.operands:
        try:
            node = Fragment(operand.text).node
        except FragmentError:
            continue
        while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            node = node.operand
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receivers.add(source_text(node.func.value))
        elif isinstance(node, ast.Attribute) and operand.kind == "property":
            receivers.add(source_text(node.value))
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
            left, right = node.left, node.comparators[0]
            if isinstance(node.ops[0], (ast.In, ast.NotIn)) or member_of(right, universe):
                receivers.add(source_text(left))
            elif member_of(left, universe):
                receivers.add(source_text(right))
    return receivers


class _Normalise(ast.NodeTransformer):
    """Receivers become one backend name; ``frozenset({...})`` becomes its literal."""

    def __init__(self, receivers: set[str]) -> None:
        self.receivers = receivers

    def visit(self, node: ast.AST) -> ast.AST:
        if (
            isinstance(node, (ast.Name, ast.Attribute, ast.Call))
            and source_text(node) in self.receivers
        ):
            return ast.copy_location(ast.Name(id=BACKEND, ctx=ast.Load()), node)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("frozenset", "set", "tuple", "list")
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], (ast.Tuple, ast.List, ast.Set))
        ):
            return self.visit(node.args[0])
        return super().visit(node)


def compute_change(
    scope: Scope,
    universe: Universe,
    before: str,
    after: str,
    receivers: set[str],
    before_names: Mapping[str, object] | None = None,
    after_names: Mapping[str, object] | None = None,
) -> Change:
    """The members whose value differs between expressions ``before`` and ``after``.

    ``before_names``/``after_names`` give names a value on each side (a constant whose literal
    the rewrite edits). Raises :class:`FlipError` when an expression cannot be evaluated.
    """
    scope = replace(scope, aliases=frozenset(scope.aliases) | {BACKEND})
    try:
        parsed = [_Normalise(receivers).visit(Fragment(text).node) for text in (before, after)]
    except FragmentError as exc:
        raise FlipError(str(exc)) from exc
    names = [dict(before_names or {}), dict(after_names or {})]
    free: dict[str, str] = {}
    trees = [
        _bind_free(cast(ast.expr, tree), scope, universe, free, names[i])
        for i, tree in enumerate(parsed)
    ]
    directions: list[tuple[str, str]] = []
    for member in universe.values:
        seen: set[tuple[bool, bool]] = set()
        if len(free) > MAX_FREE:  # too many to try every setting
            seen = _folded_outcomes(scope, member, trees, names, set(free.values()))
        else:
            for values in itertools.product((False, True), repeat=len(free)):
                setting = dict(zip(free.values(), values, strict=True))
                seen |= _outcomes(scope, member, trees, [{**setting, **n} for n in names])
        changed = sorted({f"{b} -> {a}" for b, a in seen if b != a})
        if changed:
            directions.append((member, changed[0] if len(changed) == 1 else " / ".join(changed)))
    return Change(tuple(directions))


def _bind_free(
    tree: ast.expr,
    scope: Scope,
    universe: Universe,
    free: dict[str, str],
    names: Mapping[str, object],
) -> ast.expr:
    """``tree`` with every non-backend leaf of its and/or/not structure replaced by a name."""
    if isinstance(tree, ast.BoolOp):
        tree.values = [_bind_free(v, scope, universe, free, names) for v in tree.values]
        return tree
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.Not):
        tree.operand = _bind_free(tree.operand, scope, universe, free, names)
        return tree
    if _evaluable(tree, scope, universe, names):
        return tree
    key = source_text(tree)
    name = free.setdefault(key, f"__driftcheck_free_{len(free)}__")
    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), tree)


def _evaluable(
    node: ast.expr, scope: Scope, universe: Universe, names: Mapping[str, object]
) -> bool:
    for member in universe.values:
        try:
            Interpreter(scope, member).truth(node, names)
        except (Unproven, RecursionError):
            return False
    return True


def _outcomes(
    scope: Scope, member: str, trees: list[ast.expr], locals_: list[dict[str, object]]
) -> set[tuple[bool, bool]]:
    """``(before, after)`` for ``member`` under every narrowing setting the two meet."""
    return {
        (bool(values[0]), bool(values[1]))
        for values in _under_narrowings(
            scope,
            member,
            lambda interp: [
                interp.truth(tree, names) for tree, names in zip(trees, locals_, strict=True)
            ],
        )
    }


def _under_narrowings(
    scope: Scope, member: str, evaluate: Callable[[Interpreter], list[Any]]
) -> Iterator[list[Any]]:
    """What ``evaluate`` gives for ``member`` under every setting of the narrowings it meets
    (a None among its values: an unset narrowing decided it, so both settings are tried)."""
    pending: list[dict[str, bool]] = [{}]
    while pending:
        setting = pending.pop()
        interp = Interpreter(scope, member, setting)
        try:
            values = evaluate(interp)
        except Unproven as exc:
            raise FlipError(f"cannot evaluate {exc.construct}") from exc
        if any(value is None for value in values):
            unset = [n for n in interp.seen_narrowings if n not in setting]
            if not unset:  # pragma: no cover - None implies an unset narrowing
                raise FlipError("undecidable predicate")
            pending.extend([{**setting, unset[0]: False}, {**setting, unset[0]: True}])
            continue
        yield values


# A formula over the free conditions once a member's backend terms are evaluated: a truth
# value, ("var", name), ("not", formula), or ("and" | "or", (formula, ...)).
Formula = bool | tuple


def _folded_outcomes(
    scope: Scope,
    member: str,
    trees: list[ast.expr],
    names: list[dict[str, object]],
    free: set[str],
) -> set[tuple[bool, bool]]:
    """``(before, after)`` for ``member``, as :func:`_outcomes` under every setting of the
    free conditions gives them, for more free conditions than settings can be tried: each
    side's backend terms are evaluated (under every narrowing setting they meet) and folded
    away, leaving two formulas over the free conditions (:func:`_pairs`)."""
    found: set[tuple[bool, bool]] = set()
    for before, after in _under_narrowings(
        scope,
        member,
        lambda interp: [
            _fold(tree, interp, local, free) for tree, local in zip(trees, names, strict=True)
        ],
    ):
        found |= _pairs(before, after)
    return found


def _fold(
    tree: ast.expr, interp: Interpreter, local: Mapping[str, object], free: set[str]
) -> Formula | None:
    """``tree``'s and/or/not structure over its free conditions, every other leaf evaluated
    and folded away (None: a leaf depends on an unset narrowing)."""
    if isinstance(tree, ast.Name) and tree.id in free:
        return ("var", tree.id)
    if isinstance(tree, ast.UnaryOp) and isinstance(tree.op, ast.Not):
        inner = _fold(tree.operand, interp, local, free)
        return None if inner is None else _negated(inner)
    if isinstance(tree, ast.BoolOp):
        parts = [_fold(value, interp, local, free) for value in tree.values]
        if None in parts:
            return None
        return _joined("and" if isinstance(tree.op, ast.And) else "or", parts)  # type: ignore[arg-type]
    return interp.truth(tree, local)


def _negated(formula: Formula) -> Formula:
    return (not formula) if isinstance(formula, bool) else ("not", formula)


def _joined(operator: str, parts: Iterable[Formula]) -> Formula:
    """``and``/``or`` of ``parts`` with the truth values among them folded away."""
    absorbing = operator == "or"
    kept: list[Formula] = []
    for part in parts:
        if part is absorbing:
            return absorbing
        if not isinstance(part, bool):
            kept.append(part)
    if not kept:
        return not absorbing
    return kept[0] if len(kept) == 1 else (operator, tuple(kept))


def _assigned(formula: Formula, values: Mapping[str, bool]) -> Formula:
    """``formula`` with the conditions in ``values`` set and folded away."""
    if isinstance(formula, bool):
        return formula
    if formula[0] == "var":
        return values.get(formula[1], formula)
    if formula[0] == "not":
        return _negated(_assigned(formula[1], values))
    return _joined(formula[0], (_assigned(part, values) for part in formula[1]))


def _conditions(formula: Formula) -> list[str]:
    """The free conditions ``formula`` reads, once per occurrence."""
    found: list[str] = []
    pending = [formula]
    while pending:
        current = pending.pop()
        if isinstance(current, bool):
            continue
        if current[0] == "var":
            found.append(current[1])
        elif current[0] == "not":
            pending.append(current[1])
        else:
            pending.extend(current[1])
    return found


def _values(formula: Formula, read: list[str]) -> set[bool]:
    """The values ``formula`` takes (``read``: its conditions). One that reads each condition
    once takes both unless it is a truth value."""
    if isinstance(formula, bool):
        return {formula}
    if len(set(read)) == len(read):
        return {False, True}
    return {value for value, _ in _pairs(formula, True)}


def _pairs(before: Formula, after: Formula) -> set[tuple[bool, bool]]:
    """The ``(before, after)`` pairs the two formulas take under the settings of their free
    conditions: the same formula takes its values on both sides; otherwise only the
    conditions both read (each once) are tried, the others take each side's values apart."""
    read = [_conditions(before), _conditions(after)]
    if before == after:
        return {(value, value) for value in _values(before, read[0])}
    once = all(len(set(r)) == len(r) for r in read)
    tried = set(read[0]) & set(read[1]) if once else set(read[0]) | set(read[1])
    if len(tried) > MAX_TRIED:
        raise FlipError(
            f"{len(tried)} unrelated conditions that the rewrite's two sides both read "
            f"(at most {MAX_TRIED})"
        )
    order = sorted(tried)
    found: set[tuple[bool, bool]] = set()
    for values in itertools.product((False, True), repeat=len(order)):
        setting = dict(zip(order, values, strict=True))
        sides = [_assigned(before, setting), _assigned(after, setting)]
        rest = [[c for c in r if c not in setting] for r in read]
        found |= set(itertools.product(_values(sides[0], rest[0]), _values(sides[1], rest[1])))
    return found


def ordered(members: Iterable[str], universe: Universe) -> tuple[str, ...]:
    """``members`` in universe order."""
    return universe.order(set(members))
