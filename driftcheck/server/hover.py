"""What hovering over a finding shows: the canonical's members, the site's, and the evidence.

Markdown, one block per finding under the cursor::

    **DC001** missing-family-members (error)

    …the finding's message…

    - canonical `is_deepep_class_backend`: deepep, deepep_v2, mooncake, mori, pplx
    - this site: deepep, mooncake, mori, megamoe, flashinfer_megamoe, ascend_fuseep
    - missing: deepep_v2, pplx
      - deepep_v2: safe: latent (becomes live when ... is registered via ...)
      - pplx: held back: no same-role site lists it

Then, for a finding that rests on other sites (DC020), each piece of evidence with its place.
"""

from __future__ import annotations

from driftcheck.engine import CheckResult
from driftcheck.model import Finding
from driftcheck.rules import CATALOGUE


def _listed(members: tuple[str, ...] | list[str]) -> str:
    return ", ".join(members) if members else "none"


def hover_text(result: CheckResult, finding: Finding) -> str:
    """The markdown for ``finding`` (judged in ``result``)."""
    rule = CATALOGUE.get(finding.code)
    name = f" {rule.name}" if rule is not None else ""
    lines = [f"**{finding.code}**{name} ({finding.severity})", "", finding.message, ""]
    site = finding.site
    universe = result.universes.get(site.universe if site else "") or result.universe
    family = universe.family(finding.canonical) if universe is not None else None
    if family is not None:
        how = " (inferred: no helper defines it)" if family.inferred else ""
        lines.append(f"- canonical `{family.name}`{how}: {_listed(family.members)}")
    if site is not None and universe is not None:
        lines.append(f"- this site: {_listed(universe.order(site.members))}")
    if finding.missing:
        lines.append(f"- missing: {_listed(finding.missing)}")
        lines += [
            f"  - {a.member}: {'safe' if a.safe else 'held back'}: {a.reason}"
            for a in finding.applicability
        ]
    if finding.extra:
        lines.append(f"- also names: {_listed(finding.extra)}")
    canonical = (family.path, family.line) if family is not None else None
    evidence = [r for r in finding.related if (r.path, r.line) != canonical]
    if evidence:
        lines += ["", "Evidence:"]
        lines += [f"- {result.project.display(r.path)}:{r.line}: {r.note}" for r in evidence]
    if finding.evidence == "helper":
        lines += ["", "The evidence calls the helper, so the fix calls it too."]
    return "\n".join(lines).rstrip() + "\n"
