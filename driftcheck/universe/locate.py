"""Find a canonical predicate named ``module:qualname`` in the tree's source.

It may be a top-level function (``utils:is_deepep_class_backend``), a method, a ``@property``,
a ``staticmethod``/``classmethod`` (``config:FusedMoEParallelConfig.use_mori_kernels``), or a
constant holding members (``utils:DEEPEP_FAMILY = frozenset({...})``), at module level or in
a class.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

from ..project import module_candidates
from .source import ModuleSource, SourceIndex, UniverseError

Kind = Literal["function", "method", "property", "staticmethod", "classmethod", "constant"]


@dataclass(frozen=True)
class Located:
    """A canonical predicate's definition."""

    spec: str
    module: ModuleSource
    name: str
    kind: Kind
    function: ast.FunctionDef | None  # the definition, for every kind but ``constant``
    value: ast.expr | None  # the constant's value
    owner: ast.ClassDef | None  # the class it is defined in
    line: int

    @property
    def qualname(self) -> str:
        """``Class.name`` or ``name``."""
        return f"{self.owner.name}.{self.name}" if self.owner is not None else self.name


def _decorators(func: ast.FunctionDef) -> set[str]:
    names = set()
    for decorator in func.decorator_list:
        if isinstance(decorator, ast.Name):
            names.add(decorator.id)
        elif isinstance(decorator, ast.Attribute):
            names.add(decorator.attr)
    return names


def _constant(body: list[ast.stmt], name: str) -> ast.Assign | ast.AnnAssign | None:
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in stmt.targets
        ):
            return stmt
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == name
            and stmt.value is not None
        ):
            return stmt
    return None


def _in_class(spec: str, module: ModuleSource, cls: ast.ClassDef, name: str) -> Located | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            decorators = _decorators(stmt)
            kind: Kind = "method"
            if decorators & {"property", "cached_property"}:
                kind = "property"
            elif "staticmethod" in decorators:
                kind = "staticmethod"
            elif "classmethod" in decorators:
                kind = "classmethod"
            return Located(spec, module, name, kind, stmt, None, cls, stmt.lineno)
    assign = _constant(cls.body, name)
    if assign is not None:
        return Located(spec, module, name, "constant", None, assign.value, cls, assign.lineno)
    return None


def locate(index: SourceIndex, spec: str) -> Located:
    """The definition ``spec`` names (raises :class:`UniverseError` naming what was tried)."""
    dotted, _, qualname = spec.partition(":")
    module = index.module(dotted)
    if module is None:
        tried = ", ".join(index.rel(p) for p in module_candidates(index.root, dotted)[:2])
        raise UniverseError(
            str(index.root),
            f"canonical predicate {spec}: module {dotted} not found under {index.root} "
            f"(looked for {tried})",
        )
    parts = qualname.split(".")
    found: Located | None = None
    if len(parts) == 1:
        func = module.functions.get(qualname)
        if func is not None:
            found = Located(spec, module, qualname, "function", func, None, None, func.lineno)
        else:
            assign = _constant(module.tree.body, qualname)
            if assign is not None:
                found = Located(
                    spec, module, qualname, "constant", None, assign.value, None, assign.lineno
                )
    elif len(parts) == 2 and parts[0] in module.classes:
        found = _in_class(spec, module, module.classes[parts[0]], parts[1])
    if found is None:
        raise UniverseError(
            index.rel(module.path),
            f"canonical predicate {spec}: nothing named {qualname} in {index.rel(module.path)} "
            "(looked for a function, a method or property, and a constant)",
        )
    return found
