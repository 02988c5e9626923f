"""DC005: a member or-ed with a helper that already includes it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from driftcheck.model import Finding, Site

from .base import Example, Judgement, Rule, site_finding, subject

if TYPE_CHECKING:
    from driftcheck.fix.plan import FileContext, Rewrite, SiteJob


class RedundantMember(Rule):
    """``is_deepep_class_backend() or b.is_deepep_v2()``: the member is already in the family."""

    code = "DC005"
    name = "redundant-family-member"
    reads = "enumerations"
    findings_read_every_site = False  # no same-role evidence, no liveness
    severity = "warning"
    summary = "Member is or-ed with a canonical helper that already includes it"
    explanation = """\
## What it does
Finds chains that call a canonical helper and also test a backend the helper already accepts,
such as `is_deepep_class_backend() or b.is_deepep_v2()`.

## Why it matters
The extra term is dead code, and it usually carries a stale comment ("only add DeepEP v2
here") that misleads the next reader about which backends the site handles.

## Fix
`driftcheck --fix` deletes the redundant term; the value changes for no backend (the fix states
so, computed like every fix's change). With a comment between the operands it refuses: the stale
comment usually belongs to the deleted term, and deleting comments is left to a person.
"""
    fix_safety = "Safe: the rewritten expression has the same value for every backend (computed)."
    VALID = [
        Example(
            "def uses_slots() -> bool:\n"
            "    return is_deepep_class_backend() or get_moe_a2a_backend().is_megamoe()\n"
        )
    ]
    INVALID = [
        Example(
            "def uses_a2a() -> bool:\n"
            "    return is_deepep_class_backend() or get_moe_a2a_backend().is_deepep_v2()\n",
            missing=(),
            expected_fix="def uses_a2a() -> bool:\n    return is_deepep_class_backend()\n",
        ),
        Example(
            "def uses_a2a() -> bool:\n"
            "    b = get_moe_a2a_backend()\n"
            "    return (\n"
            "        is_deepep_class_backend()\n"
            "        or b.is_deepep_v2()\n"
            "        or b.is_megamoe()\n"
            "    )\n",
            missing=(),
            expected_fix="def uses_a2a() -> bool:\n"
            "    b = get_moe_a2a_backend()\n"
            "    return (\n"
            "        is_deepep_class_backend()\n"
            "        or b.is_megamoe()\n"
            "    )\n",
            note="the extra stays; only the covered member goes",
        ),
    ]

    def plan_fix(self, ctx: FileContext, job: SiteJob, style: str) -> Rewrite:
        """Delete the redundant operand, whatever the style."""
        from driftcheck.fix.flips import site_receivers
        from driftcheck.fix.redundant import plan_removal

        return plan_removal(ctx, job, frozenset(site_receivers(job.site, ctx.universe)))

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report members that a called helper already covers."""
        findings = []
        for name in site.helpers:
            family = judgement.universe.family(name)
            if family is None:
                continue
            redundant = tuple(
                m for m in judgement.universe.order(site.members) if m in family.member_set
            )
            if not redundant:
                continue
            findings.append(
                site_finding(
                    self,
                    site,
                    family,
                    members=tuple(judgement.universe.order(site.members)),
                    missing=(),
                    extra=redundant,
                    message=f"{subject(site)} tests {', '.join(redundant)} alongside {family.call_text()}, which already includes {'it' if len(redundant) == 1 else 'them'}",
                )
            )
        return findings
