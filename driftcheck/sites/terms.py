"""Terms: single tests of a universe's value, in every form a person writes them.

- a method of the vocabulary on a receiver: ``b.is_deepep()``, ``current_platform.is_cuda()``;
- a property of the vocabulary, on any receiver: ``cfg.use_deepep_ll_kernels``;
- a canonical helper: ``is_deepep_class_backend()``, ``self.use_batched_activation_format``,
  ``backend in DEEPEP_FAMILY`` (a constant canonical);
- a comparison of a value expression with members: ``backend == "mori"``,
  ``x.moe_a2a_backend in ("deepep", "mooncake")``, ``b is MoeA2ABackend.MORI``,
  ``self._enum in (PlatformEnum.CUDA, PlatformEnum.ROCM)``, ``b in CONSTANT``;
- any of those negated (``not ...``, ``!=``, ``not in``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..model import Conditions, Universe
from .names import terminal_name
from .receivers import ReceiverScope

COLLECTION_CALLS = ("frozenset", "set", "tuple", "list")


@dataclass(frozen=True)
class Term:
    """One test of the value inside an enumeration."""

    node: ast.expr
    kind: str  # method | property | string | enum | helper
    members: frozenset[str]
    negated: bool
    predicate: str | None = None
    conditions: Conditions = ()


def _collection_items(node: ast.expr) -> list[ast.expr] | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in COLLECTION_CALLS
        and len(node.args) == 1
    ):
        node = node.args[0]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
        return list(node.elts)
    return None


def collection_members(node: ast.expr, universe: Universe) -> frozenset[str] | None:
    """The members a literal collection names (strings or enum members), None when it is
    not a collection or names none; elements that are not members are left out."""
    items = _collection_items(node)
    if items is None:
        return None
    members = {single[1] for item in items if (single := single_value(item, universe))}
    return frozenset(members) if members else None


def collection_spellings(node: ast.expr, universe: Universe) -> frozenset[str] | None:
    """How a literal collection spells its elements: ``{"enum"}``, ``{"string"}`` or both;
    None when it is not a collection or an element is not a member."""
    items = _collection_items(node)
    if items is None:
        return None
    singles = [single_value(item, universe) for item in items]
    if any(single is None for single in singles):
        return None
    return frozenset(single[0] for single in singles if single is not None)


def member_constants(body: list[ast.stmt], universe: Universe) -> dict[str, frozenset[str]]:
    """Names assigned a collection of members (strings or enum members) in ``body``."""
    found: dict[str, frozenset[str]] = {}
    for stmt in body:
        target = value = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        if not isinstance(target, ast.Name) or value is None:
            continue
        members = collection_members(value, universe)
        if members:
            found[target.id] = members
    return found


def single_value(node: ast.expr, universe: Universe) -> tuple[str, str] | None:
    """``("string", "deepep")`` for ``"deepep"``, ``("enum", "deepep")`` for
    ``MoeA2ABackend.DEEPEP`` (or ``module.MoeA2ABackend.DEEPEP``), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return ("string", node.value) if node.value in universe.values else None
    if (
        universe.enum_name
        and isinstance(node, ast.Attribute)
        and terminal_name(node.value) == universe.enum_name
    ):
        value = universe.value_of_attr(node.attr)
        return ("enum", value) if value is not None else None
    return None


class TermReader:
    """Recognises terms of one universe, given the receivers and constants in scope."""

    def __init__(self, universe: Universe) -> None:
        self.universe = universe
        self.helpers = {f.name: f for f in universe.families}

    def collection(
        self, node: ast.expr, constants: dict[str, frozenset[str]]
    ) -> tuple[str, frozenset[str]] | None:
        """``(kind, members)`` of a literal collection of members or a constant holding one."""
        if isinstance(node, ast.Name) and node.id in constants:
            members = constants[node.id] & set(self.universe.values)
            return ("string", frozenset(members)) if members else None
        items = _collection_items(node)
        if items is None:
            return None
        kinds: set[str] = set()
        found: set[str] = set()
        for elt in items:
            single = single_value(elt, self.universe)
            if single is None:
                continue
            kinds.add(single[0])
            found.add(single[1])
        if not found:
            return None
        return ("enum" if kinds == {"enum"} else "string", frozenset(found))

    def _helper(self, name: str | None, access: str, node: ast.expr) -> Term | None:
        family = self.helpers.get(name or "")
        if family is None or family.access != access:
            return None
        return Term(node, "helper", family.member_set, False, family.name, family.conditions)

    def _predicate(
        self, node: ast.expr, name: str, receiver: ast.expr, scope: ReceiverScope, call: bool
    ) -> Term | None:
        pred = self.universe.predicates.get(name)
        if pred is None or (pred.access == "property") == call:
            return None
        if call and not (scope.is_holder(receiver) if pred.owner else scope.is_receiver(receiver)):
            return None
        helper = self._helper(name, pred.access, node)
        if helper is not None:
            return helper
        kind = "property" if pred.access == "property" else "method"
        return Term(node, kind, pred.members, False, name, pred.conditions)

    def term(
        self, node: ast.expr, scope: ReceiverScope, constants: dict[str, frozenset[str]]
    ) -> Term | None:
        """The term ``node`` is, or None."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.term(node.operand, scope, constants)
            if inner is None:
                return None
            return Term(
                node,
                inner.kind,
                inner.members,
                not inner.negated,
                inner.predicate,
                inner.conditions,
            )
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            func = node.func
            if isinstance(func, ast.Attribute):
                found = self._predicate(node, func.attr, func.value, scope, call=True)
                if found is not None:
                    return found
            return self._helper(terminal_name(func), "function", node)
        if isinstance(node, ast.Attribute) and node.attr in self.universe.predicates:
            return self._predicate(node, node.attr, node.value, scope, call=False)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._compare(node, scope, constants)
        return None

    def _compare(
        self, node: ast.Compare, scope: ReceiverScope, constants: dict[str, frozenset[str]]
    ) -> Term | None:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)) and scope.is_value_expr(left):
            helper = self._helper(terminal_name(right), "constant", node)
            if helper is not None:
                return Term(
                    node, "helper", helper.members, isinstance(op, ast.NotIn), helper.predicate
                )
            found = self.collection(right, constants)
            if found is not None:
                return Term(node, found[0], found[1], isinstance(op, ast.NotIn))
            return None
        if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            for subject, other in ((left, right), (right, left)):
                if scope.is_value_expr(subject):
                    single = single_value(other, self.universe)
                    if single is not None:
                        return Term(
                            node,
                            single[0],
                            frozenset({single[1]}),
                            isinstance(op, (ast.NotEq, ast.IsNot)),
                        )
        return None
