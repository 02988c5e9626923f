"""What a style produces for one site: a planned rewrite in file offsets, or a refusal.

A :class:`Rewrite` holds the primary replacement (the enumeration's expression, or the literal
of the constant it tests) and any further edits (the helper's import, a receiver variable the
rewrite leaves unused), plus the two expressions whose values per backend state the change.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from driftcheck.interpret import Scope
from driftcheck.model import Family, Finding, Site, Universe

from .layout import Settings, formatter_settings
from .text import LineIndex, SourceFile


class Refusal(Exception):
    """The site is not rewritten; the message is the one-line reason shown to the user."""


class HeldBack(Refusal):
    """The style rewrites every missing member at once and some are held back: the fix
    applies only with ``--unsafe-fixes`` (the message says so)."""


@dataclass(frozen=True)
class Replacement:
    """Replace the file text ``[start, end)`` with ``text``."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Rewrite:
    """One site's planned fix."""

    style: str
    primary: Replacement
    extra: tuple[Replacement, ...]
    before: str
    after: str
    receivers: frozenset[str]
    before_names: Mapping[str, object] = field(default_factory=dict)
    after_names: Mapping[str, object] = field(default_factory=dict)
    import_line: str | None = None
    removed: tuple[tuple[int, int], ...] = ()  # ranges of operands the rewrite deletes

    def replacements(self) -> tuple[Replacement, ...]:
        """The primary replacement and the further edits."""
        return (self.primary, *self.extra)


@dataclass
class FileContext:
    """One file being fixed: its text, and its whole-module AST only if a plan asks for it."""

    rel: str
    source: SourceFile
    universe: Universe
    scope: Scope
    module_name: str
    root: Path
    all_files: tuple[str, ...] = ()

    @cached_property
    def index(self) -> LineIndex:
        """Positions in the file text."""
        return LineIndex(self.source.text)

    @cached_property
    def layout(self) -> Settings:
        """The line length and indent width of the formatter configuration over the file."""
        return formatter_settings(self.root / self.rel)

    @cached_property
    def tree(self) -> ast.Module:
        """The parsed module (parsed at most once, and only for plans that need it)."""
        return ast.parse(self.source.text, filename=self.rel)

    @cached_property
    def definitions(self) -> list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
        """Every class and function of the module, found by walking statements only."""
        found: list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef] = []
        pending: list[ast.stmt] = list(self.tree.body)
        while pending:
            stmt = pending.pop()
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append(stmt)
            for name in ("body", "orelse", "finalbody"):
                pending.extend(s for s in getattr(stmt, name, []) if isinstance(s, ast.stmt))
            for handler in getattr(stmt, "handlers", []):
                pending.extend(handler.body)
            for case in getattr(stmt, "cases", []):
                pending.extend(case.body)
        return found

    def enclosing(self, line: int) -> list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
        """The classes and functions whose source holds ``line``, outermost first."""
        found = [n for n in self.definitions if n.lineno <= line <= (n.end_lineno or n.lineno)]
        return sorted(found, key=lambda n: (n.lineno, -(n.end_lineno or n.lineno)))

    def enclosing_function(self, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The innermost function whose body holds ``line``."""
        functions = [
            n
            for n in self.enclosing(line)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        return functions[-1] if functions else None

    def range_of(self, node: ast.AST) -> tuple[int, int]:
        """The file-text range of a node of :attr:`tree`."""
        return (
            self.index.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.index.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )


@dataclass(frozen=True)
class SiteJob:
    """One finding to fix, with its site and the family it drifts from; ``held_back`` are
    the missing members this run's fix leaves out (none under ``--unsafe-fixes``)."""

    finding: Finding
    site: Site
    family: Family
    allowed_missing: frozenset[str]
    held_back: frozenset[str] = frozenset()

    @property
    def adds(self) -> tuple[str, ...]:
        """The members the fix adds: the finding's missing ones less the held-back ones."""
        return tuple(m for m in self.finding.missing if m not in self.held_back)
