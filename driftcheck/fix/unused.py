"""Receiver variables a helper-style rewrite leaves unused, and the edits that remove them.

``_a2a_backend = get_moe_a2a_backend()`` goes when every use of ``_a2a_backend`` in the
function was an operand the rewrites of this file delete. Only a statement alone on its
lines, assigned once, with no comment on its lines, is removed; otherwise it stays (it is
harmless, and the comment is not ours to drop). It also stays in a function that reads its
names other than by name (``locals()``, ``vars()``, ``dir()``, ``eval``, ``exec``) or declares
the receiver ``global`` or ``nonlocal``: there the assignment is not provably unused.
"""

from __future__ import annotations

import ast

from driftcheck.sites.names import call_name

from .plan import FileContext, Replacement, Rewrite


def unused_receiver_edits(
    ctx: FileContext, planned: list[tuple[int, Rewrite]]
) -> dict[int, list[Replacement]]:
    """Statement removals keyed by the position (in ``planned``) of the fix that carries them.

    ``planned`` pairs each rewrite of this file with the line of its site.
    """
    removed = [r for _, rewrite in planned for r in rewrite.removed]
    carriers: dict[int, list[Replacement]] = {}
    done: set[int] = set()
    order = sorted(range(len(planned)), key=lambda i: planned[i][1].primary.start, reverse=True)
    for position in order:
        line, rewrite = planned[position]
        if not rewrite.removed:
            continue
        function = ctx.enclosing_function(line)
        if function is None:
            continue
        for receiver in sorted(rewrite.receivers):
            statement = _sole_getter_assignment(ctx, function, receiver)
            if statement is None or id(statement) in done or _escapes(function, receiver):
                continue
            uses = [
                ctx.range_of(n)
                for n in ast.walk(function)
                if isinstance(n, ast.Name) and n.id == receiver and isinstance(n.ctx, ast.Load)
            ]
            if any(not any(s <= u0 and u1 <= e for s, e in removed) for u0, u1 in uses):
                continue
            edit = _statement_removal(ctx, statement)
            if edit is not None:
                done.add(id(statement))
                carriers.setdefault(position, []).append(edit)
    return carriers


# builtins through which a function reads its local names without naming them (with no
# arguments for locals/vars/dir; eval and exec read the caller's frame by default)
NAMESPACE_READERS = {"locals": 0, "vars": 0, "dir": 0, "eval": None, "exec": None}


def _escapes(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether ``name``'s binding in ``function`` may be read other than by a ``Name`` load:
    the function reads its namespace (``locals()``...) or declares ``name`` global/nonlocal."""
    for node in ast.walk(function):
        if isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            arity = NAMESPACE_READERS.get(node.func.id, -1)
            if arity is None or arity == len(node.args) + len(node.keywords):
                return True
    return False


def _sole_getter_assignment(
    ctx: FileContext, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str
) -> ast.Assign | None:
    stores = [
        n
        for n in ast.walk(function)
        if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
    ]
    if len(stores) != 1:
        return None
    for stmt in ast.walk(function):
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and stmt.targets[0] is stores[0]
            and call_name(stmt.value) in ctx.universe.getters
        ):
            return stmt
    return None


def _statement_removal(ctx: FileContext, statement: ast.stmt) -> Replacement | None:
    text = ctx.source.text
    start, end = ctx.range_of(statement)
    line_start = ctx.index.offset(statement.lineno, 0)
    line_end = ctx.index.line_end(end)
    if text[line_start:start].strip() or text[end:line_end].strip():
        return None  # shares its line with other code or a comment
    if "#" in text[start:end]:
        return None
    next_line = ctx.index.offset((statement.end_lineno or statement.lineno) + 1, 0)
    return Replacement(line_start, next_line, "")
