"""Spell a new operand the way its sibling is spelled, naming another member.

``_a2a_backend.is_deepep()`` -> ``_a2a_backend.is_deepep_v2()``; ``'deepep'`` ->
``'deepep_v2'`` (same quotes and prefix); ``MoeA2ABackend.DEEPEP`` ->
``MoeA2ABackend.DEEPEP_V2``; ``cfg.moe_a2a_backend == "deepep"`` ->
``cfg.moe_a2a_backend == "deepep_v2"``; ``not b.is_deepep()`` -> ``not b.is_deepep_v2()``.
Only the method name, the string's content or the enum attribute changes.
"""

from __future__ import annotations

import ast
import re

from driftcheck.model import Universe

from .fragment import Fragment, FragmentError

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


def respell(text: str, member: str, universe: Universe) -> str | None:
    """``text`` (one operand) rewritten to test ``member`` instead, or None if it cannot be."""
    try:
        fragment = Fragment(text)
    except FragmentError:
        return None
    node = fragment.node
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
        method = universe.predicate_for(member)
        if method is None or node.func.attr not in universe.predicates:
            return None
        end = fragment.end(node.func)
        start = end - len(node.func.attr)
        if text[start:end] != node.func.attr:
            return None
        return text[:start] + method + text[end:]
    if isinstance(node, ast.Compare) and len(node.comparators) == 1:
        sides = [node.left, node.comparators[0]]
        node = next((side for side in sides if member_of(side, universe) is not None), node)
    return _respell_value(fragment, node, member, universe)


def _respell_value(
    fragment: Fragment, node: ast.expr, member: str, universe: Universe
) -> str | None:
    text = fragment.text
    start, end = fragment.start(node), fragment.end(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        match = STRING_LITERAL.fullmatch(text[start:end])
        if (
            match is None
            or match.group("body") != node.value
            or any(c in member for c in "\\'\"\r\n")
        ):
            return None
        literal = match.group("prefix") + match.group("quote") + member + match.group("quote")
        return text[:start] + literal + text[end:]
    if isinstance(node, ast.Attribute) and member_of(node, universe) is not None:
        attr = next((m.attr for m in universe.members if m.value == member), None)
        if attr is None or not text[start:end].endswith(node.attr):
            return None
        return text[: end - len(node.attr)] + attr + text[end:]
    return None
