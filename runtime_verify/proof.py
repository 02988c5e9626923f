"""Prove one finding's fix with a truth table: it flips exactly the members it adds (every
missing one, less those it holds back: ``--unsafe-fixes`` proves the full fix), and after it
the site agrees with the canonical helper on every family member not declared exempt or held
back.

The verdict is ``proven``, ``refuted`` (with the rows that disagree) or ``unproven`` (a
construct outside the interpreter's grammar, named; or no fix to prove). A negative site
(``not in``, ``not a and not b``) agrees with the helper when its value is the helper's negation.
Declared exemptions are the members of the site's raw drift that the finding does not report
(``# driftcheck: allow-missing[...]`` and configured policies): the fix leaves them alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from driftcheck.rules.base import drift

from driftcheck.engine import CheckResult
from driftcheck.fix.held import not_applied_note
from driftcheck.interpret import Unproven
from driftcheck.model import Family, Finding, Fix, Site
from driftcheck.scan import decode_source

from .site_code import apply_fix, parse_source, site_code
from .truth_table import Row, TruthTable, build_table

Verdict = Literal["proven", "refuted", "unproven"]


@dataclass(frozen=True)
class Disagreement:
    """A row that contradicts the claim, and which part of the claim it contradicts."""

    row: Row
    why: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "member": self.row.member,
            "setting": self.row.label(),
            "before": self.row.before,
            "after": self.row.after,
            "canonical": self.row.canonical,
            "why": self.why,
        }


@dataclass(frozen=True)
class SiteProof:
    """The verification of one finding's fix."""

    finding: Finding
    site: Site | None
    verdict: Verdict
    reason: str
    table: TruthTable | None = None
    fix: Fix | None = None
    exempt: tuple[str, ...] = ()
    free_inputs: tuple[str, ...] = ()
    disagreements: tuple[Disagreement, ...] = field(default=())

    @property
    def flips(self) -> tuple[str, ...]:
        """Members whose value the fix changes."""
        if self.table is None or self.fix is None:
            return ()
        return missing_first(self.table.flips(), self.finding.missing)

    @property
    def polarity(self) -> str:
        """``positive`` or ``negative`` (unknown sites count as positive)."""
        return self.site.polarity if self.site is not None else "positive"


def missing_first(members: tuple[str, ...], order: tuple[str, ...]) -> tuple[str, ...]:
    """``members`` in ``order`` first (the finding's, the family's), then the rest as given."""
    rank = {m: i for i, m in enumerate(order)}
    return tuple(sorted(members, key=lambda m: (rank.get(m, len(rank)), members.index(m))))


def find_site(result: CheckResult, finding: Finding) -> Site | None:
    """The site a finding was reported on (the finding carries it)."""
    return finding.site


def declared_exemptions(
    site: Site, finding: Finding, family: Family, result: CheckResult
) -> tuple[str, ...]:
    """Members of the site's raw drift the finding leaves out: accepted by a suppression or policy."""
    universe = result.universes.get(site.universe, result.universe)
    assert universe is not None
    _, raw_missing, _ = drift(site, family, universe)
    return tuple(m for m in raw_missing if m not in finding.missing)


def prove(result: CheckResult, finding: Finding) -> SiteProof:
    """Build the truth table of ``finding``'s site before and after ``finding.fix`` and judge it."""
    site = find_site(result, finding)
    loaded = result.loaded_for(site.universe) if site is not None else result.loaded
    assert loaded is not None, "prove() needs a run with a universe"
    universe = result.universes.get(loaded.universe.key, loaded.universe)
    family = universe.family(finding.canonical)
    if site is None or family is None:
        return SiteProof(finding, site, "unproven", "the finding's site is not in this run's scan")
    exempt = declared_exemptions(site, finding, family, result)

    def without_table(verdict: Verdict, reason: str) -> SiteProof:
        return SiteProof(finding, site, verdict, reason, fix=finding.fix, exempt=exempt)

    if finding.fix is not None and finding.fix.style == "delete":
        verdict, reason = prove_deletion(result, site, finding.fix)
        return without_table(verdict, reason)

    try:
        source = decode_source((result.root / finding.path).read_bytes())
        before_tree = parse_source(source, finding.path)
        before = site_code(before_tree, site.span, site, loaded.scope, universe.values)
        after = before
        if finding.fix is not None:
            patched, after_span = apply_fix(source, finding.fix, site.span)
            after_tree = _parse_fixed(patched)
            if after_tree is None:
                return without_table("refuted", "the fixed file does not parse")
            after = site_code(
                after_tree,
                after_span,
                site,
                loaded.scope,
                universe.values,
                aliases=before.scope.aliases,
                free=before.free,
            )
        table = build_table(before, after, loaded.scope, family.name, universe.values)
    except Unproven as exc:
        where = f" (line {exc.line})" if exc.line else ""
        return without_table("unproven", f"outside the grammar: {exc.construct}{where}")
    except RecursionError:
        return without_table("unproven", "expression nested too deeply to interpret")
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return without_table("unproven", f"cannot read {finding.path}: {exc}")
    base = SiteProof(finding, site, "unproven", "", table, finding.fix, exempt, before.free)
    if finding.fix is None:
        refusal = finding.fix_refusal or "no fix was requested"
        return replace(base, reason=f"no fix to prove: {refusal}")
    if not finding.fix.writes:
        return replace(base, reason=f"no fix to prove: {not_applied_note(finding.fix)}")
    held = tuple(m for m, _ in finding.fix.held_back)
    adds = tuple(m for m in finding.missing if m not in held)
    disagreements = judge_table(table, site.polarity, adds, family, (*exempt, *held))
    if disagreements:
        reason = _refuted_reason(disagreements)
        return replace(base, verdict="refuted", reason=reason, disagreements=disagreements)
    return replace(
        base, verdict="proven", reason=_proven_reason(table, family, exempt, before.free, held)
    )


def prove_deletion(result: CheckResult, site: Site, fix: Fix) -> tuple[Verdict, str]:
    """A dead copy's deletion (``--fix``'s ``delete`` kind): proven when the deleted range
    holds the site and nothing in the tree reads what it sets (the run's own answer,
    :meth:`driftcheck.liveness.AttributeReads.unread`): then no backend takes another path
    because of it, before the fix or after."""
    unread = result.reads.unread(site) if result.reads is not None else ()
    if not unread:
        return "refuted", "the fix deletes the copy, but something reads what it sets"
    start, end = (fix.span.line, fix.span.col), (fix.span.end_line, fix.span.end_col)
    if (
        not start <= (site.span.line, site.span.col)
        or (site.span.end_line, site.span.end_col) > end
    ):
        return "unproven", "the deleted range does not hold the site"
    return (
        "proven",
        f"deletes it: nothing in the tree reads {', '.join(unread)}, so no backend changes",
    )


def _parse_fixed(patched: str) -> ast.Module | None:
    """The fixed module, or None when the fix breaks its syntax."""
    try:
        return ast.parse(patched)
    except SyntaxError:
        return None


def judge_table(
    table: TruthTable,
    polarity: str,
    missing: tuple[str, ...],
    family: Family,
    exempt: tuple[str, ...],
) -> tuple[Disagreement, ...]:
    """The rows contradicting "flips exactly ``missing``, then agrees with the helper"."""
    found: list[Disagreement] = []
    flipped = set(table.flips())
    for member in table.members:
        rows = table.rows_of(member)
        if member in flipped and member not in missing:
            found.extend(
                Disagreement(r, "the fix flips a member it should not")
                for r in rows
                if r.before != r.after
            )
        if member in missing and member not in flipped:
            found.extend(Disagreement(r, "the fix does not flip a missing member") for r in rows)
        if member in family.member_set and member not in exempt:
            for row in rows:
                accepts = row.after if polarity == "positive" else not row.after
                if accepts != row.canonical:
                    found.append(
                        Disagreement(row, f"after the fix the site disagrees with {family.name}()")
                    )
    return tuple(found)


def _refuted_reason(disagreements: tuple[Disagreement, ...]) -> str:
    parts: dict[str, list[str]] = {}
    for item in disagreements:
        members = parts.setdefault(item.why, [])
        if item.row.member not in members:
            members.append(item.row.member)
    return "; ".join(f"{why}: {', '.join(members)}" for why, members in parts.items())


def _proven_reason(
    table: TruthTable,
    family: Family,
    exempt: tuple[str, ...],
    free: tuple[str, ...],
    held: tuple[str, ...] = (),
) -> str:
    agreeing = len(family.members) - len(exempt) - len(held)
    reason = (
        f"the fix flips exactly {', '.join(missing_first(table.flips(), family.members))}; "
        f"after it the site agrees with "
        f"{family.name}() on {agreeing} of {len(family.members)} {family.label} backends"
    )
    if exempt:
        reason += f" ({', '.join(exempt)} declared exempt)"
    if held:
        reason += f" ({', '.join(held)} held back: --unsafe-fixes proves the full fix)"
    narrowings = [c for c in table.conditions() if c not in free]
    inputs = [c for c in table.conditions() if c in free]
    if narrowings:
        reason += f"; evaluated under each setting of {', '.join(narrowings)}"
    if inputs:
        reason += f"; free inputs enumerated exhaustively: {', '.join(inputs)}"
    return reason
