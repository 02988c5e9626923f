"""Small readers of ``ast`` names shared by the site finder, the fixer and the verifier."""

from __future__ import annotations

import ast


def call_name(node: ast.expr) -> str | None:
    """``f`` for ``f()`` and ``mod.f()`` (zero-argument calls only)."""
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        if isinstance(node.func, ast.Name):
            return node.func.id
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
    return None


def terminal_name(node: ast.expr) -> str | None:
    """The last identifier of ``a.b.c`` or ``c``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def source_text(node: ast.AST) -> str:
    """``ast.unparse(node)``; a dotted name (``b``, ``self.backend``: most receivers and
    operands) is joined directly, without building an unparser for it."""
    names = []
    inner = node
    while isinstance(inner, ast.Attribute):
        names.append(inner.attr)
        inner = inner.value
    if isinstance(inner, ast.Name):
        return ".".join([inner.id, *reversed(names)])
    return ast.unparse(node)
