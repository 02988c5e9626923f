"""Spell a new operand the way its sibling is spelled, naming another member.

``_a2a_backend.is_deepep()`` -> ``_a2a_backend.is_deepep_v2()``; ``cfg.use_mesh_ll`` ->
``cfg.use_relay_v2`` (a property of the same class); ``'deepep'`` ->
``'deepep_v2'`` (same quotes and prefix); ``MoeA2ABackend.DEEPEP`` ->
``MoeA2ABackend.DEEPEP_V2``; ``cfg.moe_a2a_backend == "deepep"`` ->
``cfg.moe_a2a_backend == "deepep_v2"``; ``not b.is_deepep()`` -> ``not b.is_deepep_v2()``.
The new operand is a copy of the sibling's libcst node (without the parentheses around the
sibling itself) in which only the method name, the string's content or the enum attribute
changes; the sibling's ``ast`` node decides what it names.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from driftcheck.model import Universe

if TYPE_CHECKING:
    import libcst as cst

STRING_LITERAL = re.compile(
    r"(?P<prefix>[rRuU]?)(?P<quote>'''|\"\"\"|'|\")(?P<body>.*)(?P=quote)", re.S
)


def member_of(node: ast.expr, universe: Universe) -> str | None:
    """The member a string constant or enum attribute names (``"deepep"``, ``E.DEEPEP``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if node.value in universe.values else None
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == universe.enum_name
    ):
        return universe.value_of_attr(node.attr)
    return None


def respell(
    node: ast.expr, tree: cst.CSTNode, member: str, universe: Universe
) -> cst.BaseExpression | None:
    """A copy of the operand ``tree`` (whose ``ast`` form is ``node``) that tests ``member``
    instead, or None if it cannot be made."""
    import libcst as cst

    if not isinstance(tree, cst.BaseExpression):
        return None
    return _respell(node, tree.with_changes(lpar=[], rpar=[]), member, universe)


def _respell(
    node: ast.expr, tree: cst.BaseExpression, member: str, universe: Universe
) -> cst.BaseExpression | None:
    import libcst as cst

    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        if not isinstance(tree, cst.UnaryOperation) or not isinstance(tree.operator, cst.Not):
            return None
        operand = _respell(node.operand, tree.expression, member, universe)
        return None if operand is None else tree.with_changes(expression=operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
        method = universe.predicate_for(member, like=node.func.attr)
        if method is None or node.func.attr not in universe.predicates:
            return None
        if not (isinstance(tree, cst.Call) and isinstance(tree.func, cst.Attribute)):
            return None
        name = tree.func.attr
        if name.value != node.func.attr:
            return None
        return tree.with_changes(func=tree.func.with_changes(attr=name.with_changes(value=method)))
    if isinstance(node, ast.Compare) and len(node.comparators) == 1:
        if not isinstance(tree, cst.Comparison) or len(tree.comparisons) != 1:
            return None
        target = tree.comparisons[0]
        if member_of(node.left, universe) is not None:
            left = _respell_value(node.left, tree.left, member, universe)
            return None if left is None else tree.with_changes(left=left)
        if member_of(node.comparators[0], universe) is not None:
            right = _respell_value(node.comparators[0], target.comparator, member, universe)
            if right is None:
                return None
            return tree.with_changes(comparisons=[target.with_changes(comparator=right)])
        return None
    if isinstance(node, ast.Attribute) and node.attr in universe.predicates:
        prop = universe.predicate_for(member, like=node.attr)
        if prop is None or not isinstance(tree, cst.Attribute) or tree.attr.value != node.attr:
            return None
        return tree.with_changes(attr=tree.attr.with_changes(value=prop))
    return _respell_value(node, tree, member, universe)


def _respell_value(
    node: ast.expr, tree: cst.BaseExpression, member: str, universe: Universe
) -> cst.BaseExpression | None:
    import libcst as cst

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if not isinstance(tree, cst.SimpleString):
            return None
        match = STRING_LITERAL.fullmatch(tree.value)
        if (
            match is None
            or match.group("body") != node.value
            or any(c in member for c in "\\'\"\r\n")
        ):
            return None
        literal = match.group("prefix") + match.group("quote") + member + match.group("quote")
        return tree.with_changes(value=literal)
    if isinstance(node, ast.Attribute) and member_of(node, universe) is not None:
        attr = next((m.attr for m in universe.members if m.value == member), None)
        if attr is None or not isinstance(tree, cst.Attribute) or tree.attr.value != node.attr:
            return None
        return tree.with_changes(attr=tree.attr.with_changes(value=attr))
    return None
