"""Parsed modules of the linted tree that define part of a universe, indexed for lookups.

Nothing is imported: each module is read and parsed with :mod:`ast` once per run, and its
top-level functions, classes, string-set constants and ``from X import Y`` names are indexed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from ..project import module_name_of, relpath, resolve_module


class UniverseError(Exception):
    """The canonical predicate or its universe could not be found or understood."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message


@dataclass
class ModuleSource:
    """One parsed module: its top-level functions, classes, constants and imported names."""

    path: Path
    tree: ast.Module
    functions: dict[str, ast.FunctionDef]
    classes: dict[str, ast.ClassDef]
    constants: dict[str, frozenset[str]]
    name: str = ""
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # local -> (module, name)
    assigned: dict[str, ast.expr] = field(default_factory=dict)  # top-level NAME = value
    annotated: dict[str, ast.expr] = field(default_factory=dict)  # top-level NAME: annotation


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


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, with ``if TYPE_CHECKING:``/``try:`` blocks flattened in."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If):
            out.extend(_top_level(stmt.body))
            out.extend(_top_level(stmt.orelse))
        elif isinstance(stmt, ast.Try):
            out.extend(_top_level(stmt.body))
    return out


def parse_module(path: Path, name: str = "") -> ModuleSource:
    """Parse ``path`` and index it (``name``: its dotted module name, for relative imports)."""
    try:
        source = path.read_bytes()
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise UniverseError(str(path), f"cannot parse: {exc.msg}", exc.lineno) from exc
    except (OSError, ValueError) as exc:
        raise UniverseError(str(path), f"cannot read: {exc}") from exc
    return index_module(path, tree, name)


def index_module(path: Path, tree: ast.Module, name: str = "") -> ModuleSource:
    """Index the parsed ``tree`` of ``path`` (all of it, or only some pieces: a module read
    for its class bodies alone, :mod:`.candidates`)."""
    statements = _top_level(tree.body)
    functions = {
        n.name: n for n in statements if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    classes = {n.name: n for n in statements if isinstance(n, ast.ClassDef)}
    module = ModuleSource(path, tree, functions, classes, string_constants(tree.body), name)  # type: ignore[arg-type]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for stmt in statements:
        if isinstance(stmt, ast.ImportFrom):
            base = stmt.module or ""
            if stmt.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (stmt.level - 1)] if stmt.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            for alias in stmt.names:
                module.imports[alias.asname or alias.name] = (base, alias.name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    module.assigned[target.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            module.annotated[stmt.target.id] = stmt.annotation
            if stmt.value is not None:
                module.assigned[stmt.target.id] = stmt.value
    return module


class SourceIndex:
    """The modules of one tree, parsed on first use (each once per run)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._by_path: dict[Path, ModuleSource] = {}

    def module(self, dotted: str) -> ModuleSource | None:
        """The module ``dotted`` (``sglang.srt.layers.moe.utils``), if the tree holds it."""
        path = resolve_module(self.root, dotted)
        return self.at(path) if path is not None else None

    def at(self, path: Path) -> ModuleSource:
        """The module at ``path`` (raises :class:`UniverseError` when it cannot be parsed)."""
        if path not in self._by_path:
            self._by_path[path] = parse_module(path, module_name_of(self.root, path))
        return self._by_path[path]

    def rel(self, path: Path) -> str:
        """``path`` relative to the root."""
        return relpath(self.root, path)

    def resolve_class(
        self, module: ModuleSource, name: str
    ) -> tuple[ModuleSource, ast.ClassDef] | None:
        """The class ``name`` means in ``module``: defined there, or imported from the tree."""
        if name in module.classes:
            return module, module.classes[name]
        if name in module.imports:
            origin, original = module.imports[name]
            other = self.module(origin)
            if other is not None and original in other.classes:
                return other, other.classes[original]
        return None

    def modules(self) -> list[ModuleSource]:
        """Every module parsed so far."""
        return list(self._by_path.values())
