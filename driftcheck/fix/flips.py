"""What a rewrite changes: the backends for which the predicate's value flips.

The original and the rewritten expression are both evaluated for every enum member with
:mod:`driftcheck.interpret` (never executed). The site's receivers (``_a2a_backend``,
``self._a2a``, ``cfg.moe_a2a_backend``) are the backend. Operands that are not backend terms
(``self._is_moe_layer``, ``not _is_npu``: anything the interpreter cannot evaluate) are free
booleans: both expressions are evaluated under every setting of them, and of the enum methods'
narrowings, and a member flips when the two values differ under *some* setting. So
``(b.is_deepep() or b.is_mori()) and self._is_moe_layer`` + ``b.is_deepep_v2()`` flips
deepep_v2 (when ``self._is_moe_layer`` is true).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from driftcheck.interpret import Interpreter, Scope, Unproven
from driftcheck.model import Site, Universe

from .fragment import Fragment, FragmentError
from .spelling import member_of

BACKEND = "__driftcheck_backend__"
MAX_FREE = 10


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
            receivers.add(ast.unparse(node.func.value))
        elif isinstance(node, ast.Attribute) and operand.kind == "property":
            receivers.add(ast.unparse(node.value))
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
            left, right = node.left, node.comparators[0]
            if isinstance(node.ops[0], (ast.In, ast.NotIn)) or member_of(right, universe):
                receivers.add(ast.unparse(left))
            elif member_of(left, universe):
                receivers.add(ast.unparse(right))
    return receivers


class _Normalise(ast.NodeTransformer):
    """Receivers become one backend name; ``frozenset({...})`` becomes its literal."""

    def __init__(self, receivers: set[str]) -> None:
        self.receivers = receivers

    def visit(self, node: ast.AST) -> ast.AST:
        if (
            isinstance(node, (ast.Name, ast.Attribute, ast.Call))
            and ast.unparse(node) in self.receivers
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
        trees = [_Normalise(receivers).visit(Fragment(text).node) for text in (before, after)]
    except FragmentError as exc:
        raise FlipError(str(exc)) from exc
    names = [dict(before_names or {}), dict(after_names or {})]
    free: dict[str, str] = {}
    trees = [_bind_free(tree, scope, universe, free, names[i]) for i, tree in enumerate(trees)]
    if len(free) > MAX_FREE:
        raise FlipError(f"{len(free)} unrelated conditions in the expression (at most {MAX_FREE})")
    directions: list[tuple[str, str]] = []
    for member in universe.values:
        seen: set[tuple[bool, bool]] = set()
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
    key = ast.unparse(tree)
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
    found: set[tuple[bool, bool]] = set()
    pending: list[dict[str, bool]] = [{}]
    while pending:
        setting = pending.pop()
        interp = Interpreter(scope, member, setting)
        try:
            values = [interp.truth(tree, names) for tree, names in zip(trees, locals_, strict=True)]
        except Unproven as exc:
            raise FlipError(f"cannot evaluate {exc.construct}") from exc
        if None in values:
            unset = [n for n in interp.seen_narrowings if n not in setting]
            if not unset:  # pragma: no cover - None implies an unset narrowing
                raise FlipError("undecidable predicate")
            pending.extend([{**setting, unset[0]: False}, {**setting, unset[0]: True}])
            continue
        found.add((bool(values[0]), bool(values[1])))
    return found


def ordered(members: Iterable[str], universe: Universe) -> tuple[str, ...]:
    """``members`` in universe order."""
    return universe.order(set(members))
