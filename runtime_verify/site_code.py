"""The code a site's value comes from, before and after its fix, ready for the interpreter.

A site is found again in its module by its exact span. When the site is the whole return value
of a function (``Site.enumerator``), the code is that function's body; otherwise it is the
expression alone. The interpreter's scope joins the canonical module's enum and functions with
the site module's own top-level functions and string constants, and names as the backend every
receiver the site's operands call ``is_*()`` on. Operands of the site's chain that fall outside
the interpreter's grammar (``self._is_moe_layer``) become free boolean inputs.

Nothing here imports or executes the linted code: it is parsed with :mod:`ast` only.
"""

from __future__ import annotations

import ast
import bisect
import functools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from driftcheck.interpret import Interpreter, Scope, Unproven
from driftcheck.model import Fix, Site, Span
from driftcheck.universe import string_constants

SITE_FUNCTION = "<site function>"  # a key no source code can call


@dataclass(frozen=True)
class SiteCode:
    """One version of a site's code: the expression, its function when it is an enumerator,
    the interpreter scope, and the texts of the operands enumerated as free inputs."""

    expr: ast.expr
    function: ast.FunctionDef | ast.AsyncFunctionDef | None
    scope: Scope
    free: tuple[str, ...]

    def evaluate(self, interpreter: Interpreter) -> bool | None:
        """The site's value for the interpreter's member and setting."""
        if self.function is not None:
            return interpreter.call_function(SITE_FUNCTION)
        return interpreter.truth(self.expr)


def span_of(node: ast.AST) -> Span:
    """A node's span in ``ast`` positions (1-based lines, 0-based UTF-8 byte columns)."""
    return Span(
        node.lineno,  # type: ignore[attr-defined]
        node.col_offset,  # type: ignore[attr-defined]
        node.end_lineno or node.lineno,  # type: ignore[attr-defined]
        node.end_col_offset or 0,  # type: ignore[attr-defined]
    )


@functools.lru_cache(maxsize=16)
def parse_source(source: str, path: str) -> ast.Module:
    """Parse ``source`` (cached: a file's findings share one tree, which no caller mutates);
    a syntax error or too deep nesting is :class:`Unproven`."""
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise Unproven(f"{path} does not parse: {exc.msg}", exc.lineno) from exc
    except (RecursionError, MemoryError) as exc:
        raise Unproven(f"{path} is nested too deeply to parse") from exc


class LineOffsets:
    """Converts ``ast`` positions (line, UTF-8 byte column) to byte offsets and back."""

    def __init__(self, data: bytes) -> None:
        self.starts = [0]
        for line in data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        """The byte offset of ``(line, col)``."""
        return self.starts[line - 1] + col

    def position(self, offset: int) -> tuple[int, int]:
        """The ``(line, col)`` of a byte offset."""
        index = max(0, bisect.bisect_right(self.starts, offset) - 1)
        return index + 1, offset - self.starts[index]


def apply_fix(source: str, fix: Fix, site_span: Span) -> tuple[str, Span]:
    """``source`` with every edit of ``fix`` made, and where the site's expression lies then.

    The fix's main edit either rewrites the site itself or a range wholly outside it (the
    constant a site names); its further edits (an import, an unused receiver) lie outside it
    too. An edit overlapping the site any other way is :class:`Unproven`.
    """
    data = source.encode("utf-8")
    offsets = LineOffsets(data)

    def byte_range(span: Span) -> tuple[int, int]:
        return offsets.offset(span.line, span.col), offsets.offset(span.end_line, span.end_col)

    site = byte_range(site_span)
    start, end = site
    edits = sorted(
        (
            (*byte_range(span), text.encode("utf-8"))
            for span, text in [(fix.span, fix.replacement), *fix.edits]
        ),
        reverse=True,
    )
    for edit_start, edit_end, text in edits:  # from the end backwards: offsets stay valid
        if (edit_start, edit_end) == site:
            end = start + len(text)
        elif edit_end <= site[0]:
            shift = len(text) - (edit_end - edit_start)
            start, end = start + shift, end + shift
        elif edit_start < site[1]:
            raise Unproven("the fix edits a range that overlaps the site without being the site")
        data = data[:edit_start] + text + data[edit_end:]
    patched = LineOffsets(data)
    return data.decode("utf-8"), Span(*patched.position(start), *patched.position(end))


def _walk_with_functions(
    node: ast.AST, functions: tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...] = ()
) -> Iterator[tuple[ast.AST, tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]]]:
    """Every node with the functions enclosing it, outermost first (iterative: hostile input
    may nest deeply)."""
    stack: list[tuple[ast.AST, tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]]] = [
        (node, functions)
    ]
    while stack:
        current, enclosing = stack.pop()
        yield current, enclosing
        inner = (
            (*enclosing, current)
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef))
            else enclosing
        )
        stack.extend((child, inner) for child in reversed(list(ast.iter_child_nodes(current))))


def _within(inner: Span, outer: Span) -> bool:
    return (outer.line, outer.col) <= (inner.line, inner.col) and (
        inner.end_line,
        inner.end_col,
    ) <= (
        outer.end_line,
        outer.end_col,
    )


def find_expression(
    tree: ast.Module, span: Span
) -> tuple[ast.expr, ast.FunctionDef | ast.AsyncFunctionDef | None]:
    """The outermost expression at exactly ``span`` and its innermost enclosing function.

    A fixed site may come back parenthesised (``(a or b)``), which ``ast`` does not count in
    the node's span: then the single outermost expression inside ``span`` is the site.
    """
    inside: list[tuple[ast.expr, ast.FunctionDef | ast.AsyncFunctionDef | None]] = []
    covered: list[Span] = []
    for node, functions in _walk_with_functions(tree):
        if not isinstance(node, ast.expr) or not hasattr(node, "lineno"):
            continue
        found = span_of(node)
        enclosing = functions[-1] if functions else None
        if found == span:
            return node, enclosing
        if _within(found, span) and not any(_within(found, outer) for outer in covered):
            inside.append((node, enclosing))
            covered.append(found)
    if len(inside) == 1:
        return inside[0]
    raise Unproven(f"no expression at line {span.line}, column {span.col + 1}", span.line)


def _chain_operands(expr: ast.expr) -> list[ast.expr]:
    """The top-level operands of the site's chain (``not (a or b)`` gives ``a``, ``b``)."""
    node = expr.operand if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not) else expr
    if not isinstance(node, ast.BoolOp):
        return []
    operands: list[ast.expr] = []
    pending = list(node.values)
    while pending:
        value = pending.pop(0)
        if isinstance(value, ast.BoolOp) and type(value.op) is type(node.op):
            pending[:0] = value.values
        else:
            operands.append(value)
    return operands


def _receiver(node: ast.expr) -> ast.expr | None:
    """The backend expression an operand tests: ``b`` of ``b.is_x()``, ``x`` of ``x in (...)``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node = node.operand
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.value
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = node.left, node.comparators[0]
        if isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return left
        literal = (ast.Constant, ast.Attribute)
        if isinstance(right, ast.Constant) or (
            isinstance(right, literal) and not isinstance(left, ast.Constant)
        ):
            return left
        return right
    return None


def receivers(expr: ast.expr, site: Site) -> frozenset[str]:
    """Source texts of the backend expressions the site's own operands test."""
    spans = {operand.span for operand in site.operands if operand.kind != "helper"}
    found: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.expr) and hasattr(node, "lineno") and span_of(node) in spans:
            receiver = _receiver(node)
            if receiver is not None:
                found.add(ast.unparse(receiver))
    return frozenset(found)


def site_scope(
    base: Scope,
    tree: ast.Module,
    function: ast.FunctionDef | ast.AsyncFunctionDef | None,
    aliases: frozenset[str],
) -> Scope:
    """``base`` joined with the site module's own functions and constants and the receivers."""
    functions = {
        **base.functions,
        **{n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))},
    }
    constants = {**base.constants, **string_constants(tree.body)}
    if function is not None:
        constants.update(string_constants(function.body))
    return replace(base, functions=functions, constants=constants, aliases=base.aliases | aliases)


def free_operands(
    expr: ast.expr, site: Site, scope: Scope, members: tuple[str, ...]
) -> tuple[str, ...]:
    """Texts of chain operands that are not the site's terms and that the grammar cannot read."""
    term_spans = {operand.span for operand in site.operands}
    free: dict[str, None] = {}  # in order (a chain may hold 10,000 of them)
    for operand in _chain_operands(expr):
        if span_of(operand) in term_spans:
            continue
        try:
            for member in members:
                Interpreter(scope, member).truth(operand)
        except Unproven:
            free.setdefault(ast.unparse(operand))
    return tuple(free)


def site_code(
    tree: ast.Module,
    span: Span,
    site: Site,
    base: Scope,
    members: tuple[str, ...],
    aliases: frozenset[str] | None = None,
    free: tuple[str, ...] | None = None,
) -> SiteCode:
    """The site's code in ``tree`` at ``span``; ``aliases`` and ``free`` default to those read
    from the site's own operands (pass the "before" ones when reading the fixed code)."""
    expr, function = find_expression(tree, span)
    if aliases is None:
        aliases = receivers(expr, site)
    scope = site_scope(base, tree, function, aliases)
    if free is None:
        free = free_operands(expr, site, scope, members)
    scope = replace(scope, free=frozenset(free))
    enumerator = None
    if site.enumerator is not None and function is not None and function.name == site.enumerator:
        enumerator = function
        scope = replace(scope, functions={**scope.functions, SITE_FUNCTION: function})
    return SiteCode(expr, enumerator, scope, free)
