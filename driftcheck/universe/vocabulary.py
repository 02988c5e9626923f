"""A universe's members and vocabulary: every predicate the code defines over the setting.

For an enum universe the vocabulary is the enum's zero-argument methods (its mixins' too);
for a setting held by a class it is that class's zero-argument methods and properties, and
those of every class that holds one (``FusedMoEConfig.moe_parallel_config:
FusedMoEParallelConfig`` delegates its properties). Each predicate is interpreted for every
member; one whose value does not depend on the member is not part of the vocabulary.
"""

from __future__ import annotations

import ast
import functools
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..interpret import (
    HolderClass,
    Interpreter,
    Scope,
    Truth,
    Unproven,
    ValueEnum,
    member_truths,
)
from ..model import Conditions, Member, MethodPredicate
from .domain import Domain, returned_class
from .enums import enum_members, is_enum_class, zero_arg_methods
from .source import ModuleSource, SourceIndex

Table = dict[str, dict[tuple[tuple[str, bool], ...], bool]]


@dataclass
class Vocabulary:
    """What :func:`build_vocabulary` read: members, the interpreter scope, the predicates."""

    members: tuple[Member, ...]
    scope: Scope
    predicates: dict[str, MethodPredicate]
    getters: frozenset[str]
    holders: dict[str, HolderClass]
    holder_names: frozenset[str]
    modules: tuple[ModuleSource, ...]


def truth_summary(table: Table) -> tuple[frozenset[str], Conditions]:
    """The members a predicate can be true for, and the narrowing texts each depends on."""
    members: set[str] = set()
    conditions: list[tuple[str, tuple[str, ...]]] = []
    for member, outcomes in table.items():
        values = set(outcomes.values())
        if True not in values:
            continue
        members.add(member)
        if values != {True}:
            texts = sorted({text for setting in outcomes for text, _ in setting})
            conditions.append((member, tuple(texts)))
    return frozenset(members), tuple(conditions)


def literal_values(node: ast.expr | None, module: ModuleSource, index: SourceIndex) -> list[str]:
    """The strings of ``Literal["a", "b"]`` (or a module-level alias of one)."""
    if isinstance(node, ast.Name):
        target = module.assigned.get(node.id)
        if target is None and node.id in module.imports:
            origin, original = module.imports[node.id]
            other = index.module(origin)
            if other is not None:
                return literal_values(other.assigned.get(original), other, index)
        return literal_values(target, module, index) if target is not None else []
    if (
        isinstance(node, ast.Subscript)
        and getattr(node.value, "id", getattr(node.value, "attr", "")) == "Literal"
    ):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    return []


def _annotation_of(cls: ast.ClassDef, attr: str) -> ast.expr | None:
    for stmt in cls.body:
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == attr
        ):
            return stmt.annotation
    return None


def _compared_strings(cls: ast.ClassDef, attr: str) -> list[str]:
    """Strings compared with ``self.<attr>`` anywhere in ``cls``, in source order."""
    found: list[str] = []
    for node in ast.walk(cls):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(
            isinstance(s, ast.Attribute) and s.attr == attr and isinstance(s.value, ast.Name)
            for s in sides
        ):
            continue
        for side in sides:
            items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            for item in items:
                if (
                    isinstance(item, ast.Constant)
                    and isinstance(item.value, str)
                    and item.value not in found
                ):
                    found.append(item.value)
    first: dict[str, tuple[int, int]] = {}  # each string's first place in the class
    for node in ast.walk(cls):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in found:
            place = (node.lineno, node.col_offset)
            first[node.value] = min(first.get(node.value, place), place)
    return sorted(found, key=lambda v: first.get(v, (0, 0)))


def _string_members(domain: Domain, index: SourceIndex) -> tuple[Member, ...]:
    assert domain.holder_module is not None
    values: list[str] = []
    if domain.holder is not None and domain.setting is not None:
        annotation = _annotation_of(domain.holder, domain.setting)
        values = literal_values(annotation, domain.holder_module, index)
        if not values:
            values = _compared_strings(domain.holder, domain.setting)
    values += [v for v in sorted(domain.strings) if v not in values]
    if domain.holder is not None and domain.setting is not None:
        values += [
            v
            for v in _constant_strings(domain.holder, domain.setting, domain.holder_module)
            if v not in values
        ]
    return tuple(Member(value, value) for value in values)


def _constant_strings(cls: ast.ClassDef, attr: str, module: ModuleSource) -> list[str]:
    """Strings of the module-level constants ``self.<attr>`` is tested for membership in
    (``self.exchange in _SLOW_EXCHANGES``), in source order."""
    found: list[str] = []
    for node in ast.walk(cls):
        if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute)):
            continue
        if node.left.attr != attr:
            continue
        for side in node.comparators:
            if isinstance(side, ast.Name) and side.id in module.constants:
                found += sorted(v for v in module.constants[side.id] if v not in found)
    return found


def _annotated_class(annotation: ast.expr | None) -> str | None:
    """``Holder`` for ``x: Holder``, ``x: "Holder"``, ``x: Holder | None``, ``x: mod.Holder``."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value.strip()
        return text.split("|")[0].strip().split(".")[-1] or None
    if isinstance(annotation, ast.BinOp):  # Holder | None
        return _annotated_class(annotation.left)
    if isinstance(annotation, ast.Subscript) and getattr(annotation.value, "id", "") == "Optional":
        return _annotated_class(annotation.slice)
    if isinstance(annotation, ast.Name):
        return annotation.id
    if isinstance(annotation, ast.Attribute):
        return annotation.attr
    return None


# a class's annotated attributes, read once per class (the holder search asks repeatedly)
_ATTRIBUTE_TYPES: weakref.WeakKeyDictionary[ast.ClassDef, dict[str, str]] = (
    weakref.WeakKeyDictionary()
)


def _attribute_types(cls: ast.ClassDef) -> dict[str, str]:
    """Attributes ``cls`` annotates with a class (class body, or ``self.x: T`` in methods)."""
    known = _ATTRIBUTE_TYPES.get(cls)
    if known is None:
        known = _ATTRIBUTE_TYPES[cls] = _read_attribute_types(cls)
    return known


def _read_attribute_types(cls: ast.ClassDef) -> dict[str, str]:
    types: dict[str, str] = {}
    for node in ast.walk(cls):
        if not isinstance(node, ast.AnnAssign):
            continue
        target = node.target
        name = None
        if isinstance(target, ast.Name):
            name = target.id
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            name = target.attr
        cls_name = _annotated_class(node.annotation)
        if name and cls_name:
            types[name] = cls_name
    return types


def _holder_classes(
    domain: Domain, modules: Iterable[ModuleSource]
) -> dict[str, tuple[ModuleSource, ast.ClassDef]]:
    """The classes whose instances answer predicates: the domain's holder, then every class
    of the universe's modules holding one (to a fixpoint)."""
    found: dict[str, tuple[ModuleSource, ast.ClassDef]] = {}
    if domain.holder is not None and domain.holder_module is not None:
        found[domain.holder.name] = (domain.holder_module, domain.holder)
    candidates = [(m, c) for m in modules for c in m.classes.values()]
    changed = bool(found)
    while changed:
        changed = False
        for module, cls in candidates:
            if cls.name in found:
                continue
            if set(_attribute_types(cls).values()) & set(found):
                found[cls.name] = (module, cls)
                changed = True
    return found


def holder_names(
    holders: Iterable[str], modules: Iterable[ModuleSource], index: SourceIndex
) -> frozenset[str]:
    """Names that hold a holder instance: attributes annotated with a holder class in the
    universe's modules (``moe_parallel_config``), and module-level names so annotated in
    those modules or their packages' ``__init__`` (``current_platform: Platform``)."""
    holder_set = set(holders)
    names: set[str] = set()
    seen: set[str] = set()
    for module in list(modules):
        for cls in module.classes.values():
            names |= {
                attr for attr, cls_name in _attribute_types(cls).items() if cls_name in holder_set
            }
        packages = module.name.split(".")
        for depth in range(len(packages), 0, -1):
            dotted = ".".join(packages[:depth])
            if dotted in seen:
                continue
            seen.add(dotted)
            package = index.module(dotted)
            if package is None:
                continue
            for name, annotation in package.annotated.items():
                if _annotated_class(annotation) in holder_set:
                    names.add(name)
    return frozenset(names)


def _member_constants(
    module: ModuleSource, enum_name: str, members: tuple[Member, ...]
) -> dict[str, frozenset[str]]:
    """Module-level constants holding members of the enum (``_SHARED = frozenset({Kind.CPU,
    Kind.NPU})``), as the members' values."""
    by_attr = {m.attr: m.value for m in members}
    found: dict[str, frozenset[str]] = {}
    for name, value in module.assigned.items():
        if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
            value = value.args[0]
        if not isinstance(value, (ast.Tuple, ast.List, ast.Set)) or not value.elts:
            continue
        items = [
            by_attr.get(e.attr)
            for e in value.elts
            if isinstance(e, ast.Attribute) and getattr(e.value, "id", None) == enum_name
        ]
        if len(items) == len(value.elts) and all(items):
            found[name] = frozenset(v for v in items if v)
    return found


def _imported_in(func: ast.FunctionDef, name: str) -> str | None:
    """The module ``from M import name`` inside ``func``'s body names (a deferred import)."""
    for node in ast.walk(func):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and not node.level
            and any((alias.asname or alias.name) == name for alias in node.names)
        ):
            return node.module
    return None


def value_enums(
    index: SourceIndex, holders: Mapping[str, tuple[ModuleSource, ast.ClassDef]]
) -> dict[str, ValueEnum]:
    """The enums a holder's methods are annotated to return (``-> "FusedMoEActivationFormat"``),
    found in the tree through the module's imports or an import inside the method."""
    found: dict[str, ValueEnum] = {}
    for module, cls in holders.values():
        for func in zero_arg_methods(cls, module)[0].values():
            name = returned_class(func)
            if not name or name in found:
                continue
            where = index.resolve_class(module, name)
            origin = _imported_in(func, name)
            if where is None and origin is not None:
                other = index.module(origin)
                if other is not None and name in other.classes:
                    where = other, other.classes[name]
            if where is None or not is_enum_class(where[1], where[0]):
                continue
            methods, properties = zero_arg_methods(where[1], where[0])
            members = frozenset(
                t.id
                for stmt in where[1].body
                if isinstance(stmt, ast.Assign)
                for t in stmt.targets
                if isinstance(t, ast.Name) and not t.id.startswith("_")
            )
            found[name] = ValueEnum(name, members, methods, properties)
    return found


def build_vocabulary(
    index: SourceIndex,
    domain: Domain,
    modules: list[ModuleSource],
    value_attributes: tuple[str, ...],
) -> Vocabulary:
    """Read the members and interpret every predicate of the domain's classes."""
    enum_cls = domain.enum_class
    if enum_cls is not None and domain.enum_module is not None:
        members = enum_members(enum_cls)
        enum_methods, _ = zero_arg_methods(enum_cls, domain.enum_module)
    else:
        members = _string_members(domain, index)
        enum_methods = {}
    holders_found = _holder_classes(domain, modules)
    holders: dict[str, HolderClass] = {}
    for name, (module, cls) in holders_found.items():
        methods, properties = zero_arg_methods(cls, module)
        attribute_types = _attribute_types(cls)
        settings = (
            frozenset({domain.setting})
            if (cls is domain.holder and domain.setting)
            else frozenset()
        )
        holders[name] = HolderClass(
            name=name,
            methods=methods,
            properties=properties,
            settings=settings,
            holders={a: t for a, t in attribute_types.items() if t in holders_found},
        )
    functions: dict[str, ast.FunctionDef] = {}
    constants: dict[str, frozenset[str]] = {}
    getters: set[str] = set()
    for module in modules:
        functions = {**module.functions, **functions}
        constants = {**module.constants, **constants}
        if enum_cls is not None:
            constants = {**_member_constants(module, enum_cls.name, members), **constants}
        if enum_cls is not None:
            getters |= {
                name
                for name, func in module.functions.items()
                if not func.args.args and returned_class(func) == enum_cls.name
            }
    scope = Scope(
        enum_name=enum_cls.name if enum_cls is not None else "",
        attr_to_value={m.attr: m.value for m in members},
        methods=enum_methods,
        functions=functions,
        getters=frozenset(getters),
        constants=constants,
        value_attributes=tuple(
            dict.fromkeys([*value_attributes, *([domain.setting] if domain.setting else [])])
        ),
        classes=holders,
        value_enums=value_enums(index, holders_found),
    )
    values = tuple(m.value for m in members)
    predicates: dict[str, MethodPredicate] = {}
    owners: list[tuple[str, dict[str, ast.FunctionDef], frozenset[str]]] = [
        ("", enum_methods, frozenset())
    ]
    owners += [(h.name, dict(h.methods), h.properties) for h in holders.values()]
    for owner, methods, properties in owners:
        for name in methods:
            if name in predicates:
                continue
            try:
                table = member_truths(
                    scope, values, functools.partial(_method_truth, name=name, owner=owner)
                )
            except Unproven:
                continue
            true_for, conditions = truth_summary(table)
            if not true_for or len(true_for) == len(values):
                continue
            narrowed = [texts for _, texts in conditions]
            narrowing = " and ".join(dict.fromkeys(t for texts in narrowed for t in texts)) or None
            predicates[name] = MethodPredicate(
                name=name,
                members=true_for,
                narrowing=narrowing,
                access="property" if name in properties else "method",
                owner=owner,
                conditions=conditions,
            )
    names = holder_names(holders, modules, index) if holders else frozenset()
    return Vocabulary(
        members, scope, predicates, frozenset(getters), holders, names, tuple(modules)
    )


def _method_truth(interp: Interpreter, *, name: str, owner: str) -> Truth:
    """Method or property ``name`` of ``owner`` (``""``: the enum) for ``interp``'s member."""
    return interp.method(name, owner)
