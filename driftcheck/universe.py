"""Read the backend universe from the linted tree's source: the enum, its ``is_*`` methods,
the getter that returns it, and each canonical predicate's member set.

Nothing is imported from the tree: the canonical function and the enum methods are
interpreted by :mod:`driftcheck.interpret`, so when the helper gains a member the family
changes with it and no member list lives in driftcheck.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .config import Config
from .interpret import Interpreter, Scope, Unproven, member_truths
from .model import Family, Member, MethodPredicate, Universe
from .project import module_candidates, relpath, resolve_module


class UniverseError(Exception):
    """The canonical predicate or its enum could not be found or understood."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message


@dataclass
class ModuleSource:
    """One parsed module of the linted tree that defines part of the universe."""

    path: Path
    tree: ast.Module
    functions: dict[str, ast.FunctionDef]
    classes: dict[str, ast.ClassDef]
    constants: dict[str, frozenset[str]]


@dataclass
class LoadedUniverse:
    """The :class:`Universe` plus the syntax it was read from (for the truth-table engine)."""

    universe: Universe
    module: ModuleSource
    enum_class: ast.ClassDef
    scope: Scope
    files: tuple[Path, ...]


def parse_module(path: Path) -> ModuleSource:
    """Parse ``path`` and index its top-level functions, classes and string-set constants."""
    try:
        source = path.read_bytes()
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise UniverseError(str(path), f"cannot parse: {exc.msg}", exc.lineno) from exc
    except (OSError, ValueError) as exc:
        raise UniverseError(str(path), f"cannot read: {exc}") from exc
    functions = {
        n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    return ModuleSource(path, tree, functions, classes, string_constants(tree.body))  # type: ignore[arg-type]


def string_set_literal(node: ast.expr | None) -> frozenset[str] | None:
    """The strings of ``("a", "b")``, ``["a"]``, ``{"a"}``, ``frozenset({...})``, ``set(...)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
        "frozenset", "set", "tuple", "list"
    ) and len(node.args) == 1 and not node.keywords:  # fmt: skip
        node = node.args[0]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
        values = [
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
        if len(values) == len(node.elts):
            return frozenset(values)
    return None


def string_constants(body: list[ast.stmt]) -> dict[str, frozenset[str]]:
    """Names assigned a literal collection of strings in ``body`` (module or function level)."""
    found: dict[str, frozenset[str]] = {}
    for stmt in body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        if isinstance(target, ast.Name):
            members = string_set_literal(value)
            if members is not None:
                found[target.id] = members
    return found


def _enum_members(cls: ast.ClassDef) -> tuple[Member, ...]:
    members = []
    for stmt in cls.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            members.append(Member(stmt.targets[0].id, stmt.value.value))
    return tuple(members)


def _zero_arg_methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    methods = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and not stmt.decorator_list:
            args = stmt.args
            if len(args.args) == 1 and not (args.vararg or args.kwarg or args.kwonlyargs):
                methods[stmt.name] = stmt
    return methods


def _getter_enum(func: ast.FunctionDef) -> str | None:
    returns = func.returns
    if isinstance(returns, ast.Name):
        return returns.id
    if isinstance(returns, ast.Constant) and isinstance(returns.value, str):
        return returns.value
    if isinstance(returns, ast.Attribute):
        return returns.attr
    return None


def _called_getters(func: ast.FunctionDef) -> list[str]:
    names = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Name):
            names.append(node.func.id)
    return names


def _locate(root: Path, spec: str) -> tuple[Path, str, str]:
    module, _, name = spec.partition(":")
    path = resolve_module(root, module)
    if path is None:
        tried = ", ".join(relpath(root, p) for p in module_candidates(root, module)[:2])
        raise UniverseError(
            str(root),
            f"canonical predicate {spec}: module {module} not found under {root} (looked for {tried})",
        )
    return path, module, name


def load_universe(root: Path, config: Config) -> LoadedUniverse:
    """Build the universe for ``root`` from the configured canonical predicates."""
    if not config.canonical:
        raise UniverseError(str(root), "no canonical predicate configured")
    first_path, first_module, first_name = _locate(root, config.canonical[0])
    module = parse_module(first_path)
    helper = module.functions.get(first_name)
    if helper is None:
        raise UniverseError(
            relpath(root, first_path),
            f"canonical predicate {config.canonical[0]}: no top-level function {first_name}() in {relpath(root, first_path)}",
        )
    getter_name, enum_name = _find_getter(module, helper, root)
    cls = module.classes.get(enum_name)
    if cls is None:
        raise UniverseError(
            relpath(root, first_path),
            f"enum class {enum_name} (returned by {getter_name}()) not found in {relpath(root, first_path)}",
        )
    members = _enum_members(cls)
    if len(members) < 2:
        raise UniverseError(
            relpath(root, first_path),
            f"enum {enum_name} has fewer than two string members",
            cls.lineno,
        )
    methods = _zero_arg_methods(cls)
    getters = frozenset(
        name
        for name, func in module.functions.items()
        if not func.args.args and _getter_enum(func) == enum_name
    ) | {getter_name}
    scope = Scope(
        enum_name=enum_name,
        attr_to_value={m.attr: m.value for m in members},
        methods=methods,
        functions=module.functions,
        getters=getters,
        constants=module.constants,
        value_attributes=config.value_attributes,
    )
    values = tuple(m.value for m in members)
    predicates = _method_predicates(scope, values)
    files = [first_path]
    families = [_family(root, config, scope, values, module, first_path, first_module, first_name)]
    for spec in config.canonical[1:]:
        path, mod_name, name = _locate(root, spec)
        other = module if path == first_path else parse_module(path)
        if path != first_path:
            files.append(path)
            scope.functions = {**other.functions, **scope.functions}
        families.append(_family(root, config, scope, values, other, path, mod_name, name))
    universe = Universe(
        enum_name=enum_name,
        enum_path=relpath(root, first_path),
        enum_module=first_module,
        members=members,
        predicates=predicates,
        getters=getters,
        families=tuple(families),
        value_attributes=config.value_attributes,
    )
    return LoadedUniverse(universe, module, cls, scope, tuple(files))


def _find_getter(module: ModuleSource, helper: ast.FunctionDef, root: Path) -> tuple[str, str]:
    for name in _called_getters(helper):
        func = module.functions.get(name)
        if func is not None and not func.args.args:
            enum_name = _getter_enum(func)
            if enum_name and enum_name in module.classes:
                return name, enum_name
        if func is not None:
            # a canonical helper may call another canonical-style helper; follow it once
            for inner in _called_getters(func):
                inner_func = module.functions.get(inner)
                if inner_func is not None and _getter_enum(inner_func) in module.classes:
                    return inner, _getter_enum(inner_func) or ""
    raise UniverseError(
        relpath(root, module.path),
        f"{helper.name}() calls no zero-argument getter annotated to return an enum defined in {relpath(root, module.path)}",
        helper.lineno,
    )


def _method_predicates(scope: Scope, values: tuple[str, ...]) -> dict[str, MethodPredicate]:
    predicates: dict[str, MethodPredicate] = {}
    for name in scope.methods:
        try:
            table = member_truths(scope, values, lambda interp, n=name: interp.method(n))
        except Unproven:
            continue
        true_for = set()
        narrowed = set()
        narrowing_texts: list[str] = []
        for value, outcomes in table.items():
            results = set(outcomes.values())
            if results == {True}:
                true_for.add(value)
            elif True in results:
                narrowed.add(value)
                for setting in outcomes:
                    for text, _ in setting:
                        if text not in narrowing_texts:
                            narrowing_texts.append(text)
        if not true_for and not narrowed:
            continue
        predicates[name] = MethodPredicate(
            name=name,
            members=frozenset(true_for | narrowed),
            narrowing=" and ".join(narrowing_texts) if narrowed else None,
        )
    return predicates


def _family(
    root: Path,
    config: Config,
    scope: Scope,
    values: tuple[str, ...],
    module: ModuleSource,
    path: Path,
    module_name: str,
    name: str,
) -> Family:
    func = module.functions.get(name)
    if func is None:
        raise UniverseError(
            relpath(root, path),
            f"canonical predicate {module_name}:{name}: no top-level function {name}()",
        )
    local_scope = Scope(**{**scope.__dict__, "functions": {**scope.functions, **module.functions}})
    try:
        table = member_truths(local_scope, values, lambda interp: interp.call_function(name))
    except Unproven as exc:
        raise UniverseError(
            relpath(root, path),
            f"canonical predicate {name}() is outside what driftcheck can interpret: {exc.construct}",
            exc.line or func.lineno,
        ) from exc
    accepted = {v for v, outcomes in table.items() if any(outcomes.values())}
    ordered = [v for v in _source_order(func, scope) if v in accepted]
    ordered += [v for v in values if v in accepted and v not in ordered]
    return Family(
        name=name,
        qualified=f"{module_name}:{name}",
        path=relpath(root, path),
        line=func.lineno,
        members=tuple(ordered),
        label=config.label,
    )


def _source_order(func: ast.FunctionDef, scope: Scope) -> list[str]:
    """Members in the order the helper's body mentions them (for stable, readable output)."""
    order: list[str] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = scope.methods.get(node.func.attr)
            if method is not None:
                for value in scope.attr_to_value.values():
                    try:
                        if (
                            Interpreter(scope, value, {}).method(node.func.attr)
                            and value not in order
                        ):
                            order.append(value)
                    except Unproven:
                        break
    return sorted(order, key=lambda v: _position(func, v, order))


def _position(func: ast.FunctionDef, value: str, order: list[str]) -> int:
    return order.index(value)
