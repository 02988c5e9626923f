"""Whether a role operation a site's value reaches is one: read from what the call resolves
to, not from its name alone.

The pack's role operations are keys (``call:combine``, ``kw:reduce_results``). A call whose
callee resolves to the module's own code is that code, whatever it is called:

- a method of an object the module builds from its own class (``self.stats = MoEStats()``,
  then ``self.stats.combine(x)``) is ``MoEStats.combine``, not the dispatcher's ``combine``:
  no operation by its name (what it does inside is followed as any of the module's own
  functions is: :meth:`Controls._operations_inside`);
- a keyword fed to the module's own function, method or class (``self.stats.record(...,
  reduce_results=False)``, ``SharedMLP(..., reduce_results=False)``) is an operation only when
  the callee passes that parameter on to a role operation of its own body (a keyword the pack
  declares, or an attribute it declares: ``RowParallelLinear(..., reduce_results=
  reduce_results)``).

A call whose callee cannot be resolved in the module (an import, a parameter) keeps the
operation its name gives: the pack's declaration is then the premise. A method called on
``self`` keeps it too (the block's own ``self.forward_deepep(x)`` is the forward switch).

The module is parsed whole here, once, when one of its reaches is a role operation (the site
finder may have parsed only the pieces around its hot lines).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .names import terminal_name

if TYPE_CHECKING:
    from ..model import Reach

Function = ast.FunctionDef | ast.AsyncFunctionDef
Definition = Function | ast.ClassDef


@dataclass(frozen=True)
class _Where:
    """A call and the class and function it sits in."""

    call: ast.Call
    cls: ast.ClassDef | None
    function: Function | None


def _key(name: str | None) -> str:
    return (name or "").lstrip("_")


class Callees:
    """Resolves the calls at a reach's line within one module (``lines``: its source;
    ``operations`` maps a reach key to the pack's role operation)."""

    def __init__(self, lines: list[bytes], operations: Mapping[str, str]) -> None:
        self.lines = lines
        self.operations = operations
        self._asked: dict[tuple[str, int], bool] = {}
        self._tree: ast.Module | None = None
        self._by_line: dict[int, list[_Where]] = {}
        self._top: dict[str, Definition] = {}

    def stands(self, reach: Reach) -> bool:
        """Whether the role operation of ``reach`` stands once its call is resolved."""
        asked = (reach.key, reach.line)
        if asked not in self._asked:
            self._asked[asked] = self._stands(reach)
        return self._asked[asked]

    def _index(self) -> bool:
        """Parse and index the module once; False when it does not parse."""
        if self._tree is not None:
            return True
        try:
            self._tree = ast.parse(b"".join(self.lines))
        except (SyntaxError, ValueError):
            return False
        for top in self._tree.body:
            if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._top[top.name] = top
        stack: list[tuple[ast.AST, ast.ClassDef | None, Function | None]] = [
            (self._tree, None, None)
        ]
        while stack:
            node, cls, function = stack.pop()
            if isinstance(node, ast.Call):
                where = _Where(node, cls, function)
                lines = {node.lineno, *(k.value.lineno for k in node.keywords)}
                for line in lines:
                    self._by_line.setdefault(line, []).append(where)
            if isinstance(node, ast.ClassDef):
                cls, function = node, None
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                function = node
            stack.extend((child, cls, function) for child in ast.iter_child_nodes(node))
        return True

    def _stands(self, reach: Reach) -> bool:
        kind, _, name = reach.key.partition(":")
        if kind not in ("call", "kw") or not name or not self._index():
            return True
        found = [
            w for w in self._by_line.get(reach.line, []) if _is_at(w.call, kind, name, reach.line)
        ]
        if not found:
            return True
        return any(self._call_stands(kind, name, where) for where in found)

    def _call_stands(self, kind: str, name: str, where: _Where) -> bool:
        func = where.call.func
        callee = self._callee(func, where)
        if callee is None:
            return True
        if kind == "call":
            # a method of an object built from the module's own class is that method
            return not isinstance(func, ast.Attribute) or _on_self(func)
        return self._passes_on(callee, name)

    def _callee(self, func: ast.expr, where: _Where) -> Definition | None:
        """The module's own function, method or class ``func`` names, if it does."""
        if isinstance(func, ast.Name):
            return self._top.get(func.id)
        if not isinstance(func, ast.Attribute):
            return None
        if _on_self(func):
            return _method(where.cls, func.attr)
        owner = self._instance_class(func.value, where)
        return _method(owner, func.attr)

    def _instance_class(self, receiver: ast.expr, where: _Where) -> ast.ClassDef | None:
        """The module's own class the object ``receiver`` is built from (``self.x = C(...)``
        in the class, ``x = C(...)`` in the function or the module)."""
        if isinstance(receiver, ast.Attribute) and _on_self_name(receiver.value):
            scope: ast.AST | None = where.cls
        elif isinstance(receiver, ast.Name):
            scope = where.function or self._tree
        else:
            return None
        value: ast.expr | None
        for node in ast.walk(scope) if scope is not None else ():
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign):
                targets, value = [node.target], node.value
            else:
                continue
            built_by = value.func if isinstance(value, ast.Call) else None
            if isinstance(built_by, ast.Name) and any(_same(t, receiver) for t in targets):
                built = self._top.get(built_by.id)
                if isinstance(built, ast.ClassDef):
                    return built
        return None

    def _passes_on(self, callee: Definition, name: str) -> bool:
        """Whether ``callee`` (a function, or a class's ``__init__``) passes its parameter
        ``name`` on to a role operation of its own body."""
        function = _method(callee, "__init__") if isinstance(callee, ast.ClassDef) else callee
        if function is None:
            return True  # built by a base class the module does not define here: unknown
        args = function.args
        named = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        names = {p for p in named if _key(p) == name}
        if not names:
            return args.kwarg is not None  # passed on with **kwargs: where it goes is unread
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and any(
                self.operations.get(f"kw:{_key(k.arg)}") and _mentions(k.value, names)
                for k in node.keywords
            ):
                return True
            if (
                isinstance(node, ast.Assign)
                and _mentions(node.value, names)
                and any(
                    isinstance(t, ast.Attribute) and self.operations.get(f"set:{_key(t.attr)}")
                    for t in node.targets
                )
            ):
                return True
        return False


def _is_at(call: ast.Call, kind: str, name: str, line: int) -> bool:
    """Whether ``call`` is the one reach ``kind:name`` at ``line`` names."""
    if kind == "call":
        return call.lineno == line and _key(terminal_name(call.func)) == name
    return any(_key(k.arg) == name and k.value.lineno == line for k in call.keywords)


def _same(target: ast.expr, receiver: ast.expr) -> bool:
    """Whether assignment ``target`` is ``receiver`` (``self.x`` or ``x``)."""
    if isinstance(target, ast.Name) and isinstance(receiver, ast.Name):
        return target.id == receiver.id
    return (
        isinstance(target, ast.Attribute)
        and isinstance(receiver, ast.Attribute)
        and target.attr == receiver.attr
        and _on_self_name(target.value)
    )


def _on_self_name(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _on_self(func: ast.Attribute) -> bool:
    return _on_self_name(func.value)


def _method(cls: Definition | None, name: str) -> Function | None:
    if not isinstance(cls, ast.ClassDef):
        return None
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            return stmt
    return None


def _mentions(node: ast.expr, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))
