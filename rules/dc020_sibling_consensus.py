"""DC020: a site whose sibling in another model file (same role) uses the whole family."""

from __future__ import annotations

from driftcheck.model import Finding, Site

from .base import Example, Judgement, Rule, drift, enumerates_family, subject


class SiblingConsensus(Rule):
    """Model files copy each other; a fix lands in one copy and not the others."""

    code = "DC020"
    name = "sibling-disagrees"
    severity = "error"
    summary = "Site tests fewer family members than a sibling model file that plays the same role"
    explanation = """\
## What it does
Groups sites that play the same role across model files — the same assigned attribute
(`_enable_a2a_moe`, `_ep_a2a`), the same function (`can_fuse_shared_expert`), or the same
guarded operation (`forward` choosing `forward_normal`) — and reports a site that tests fewer
members of a canonical family than a sibling that calls the helper or lists the whole family.
The message names the sibling.

## Why it matters
SGLang model files are copied from each other (GLM-4 MoE lite from GLM-4 MoE, Step3p5 from
GLM-4); a drift fix lands in one copy and not the others. A third of historical fixes were in
single-backend checks (`if b.is_deepep():` where the family was meant), which no list-based
rule can see: the sibling is the evidence.

## Fix
Do what the sibling does: call the canonical helper (keeping the site's extras).
"""
    VALID = [
        Example(
            "def forward(x):\n"
            "    if get_moe_a2a_backend().is_deepep():\n"
            "        return x\n"
            "    return -x\n",
            note="no sibling with the same role",
        )
    ]
    INVALID = [
        Example(
            "class SparseBlock:\n"
            "    def forward(self, x):\n"
            "        if (\n"
            "            not get_moe_a2a_backend().is_deepep()\n"
            "            and not get_moe_a2a_backend().is_ascend_fuseep()\n"
            "        ):\n"
            "            return self.forward_normal(x)\n"
            "        return self.forward_a2a(x)\n\n\n"
            "class ExampleForCausalLM:\n"
            "    pass\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
            missing=("deepep_v2", "mooncake", "mori", "pplx"),
            siblings={
                "sibling_moe.py": "from sglang.srt.layers.moe.utils import get_moe_a2a_backend, is_deepep_class_backend\n\n\n"
                "class SiblingBlock:\n"
                "    def forward(self, x):\n"
                "        if not is_deepep_class_backend() and not get_moe_a2a_backend().is_ascend_fuseep():\n"
                "            return self.forward_normal(x)\n"
                "        return self.forward_a2a(x)\n\n\n"
                "class SiblingForCausalLM:\n"
                "    pass\n\n\n"
                "EntryClass = SiblingForCausalLM\n",
            },
        )
    ]

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report a site that covers less of a family than a helper-using sibling."""
        findings: list[Finding] = []
        universe = judgement.universe
        for family in universe.families:
            if enumerates_family(site, family, judgement.min_overlap) and site.form != "single":
                continue  # DC001/DC003 already judge this site against the family
            present, missing, extra = drift(site, family, universe)
            missing = tuple(m for m in missing if m not in judgement.allowed_missing)
            if not missing or not set(present) & family.member_set:
                continue
            reference = next(
                (
                    s
                    for s in judgement.siblings
                    if family.name in s.helpers or family.member_set <= s.members
                ),
                None,
            )
            if reference is None:
                continue
            how = (
                f"calls {family.name}()"
                if family.name in reference.helpers
                else f"lists all {len(family.members)}"
            )
            sibling = reference.path.rsplit("/", 1)[-1]
            findings.append(
                Finding(
                    code=self.code,
                    severity=self.severity,
                    path=site.path,
                    span=site.span,
                    symbol=site.symbol,
                    canonical=family.name,
                    members=present,
                    missing=missing,
                    extra=extra,
                    message=(
                        f"{subject(site)} tests {', '.join(present)} where its sibling "
                        f"{sibling}:{reference.line} ({reference.symbol}) {how}; missing {', '.join(missing)}"
                    ),
                    kind=site.kind,
                    subject=subject(site),
                )
            )
        return findings
