"""Build a run's universes and families from the configured canonical predicates.

Each canonical is located (:mod:`.locate`), its domain found (:mod:`.domain`), and the
universe that domain defines built once (:mod:`.vocabulary`); the canonical's members are
then interpreted per member. Canonicals over the same setting share one universe. A canonical
that cannot be found does not stop the run: it becomes a warning, and when no canonical of a
universe is left, its families are inferred from the tree's hand-written copies (the judge
does that, from the sites). The universe then comes from the configured ``enum``, or the
enum defined in the canonical's module.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..config import Canonical, Config
from ..interpret import EnumValue, Interpreter, Scope, Unproven, member_truths
from ..model import Conditions, Family, Universe
from .domain import Domain, find_domain
from .enums import is_enum_class
from .follow import Followed, NoCanonical, Part, delegates, follow
from .locate import Located
from .source import ModuleSource, SourceIndex, UniverseError
from .vocabulary import Vocabulary, build_vocabulary, truth_summary

SITE_FUNCTION = "<canonical>"  # a key no source code can call


@dataclass
class LoadedUniverse:
    """A :class:`Universe` plus the syntax it was read from (for the truth-table engine)."""

    universe: Universe
    module: ModuleSource
    enum_class: ast.ClassDef | None
    scope: Scope
    files: tuple[Path, ...]


@dataclass(frozen=True)
class Unresolved:
    """A configured family the run could not read a canonical for: none is left in the tree
    (``considered``: the predicates looked at), or the one found is outside the interpreter
    (``unreadable``); ``error`` says where and why."""

    canonical: Canonical
    error: UniverseError
    considered: tuple[str, ...] = ()
    unreadable: bool = False


@dataclass
class Loaded:
    """Every universe of a run, the files defining them, and what could not be loaded."""

    universes: list[LoadedUniverse] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    missing: list[UniverseError] = field(default_factory=list)  # canonicals not found
    # canonicals that resolved to nothing readable (the no-canonical rule reports them)
    unresolved: list[Unresolved] = field(default_factory=list)
    # what following a renamed canonical chose, said as ``note: ...``
    notes: list[str] = field(default_factory=list)
    # nothing was configured: the universes are the tree's recurring candidates
    # (:mod:`.candidates`), kept only where a family is inferred for them
    inferred: bool = False

    @property
    def primary(self) -> LoadedUniverse | None:
        """The first configured canonical's universe (the one single-universe callers use)."""
        return self.universes[0] if self.universes else None

    @property
    def files(self) -> tuple[Path, ...]:
        """Files defining some universe or family: a change to one re-checks the tree."""
        return tuple(dict.fromkeys(f for u in self.universes for f in u.files))


def _noun(name: str) -> str:
    return "backends" if "backend" in name.lower() else "members"


def _universe_name(domain: Domain) -> str:
    if domain.enum_class is not None:
        return domain.enum_class.name
    holder = domain.holder.name if domain.holder is not None else "setting"
    return f"{holder}.{domain.setting}" if domain.setting else holder


class _Builder:
    """Universes by domain key, built on first use."""

    def __init__(self, root: Path, config: Config) -> None:
        self.root = root
        self.config = config
        self.index = SourceIndex(root)
        self.by_key: dict[str, tuple[Domain, Vocabulary, list[Family], list[Path]]] = {}
        self.order: list[str] = []
        # each family's configured predicate (another one when the family was followed)
        self.named: dict[str, str] = {}

    def universe_for(self, domain: Domain, extra: ModuleSource | None) -> str:
        key = domain.key
        if key not in self.by_key:
            modules = [
                m for m in (domain.enum_module, domain.holder_module, extra) if m is not None
            ]
            modules = list({id(m): m for m in modules}.values())
            vocabulary = build_vocabulary(self.index, domain, modules, self.config.value_attributes)
            if len(vocabulary.members) < 2:
                where = domain.enum_module or domain.holder_module or extra
                assert where is not None
                definition = domain.enum_class or domain.holder
                raise UniverseError(
                    self.index.rel(where.path),
                    f"{_universe_name(domain)} has fewer than two members",
                    definition.lineno if definition else None,
                )
            self.by_key[key] = (domain, vocabulary, [], [m.path for m in modules])
            self.order.append(key)
        elif extra is not None:
            _, vocabulary, _, files = self.by_key[key]
            if extra.path not in files:
                files.append(extra.path)
                vocabulary.scope.functions = {**extra.functions, **vocabulary.scope.functions}
        return key

    def family(self, canonical: Canonical, followed: Followed, key: str) -> Family:
        """The family of ``followed``'s predicates (several: their union) over ``key``."""
        _, vocabulary, families, _ = self.by_key[key]
        values = tuple(m.value for m in vocabulary.members)
        accepted: set[str] = set()
        partial: dict[str, set[str]] = {}
        outright: set[str] = set()
        for part in followed.parts:
            members, part_conditions = self._part_members(part, vocabulary.scope, values)
            accepted |= members
            conditional = dict(part_conditions)
            for member in members:
                if member in conditional:
                    partial.setdefault(member, set()).update(conditional[member])
                else:
                    outright.add(member)
        ordered: list[str] = []
        for part in followed.parts:
            ordered += [
                v
                for v in _source_order(part.located, vocabulary, families)
                if v in accepted and v not in ordered
            ]
        ordered += [v for v in values if v in accepted and v not in ordered]
        conditions: Conditions = tuple(
            (m, tuple(sorted(partial[m]))) for m in values if m in partial and m not in outright
        )
        first = followed.parts[0].located
        union = len(followed.parts) > 1
        access = {
            "function": "function",
            "staticmethod": "function",
            "classmethod": "function",
        }.get(first.kind, first.kind)
        name = " | ".join(p.located.name for p in followed.parts)
        if followed.parts[0].expected:
            name = followed.parts[0].qualname.partition(".")[2] or followed.parts[0].qualname
            access = "union"
        defines = [
            (self.index.rel(d.module.path), d.qualname, d.kind, *_lines(d))
            for part in followed.parts
            for d in (part.located, *delegates(self.index, part.located))
        ]
        return Family(
            name=name,
            qualified=f"{first.module.name}:" + " | ".join(p.qualname for p in followed.parts),
            defines=tuple(dict.fromkeys(defines)),
            path=self.index.rel(first.module.path),
            line=first.line,
            members=tuple(ordered),
            label=canonical.label or self.config.label or first.name,
            access="union" if union else access,
            owner=first.owner.name if first.owner is not None else "",
            universe=_universe_name(self.by_key[key][0]),
            conditions=conditions,
        )

    def _part_members(
        self, part: Part, scope: Scope, values: tuple[str, ...]
    ) -> tuple[frozenset[str], Conditions]:
        located = part.located
        try:
            table = self._table(scope, located, values, part.expected)
        except Unproven as exc:
            raise UniverseError(
                self.index.rel(located.module.path),
                f"canonical predicate {located.qualname} is outside what driftcheck can "
                f"interpret: {exc.construct}",
                exc.line or located.line,
            ) from exc
        return truth_summary(table)

    def _table(self, scope: Scope, located: Located, values: tuple[str, ...], expected: str | None):
        if located.kind == "constant":
            value = located.value
            assert value is not None
            return member_truths(scope, values, lambda interp: _constant_truth(interp, value))
        assert located.function is not None
        if located.kind in ("method", "property") and located.owner is not None:
            if located.owner.name == scope.enum_name:
                return member_truths(scope, values, lambda interp: interp.method(located.name))
            owner = located.owner.name
            if expected is not None:
                enum, _, member = expected.rpartition(".")
                wanted = EnumValue(enum.rpartition(".")[2], member)
                return member_truths(
                    scope, values, lambda interp: interp.method_equals(located.name, owner, wanted)
                )
            return member_truths(scope, values, lambda interp: interp.method(located.name, owner))
        local = replace(scope, functions={**scope.functions, SITE_FUNCTION: located.function})
        return member_truths(local, values, lambda interp: interp.call_function(SITE_FUNCTION))


def _lines(located: Located) -> tuple[int, int]:
    """The first and last line of a definition (its decorators included)."""
    node = located.function
    if node is None:
        return located.line, located.line
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return first, node.end_lineno or node.lineno


def configured_domain(index: SourceIndex, spec: str) -> Domain | None:
    """The universe a canonical entry names: ``module:Class.attribute`` (a setting held by
    ``Class``) or ``module:Enum``; None when the tree does not hold it."""
    dotted, _, qualname = spec.partition(":")
    module = index.module(dotted)
    if module is None:
        return None
    cls_name, _, attr = qualname.partition(".")
    cls = module.classes.get(cls_name)
    if cls is None:
        return None
    if not attr:
        return Domain(module, cls) if is_enum_class(cls, module) else None
    return Domain(None, None, module, cls, attr)


def _add_family(builder: _Builder, canonical: Canonical, followed: Followed) -> None:
    """Build ``followed``'s universe (the configured one, when the predicate's own body reads
    as another) and its family, recorded on that universe."""
    first = followed.parts[0].located
    configured = (
        configured_domain(builder.index, canonical.universe) if canonical.universe else None
    )
    try:
        domain = find_domain(builder.index, first)
    except UniverseError:
        if configured is None:
            raise
        domain = configured
    if configured is not None and domain.key != configured.key:
        domain = configured
    key = builder.universe_for(domain, first.module)
    family = builder.family(canonical, followed, key)
    if followed.note and not family.members:
        raise UniverseError(
            family.path,
            f"{family.name} accepts no member of {family.universe}: not the same family",
            family.line,
        )
    builder.by_key[key][2].append(family)
    builder.named[family.qualified] = canonical.predicate  # keys of family-implies follow it
    for part in followed.parts:
        if part.located.module.path not in builder.by_key[key][3]:
            builder.by_key[key][3].append(part.located.module.path)


def _constant_truth(interp: Interpreter, value: ast.expr) -> bool:
    collection = interp.value(value)
    if not isinstance(collection, frozenset):
        raise Unproven("the constant is not a collection of members")
    return interp.member in collection


def _source_order(located: Located, vocabulary: Vocabulary, families: list[Family]) -> list[str]:
    """Members in the order the canonical's body mentions them (stable, readable output); a
    call of another canonical helper stands for its members in its order."""
    node: ast.AST | None = located.function or located.value
    if node is None:
        return []
    by_attr = {m.attr: m.value for m in vocabulary.members}
    by_value = {m.value for m in vocabulary.members}
    order: list[str] = []
    mentions: list[tuple[int, int, list[str]]] = []
    for sub in ast.walk(node):
        found: list[str] = []
        helper = next(
            (
                f
                for f in families
                if isinstance(sub, ast.Call) and getattr(sub.func, "id", None) == f.name
            ),
            None,
        )
        if helper is not None:
            found = list(helper.members)
        elif isinstance(sub, ast.Attribute):
            pred = vocabulary.predicates.get(sub.attr)
            if pred is not None:
                found = [m.value for m in vocabulary.members if m.value in pred.members]
            elif sub.attr in by_attr:
                found = [by_attr[sub.attr]]
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value in by_value:
            found = [sub.value]
        if found:
            mentions.append((getattr(sub, "lineno", 0), getattr(sub, "col_offset", 0), found))
    for _, _, found in sorted(mentions, key=lambda m: (m[0], m[1])):
        order.extend(v for v in found if v not in order)
    return order


def _fallback_domain(index: SourceIndex, config: Config, modules: list[str]) -> Domain | None:
    """The universe when no canonical can be found: ``enum`` from the configuration, else the
    enum defined in a canonical's module."""
    if config.enum:
        dotted, _, name = config.enum.partition(":")
        module = index.module(dotted)
        if module is not None and name in module.classes:
            return Domain(module, module.classes[name])
    for dotted in modules:
        module = index.module(dotted)
        if module is None:
            continue
        for cls in module.classes.values():
            if is_enum_class(cls, module):
                return Domain(module, cls)
    return None


def load_universes(root: Path, config: Config) -> Loaded:
    """Build every universe and family the configuration names."""
    builder = _Builder(root, config)
    loaded = Loaded()
    missing: list[str] = []
    failures: list[UniverseError] = []
    unreadable: list[UniverseError] = []
    for canonical in config.canonicals:
        try:
            followed = follow(builder.index, canonical)
        except UniverseError as exc:
            failures.append(exc)
            missing.append(canonical.predicate.partition(":")[0])
            considered = exc.considered if isinstance(exc, NoCanonical) else ()
            loaded.unresolved.append(Unresolved(canonical, exc, considered))
            continue
        try:
            _add_family(builder, canonical, followed)
        except UniverseError as exc:
            if followed.note:
                # what the follow chose does not read as the family: as if nothing followed
                gone = UniverseError(
                    exc.path,
                    f"canonical predicate {canonical.predicate}: {followed.note} does not read "
                    f"as its family ({exc.message})",
                    exc.line,
                )
                failures.append(gone)
                missing.append(canonical.predicate.partition(":")[0])
                considered = tuple(p.qualname for p in followed.parts)
                loaded.unresolved.append(Unresolved(canonical, gone, considered))
                continue
            # one canonical outside the interpreter never disables the others
            unreadable.append(exc)
            loaded.unresolved.append(Unresolved(canonical, exc, unreadable=True))
            continue
        if followed.note:
            loaded.notes.append(followed.note)
    if unreadable and not any(entry[2] for entry in builder.by_key.values()):
        raise unreadable[0]  # no canonical could be read at all: the run cannot do its job
    if not builder.order and not config.canonicals and not config.enum:
        loaded.inferred = True
        from .candidates import candidate_universes, helper_families  # no pack: inferred

        for candidate in candidate_universes(builder.index, config.is_excluded):
            try:
                key = builder.universe_for(candidate.domain, None)
            except UniverseError:
                continue
            vocabulary = builder.by_key[key][1]
            scope = vocabulary.scope  # the names the tree compares with its members hold it
            scope.value_attributes = (*scope.value_attributes, *candidate.value_attributes)
            # the tree's own helpers: families found, not inferred
            builder.by_key[key][2].extend(helper_families(candidate, vocabulary, builder.index))
    elif not builder.order:
        fallback = _fallback_domain(builder.index, config, missing)
        if fallback is None:
            first = (
                failures[0]
                if failures
                else UniverseError(str(root), "no canonical predicate configured")
            )
            raise UniverseError(
                first.path,
                f"{first.message}; and no enum to infer families over (configure "
                '[tool.driftcheck] canonical = ["module:qualname"] or enum = "module:EnumClass"; '
                "`driftcheck discover` lists candidates)",
                first.line,
            )
        builder.universe_for(fallback, None)
    loaded.missing = failures
    loaded.warnings.extend(
        f"{exc.message}; families are inferred from the tree's hand-written copies instead"
        for exc in failures
    )
    for key in builder.order:
        domain, vocabulary, families, files = builder.by_key[key]
        name = _universe_name(domain)
        module = domain.enum_module or domain.holder_module
        assert module is not None
        universe = Universe(
            enum_name=domain.enum_class.name if domain.enum_class is not None else "",
            enum_path=builder.index.rel(module.path),
            enum_module=module.name,
            members=vocabulary.members,
            predicates=vocabulary.predicates,
            getters=vocabulary.getters,
            families=tuple(families),
            value_attributes=vocabulary.scope.value_attributes,
            holders=frozenset(vocabulary.holders),
            holder_names=vocabulary.holder_names | frozenset(config.receivers),
            name=name,
            noun=_noun(name),
            implementation_words=config.implementation_words,
            implied=tuple(
                (" ".join(text.split()), f.member_set)
                for f in families
                for predicate, texts in config.family_implies
                if predicate in (f.qualified, builder.named.get(f.qualified))
                for text in texts
            ),
        )
        loaded.universes.append(
            LoadedUniverse(universe, module, domain.enum_class, vocabulary.scope, tuple(files))
        )
    return loaded


def load_universe(root: Path, config: Config) -> LoadedUniverse:
    """The primary universe (compatibility for single-universe callers and tests)."""
    primary = load_universes(root, config).primary
    assert primary is not None
    return primary
