"""DC006: a drifted copy whose only effect is attributes nothing reads."""

from __future__ import annotations

from driftcheck.model import Finding, Site

from .base import Example, Judgement, Rule, drift, noun, provenance_note, site_finding, subject


class UnreadCopy(Rule):
    """A copy that decides nothing: widening it fixes no backend, deleting it removes a trap."""

    code = "DC006"
    name = "unread-copy"
    severity = "info"
    default_enabled = False
    summary = "Drifted copy only sets attributes that nothing reads; delete it"
    explanation = """\
## What it does
Finds an enumeration that misses members of its family, as DC001/DC003 would report, but whose
only effect is to set attributes that nothing reads: `if b.is_deepep() or b.is_mooncake():
self.top_k = ...` in a block where no method, no layer holding the block, and no class it
inherits from or that inherits from it reads `top_k`.

Reads are looked for in the site's own file (`self.top_k`, `self.mlp.top_k`), in the classes
related to its class by inheritance in the other scanned files (`self.top_k`), and as
`getattr(self, "top_k")`. A read through another object in another file
(`runner.model.top_k`) is not looked for.

## Why it matters
No backend takes another path because of it, so it is not drift that breaks anything, and
DC001/DC003/DC020 do not report it. But it looks like a live copy: the next reader copies it,
or starts reading the attribute and inherits the drift. Off by default (it is cleanup advice).

## Fix
Delete the copy and the attributes it sets (no automatic fix: deleting code is left to a
person).
"""
    VALID = [
        Example(
            "class Block:\n"
            "    def __init__(self):\n"
            "        b = get_moe_a2a_backend()\n"
            "        if b.is_deepep() or b.is_mooncake():\n"
            "            self.top_k = 2\n\n"
            "    def forward(self, x):\n"
            "        return x * self.top_k\n",
            select=("DC006",),
            note="top_k is read (DC001 reports the copy)",
        ),
    ]
    INVALID = [
        Example(
            "class Block:\n"
            "    def __init__(self):\n"
            "        b = get_moe_a2a_backend()\n"
            "        if b.is_deepep() or b.is_mooncake():\n"
            "            self.top_k = 2\n",
            select=("DC006",),
            missing=("deepep_v2", "mori", "pplx"),
            note="nothing reads top_k",
        ),
    ]

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report a copy DC001/DC003 would judge, when nothing reads what it sets."""
        family = judgement.family
        if not judgement.unread or family is None or site.kind != "property":
            return []
        if site.polarity != "positive" or site.form == "helper":
            return []
        present, missing, extra = drift(site, family, judgement.universe)
        missing = tuple(m for m in missing if m not in judgement.allowed_missing)
        if not missing:
            return []
        names = ", ".join(judgement.unread)
        count = f"{len(set(present) & family.member_set)} of {len(family.members)}"
        return [
            site_finding(
                self,
                site,
                family,
                members=present,
                missing=missing,
                extra=extra,
                message=f"{subject(site)} enumerates {count} {noun(family, judgement.universe)}; "
                f"missing {', '.join(missing)}; nothing reads {names}: delete it rather than "
                f"widen it{provenance_note(family)}",
            )
        ]
