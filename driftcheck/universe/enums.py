"""Enum classes read from source: which classes are enums, and their members.

A string ``Enum`` (``DEEPEP = "deepep"``), a ``StrEnum``, an ``IntEnum`` and members declared
with ``auto()`` are all understood. A member's *key* — how findings and messages name it — is
its string value when it has one (``deepep``), else its name (``CUDA``); ``auto()`` in a
``StrEnum`` is the lower-cased name, as Python gives it.
"""

from __future__ import annotations

import ast

from ..model import Member
from .source import ModuleSource

ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "ReprEnum"}


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def is_enum_class(
    cls: ast.ClassDef, module: ModuleSource, seen: frozenset[str] = frozenset()
) -> bool:
    """Whether ``cls`` derives from an enum base (directly or through a class of ``module``)."""
    for base in cls.bases:
        name = _base_name(base)
        if name in ENUM_BASES:
            return True
        parent = module.classes.get(name)
        if parent is not None and name not in seen and is_enum_class(parent, module, seen | {name}):
            return True
    return False


def _is_auto(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _base_name(node.func) == "auto" and not node.args


def enum_members(cls: ast.ClassDef) -> tuple[Member, ...]:
    """The members declared in ``cls``'s body, in order."""
    lower_auto = any(_base_name(b) == "StrEnum" for b in cls.bases)
    members = []
    for stmt in cls.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        if not isinstance(target, ast.Name) or target.id.startswith("_"):
            continue
        value = stmt.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            members.append(Member(target.id, value.value))
        elif isinstance(value, ast.Constant) and isinstance(value.value, int):
            members.append(Member(target.id, target.id))
        elif _is_auto(value):
            members.append(Member(target.id, target.id.lower() if lower_auto else target.id))
    return tuple(members)


def class_lineage(cls: ast.ClassDef, module: ModuleSource) -> list[ast.ClassDef]:
    """``cls`` and the base classes ``module`` defines (mixins), nearest first."""
    lineage = [cls]
    for base in cls.bases:
        parent = module.classes.get(_base_name(base))
        if parent is not None and parent not in lineage:
            lineage.extend(c for c in class_lineage(parent, module) if c not in lineage)
    return lineage


def zero_arg_methods(
    cls: ast.ClassDef, module: ModuleSource
) -> tuple[dict[str, ast.FunctionDef], frozenset[str]]:
    """Zero-argument methods and properties of ``cls`` and its in-module bases, by name
    (the nearest definition wins), and which of them are properties."""
    methods: dict[str, ast.FunctionDef] = {}
    properties: set[str] = set()
    for klass in class_lineage(cls, module):
        for stmt in klass.body:
            if not isinstance(stmt, ast.FunctionDef) or stmt.name in methods:
                continue
            decorators = {_base_name(d) for d in stmt.decorator_list}
            if decorators - {"property", "cached_property"}:
                continue
            args = stmt.args
            if len(args.args) != 1 or args.vararg or args.kwarg or args.kwonlyargs:
                continue
            methods[stmt.name] = stmt
            if decorators:
                properties.add(stmt.name)
    return methods, frozenset(properties)
