"""DC003: a string- or enum-value enumeration misses members of the canonical family."""

from __future__ import annotations

from typing import TYPE_CHECKING

from driftcheck.model import Finding, Site

from .applicability import FIX_SAFETY
from .base import Example, Judgement, Rule
from .dc001_missing_members import family_findings, plan_in_style

if TYPE_CHECKING:
    from driftcheck.fix.plan import FileContext, Rewrite, SiteJob

VALUE_FORMS = ("in", "not-in", "eq-chain", "ne-chain", "match")


class StringFormMissingMembers(Rule):
    """``moe_a2a_backend in ("deepep", "mooncake")``, ``b == MoeA2ABackend.MORI or ...``."""

    code = "DC003"
    honours_allow_missing = True
    name = "string-form-missing-members"
    reads = "enumerations"
    severity = "error"
    summary = "Backend enumeration by string or enum value misses members of the canonical family"
    explanation = """\
## What it does
Finds enumerations that compare the backend's value instead of calling `is_*()`:
`moe_a2a_backend in ("deepep", "mooncake")`, `not in`, `==`/`!=` chains, tuples, lists,
sets, named constants (`X in _BACKENDS` with `_BACKENDS = frozenset({...})`), and enum members
(`b in (MoeA2ABackend.DEEPEP, ...)`). The left side must be the backend: its getter, an alias,
or an attribute named like `moe_a2a_backend`; `disaggregation_transfer_backend in
("mooncake", "nixl")` shares names with the enum but is not an enumeration of it.

## Why it matters
Same hazard as DC001: the literal list does not follow the canonical helper when it changes.

## Fix
`--fix` inserts the missing values next to their siblings (`"deepep_v2"` after `"deepep"`),
in the literal's own quoting and layout. The helper style is refused for string forms: they
usually run on server arguments, before the runtime backend the helper reads is set.

## Suppress
`# driftcheck: allow-missing[pplx] -- reason` on the line of the comparison.
"""
    fix_safety = FIX_SAFETY
    VALID = [
        Example(
            "def route(x):\n"
            "    match get_moe_a2a_backend():\n"
            "        case MoeA2ABackend.DEEPEP:\n"
            "            return x\n"
            "        case MoeA2ABackend.MORI:\n"
            "            return -x\n"
            "    return x\n",
            note="one backend per case: a per-backend dispatch (DC011), not a property",
        ),
        Example(
            "def uses_transfer(args) -> bool:\n"
            '    return args.disaggregation_transfer_backend in ("mooncake", "nixl")\n',
            note="a different setting that shares value names",
        ),
        Example(
            "def check(args):\n"
            '    if args.moe_a2a_backend not in ("none", "megamoe"):\n'
            '        raise ValueError("unsupported")\n',
            note="no overlap with the family",
        ),
    ]
    INVALID = [
        Example(
            "def route(x):\n"
            "    match get_moe_a2a_backend():\n"
            "        case MoeA2ABackend.DEEPEP | MoeA2ABackend.MORI:\n"
            "            return x\n"
            "        case _:\n"
            "            return -x\n",
            missing=("deepep_v2", "mooncake", "pplx"),
            expected_fix="def route(x):\n"
            "    match get_moe_a2a_backend():\n"
            "        case MoeA2ABackend.DEEPEP | MoeA2ABackend.DEEPEP_V2 | MoeA2ABackend.MOONCAKE | MoeA2ABackend.MORI | MoeA2ABackend.PPLX:\n"
            "            return x\n"
            "        case _:\n"
            "            return -x\n",
            note="a match case's alternatives",
        ),
        Example(
            "_A2A = (MoeA2ABackend.DEEPEP, MoeA2ABackend.MOONCAKE, MoeA2ABackend.MORI)\n\n\n"
            "def spans() -> bool:\n"
            "    return get_moe_a2a_backend() in _A2A\n",
            missing=("deepep_v2", "pplx"),
            expected_fix="_A2A = (\n"
            "    MoeA2ABackend.DEEPEP,\n"
            "    MoeA2ABackend.DEEPEP_V2,\n"
            "    MoeA2ABackend.MOONCAKE,\n"
            "    MoeA2ABackend.MORI,\n"
            "    MoeA2ABackend.PPLX,\n"
            ")\n\n\n"
            "def spans() -> bool:\n"
            "    return get_moe_a2a_backend() in _A2A\n",
            note="a constant holding enum members",
        ),
        Example(
            'def packed(cfg: MeshConfig) -> bool:\n    return cfg.transport in ("mesh_ll", "relay")\n',
            missing=("relay_v2",),
            expected_fix="def packed(cfg: MeshConfig) -> bool:\n"
            '    return cfg.transport in ("mesh_ll", "relay", "relay_v2")\n',
            note="a string setting (Literal-annotated) of a config class",
            fixture="config_like",
        ),
        Example(
            "def by_kind(device: Device) -> bool:\n"
            "    return device._kind in (DeviceKind.GPU, DeviceKind.NPU)\n",
            missing=("TPU",),
            expected_fix="def by_kind(device: Device) -> bool:\n"
            "    return device._kind in (DeviceKind.GPU, DeviceKind.NPU, DeviceKind.TPU)\n",
            note="IntEnum members compared with the attribute that holds them",
            fixture="platform_like",
        ),
        Example(
            "def uses_a2a(server_args) -> bool:\n"
            '    return server_args.moe_a2a_backend in ("deepep", "mooncake", "mori")\n',
            missing=("deepep_v2", "pplx"),
            expected_fix="def uses_a2a(server_args) -> bool:\n"
            "    return server_args.moe_a2a_backend in (\n"
            '        "deepep",\n'
            '        "deepep_v2",\n'
            '        "mooncake",\n'
            '        "mori",\n'
            '        "pplx",\n'
            "    )\n",
        ),
        Example(
            "def uses_a2a() -> bool:\n"
            "    b = get_moe_a2a_backend()\n"
            "    return b in (MoeA2ABackend.DEEPEP, MoeA2ABackend.MORI)\n",
            missing=("deepep_v2", "mooncake", "pplx"),
            expected_fix="def uses_a2a() -> bool:\n"
            "    b = get_moe_a2a_backend()\n"
            "    return b in (\n"
            "        MoeA2ABackend.DEEPEP,\n"
            "        MoeA2ABackend.DEEPEP_V2,\n"
            "        MoeA2ABackend.MOONCAKE,\n"
            "        MoeA2ABackend.MORI,\n"
            "        MoeA2ABackend.PPLX,\n"
            "    )\n",
        ),
        Example(
            '_A2A_BACKENDS = frozenset({"deepep", "mooncake", "mori", "pplx"})\n\n\n'
            "def spans_ep(view) -> bool:\n"
            "    return view.moe_a2a_backend in _A2A_BACKENDS\n",
            missing=("deepep_v2",),
            expected_fix='_A2A_BACKENDS = frozenset({"deepep", "deepep_v2", "mooncake", "mori", "pplx"})\n\n\n'
            "def spans_ep(view) -> bool:\n"
            "    return view.moe_a2a_backend in _A2A_BACKENDS\n",
            note="the constant is used only here, so --fix edits its literal",
        ),
        Example(
            "def uses_a2a(cfg) -> bool:\n"
            '    return cfg.moe_a2a_backend == "deepep" or cfg.moe_a2a_backend == "mori"\n',
            missing=("deepep_v2", "mooncake", "pplx"),
            expected_fix="def uses_a2a(cfg) -> bool:\n"
            "    return (\n"
            '        cfg.moe_a2a_backend == "deepep"\n'
            '        or cfg.moe_a2a_backend == "deepep_v2"\n'
            '        or cfg.moe_a2a_backend == "mooncake"\n'
            '        or cfg.moe_a2a_backend == "mori"\n'
            '        or cfg.moe_a2a_backend == "pplx"\n'
            "    )\n",
        ),
    ]

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report a value-form enumeration that misses family members."""
        if site.form not in VALUE_FORMS or site.kind != "property":
            return []
        return family_findings(self, site, judgement)

    def plan_fix(self, ctx: FileContext, job: SiteJob, style: str) -> Rewrite:
        """Minimal style inserts the missing members; helper style calls the helper."""
        return plan_in_style(ctx, job, style)
