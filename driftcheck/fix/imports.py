"""Make the canonical helper callable (a canonical constant readable) where the helper style
uses it.

Nothing is added when the name is already imported (at module level or in the enclosing
function) or when the file is the helper's own module. Otherwise the name is merged into an
existing ``from <helper module> import ...`` visible at the site, keeping its layout (one name
per line, or inline) and its sort order; failing that a new statement goes among the module's
top-level imports. A file that imports neither the helper's module nor its package at top
level is refused: the import may be deliberately deferred to avoid an import cycle.
"""

from __future__ import annotations

import ast

from driftcheck.model import Family

from .plan import FileContext, Refusal, Replacement


def import_statement(family: Family) -> str:
    """``from sglang.srt.layers.moe.utils import is_deepep_class_backend``."""
    module = family.qualified.split(":", 1)[0]
    return f"from {module} import {family.name}"


def import_edit(ctx: FileContext, family: Family, line: int) -> Replacement | None:
    """The edit that imports ``family``'s helper for a call at ``line`` (None: nothing to do)."""
    module = family.qualified.split(":", 1)[0]
    name = family.name
    if ctx.module_name == module:
        return None
    scopes = [
        n.body
        for n in reversed(ctx.enclosing(line))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    scopes.append(ctx.tree.body)
    for body in scopes:
        for stmt in body:
            if isinstance(stmt, ast.ImportFrom) and any(
                (a.asname or a.name) == name or a.name == "*" for a in stmt.names
            ):
                return None
    for stmt in ctx.tree.body:
        defined = (
            isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and stmt.name == name
        )
        assigned = isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in stmt.targets
        )
        if defined or assigned:
            raise Refusal(f"the module defines its own {name}; use the canonical one by hand")
    for body in scopes:
        for stmt in body:
            if (
                isinstance(stmt, ast.ImportFrom)
                and stmt.module == module
                and not stmt.level
                and stmt.lineno < line
            ):
                return _merge(ctx, stmt, name)
    return _new_statement(ctx, module, name)


def _sort_key(name: str) -> tuple[int, str]:
    """isort/ruff ``order-by-type``: CONSTANTS, then Classes, then everything else."""
    if name.isupper() and len(name) > 1:
        return 0, name.lower()
    if name[:1].isupper():
        return 1, name.lower()
    return 2, name.lower()


def _merge(ctx: FileContext, stmt: ast.ImportFrom, name: str) -> Replacement:
    text = ctx.source.text
    names = [a.name for a in stmt.names]
    keys = [_sort_key(n) for n in names]
    position = len(names)
    if keys == sorted(keys):
        position = next((i for i, k in enumerate(keys) if k > _sort_key(name)), len(names))
    ranges = [ctx.range_of(a) for a in stmt.names]
    one_per_line = (
        len({a.lineno for a in stmt.names}) == len(names) and stmt.names[0].lineno > stmt.lineno
    )
    if one_per_line:
        newline = ctx.index.newline()
        first = ranges[0][0]
        indent = text[text.rfind("\n", 0, first) + 1 : first]
        if position < len(names):
            at = ranges[position][0]
            return Replacement(at, at, f"{name},{newline}{indent}")
        last_end = ranges[-1][1]
        _, stmt_end = ctx.range_of(stmt)
        tail = text[last_end:stmt_end]
        if tail.lstrip().startswith(","):
            comma = last_end + tail.index(",") + 1
            return Replacement(comma, comma, f"{newline}{indent}{name},")
        return Replacement(last_end, last_end, f",{newline}{indent}{name}")
    wrapped = _wrapped(ctx, stmt, position, name)
    if wrapped is not None:
        return wrapped
    if position < len(names):
        at = ranges[position][0]
        return Replacement(at, at, f"{name}, ")
    last_end = ranges[-1][1]
    return Replacement(last_end, last_end, f", {name}")


def _wrapped(
    ctx: FileContext, stmt: ast.ImportFrom, position: int, name: str
) -> Replacement | None:
    """A one-line import that the new name makes too long for the project's formatter,
    rewritten as ruff format and black write it: parenthesised, one name per line, with a
    trailing comma. None when the line still fits (or the statement has a comment)."""
    text = ctx.source.text
    start, end = ctx.range_of(stmt)
    if stmt.lineno != stmt.end_lineno or "#" in text[start:end]:
        return None
    line_start = ctx.index.offset(stmt.lineno, 0)
    names = [ast.get_source_segment(text, a) or a.name for a in stmt.names]
    names.insert(position, name)
    inline = text[line_start:end].rstrip().removesuffix(")")
    if len(inline) + len(name) + 2 <= ctx.layout.line_length:
        return None
    first = ctx.range_of(stmt.names[0])[0]
    opening = text.rfind("(", start, first)
    at = opening if opening != -1 else first
    indent = text[line_start:start] + " " * ctx.layout.indent_width
    newline = ctx.index.newline()
    body = "".join(f"{newline}{indent}{n}," for n in names)
    return Replacement(at, end, f"({body}{newline}{text[line_start:start]})")


def _new_statement(ctx: FileContext, module: str, name: str) -> Replacement:
    body = ctx.tree.body
    package = module.rsplit(".", 1)[0]
    imports: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(stmt)
    covered = any(
        (isinstance(s, ast.ImportFrom) and not s.level and s.module in (module, package))
        or (isinstance(s, ast.Import) and any(a.name in (module, package) for a in s.names))
        for s in body
    )
    if not covered:
        raise Refusal(
            f"the file imports neither {module} nor {package} at module level (perhaps to avoid "
            f"an import cycle); import {name} by hand"
        )
    top = module.split(".", 1)[0]
    siblings = [
        s
        for s in imports
        if isinstance(s, ast.ImportFrom) and not s.level and (s.module or "").split(".")[0] == top
    ]
    modules = [s.module or "" for s in siblings]
    anchor: ast.stmt | None = None
    before = False
    if siblings and modules == sorted(modules):
        later = [s for s in siblings if (s.module or "") > module]
        anchor, before = (later[0], True) if later else (siblings[-1], False)
    elif siblings:
        anchor = siblings[-1]
    elif imports:
        anchor = imports[-1]
    statement = f"from {module} import {name}{ctx.index.newline()}"
    if anchor is None:
        at = 0
    elif before:
        at = ctx.index.offset(anchor.lineno, 0)
    else:
        at = ctx.index.offset((anchor.end_lineno or anchor.lineno) + 1, 0)
        if at == len(ctx.source.text) and not ctx.source.text.endswith(("\n", "\r")):
            statement = ctx.index.newline() + statement.rstrip("\r\n")
    return Replacement(at, at, statement)
