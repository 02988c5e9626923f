"""Which sites get a layer run, and the job each group of them runs: read from the Site's role.

A site is eligible when its value reaches one of the pack's role operations (the role the
engine recorded on the Site when it found it: :class:`driftcheck.model.Role`); any other is
``not a communication-plan site``, whatever its callees are named. Eligible sites of one file
and family are one unit, fixed together as ``--fix`` writes the file (0.5.21's
``KimiK3MoE._ep_a2a`` and ``KimiK3DecoderLayer._sp_moe`` are one such pair). The unit runs the
block its sites' role operations sit in (the class holding most of them), and its arms are
chosen from the sites' truth tables: a reference every site includes, a test arm every site's
fix adds (sites that meet in one block: a member their fixes add together, one every site
includes after the fix and some site misses before it), a control: a second member every
site includes, and every other member the sites include (the fix must leave each of them as
it was).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driftcheck.groups import block_group
from driftcheck.model import Finding, Site

from ..proof import SiteProof
from .job import Arms
from .pack import VerifyPack

# how a reach key reads in a reason
VERBS = {"call": "calls", "kw": "feeds", "set": "sets"}


@dataclass(frozen=True)
class Unit:
    """Sites of one file and family that one block run verifies together."""

    path: str
    family: str
    proofs: tuple[SiteProof, ...]
    block: str

    @property
    def sites(self) -> tuple[Site, ...]:
        """The units's sites."""
        return tuple(p.site for p in self.proofs if p.site is not None)

    def where(self) -> list[dict[str, Any]]:
        """Each site's ``path``, ``line``, ``symbol`` and role operations."""
        return [
            {
                **where_of(p.finding),
                "operations": [
                    {"operation": r.operation, "key": r.key, "line": r.line, "scope": r.scope}
                    for r in (p.site.role.operations if p.site else ())
                ],
            }
            for p in self.proofs
        ]


def where_of(finding: Finding) -> dict[str, Any]:
    """``{"path", "line", "symbol"}`` of a finding."""
    return {"path": finding.path, "line": finding.span.line, "symbol": finding.symbol}


def not_plan_reason(site: Site | None, symbol: str) -> str:
    """Why a site gets no layer run: what its value does reach instead."""
    if site is None:
        return "not a communication-plan site: the finding has no site"
    keys = [key for key in site.role.keys if ":" in key][:3]
    reached = ", ".join(f"{VERBS.get(k.split(':')[0], k)} {k.split(':', 1)[1]}" for k in keys)
    what = f"its value {reached}" if reached else "its value reaches no code of its module"
    return (
        f"not a communication-plan site: {what}, and none of it is a role operation the pack "
        f"declares ([roles]: {symbol}'s value reaches no TP reduce, DP gather or scatter, "
        "combine, forward switch or shared-expert layout)"
    )


def block_of(sites: tuple[Site, ...]) -> str:
    """The class the sites' role operations sit in most often (the site's own class when
    its operations are at module level)."""
    counted = Counter(r.block for s in sites for r in s.role.operations if r.block)
    if counted:
        return counted.most_common(1)[0][0]
    own = [s.symbol.split(".")[0] for s in sites if "." in s.symbol]
    return own[0] if own else ""


def units(proofs: list[SiteProof]) -> tuple[list[Unit], list[dict[str, Any]]]:
    """The units to run, and the sites that are not communication-plan sites (with why)."""
    eligible: dict[tuple[str, str], list[SiteProof]] = {}
    not_plan: list[dict[str, Any]] = []
    for proof in proofs:
        site = proof.site
        group = block_group(proof.finding.path, proof.finding.canonical, site)
        if group is None:
            not_plan.append(
                {**where_of(proof.finding), "reason": not_plan_reason(site, proof.finding.symbol)}
            )
            continue
        eligible.setdefault(group, []).append(proof)
    found = [
        Unit(path, family, tuple(group), block_of(tuple(p.site for p in group if p.site)))
        for (path, family), group in sorted(eligible.items())
    ]
    return found, not_plan


def accepts(proof: SiteProof, member: str, phase: str) -> bool | None:
    """Whether the site counts ``member`` as a family member in ``phase`` (its value, negated
    for a negative site), from its truth table; None when a narrowing or input decides."""
    table = proof.table
    if table is None or member not in table.members:
        return None
    values = {getattr(row, phase) for row in table.rows_of(member)}
    if len(values) != 1:
        return None
    value = values.pop()
    return value if proof.polarity == "positive" else not value


def choose_arms(
    unit: Unit, family: tuple[str, ...], pack: VerifyPack, given: tuple[str, str] | None
) -> Arms | str:
    """The unit's arms (see the module docstring), or why none can be chosen."""
    proofs = unit.proofs
    every = list(family)

    def all_accept(member: str, phase: str) -> bool:
        return all(accepts(p, member, phase) is True for p in proofs)

    included = [m for m in every if all_accept(m, "before")]
    # sites that meet in one block are fixed together: a member their fixes add together is
    # one every site includes after the fix that some site misses before it (another may
    # already include it, or include it only under an input the harness does not choose)
    added = [
        m
        for m in every
        if all_accept(m, "after")
        and m not in included
        and any(accepts(p, m, "before") is False for p in proofs)
    ]
    preferred = given or pack.arms or (None, None)
    reference = preferred[0] if preferred[0] in included else (included[0] if included else None)
    test = preferred[1] if preferred[1] in added else (added[0] if added else None)
    if given is not None and (reference, test) != given:
        return (
            f"--arms {given[0]},{given[1]}: every site must include {given[0]} before the fix "
            f"and its fix must add {given[1]} (the sites include {', '.join(included) or 'none'}; "
            f"the fixes add {', '.join(added) or 'none'})"
        )
    if reference is None:
        return "no family member is included by every site before the fix (no reference arm)"
    if test is None:
        return "the fix adds no family member at every site (no test arm)"
    order = [*pack.controls, *every]
    control = next((m for m in order if m in included and m != reference), None)
    others = tuple(m for m in included if m not in (reference, control))
    return Arms(reference, test, control, others)


def package_root(root: Path, path: str, module: str) -> Path:
    """The directory the dotted ``module`` of file ``path`` is importable from
    (``root/python`` for a repository holding ``python/sglang/...``)."""
    file = (root / path).resolve()
    depth = len(module.split("."))
    base = file.parent if file.name == "__init__.py" else file
    for _ in range(depth):
        base = base.parent
    return base
