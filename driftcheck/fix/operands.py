"""Where the operands of a boolean chain, or the elements of a collection literal, are: found
with ``ast`` in one expression's text, as ranges of the file text.

This is the cheap locating half of a rewrite: it names each operand's members (through the
scan's operands at the same ranges) and tells which are worth rewriting. The rewrite itself is
a libcst transformation of the same expression (:mod:`driftcheck.fix.chain`), whose operands
come in the same order.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .fragment import Fragment

COLLECTION_CALLS = ("frozenset", "set", "tuple", "list")


@dataclass(frozen=True)
class Item:
    """One operand (or collection element) and its range in the file text."""

    start: int
    end: int
    node: ast.expr


def boolop_items(fragment: Fragment, node: ast.BoolOp) -> list[Item]:
    """The flattened operands of ``a or b or (c or d)`` (same-operator nesting only)."""
    values: list[ast.expr] = []
    pending = list(reversed(node.values))
    while pending:
        value = pending.pop()
        if isinstance(value, ast.BoolOp) and type(value.op) is type(node.op):
            pending.extend(reversed(value.values))
        else:
            values.append(value)
    return [Item(fragment.start(v), fragment.end(v), v) for v in values]


def collection_literal(node: ast.expr) -> ast.expr:
    """``node``, or the literal that ``frozenset({...})``-style calls wrap."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in COLLECTION_CALLS
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.args[0]
    return node


def collection_items(fragment: Fragment, node: ast.expr) -> list[Item] | None:
    """The elements of ``("a", "b")``, ``["a"]``, ``{"a"}`` or ``frozenset({...})``; None when
    ``node`` is no bracketed, non-empty literal."""
    node = collection_literal(node)
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or not node.elts:
        return None
    closing = fragment.end(node) - 1 - fragment.base
    if fragment.text[closing] not in ")]}":
        return None  # an unparenthesised tuple: no bracket to insert before
    return [Item(fragment.start(e), fragment.end(e), e) for e in node.elts]
