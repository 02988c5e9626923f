"""Registry completeness: does each enumeration site accept every backend its helper accepts?

This is what the module written by ``driftcheck gen-test`` calls. A site is named by its path,
its symbol and its ordinal among the symbol's *family tests*: the enumerations of the family
and the bare calls of the canonical helper, in source order. Counting the bare calls keeps
the ordinals stable when a fix rewrites an enumeration into ``is_deepep_class_backend()``.
Each site's value per backend is read by the truth-table engine from the current source.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from driftcheck.rules.base import drift

from driftcheck.engine import CheckResult, check
from driftcheck.families import family_for
from driftcheck.interpret import Unproven
from driftcheck.model import Family, Finding, Site, Span, Universe
from driftcheck.scan import decode_source
from driftcheck.sites.names import call_name

from .site_code import parse_source, site_code, span_of
from .truth_table import evaluate_member

FAMILY_CODES = ("DC001", "DC003")


@dataclass(frozen=True)
class FamilyTest:
    """One place a symbol tests a family: an enumeration ``site`` or a bare helper call."""

    path: str
    symbol: str
    span: Span
    site: Site | None


def _qualified_calls(tree: ast.Module, helper: str) -> Iterator[tuple[str, ast.Call]]:
    """Zero-argument calls of ``helper`` with the symbol they are in (as the site finder names it)."""
    stack: list[tuple[ast.AST, tuple[str, ...]]] = [(tree, ())]
    while stack:
        node, names = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = (*names, node.name)
        elif isinstance(node, ast.expr) and call_name(node) == helper:
            assert isinstance(node, ast.Call)
            yield ".".join(names) or "<module>", node
        stack.extend((child, names) for child in ast.iter_child_nodes(node))


def family_tests(
    tree: ast.Module,
    sites: Sequence[Site],
    family: Family,
    min_overlap: int,
    path: str,
    universe: Universe,
) -> list[FamilyTest]:
    """Every family test in one module, in source order."""
    tests = [
        FamilyTest(path, site.symbol, site.span, site)
        for site in sites
        if site.form != "single" and family_for(site, universe, min_overlap) == family
    ]
    spans = [site.span for site in sites]
    for symbol, call in _qualified_calls(tree, family.name):
        span = span_of(call)
        inside = any(
            (s.line, s.col) <= (span.line, span.col)
            and (span.end_line, span.end_col) <= (s.end_line, s.end_col)
            for s in spans
        )
        if not inside:
            tests.append(FamilyTest(path, symbol, span, None))
    return sorted(tests, key=lambda t: (t.span.line, t.span.col))


class SiteRegistry:
    """The family tests of some files of a tree, and the completeness check of each."""

    def __init__(self, result: CheckResult) -> None:
        if result.fatal or result.universe is None:
            problems = "; ".join(str(p) for p in result.problems) or "no universe"
            raise RuntimeError(f"driftcheck cannot read the tree: {problems}")
        self.result = result
        self._trees: dict[str, ast.Module] = {}

    @classmethod
    def load(cls, root: Path, paths: Sequence[str] = ()) -> SiteRegistry:
        """Check ``paths`` (relative to ``root``; all of it when empty) for the family rules."""
        targets = [root / p for p in paths] or [root]
        return cls(check(targets, select=FAMILY_CODES, use_cache=False))

    def tree(self, path: str) -> ast.Module:
        """The parsed module at ``path`` (relative to the root)."""
        if path not in self._trees:
            source = decode_source((self.result.root / path).read_bytes())
            self._trees[path] = parse_source(source, path)
        return self._trees[path]

    def family(self, name: str) -> Family:
        """The canonical family called ``name``."""
        assert self.result.universe is not None
        family = self.result.universe.family(name)
        if family is None:
            raise AssertionError(f"{name}() is not a canonical predicate of this tree")
        return family

    def unread(self, test: FamilyTest) -> tuple[str, ...]:
        """The attributes a dead copy sets that nothing reads (its finding says delete it, and
        ``--fix`` does), or ``()`` for a live test."""
        reads = self.result.reads
        if test.site is None or reads is None:
            return ()
        return reads.unread(test.site)

    def tests_in(
        self, path: str, symbol: str, family: Family, dead: bool = False
    ) -> list[FamilyTest]:
        """The live family tests of ``symbol`` in ``path`` (the dead copies with ``dead``), in
        source order: deleting a dead copy never renumbers the live ones."""
        scan = self.result.scans.get(path)
        if scan is None:
            raise AssertionError(
                f"{path} is not a Python file driftcheck checked under {self.result.root}"
            )
        assert self.result.universe is not None
        found = family_tests(
            self.tree(path),
            scan.sites,
            family,
            self.result.config.min_overlap,
            path,
            self.result.universe,
        )
        return [t for t in found if t.symbol == symbol and bool(self.unread(t)) == dead]

    def all_tests(self, family: Family) -> list[FamilyTest]:
        """Every family test in the checked files, by path then position."""
        tests: list[FamilyTest] = []
        for path in sorted(self.result.scans):
            scan = self.result.scans[path]
            if scan.sites:
                try:
                    tests.extend(
                        family_tests(
                            self.tree(path),
                            scan.sites,
                            family,
                            self.result.config.min_overlap,
                            path,
                            self.result.universe,  # type: ignore[arg-type]
                        )
                    )
                except (Unproven, OSError, UnicodeDecodeError, SyntaxError):
                    continue
        return tests

    def exemptions(self, site: Site, family: Family) -> tuple[str, ...]:
        """Members of the site's raw drift that no finding reports (declared exemptions), and
        those an earlier exit already took (never reaching the site)."""
        assert self.result.universe is not None
        _, raw_missing, _ = drift(site, family, self.result.universe)
        reported: set[str] = set()
        for finding in self._findings_at(site, family):
            reported.update(finding.missing)
        settled = tuple(m for m in family.members if m in site.settled)
        return tuple(m for m in raw_missing if m not in reported) + settled

    def _findings_at(self, site: Site, family: Family) -> list[Finding]:
        return [
            f for f in self.result.findings
            if f.path == site.path and f.span == site.span and f.canonical == family.name
        ]  # fmt: skip

    def unaccepted(self, site: Site, family: Family) -> tuple[str, ...]:
        """Family members the site does not accept under some setting, exemptions left out."""
        loaded, universe = self.result.loaded, self.result.universe
        assert loaded is not None and universe is not None
        code = site_code(self.tree(site.path), site.span, site, loaded.scope, universe.values)
        exempt = set(self.exemptions(site, family))
        evaluations = (
            (code.scope, code.evaluate),
            (loaded.scope, lambda interpreter: interpreter.call_function(family.name)),
        )
        missing: list[str] = []
        for member in family.members:
            if member in exempt:
                continue
            for _, (value, canonical) in evaluate_member(member, evaluations):
                accepts = value if site.polarity == "positive" else not value
                if canonical and not accepts:
                    missing.append(member)
                    break
        return tuple(missing)

    def assert_deleted(self, path: str, symbol: str, ordinal: int, canonical: str) -> None:
        """Fail, naming it, while the dead copy of this ordinal (among the symbol's dead copies)
        still stands: nothing reads what it sets, so its fix deletes it."""
        __tracebackhide__ = True
        tests = self.tests_in(path, symbol, self.family(canonical), dead=True)
        if ordinal < len(tests):
            test = tests[ordinal]
            raise AssertionError(
                f"{path}:{test.span.line} {symbol}: nothing reads "
                f"{', '.join(self.unread(test))}: delete it rather than widen it "
                "(driftcheck --fix deletes it)"
            )

    def assert_complete(
        self,
        path: str,
        symbol: str,
        ordinal: int,
        canonical: str,
        operations: Sequence[str] = (),
    ) -> None:
        """Fail, naming the site and the members, unless it accepts all its helper accepts;
        and, naming them, unless its value still reaches ``operations`` (its role)."""
        __tracebackhide__ = True  # pytest shows the generated test's line, not this one
        family = self.family(canonical)
        tests = self.tests_in(path, symbol, family)
        if ordinal >= len(tests):
            raise AssertionError(
                f"{path} {symbol}: family test #{ordinal + 1} is gone ({len(tests)} left); "
                "regenerate this module with driftcheck gen-test"
            )
        test = tests[ordinal]
        if test.site is None:
            return  # a bare call of the helper accepts exactly the family
        reached = {r.operation for r in test.site.role.operations}
        lost = [o for o in operations if o not in reached]
        if lost:
            raise AssertionError(
                f"{path}:{test.span.line} {symbol}: its value no longer reaches "
                f"{', '.join(lost)} (its role when this test was generated; it reaches "
                f"{', '.join(sorted(reached)) or 'no role operation'} now): check the site is "
                "still a copy of the family, then regenerate this module with driftcheck gen-test"
            )
        try:
            missing = self.unaccepted(test.site, family)
        except Unproven as exc:
            raise AssertionError(
                f"{path}:{test.span.line} {symbol}: cannot be read by driftcheck's truth-table "
                f"engine ({exc.construct}), so its completeness is not shown"
            ) from exc
        if missing:
            raise AssertionError(
                f"{path}:{test.span.line} {symbol} does not accept {', '.join(missing)}, which "
                f"{canonical}() accepts; add them, call {canonical}(), or declare an exemption "
                f"(# driftcheck: allow-missing[{', '.join(missing)}] -- reason)"
            )
