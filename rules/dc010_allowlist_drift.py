"""DC010: a validation allowlist misses members of the canonical family (off by default)."""

from __future__ import annotations

from driftcheck.model import Finding, Site

from .base import Example, Judgement, Rule
from .dc001_missing_members import family_findings


class AllowlistDrift(Rule):
    """An enumeration that guards a ``raise``/``assert``/warning about which backends are supported."""

    code = "DC010"
    honours_allow_missing = True
    name = "allowlist-missing-members"
    reads = "enumerations"
    severity = "warning"
    default_enabled = False
    summary = "Validation allowlist of backends misses members of the canonical family"
    explanation = """\
## What it does
Reports enumerations that decide whether a configuration is *accepted* — the test of an `if`
whose body raises or warns, or an `assert` — when they miss members of a canonical family.

## Why it is off by default
An allowlist states what has been validated, not what the backend is. Leaving a new backend
out of it is usually deliberate (it fails loudly, it does not corrupt). Enable with
`--select DC010` when auditing support matrices.

## Fix
Add the member if it is supported; otherwise suppress with the reason:
`# driftcheck: allow-missing[pplx] -- CP not validated on pplx`.
"""
    VALID = [
        Example(
            "def check(args):\n"
            '    if args.moe_a2a_backend not in ("deepep", "mooncake", "mori"):\n'
            '        raise ValueError("unsupported")\n',
            note="off by default",
        )
    ]
    INVALID = [
        Example(
            "def check(args):\n"
            '    if args.moe_a2a_backend not in ("deepep", "mooncake", "mori"):\n'
            '        raise ValueError("unsupported")\n',
            select=("DC010",),
            missing=("deepep_v2", "pplx"),
        )
    ]

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report allowlists that miss family members."""
        if site.kind != "allowlist" or site.form == "single":
            return []
        return family_findings(self, site, judgement)
