"""DC002: an enumeration that equals the family (or a superset) spelled out by hand."""

from __future__ import annotations

from driftcheck.families import is_own_definition
from driftcheck.model import Family, Finding, Site

from .base import Example, Judgement, Rule, drift, noun, site_finding, subject


class SpelledOutFamily(Rule):
    """Every family member is listed by hand: correct today, drifts tomorrow."""

    code = "DC002"
    name = "spelled-out-family"
    reads = "enumerations"
    findings_read_every_site = False  # no same-role evidence, no liveness
    severity = "info"
    default_enabled = False
    summary = "Enumeration spells out the whole canonical family by hand; call the helper"
    explanation = """\
## What it does
Finds enumerations that list every member of a canonical family by hand (possibly with
extras), such as `b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or
b.is_pplx() or b.is_megamoe()`.

## Why it matters
It is correct today, and it is exactly the kind of list that drifted in Kimi-K3: the next
backend added to the helper will be missing here. Off by default (it is advice, not a bug);
enable with `--select DC002` when cleaning up. A call of every predicate of a split
canonical (`c.use_x_v1 or c.use_x_v2`, followed as their union) is a call of it, not a copy;
the canonical's own definitions, and those it delegates to, are never reported; and the
advice is given only where the site can reach the helper: inside the class that defines it,
or testing that class's own predicates (a site that tests another class's predicates holds
that class, not the helper's).

## Use instead
`is_deepep_class_backend() or b.is_megamoe()`
"""
    VALID = [
        Example(
            "def uses_a2a() -> bool:\n"
            "    return is_deepep_class_backend() or get_moe_a2a_backend().is_megamoe()\n",
            select=("DC002",),
        )
    ]
    INVALID = [
        Example(
            "def packed(cfg: MeshConfig) -> bool:\n"
            "    return cfg.use_mesh_ll or cfg.use_relay or cfg.use_relay_v2\n",
            select=("DC002",),
            missing=(),
            note="the whole family of a property, spelled out",
            fixture="config_like",
        ),
        Example(
            "def uses_a2a() -> bool:\n"
            "    b = get_moe_a2a_backend()\n"
            "    return b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or b.is_pplx()\n",
            select=("DC002",),
            missing=(),
        ),
    ]

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report a hand-written list that covers a whole family without calling its helper."""
        family = judgement.family
        if family is None or site.helpers or site.polarity != "positive":
            return []
        if site.kind != "property" or site.enumerator == family.name:
            return []
        if is_own_definition(site, family):
            return []  # the canonical's own body, or a definition it delegates to
        if not family.member_set <= site.members or not reachable(site, family, judgement):
            return []
        present, _, extra = drift(site, family, judgement.universe)
        if len(extra) > len(family.members):
            return []  # a longer list of another concept that happens to contain the family
        if extra and len(family.members) < 3:
            return []  # (CUDA, ROCm, XPU): a capability list of its own, not a pair plus one
        tail = f" or the extras ({', '.join(extra)})" if extra else ""
        spelled = noun(family, judgement.universe)
        count = "both" if len(family.members) == 2 else f"all {len(family.members)}"
        return [
            site_finding(
                self,
                site,
                family,
                members=present,
                missing=(),
                extra=extra,
                message=f"{subject(site)} spells out {count} {spelled} by hand; call "
                f"{advised_call(site, family)}{tail}{_gate_note(site, family)}",
            )
        ]


def reachable(site: Site, family: Family, judgement: Judgement) -> bool:
    """Whether the site can call the canonical it would be advised to: it is in the class that
    defines it, or it tests predicates of that class (its receiver is one). A site that tests
    another class's predicates (``FusedMoEParallelConfig.use_deepep_ll_kernels``) holds that
    class, not the canonical's (``FusedMoEConfig``): "call the helper" is no advice there. A
    site comparing raw values gives no evidence either way and is advised as before."""
    if family.inferred or not family.owner or site.symbol.startswith(f"{family.owner}."):
        return True
    predicates = judgement.universe.predicates
    owners = {
        predicates[op.predicate].owner
        for op in site.operands
        if op.kind in ("property", "method") and op.predicate in predicates
    }
    return not owners or family.owner in owners


def advised_call(site: Site, family: Family) -> str:
    """How the site would call the canonical: ``is_x()``; ``self.use_x`` inside the class
    that defines it; ``Owner.use_x`` elsewhere (the site's receiver may not have it); for a
    family no helper defines, the helper ``--create-helper`` would write."""
    if family.inferred:
        return (
            f"{family.name}() once it exists ({family.provenance()}; `driftcheck --fix "
            "--fix-style helper --create-helper` writes it)"
        )
    if family.access not in ("property", "method") or not family.owner:
        return family.call_text()
    inside = site.symbol.startswith(f"{family.owner}.")
    return ("self" if inside else family.owner) + family.call_text()


def _gate_note(site: Site, family: Family) -> str:
    """``; note: X also tests ...`` when the canonical accepts its members only under
    conditions of its own and the site compares raw values (so it lacks them)."""
    gates = sorted({text for _, texts in family.conditions for text in texts})
    raw = any(op.kind in ("string", "enum") for op in site.operands)
    if not gates or not raw:
        return ""
    return f"; note: {family.owner + '.' if family.owner else ''}{family.name} also tests {', '.join(gates)}"
