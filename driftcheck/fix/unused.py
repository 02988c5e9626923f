"""Receiver variables a helper-style rewrite leaves unused, and the edits that remove them.

``_a2a_backend = get_moe_a2a_backend()`` goes when every use of ``_a2a_backend`` in the
function was an operand the rewrites of this file delete. Only a statement alone on its
lines, assigned once, with no comment on its lines, is removed; otherwise it stays (it is
harmless, and the comment is not ours to drop).
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
            if statement is None or id(statement) in done:
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
