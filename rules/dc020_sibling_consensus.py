"""DC020: a site whose sibling in another model file (same role) uses the whole family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from driftcheck.families import covered_members, enumerates
from driftcheck.model import Family, Finding, Site, Universe

from .base import Example, Judgement, Rule, RunIndex, drift, site_finding, subject

if TYPE_CHECKING:
    from driftcheck.fix.plan import FileContext, Rewrite, SiteJob


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

    def __init__(self) -> None:
        self.siblings: dict[str, list[Sibling]] = {}

    def prepare(self, run: RunIndex) -> None:
        """Group the sites of model files (files with the model marker) by role.

        In path order: the first sibling is the one a message cites, and the scans come in
        the order files came back (cache hits first, then the workers' completion order), so
        a warm run would otherwise cite another sibling than a cold one."""
        self.siblings = {}
        for path, scan in sorted(run.scans.items()):
            if not scan.entry_classes:
                continue
            for site in scan.sites:
                key = sibling_key(site)
                if key is None:
                    continue
                universe = run.universe_of(site)
                self.siblings.setdefault(key, []).append(
                    Sibling(
                        path,
                        site.symbol,
                        site.span.line,
                        covered_members(site, universe),
                        site.helpers,
                        universe.key,
                    )
                )

    def siblings_of(self, site: Site) -> tuple[Sibling, ...]:
        """The sites of other model files playing the same role as ``site``."""
        key = sibling_key(site)
        if key is None:
            return ()
        return tuple(
            s
            for s in self.siblings.get(key, ())
            if s.path != site.path and s.universe == site.universe
        )

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report a site that covers less of a family than its siblings say it should."""
        findings: list[Finding] = []
        universe = judgement.universe
        siblings = self.siblings_of(site)
        if not siblings:
            return []
        # a site that enumerates a family is judged against that one only (by DC001/DC003)
        families = [judgement.family] if judgement.family is not None else universe.families
        for family in families:
            if site.form != "single" and enumerates(site, family, universe, judgement.min_overlap):
                continue  # DC001/DC003 already judge this site against the family
            present, missing, extra = drift(site, family, universe)
            missing = tuple(m for m in missing if m not in judgement.allowed_missing)
            if not missing or not set(present) & family.member_set:
                continue
            evidence = _evidence(family, universe, siblings, judgement.min_overlap)
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
            break  # one finding per site: the first family the siblings speak for
        return findings

    def plan_fix(self, ctx: FileContext, job: SiteJob, style: str) -> Rewrite:
        """Do what the sibling does, whatever the style: call the canonical helper."""
        from driftcheck.fix.flips import site_receivers
        from driftcheck.fix.helper import plan_helper

        return plan_helper(ctx, job, frozenset(site_receivers(job.site, ctx.universe)))


@dataclass(frozen=True)
class Sibling:
    """A site in another model file that plays the same role (same attribute, same method)."""

    path: str
    symbol: str
    line: int
    members: frozenset[str]
    helpers: tuple[str, ...]
    universe: str = ""


GENERIC_ROLES = {"", "__init__", "forward", "__call__", "main", "run", "apply"}


def sibling_key(site: Site) -> str | None:
    """The role a site plays, comparable across model files (None when too generic)."""
    if site.kind != "property" or site.role in GENERIC_ROLES:
        return None
    return f"{site.context if site.context == 'return' else 'value'}:{site.role}"


def _where(sibling: Sibling) -> str:
    return f"{sibling.path.rsplit('/', 1)[-1]}:{sibling.line} ({sibling.symbol})"


def _evidence(
    family: Family, universe: Universe, siblings: tuple[Sibling, ...], min_overlap: int
) -> str | None:
    """Why the siblings say this site should cover the family, or None when they do not.

    A sibling that calls the helper, lists the whole family, or enumerates the family (names
    ``min_overlap`` or more of its members, so DC001/DC003 hold it to the whole family) is the
    evidence: once the siblings follow the helper, this site is the one copy that does not.
    Judging against what the siblings will be after their own fixes keeps ``--fix`` convergent.
    """
    for sibling in siblings:
        if family.name in sibling.helpers:
            return f"its sibling {_where(sibling)} calls {family.call_text()}"
    for sibling in siblings:
        if family.member_set <= sibling.members:
            return f"its sibling {_where(sibling)} lists all {len(family.members)}"
    enumerating = [s for s in siblings if len(s.members & family.member_set) >= min_overlap]
    if enumerating:
        best = max(enumerating, key=lambda s: (len(s.members & family.member_set), s.path))
        files = len({s.path for s in enumerating})
        others = (
            f" and {files - 1} more sibling file{'s' if files > 2 else ''}" if files > 1 else ""
        )
        return (
            f"its sibling {_where(best)}{others} enumerate{'s' if files == 1 else ''} "
            f"{family.label or family.name} {universe.noun}"
        )
    return None
