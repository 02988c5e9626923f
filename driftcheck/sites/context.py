"""Where a site's value goes: the statement it sits in and the name of the role it plays.

``context`` is one of ``assign``, ``return``, ``keyword``, ``ternary``, ``if``, ``while``,
``assert``, ``match`` or ``expression``; ``role`` names what the value sets or decides (the
assigned attribute, the function returning it, the keyword it feeds, the function and the
operation an ``if`` guards: ``forward:forward_normal``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from .names import terminal_name

Function = ast.FunctionDef | ast.AsyncFunctionDef


def assigned_name(stmt: ast.stmt) -> str | None:
    """The name or attribute an assignment statement sets."""
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    for target in targets:
        if isinstance(target, ast.Name):
            return target.id
        if isinstance(target, ast.Attribute):
            return target.attr
    return None


def guarded_operation(stmt: ast.If | ast.While) -> str | None:
    """The first call or assignment the statement guards (``forward_normal``, ``ep_size``)."""
    if not stmt.body:
        return None
    first = stmt.body[0]
    assigned = assigned_name(first)
    if assigned:
        return assigned
    for node in ast.walk(first):
        if isinstance(node, ast.Call):
            return terminal_name(node.func)
    return None


def site_context(
    node: ast.AST, stmt: ast.stmt, func: Function | None, parents: Mapping[int, ast.AST]
) -> tuple[str, str]:
    """``(context, role)`` of the expression ``node`` inside ``stmt``."""
    child: ast.AST = node
    parent = parents.get(id(node), stmt)
    while parent is not stmt:
        if isinstance(parent, ast.keyword):
            return "keyword", parent.arg or ""
        if isinstance(parent, ast.IfExp) and parent.test is child:
            return "ternary", assigned_name(stmt) or (func.name if func else "")
        child, parent = parent, parents.get(id(parent), stmt)
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return "assign", assigned_name(stmt) or ""
    if isinstance(stmt, ast.Return):
        return "return", func.name if func else ""
    if isinstance(stmt, (ast.If, ast.While)):
        operation = guarded_operation(stmt)
        role = func.name if func else ""
        if role and operation:
            role = f"{role}:{operation}"
        return ("if" if isinstance(stmt, ast.If) else "while"), role
    if isinstance(stmt, ast.Assert):
        return "assert", func.name if func else ""
    if isinstance(stmt, ast.Match):
        return "match", func.name if func else ""
    return "expression", func.name if func else ""
