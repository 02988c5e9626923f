"""What a canonical predicate ranges over, read from its body (never executed).

The canonical's body (and the bodies of the predicates and helpers it calls) is searched for
the *setting* it tests:

- a zero-argument getter annotated to return an enum (``get_moe_a2a_backend() ->
  MoeA2ABackend``), or a reference to an enum member (``PlatformEnum.CUDA``): the universe is
  that enum's members;
- an attribute of ``self`` compared with enum members (``self._enum in (PlatformEnum.CUDA,
  ...)``): the same enum, held by ``self``'s class;
- an attribute of ``self`` compared with strings (``self.all2all_backend == "nixl_ep"``): a
  string setting held by ``self``'s class;
- a constant of enum members or of strings: the enum, or the strings.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .enums import enum_members, is_enum_class, zero_arg_methods
from .locate import Located
from .source import ModuleSource, SourceIndex, UniverseError


@dataclass(frozen=True)
class Domain:
    """The setting a family ranges over."""

    enum_module: ModuleSource | None
    enum_class: ast.ClassDef | None
    holder_module: ModuleSource | None = None
    holder: ast.ClassDef | None = None  # the class whose attribute holds the setting
    setting: str | None = None  # that attribute (``all2all_backend``, ``_enum``)
    strings: frozenset[str] = frozenset()  # a string setting's values seen with the canonical

    @property
    def key(self) -> str:
        """Identity: families with the same key share one universe."""
        if self.enum_class is not None and self.enum_module is not None:
            return f"enum:{self.enum_module.path}:{self.enum_class.name}"
        holder = self.holder.name if self.holder is not None else ""
        where = self.holder_module.path if self.holder_module is not None else ""
        return f"setting:{where}:{holder}.{self.setting or ''}"


def returned_class(func: ast.FunctionDef) -> str | None:
    """The class name a function's return annotation names (``-> MoeA2ABackend``)."""
    returns = func.returns
    if isinstance(returns, ast.Name):
        return returns.id
    if isinstance(returns, ast.Constant) and isinstance(returns.value, str):
        return returns.value.strip().split(".")[-1]
    if isinstance(returns, ast.Attribute):
        return returns.attr
    return None


class _Search:
    """A walk over the canonical and everything it calls, collecting evidence."""

    def __init__(self, index: SourceIndex) -> None:
        self.index = index
        self.enum: tuple[ModuleSource, ast.ClassDef] | None = None
        self.setting: tuple[ModuleSource, ast.ClassDef, str] | None = None
        self.strings: set[str] = set()
        self._seen: set[int] = set()

    def enum_named(
        self, module: ModuleSource, name: str
    ) -> tuple[ModuleSource, ast.ClassDef] | None:
        found = self.index.resolve_class(module, name)
        if found is not None and is_enum_class(found[1], found[0]):
            return found
        return None

    def function(
        self, module: ModuleSource, owner: ast.ClassDef | None, func: ast.FunctionDef
    ) -> None:
        if id(func) in self._seen:
            return
        self._seen.add(id(func))
        members = zero_arg_methods(owner, module)[0] if owner is not None else {}
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Name):
                self._call(module, node.func.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id == "self" and node.attr in members:
                    self.function(module, owner, members[node.attr])
                elif self.enum is None:
                    self.enum = (
                        self.enum_named(module, node.value.id)
                        if node.value.id[:1].isupper()
                        else None
                    )
            if isinstance(node, ast.Compare) and owner is not None:
                self._compare(module, owner, node)
            elif isinstance(node, ast.Match) and owner is not None:
                # ``match self._kind: case Kind.A | Kind.B:`` compares the subject with each
                # pattern's values, as ``self._kind in (Kind.A, Kind.B)`` does
                values = [p.value for p in ast.walk(node) if isinstance(p, ast.MatchValue)]
                self._compare(
                    module,
                    owner,
                    ast.Compare(node.subject, [ast.In()], [ast.Tuple(values, ast.Load())]),
                )

    def _call(self, module: ModuleSource, name: str) -> None:
        func = module.functions.get(name)
        if func is None:
            return
        cls = returned_class(func)
        if cls is not None and self.enum is None:
            self.enum = self.enum_named(module, cls)
        if self.enum is None:
            self.function(module, None, func)

    def _compare(self, module: ModuleSource, owner: ast.ClassDef, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        attrs = attributes_of(sides, "self")
        if not attrs:
            return
        # a module-level constant (``self._kind in _SHARED``) stands for its collection
        sides = [_constant_value(module, side) for side in sides]
        for side in sides:
            for value in _values(side):
                if isinstance(value, str):
                    self.strings.add(value)
                    if self.setting is None:
                        self.setting = (module, owner, attrs[0])
                elif isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
                    found = self.enum_named(module, value.value.id)
                    if found is not None:
                        self.enum = self.enum or found
                        self.setting = self.setting or (module, owner, attrs[0])


def _constant_value(module: ModuleSource, node: ast.expr) -> ast.expr:
    """The collection a module-level constant ``node`` names (``frozenset({...})`` unwrapped),
    else ``node`` itself."""
    if not isinstance(node, ast.Name) or node.id not in module.assigned:
        return node
    value = module.assigned[node.id]
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
        value = value.args[0]
    return value if isinstance(value, (ast.Tuple, ast.List, ast.Set)) else node


def attributes_of(sides: list[ast.expr], name: str) -> list[str]:
    """The attributes of ``name`` among a comparison's ``sides`` (``self._enum`` gives
    ``_enum`` for ``name="self"``)."""
    return [
        s.attr
        for s in sides
        if isinstance(s, ast.Attribute) and isinstance(s.value, ast.Name) and s.value.id == name
    ]


def _values(node: ast.expr) -> list[object]:
    """String constants and attribute nodes in ``node`` or its tuple/list/set elements."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    out: list[object] = []
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value)
        elif isinstance(item, ast.Attribute):
            out.append(item)
    return out


def find_domain(index: SourceIndex, located: Located) -> Domain:
    """The setting ``located`` ranges over (raises :class:`UniverseError` when none is found)."""
    module, owner = located.module, located.owner
    if owner is not None and is_enum_class(owner, module):
        return Domain(module, owner)
    search = _Search(index)
    if located.kind == "constant" and located.value is not None:
        return _constant_domain(index, located, search)
    assert located.function is not None
    search.function(module, owner, located.function)
    if search.enum is not None:
        setting = search.setting
        return Domain(
            search.enum[0],
            search.enum[1],
            setting[0] if setting else None,
            setting[1] if setting else None,
            setting[2] if setting else None,
        )
    if search.setting is not None:
        holder_module, holder, attr = search.setting
        return Domain(None, None, holder_module, holder, attr, frozenset(search.strings))
    raise UniverseError(
        index.rel(module.path),
        f"canonical predicate {located.spec}: its body tests no enum and no setting driftcheck "
        "can read (an enum getter, an enum member, or self.<attribute> compared with strings "
        "or enum members)",
        located.line,
    )


def _constant_domain(index: SourceIndex, located: Located, search: _Search) -> Domain:
    module = located.module
    assert located.value is not None
    node = located.value
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    values = _values(node)
    for value in values:
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
            found = search.enum_named(module, value.value.id)
            if found is not None:
                return Domain(found[0], found[1])
    strings = frozenset(v for v in values if isinstance(v, str))
    if not strings:
        raise UniverseError(
            index.rel(module.path),
            f"canonical constant {located.spec} holds neither enum members nor strings",
            located.line,
        )
    for cls in module.classes.values():
        if is_enum_class(cls, module) and strings <= {m.value for m in enum_members(cls)}:
            return Domain(module, cls)
    return Domain(None, None, module, located.owner, None, strings)
