"""A dead copy's fix deletes it (issue 30, item 2): the fix kind ``delete``.

A site whose only effect is to set attributes nothing in the tree reads
(:meth:`driftcheck.liveness.AttributeReads.unread`, the very answer that makes its finding say
"nothing reads ...: delete it rather than widen it") decides nothing: no backend takes another
path because of it, before or after any rewrite. Its fix deletes the statement, and with it
a receiver variable that only the statement read (:mod:`driftcheck.fix.unused`). Because
nothing reads what it sets, the deletion flips no backend: it is safe (plain ``--fix``).

Two shapes are deleted: ``self.<attr> = <the enumeration>`` and ``if <the enumeration>:``
whose branches (the ``else`` too, no ``elif``) only assign such attributes. Either must be
alone on its lines (the comments among and after them go with it) and leave its block
non-empty; any other shape is refused with the finding's own advice, so ``--fix`` never
widens a copy its finding says to delete.
"""

from __future__ import annotations

import ast

from .plan import FileContext, Refusal, Replacement, Rewrite, SiteJob

STYLE = "delete"


def dead_advice(unread: tuple[str, ...]) -> str:
    """``nothing reads enable_a2a_moe: delete it rather than widen it`` (the finding's words)."""
    return f"nothing reads {', '.join(unread)}: delete it rather than widen it"


def plan_delete(
    ctx: FileContext, job: SiteJob, unread: tuple[str, ...], receivers: frozenset[str]
) -> Rewrite:
    """The deletion of ``job``'s site, whose attributes ``unread`` nothing reads (raises
    :class:`Refusal` naming why it is left to a person)."""
    site = job.site
    statement, body = _statement(ctx, site.statement_line or site.span.line)
    if statement is None or body is None:
        raise Refusal(f"{dead_advice(unread)} (its statement was not found again)")
    if not _only_sets(statement, site.span, set(unread)):
        raise Refusal(f"{dead_advice(unread)} (it does more than set them: delete it by hand)")
    if not [s for s in body if s is not statement and not _receiver_of(s, receivers)]:
        raise Refusal(f"{dead_advice(unread)} (it is its block's only statement)")
    edit = _removal(ctx, statement)
    if edit is None:
        raise Refusal(f"{dead_advice(unread)} (it shares its lines with other code)")
    edit = _with_blank_lines(ctx, edit, first=statement is body[0])
    text = ctx.source.text[edit.start : edit.end]
    return Rewrite(
        style=STYLE,
        primary=edit,
        extra=(),
        before=text,
        after="",
        receivers=receivers,
        removed=((edit.start, edit.end),),
    )


def _removal(ctx: FileContext, statement: ast.stmt) -> Replacement | None:
    """The deletion of ``statement``'s whole lines, the comments among them (they speak of the
    deleted code) and one ending its last line included; None when other code shares them."""
    text = ctx.source.text
    start, end = ctx.range_of(statement)
    line_start = ctx.index.offset(statement.lineno, 0)
    line_end = ctx.index.line_end(end)
    after = text[end:line_end].strip()
    if text[line_start:start].strip() or (after and not after.startswith("#")):
        return None
    next_line = ctx.index.offset((statement.end_lineno or statement.lineno) + 1, 0)
    return Replacement(line_start, next_line, "")


def _with_blank_lines(ctx: FileContext, edit: Replacement, first: bool) -> Replacement:
    """``edit`` (whole lines) with the blank lines after it when a blank line or the block's
    start is before it: the formatter keeps one blank line between statements, none at a
    block's start, and the deletion must not leave two (ruff format --check still passes)."""
    text = ctx.source.text
    before = text[: edit.start].splitlines()
    if not (first or (before and not before[-1].strip())):
        return edit
    end = edit.end
    while end < len(text):
        line_end = ctx.index.line_end(end)
        if text[end:line_end].strip():
            break
        end = ctx.index.offset(ctx.index.position(line_end)[0] + 1, 0)
    return Replacement(edit.start, end, "")


def _statement(ctx: FileContext, line: int) -> tuple[ast.stmt | None, list[ast.stmt] | None]:
    """The statement starting at ``line`` and the block (statement list) holding it."""
    pending: list[list[ast.stmt]] = [ctx.tree.body]
    while pending:
        body = pending.pop()
        for stmt in body:
            if stmt.lineno == line:
                return stmt, body
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                for name in ("body", "orelse", "finalbody"):
                    inner = getattr(stmt, name, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        pending.append(inner)
                for handler in getattr(stmt, "handlers", []):
                    pending.append(handler.body)
    return None, None


def _only_sets(statement: ast.stmt, span, unread: set[str]) -> bool:
    """Whether ``statement`` is ``self.x = <site>`` or ``if <site>: self.x = ...`` (and an
    ``else`` doing the same) setting only attributes in ``unread``."""

    def at_site(node: ast.expr) -> bool:
        return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset) == (
            span.line,
            span.col,
            span.end_line,
            span.end_col,
        )

    if isinstance(statement, ast.Assign):
        return at_site(statement.value) and all(_sets_unread(t, unread) for t in statement.targets)
    if isinstance(statement, ast.If) and at_site(statement.test):
        return all(
            isinstance(s, ast.Assign) and all(_sets_unread(t, unread) for t in s.targets)
            for s in (*statement.body, *statement.orelse)
        )
    return False


def _receiver_of(statement: ast.stmt, receivers: frozenset[str]) -> bool:
    """Whether ``statement`` assigns one of the site's receivers (``b = get_backend()``)."""
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id in receivers
    )


def _sets_unread(target: ast.expr, unread: set[str]) -> bool:
    return (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
        and target.attr in unread
    )
