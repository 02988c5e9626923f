"""``driftcheck discover``: propose each family of a tree, and tell its helper from its copies.

It runs the same scan as a check (cached, never importing the tree) and, per family — the
configured canonicals, or the families inferred from the copies when no helper exists —
reports the helper with the number of places that call it, and the hand-written copies
with how many of them drift. A *copy* is an enumeration of the family written out by hand,
of any kind (a property, an allowlist guarding a raise, a dispatch arm); every copy counted
is listed, from the same list the tally is made from. One that is a whole function (``def
_uses_ep_a2a(): return ...``) is named, with its own callers, so that a reader sees it is a
copy of the helper and not a second helper. A family with no helper is proposed as a helper
to create.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from .engine import CheckResult, check
from .families import family_for, is_own_definition
from .files import iter_python_files
from .model import Family, Site, Universe
from .rules.base import drift


@dataclass(frozen=True)
class Copy:
    """A hand-written enumeration of a family."""

    path: str
    line: int
    symbol: str
    function: str | None  # the function whose whole body it is
    missing: tuple[str, ...]
    callers: int = 0
    extra: tuple[str, ...] = ()  # members it lists besides the family's
    kind: str = "property"  # the site's kind: property, allowlist or dispatch

    def describe(self) -> str:
        """``sglang/srt/models/kimi_k3.py:440 _uses_ep_a2a() (2 callers; missing pplx)``, or
        for a copy inside a function ``path:line in Class.method (allowlist; complete)``."""
        state = f"missing {', '.join(self.missing)}" if self.missing else "complete"
        if self.extra:
            state += f", adds {', '.join(self.extra)}"
        if self.kind != "property":
            state = f"{self.kind}; {state}"
        where = f"{self.path}:{self.line}"
        if self.function is not None:
            callers = f"{self.callers} caller{'s' if self.callers != 1 else ''}"
            return f"{where} {self.function}() ({callers}; {state})"
        return f"{where} in {self.symbol or '<module>'} ({state})"


@dataclass
class Proposal:
    """One family: its helper (when the tree has one), callers, and hand copies."""

    family: Family
    universe: Universe
    callers: int = 0
    caller_files: int = 0
    copies: list[Copy] = field(default_factory=list)

    @property
    def drifting(self) -> list[Copy]:
        """The copies that miss members."""
        return [c for c in self.copies if c.missing]


def _python_bytes(result: CheckResult) -> Iterator[tuple[str, bytes]]:
    """Each Python file of the run's tree with its bytes (an unreadable one left out)."""
    for path, _ in iter_python_files(result.project, [result.root], []):
        try:
            with open(path, "rb") as handle:
                yield path, handle.read()
        except OSError:
            continue


def _call_counts(
    result: CheckResult, names: set[str], properties: set[str]
) -> tuple[Counter[str], Counter[str]]:
    """How often each name is called (``name(``; ``.name`` for ``properties``), and in how
    many files, over every file of the project (definitions and imports do not count)."""
    if not names and not properties:
        return Counter(), Counter()
    alternatives = []
    if names:
        alternatives.append(rb"\b(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\s*\(")
    if properties:
        joined = b"|".join(re.escape(n.encode()) for n in properties)
        alternatives.append(rb"\.(" + joined + rb")\b(?!\s*\()")
    pattern = re.compile(b"|".join(alternatives))
    calls: Counter[str] = Counter()
    files: Counter[str] = Counter()
    for _path, data in _python_bytes(result):
        seen = set()
        for match in pattern.finditer(data):
            name = next(g for g in match.groups() if g).decode()
            start = match.start()
            if data[max(0, start - 4) : start] == b"def ":
                continue
            calls[name] += 1
            seen.add(name)
        for name in seen:
            files[name] += 1
    return calls, files


def _called_names(family: Family) -> dict[str, set[str]]:
    """For a canonical made of several definitions (a union's parts, or a wrapper and what it
    delegates to), the names a call of it may spell, by access (``property`` or a call);
    empty for a canonical of one definition."""
    if len(family.defines) < 2:
        return {}
    names: dict[str, set[str]] = {}
    for _, qual, access, *_ in family.defines:
        kind = "property" if access == "property" else "call"
        names.setdefault(kind, set()).add(qual.rpartition(".")[2])
    return names


def _union_lines(result: CheckResult, proposals: list[Proposal]) -> dict[str, set[tuple[str, int]]]:
    """Per family of several definitions, the ``(file, line)`` places that call any of them,
    outside their own definitions and imports (a line calling two parts, ``a or b``, is one
    call)."""
    patterns = {}
    families = {p.family.name: p.family for p in proposals}
    for proposal in proposals:
        names = _called_names(proposal.family)
        if not names:
            continue
        alternatives = [
            rb"\.(" + b"|".join(re.escape(n.encode()) for n in sorted(group)) + rb")\b(?!\s*\()"
            if kind == "property"
            else rb"\b(" + b"|".join(re.escape(n.encode()) for n in sorted(group)) + rb")\s*\("
            for kind, group in names.items()
        ]
        patterns[proposal.family.name] = re.compile(b"|".join(alternatives))
    found: dict[str, set[tuple[str, int]]] = {name: set() for name in patterns}
    if not patterns:
        return found
    for path, data in _python_bytes(result):
        for name, pattern in patterns.items():
            for match in pattern.finditer(data):
                line = data.count(b"\n", 0, match.start()) + 1
                if not _in_definitions(data, match.start(), line, path, families[name]):
                    found[name].add((str(path), line))
    return found


def _in_definitions(data: bytes, start: int, line: int, path: str, family: Family) -> bool:
    """Whether a match is a definition, an import, or inside one of the canonical's own
    definitions (a wrapper's ``return self.x.is_y`` is the canonical, not a call of it)."""
    if data[max(0, start - 4) : start] == b"def ":
        return True
    head = data[data.rfind(b"\n", 0, start) + 1 : start].lstrip()
    if head.startswith((b"from ", b"import ")):
        return True
    text = str(path).replace("\\", "/")
    return any(
        (text == own or text.endswith(f"/{own}")) and first <= line <= last
        for own, _, _, first, last in family.defines
    )


def _copies(result: CheckResult, proposal: Proposal) -> list[Copy]:
    family, universe = proposal.family, proposal.universe
    found = []
    for rel in sorted(result.scans):
        for site in result.scans[rel].sites:
            if not _is_copy(site, family, universe, result.config.min_overlap):
                continue
            _, missing, extra = drift(site, family, universe)
            found.append(
                Copy(
                    rel,
                    site.span.line,
                    site.symbol,
                    site.enumerator,
                    missing,
                    extra=extra,
                    kind=site.kind,
                )
            )
    return found


def _is_copy(site: Site, family: Family, universe: Universe, min_overlap: int) -> bool:
    if site.universe != universe.key or site.form == "single":
        return False
    if site.enumerator == family.name or site.helpers:
        return False
    if is_own_definition(site, family):
        return False  # the canonical's own body, a part of it, or what it delegates to
    return family_for(site, universe, min_overlap) == family


def discover(
    paths: list[Path],
    *,
    cwd: Path | None = None,
    config_path: Path | None = None,
    use_cache: bool = True,
    progress: Callable[[str], None] = lambda _text: None,
) -> tuple[CheckResult, list[Proposal]]:
    """Every family of the tree under ``paths``, with its helper, callers and copies
    (``use_cache``: read and write the scan cache, as a check does)."""
    progress("discover: scanning")
    result = check(paths, cwd=cwd, config_path=config_path, select=["DC001"], use_cache=use_cache)
    if result.fatal or result.inert:
        return result, []
    progress(f"discover: {result.files_checked} files scanned; counting calls")
    proposals = [
        Proposal(family, universe)
        for universe in result.universes.values()
        for family in universe.families
    ]
    for proposal in proposals:
        proposal.copies = _copies(result, proposal)
    functions = {c.function for p in proposals for c in p.copies if c.function}
    helpers = {p.family.name for p in proposals if p.family.access in ("function", "method")}
    properties = {p.family.name for p in proposals if p.family.access == "property"}
    calls, files = _call_counts(result, functions | helpers, properties | functions)
    lines = _union_lines(result, proposals)
    for proposal in proposals:
        names = {n for group in _called_names(proposal.family).values() for n in group}
        if names:  # a union, or a canonical that delegates: each line calling it once
            proposal.callers = len(lines[proposal.family.name])
            proposal.caller_files = len({path for path, _ in lines[proposal.family.name]})
        else:
            proposal.callers = calls[proposal.family.name]
            proposal.caller_files = files[proposal.family.name]
        proposal.copies = [replace(c, callers=calls[c.function or ""]) for c in proposal.copies]
    progress(f"discover: {len(proposals)} famil{'y' if len(proposals) == 1 else 'ies'}")
    return result, proposals


def render(proposals: list[Proposal]) -> list[str]:
    """The lines ``driftcheck discover`` prints, one block per family."""
    lines: list[str] = []
    for proposal in proposals:
        family = proposal.family
        members = "{" + ", ".join(family.members) + "}"
        drifting = len(proposal.drifting)
        tally = f"{len(proposal.copies)} hand cop{'y' if len(proposal.copies) == 1 else 'ies'}, {drifting} drifting"
        if family.inferred:
            lines.append(f"{members}: no helper; {family.provenance()}; {tally}")
            lines.append(
                f"  create it: driftcheck --fix --fix-style helper --create-helper "
                f"(writes {family.name}() beside {proposal.universe.enum_name or proposal.universe.name} "
                f"in {family.path})"
            )
        else:
            lines.append(
                f"{family.qualified} ({family.path}:{family.line}) {members}: helper, "
                f"{proposal.callers} caller{'s' if proposal.callers != 1 else ''} in "
                f"{proposal.caller_files} file{'s' if proposal.caller_files != 1 else ''}; {tally}"
            )
        lines.extend(f"  copy: {copy.describe()}" for copy in proposal.copies)
        if not family.inferred:
            lines.append(f'  [tool.driftcheck] canonical = ["{family.qualified}"]')
    return lines
