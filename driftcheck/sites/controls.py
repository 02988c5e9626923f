"""What a site's value controls, read from the code around it (CodeQL's "guards" idea).

A site is judged by what it decides, not by its name alone. The keys, comparable across
files and spelled from the code's own identifiers (leading underscores dropped):

- ``call:<name>``: what a branch the value chooses does — each top-level statement of the
  body or ``else`` of the ``if`` it tests: the call it makes or returns (``return
  self.forward_deepep(x)``), the name it assigns (``set:ep_size``), ``raise`` — and the call
  a branch of the conditional expression it tests makes (incidental calls deeper in a branch
  are not its effect: ``get_parallel()`` in ``self.ep_size = get_parallel().ep_size``);
- ``kw:<name>``: a keyword the value feeds, directly or through a conditional expression
  (``reduce_results``), and the keywords of the calls such a branch makes
  (``dict(tp_rank=0, tp_size=1)``: ``kw:tp_size``);
- ``set:<name>``: the name or attribute the value is assigned to; the same keys are then
  collected for each place the class (``self.x``) or the function (a local) reads it, and
  for each call of a function that returns the value — two steps deep.

Also the *comment* that states what the value is for: the comment lines just above the
statement and those on its lines, and the enclosing function's docstring.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from .names import terminal_name

DEPTH = 3
MAX_CALLS = 24
# names that say nothing about what a branch does
COMMON_CALLS = {
    "super", "len", "isinstance", "issubclass", "getattr", "setattr", "hasattr", "print",
    "dict", "list", "tuple", "set", "frozenset", "int", "float", "str", "bool", "range",
    "enumerate", "zip", "min", "max", "sum", "any", "all", "sorted", "type", "id", "format",
    "append", "extend", "get", "items", "keys", "values", "update", "pop", "join", "split",
    "warning", "warn", "info", "debug", "error", "exception", "critical", "log",
    "warning_once", "info_once", "view", "reshape", "contiguous", "size", "dim", "to",
}  # fmt: skip
COMMENT = re.compile(rb"#(.*)$")

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _key(name: str | None) -> str | None:
    if not name:
        return None
    stripped = name.lstrip("_")
    return stripped or None


def _effects(body: list[ast.stmt]) -> list[str]:
    """What each top-level statement of a branch does (the first few statements)."""
    keys: list[str] = []
    for stmt in body[:6]:
        value: ast.AST | None = None
        if isinstance(stmt, (ast.Return, ast.Expr)):
            value = stmt.value
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            # an attribute a branch sets says what it configures (``self.ep_size``); a local
            # name (``hidden_states``) says nothing comparable across files
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            keys.extend(
                f"set:{n}" for t in targets if isinstance(t, ast.Attribute) and (n := _key(t.attr))
            )
            value = stmt.value
        elif isinstance(stmt, ast.Raise):
            keys.append("raise")
        if isinstance(value, ast.Await):
            value = value.value
        if isinstance(value, ast.Call):
            name = _key(terminal_name(value.func))
            if name and name not in COMMON_CALLS:
                keys.append(f"call:{name}")
            keys.extend(f"kw:{k.arg.lstrip('_')}" for k in value.keywords if k.arg)
    return keys


def _calls(nodes: list[ast.AST]) -> list[str]:
    """``call:`` and ``kw:`` keys of the calls in ``nodes`` (nested functions excluded)."""
    keys: list[str] = []
    stack = list(reversed(nodes))
    while stack and len(keys) < MAX_CALLS:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            name = _key(terminal_name(node.func))
            if name and name not in COMMON_CALLS:
                keys.append(f"call:{name}")
            keys.extend(f"kw:{k.arg.lstrip('_')}" for k in node.keywords if k.arg)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return keys


class Controls:
    """Reads what the sites of one module control (the module's tree is walked lazily)."""

    def __init__(self, tree: ast.Module, lines: list[bytes]) -> None:
        self.tree = tree
        self.lines = lines
        self._parents: dict[int, ast.AST] | None = None

    @property
    def parents(self) -> dict[int, ast.AST]:
        """Every node's parent (built on first use, for modules that have sites)."""
        if self._parents is None:
            self._parents = {
                id(child): node
                for node in ast.walk(self.tree)
                for child in ast.iter_child_nodes(node)
            }
        return self._parents

    def keys(self, node: ast.AST, depth: int = DEPTH) -> tuple[str, ...]:
        """The keys of what ``node``'s value controls."""
        return tuple(sorted(set(self._keys(node, depth))))

    def _statement(self, node: ast.AST) -> ast.AST | None:
        current = node
        while current is not None and not isinstance(current, ast.stmt):
            current = self.parents.get(id(current))
        return current

    def _enclosing(self, node: ast.AST, kinds: tuple[type, ...]) -> ast.AST | None:
        current = self.parents.get(id(node))
        while current is not None and not isinstance(current, kinds):
            current = self.parents.get(id(current))
        return current

    def _keys(self, node: ast.AST, depth: int) -> Iterator[str]:
        stmt = self._statement(node)
        if stmt is None:
            return
        child, parent = node, self.parents.get(id(node))
        while parent is not None and parent is not stmt:
            if isinstance(parent, ast.keyword) and parent.arg:
                yield f"kw:{parent.arg.lstrip('_')}"
            if isinstance(parent, ast.IfExp) and parent.test is child:
                yield from _calls([parent.body, parent.orelse])
            child, parent = parent, self.parents.get(id(parent))
        if isinstance(stmt, (ast.If, ast.While)) and self._within(node, stmt.test):
            yield from _effects(stmt.body)
            yield from _effects(stmt.orelse)
        elif isinstance(stmt, ast.Assert):
            yield "call:assert"
        if depth <= 0:
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                name = _key(terminal_name(target))
                if name:
                    yield f"set:{name}"
                    yield from self._reads(target, depth - 1)
        elif isinstance(stmt, ast.Return):
            func = self._enclosing(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            if func is not None:
                yield from self._callers(func, depth - 1)  # type: ignore[arg-type]

    def _within(self, node: ast.AST, root: ast.AST) -> bool:
        current: ast.AST | None = node
        while current is not None:
            if current is root:
                return True
            current = self.parents.get(id(current))
        return False

    def _reads(self, target: ast.expr, depth: int) -> Iterator[str]:
        """The keys of every read of ``target`` (``self.x`` in its class, ``x`` in its
        function)."""
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            scope = self._enclosing(target, (ast.ClassDef,))
            attr, owner = target.attr, target.value.id

            def matches(n: ast.AST) -> bool:
                return (
                    isinstance(n, ast.Attribute)
                    and n.attr == attr
                    and isinstance(n.value, ast.Name)
                    and n.value.id == owner
                    and isinstance(n.ctx, ast.Load)
                )
        elif isinstance(target, ast.Name):
            scope = self._enclosing(target, (ast.FunctionDef, ast.AsyncFunctionDef))
            name = target.id

            def matches(n: ast.AST) -> bool:
                return isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        else:
            return
        for read in ast.walk(scope or self.tree):
            if matches(read):
                yield from self._keys(read, depth)

    def _callers(self, func: Function, depth: int) -> Iterator[str]:
        name = func.name
        for call in ast.walk(self.tree):
            if isinstance(call, ast.Call) and terminal_name(call.func) == name and not call.args:
                yield from self._keys(call, depth)

    def comment(self, stmt: ast.stmt, func: Function | None) -> str:
        """The comment of the paragraph ``stmt`` is in (the comment lines above it, across up
        to three lines of code but no blank line), those on its lines, and ``func``'s
        docstring."""
        parts: list[str] = []
        line = stmt.lineno - 2
        above: list[str] = []
        code_lines = 0
        while line >= 0 and len(above) < 12:
            text = self.lines[line].strip()
            if not text:
                break
            if text.startswith(b"#"):
                above.append(text[1:].strip().decode("utf-8", "replace"))
            else:
                code_lines += 1
                if code_lines > 3 or above:
                    break
            line -= 1
        parts.extend(reversed(above))
        for number in range(stmt.lineno - 1, min(stmt.end_lineno or stmt.lineno, len(self.lines))):
            match = COMMENT.search(self.lines[number])
            if match and b"driftcheck:" not in match.group(1):
                parts.append(match.group(1).strip().decode("utf-8", "replace"))
        if func is not None:
            docstring = ast.get_docstring(func)
            if docstring:
                parts.append(docstring.strip().splitlines()[0])
        return " ".join(p for p in parts if p)[:400]
