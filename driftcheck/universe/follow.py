"""Find a family's canonical predicates in the tree as it is, following a renamed, moved or
split one.

A configured canonical names a family by where it lives (``module:Class.name``), and may add
``seeds`` (other names it has gone by) and the ``universe`` it ranges over. When the named
predicate is in the tree, it is the canonical. When it is gone, the engine follows it, in
this order, and says what it chose (:attr:`Followed.note`):

1. the same name in another class of the same module (a predicate that moved with its
   callers: ``FusedMoEParallelConfig.use_x`` to ``FusedMoEConfig.use_x``);
2. a seed name, in the same class, then anywhere in the module;
3. the predicates of the same class (or module) whose names hold every distinctive word of
   the old name (``use_mori_kernels`` split into ``use_mori_epv1_kernels`` and
   ``use_mori_epv2_kernels``): all of them, a union.

Nothing found is :class:`NoCanonical`, carrying the candidates considered. Whether a found
predicate ranges over the family's universe is the loader's question (:mod:`.load`).
A predicate may name a union itself (``module:Class.a | Class.b``, as ``discover`` proposes
one). A seed or predicate may compare a property with a member of the enum it returns
(``FusedMoEConfig.activation_format == FusedMoEActivationFormat.BatchedExperts``): the
family is then the members for which the property returns that enum member.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..config import Canonical
from .domain import returned_class
from .enums import zero_arg_methods
from .locate import Located, locate
from .source import ModuleSource, SourceIndex, UniverseError

# words every predicate name shares, which say nothing about the family
GENERIC_WORDS = frozenset({"use", "uses", "is", "has", "kernels", "kernel", "enabled", "backend"})


class NoCanonical(UniverseError):
    """No predicate of the family is left in the tree; ``considered`` names what was tried."""

    def __init__(
        self, path: str, message: str, line: int | None, considered: tuple[str, ...]
    ) -> None:
        super().__init__(path, message, line)
        self.considered = considered


@dataclass(frozen=True)
class Part:
    """One predicate of a family, and the value-enum member it must return (``Enum.Member``)
    when the family is read from an enum-valued property."""

    located: Located
    expected: str | None = None

    @property
    def qualname(self) -> str:
        """``Class.name`` (with `` == Enum.Member``)."""
        text = self.located.qualname
        return f"{text} == {self.expected}" if self.expected else text


@dataclass(frozen=True)
class Followed:
    """The predicates a canonical resolved to (several: a union) and what was said about it."""

    parts: tuple[Part, ...]
    note: str = ""


def split_spec(spec: str) -> tuple[str, str | None]:
    """``module:Class.prop == Enum.Member`` -> (``module:Class.prop``, ``Enum.Member``)."""
    left, sep, right = spec.partition("==")
    return (left.strip(), right.strip() or None) if sep else (spec.strip(), None)


def words(name: str) -> frozenset[str]:
    """The distinctive words of a predicate name (``use_mori_kernels`` -> ``{mori}``)."""
    return frozenset(w for w in re.split(r"_+", name.lower()) if w) - GENERIC_WORDS


def _predicates_of(module: ModuleSource, cls: ast.ClassDef | None) -> list[str]:
    """Zero-argument methods and properties of ``cls`` (module functions when None) that may
    be predicates: not annotated to return something other than ``bool``."""
    if cls is None:
        found = {n: f for n, f in module.functions.items() if not f.args.args}
    else:
        found = dict(zero_arg_methods(cls, module)[0])
    return [n for n, f in found.items() if returned_class(f) in (None, "bool")]


def _try(index: SourceIndex, dotted: str, qualname: str, expected: str | None) -> Part | None:
    try:
        return Part(locate(index, f"{dotted}:{qualname}"), expected)
    except UniverseError:
        return None


def _elsewhere(index: SourceIndex, module: ModuleSource, name: str, skip: str) -> Part | None:
    """``name`` defined in another class of ``module``, or as one of its functions."""
    for cls_name, cls in module.classes.items():
        if cls_name != skip and name in _predicates_of(module, cls):
            return _try(index, module.name, f"{cls_name}.{name}", None)
    if name in module.functions:
        return _try(index, module.name, name, None)
    return None


def _seed(index: SourceIndex, module: ModuleSource, cls_name: str, seed: str) -> Part | None:
    qual, expected = split_spec(seed)
    if ":" in qual:  # a seed naming another module
        dotted, _, qual = qual.partition(":")
        return _try(index, dotted, qual, expected)
    if "." in qual:
        return _try(index, module.name, qual, expected)
    if cls_name:
        found = _try(index, module.name, f"{cls_name}.{qual}", expected)
        if found is not None:
            return found
    part = _elsewhere(index, module, qual, cls_name)
    return Part(part.located, expected) if part is not None and expected else part


def _split(index: SourceIndex, module: ModuleSource, cls_name: str, name: str) -> list[Part]:
    """The predicates beside the gone one whose names hold all its distinctive words."""
    wanted = words(name)
    if not wanted:
        return []
    cls = module.classes.get(cls_name) if cls_name else None
    parts = []
    for candidate in _predicates_of(module, cls):
        if candidate != name and wanted <= words(candidate):
            qual = f"{cls_name}.{candidate}" if cls_name else candidate
            part = _try(index, module.name, qual, None)
            if part is not None:
                parts.append(part)
    return sorted(parts, key=lambda p: p.located.line)


def _considered(module: ModuleSource, cls_name: str, name: str) -> tuple[str, ...]:
    """The predicates the follow looked at: those of the class (or module) sharing a word of
    the gone name, else all of them."""
    cls = module.classes.get(cls_name) if cls_name else None
    names = _predicates_of(module, cls) if cls_name == "" or cls is not None else []
    sharing = [n for n in names if words(n) & words(name)]
    prefix = f"{cls_name}." if cls_name else ""
    return tuple(f"{prefix}{n}" for n in (sharing or names))


def _delegated_name(func: ast.FunctionDef, owned: bool) -> str | None:
    """The definition a body that is one ``return`` hands its value to: ``self.x``,
    ``self.x()``, ``self.x.is_y`` (owned) or ``x()`` (a module function); else None."""
    body = func.body[1:] if ast.get_docstring(func) is not None else func.body
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    node: ast.expr = body[0].value
    while True:
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            node = node.func
        elif isinstance(node, ast.Attribute) and not (
            owned and isinstance(node.value, ast.Name) and node.value.id == "self"
        ):
            node = node.value
        else:
            break
    if owned and isinstance(node, ast.Attribute):
        return node.attr
    return node.id if not owned and isinstance(node, ast.Name) else None


def delegates(index: SourceIndex, located: Located) -> list[Located]:
    """The definitions ``located`` hands its value to, transitively, in the same class (or
    module): ``use_batched_activation_format`` returns ``self.activation_format.is_batched``,
    so ``activation_format`` is part of the canonical, not a copy of it."""
    found: list[Located] = []
    current = located
    while current.function is not None and len(found) < 8:
        owned = current.owner is not None
        name = _delegated_name(current.function, owned)
        if name is None or name == current.name:
            break
        qual = f"{current.owner.name}.{name}" if current.owner is not None else name
        try:
            current = locate(index, f"{current.module.name}:{qual}")
        except UniverseError:
            break
        if current.kind == "constant" or any(f.qualname == current.qualname for f in found):
            break
        found.append(current)
    return found


def follow(index: SourceIndex, canonical: Canonical) -> Followed:
    """The predicates ``canonical`` names in the tree, following it when it is gone (raises
    :class:`NoCanonical` when nothing is found, :class:`UniverseError` when the module is)."""
    if "|" in canonical.predicate:  # a union named as such: every part must be there
        dotted, _, names = canonical.predicate.partition(":")
        parts = []
        for name in names.split("|"):
            qual, expected = split_spec(name)
            parts.append(Part(locate(index, f"{dotted}:{qual}"), expected))
        return Followed(tuple(parts))
    spec, expected = split_spec(canonical.predicate)
    try:
        return Followed((Part(locate(index, spec), expected),))
    except UniverseError as gone:
        dotted, _, qualname = spec.partition(":")
        module = index.module(dotted)
        if module is None:
            raise
        cls_name, _, name = qualname.rpartition(".")
        parts = _follow_in(index, module, cls_name, name, canonical.seeds)
        if not parts:
            considered = _considered(module, cls_name, name)
            tried = ", ".join(considered) if considered else "no predicate beside it"
            cls = module.classes.get(cls_name)
            raise NoCanonical(
                gone.path,
                f"{gone.message}; no predicate follows it (considered: {tried})",
                gone.line or (cls.lineno if cls is not None else None),
                considered,
            ) from gone
    same = all(p.located.owner is not None and p.located.owner.name == cls_name for p in parts)
    chosen = " | ".join(p.qualname.partition(".")[2] if same else p.qualname for p in parts)
    first = parts[0].located
    where = f"{index.rel(first.module.path)}:{first.line}"
    return Followed(
        tuple(parts), f"{name if same else qualname} is gone; following {chosen} ({where})"
    )


def _follow_in(
    index: SourceIndex, module: ModuleSource, cls_name: str, name: str, seeds: tuple[str, ...]
) -> list[Part]:
    moved = _elsewhere(index, module, name, cls_name)
    if moved is not None:
        return [moved]
    for seed in seeds:
        part = _seed(index, module, cls_name, seed)
        if part is not None:
            return [part]
    return _split(index, module, cls_name, name)
