"""DC020: a site whose sibling in another model file (same role) uses the whole family."""

from __future__ import annotations

from driftcheck.model import Family, Finding, Site

from .base import Example, Judgement, Rule, Sibling, drift, enumerates_family, site_finding, subject


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
guarded operation (`forward` choosing `forward_normal`, `__init__` setting `ep_size`) — and
reports a site that tests fewer members of a canonical family than its siblings say it should:
a sibling calls the helper or lists the whole family, or most sibling files (at least two, more
than half) enumerate the family while this site names at most one of its members. The message
names the sibling.

## Why it matters
SGLang model files are copied from each other (GLM-4 MoE lite from GLM-4 MoE, Step3p5 from
GLM-4); a drift fix lands in one copy and not the others. A third of historical fixes were in
single-backend checks (`if b.is_deepep():` where the family was meant), which no list-based
rule can see: the sibling is the evidence.

## Fix
`--fix` does what the sibling does, whatever `--fix-style` says: the site's family member
becomes a call to the canonical helper, its extras are kept (`not b.is_deepep() and not
b.is_ascend_fuseep()` becomes `not is_deepep_class_backend() and not b.is_ascend_fuseep()`), and
the import is added where missing. The fix states the backends it flips.
"""
    fix_safety = "Unsafe by design: the fix flips the site for exactly the missing members, which the fix lists."
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
            expected_fix="class SparseBlock:\n"
            "    def forward(self, x):\n"
            "        if (\n"
            "            not is_deepep_class_backend()\n"
            "            and not get_moe_a2a_backend().is_ascend_fuseep()\n"
            "        ):\n"
            "            return self.forward_normal(x)\n"
            "        return self.forward_a2a(x)\n\n\n"
            "class ExampleForCausalLM:\n"
            "    pass\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
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
        ),
        Example(
            "class Block:\n"
            "    def __init__(self):\n"
            "        if get_moe_a2a_backend().is_deepep():\n"
            "            self.ep_size = 8\n\n\n"
            "class ExampleForCausalLM:\n"
            "    pass\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
            missing=("deepep_v2", "mooncake", "mori", "pplx"),
            expected_fix="class Block:\n"
            "    def __init__(self):\n"
            "        if is_deepep_class_backend():\n"
            "            self.ep_size = 8\n\n\n"
            "class ExampleForCausalLM:\n"
            "    pass\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
            note="majority: most sibling files enumerate the family for the same operation",
            siblings={
                f"sibling_{name}.py": "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
                "class SiblingBlock:\n"
                "    def __init__(self):\n"
                "        b = get_moe_a2a_backend()\n"
                "        if b.is_deepep() or b.is_mooncake() or b.is_mori():\n"
                "            self.ep_size = 8\n\n\n"
                f"class {name.title()}ForCausalLM:\n"
                "    pass\n\n\n"
                f"EntryClass = {name.title()}ForCausalLM\n"
                for name in ("one", "two")
            },
        ),
    ]

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report a site that covers less of a family than its siblings say it should."""
        findings: list[Finding] = []
        universe = judgement.universe
        for family in universe.families:
            if enumerates_family(site, family, judgement.min_overlap) and site.form != "single":
                continue  # DC001/DC003 already judge this site against the family
            present, missing, extra = drift(site, family, universe)
            missing = tuple(m for m in missing if m not in judgement.allowed_missing)
            if not missing or not set(present) & family.member_set:
                continue
            evidence = _evidence(family, judgement)
            if evidence is None:
                continue
            findings.append(
                site_finding(
                    self,
                    site,
                    family,
                    members=present,
                    missing=missing,
                    extra=extra,
                    message=f"{subject(site)} tests {', '.join(present)} where {evidence}; missing {', '.join(missing)}",
                )
            )
        return findings


def _where(sibling: Sibling) -> str:
    return f"{sibling.path.rsplit('/', 1)[-1]}:{sibling.line} ({sibling.symbol})"


def _evidence(family: Family, judgement: Judgement) -> str | None:
    """Why the siblings say this site should cover the family, or None when they do not.

    A sibling that calls the helper, lists the whole family, or enumerates the family (names
    ``min_overlap`` or more of its members, so DC001/DC003 hold it to the whole family) is the
    evidence: once the siblings follow the helper, this site is the one copy that does not.
    Judging against what the siblings will be after their own fixes keeps ``--fix`` convergent.
    """
    for sibling in judgement.siblings:
        if family.name in sibling.helpers:
            return f"its sibling {_where(sibling)} calls {family.name}()"
    for sibling in judgement.siblings:
        if family.member_set <= sibling.members:
            return f"its sibling {_where(sibling)} lists all {len(family.members)}"
    enumerating = [
        s for s in judgement.siblings if len(s.members & family.member_set) >= judgement.min_overlap
    ]
    if enumerating:
        best = max(enumerating, key=lambda s: (len(s.members & family.member_set), s.path))
        files = len({s.path for s in enumerating})
        others = (
            f" and {files - 1} more sibling file{'s' if files > 2 else ''}" if files > 1 else ""
        )
        return (
            f"its sibling {_where(best)}{others} enumerate{'s' if files == 1 else ''} "
            f"{family.label} backends"
        )
    return None
