"""DC011: a per-backend dispatch or kernel-capability list misses family members (off by default)."""

from __future__ import annotations

from driftcheck.model import Finding, Site

from .base import Example, Judgement, Rule
from .dc001_missing_members import family_findings


class DispatchDrift(Rule):
    """One arm of an ``if``/``elif`` chain over backends, or a list conjoined with a kernel test."""

    code = "DC011"
    honours_allow_missing = True
    name = "dispatch-missing-members"
    reads = "enumerations"
    severity = "warning"
    default_enabled = False
    summary = (
        "Per-backend dispatch arm or kernel capability list misses members of the canonical family"
    )
    explanation = """\
## What it does
Reports enumerations that select an implementation: one arm of an `if`/`elif` chain whose
other arms test other backends (a dispatcher or class table), or a list conjoined with a test of
another backend kind, a dtype or a kernel flag (`runner.is_deep_gemm() and (b.is_deepep() or
b.is_pplx())`).

## Why it is off by default
A dispatch arm that omits `deepep_v2` is usually right: another arm handles it. A kernel
capability list names the backends a kernel was written for. Enable with `--select DC011` to
audit them.
"""
    VALID = [
        Example(
            "def make_dispatcher(b):\n"
            "    if b.is_deepep() or b.is_mooncake() or b.is_mori():\n"
            "        return 'deepep-like'\n"
            "    elif b.is_deepep_v2():\n"
            "        return 'v2'\n"
            "    return 'standard'\n",
            note="off by default",
        )
    ]
    INVALID = [
        Example(
            "def make_dispatcher():\n"
            "    a2a_backend = get_moe_a2a_backend()\n"
            "    if a2a_backend.is_deepep() or a2a_backend.is_mooncake() or a2a_backend.is_mori():\n"
            "        return 'deepep-like'\n"
            "    elif a2a_backend.is_deepep_v2():\n"
            "        return 'v2'\n"
            "    return 'standard'\n",
            select=("DC011",),
            missing=("deepep_v2", "pplx"),
        )
    ]

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report dispatch arms and capability lists that miss family members."""
        if site.kind != "dispatch" or site.form == "single":
            return []
        return family_findings(self, site, judgement)
