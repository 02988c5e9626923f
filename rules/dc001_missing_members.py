"""DC001: a hand-written ``is_*()`` enumeration misses members of the canonical family."""

from __future__ import annotations

from typing import TYPE_CHECKING

from driftcheck.model import Finding, Site

from .applicability import FIX_SAFETY, assess, marked
from .base import Example, Judgement, Rule, drift, noun, site_finding, subject, unread_note

if TYPE_CHECKING:
    from driftcheck.fix.plan import FileContext, Rewrite, SiteJob


def _served_list(*members: str) -> str:
    """A K3-style list testing ``members``, in a model file whose architecture the fixture's
    registry lacks (members it gates are latent there)."""
    tests = "\n        or ".join(f"_a2a_backend.is_{m}()" for m in members)
    return (
        "def routes_a2a() -> bool:\n"
        "    _a2a_backend = get_moe_a2a_backend()\n"
        f"    return (\n        {tests}\n    )\n\n\n"
        "class ExampleForCausalLM:\n"
        "    pass\n\n\n"
        "EntryClass = ExampleForCausalLM\n"
    )


def _a2a_block(name: str, chain: str) -> str:
    """A block storing ``chain`` as ``self._use_a2a``, which its forward reads."""
    return (
        f"class {name}:\n"
        "    def __init__(self):\n"
        "        b = get_moe_a2a_backend()\n"
        f"        self._use_a2a = {chain}\n\n"
        "    def forward(self, x):\n"
        "        return -x if self._use_a2a else x\n"
    )


class MissingFamilyMembers(Rule):
    """An ``or``-chain (or negated chain) of ``backend.is_*()`` calls that names some, not all,
    members of a canonical family."""

    code = "DC001"
    honours_allow_missing = True
    name = "missing-family-members"
    reads = "enumerations"
    severity = "error"
    summary = "Hand-written backend enumeration misses members of the canonical family"
    explanation = """\
## What it does
Finds expressions that enumerate backends by hand — `b.is_deepep() or b.is_mooncake() or ...`,
`not (b.is_deepep() or ...)`, `not b.is_deepep() and not ...` — and compares the members they
name with the canonical predicate's (`is_deepep_class_backend()`), read from the tree's own
source. It reports the members the enumeration is missing and the extras it adds.

## Why it matters
A list copied from the helper stops tracking it. When the helper gains a backend
(`deepep_v2`), the copy silently keeps the old answer: Kimi-K3's `_uses_ep_a2a` omitted
`deepep_v2`, so with `--moe-a2a-backend deepep_v2` the layer kept its DP gather and TP
all-reduce after a dispatcher that had already combined — a double reduce that corrupts
outputs without crashing.

## A copy nothing reads
A copy whose only effect is to set attributes that nothing reads (`if b.is_deepep() or
b.is_mooncake(): self.top_k = ...` in a block whose `top_k` no method, no layer holding the
block and no related class reads) decides nothing today: it is reported as a **warning** that
says so ("nothing reads top_k: delete it rather than widen it"). Reads are looked for in the
site's own file and in the classes related to its class by inheritance in the other scanned
files; a read through another object in another file is not.

## Fix
`driftcheck --fix` inserts the missing members next to their siblings, in the list's own
spelling and layout (`--fix-style minimal`, the default), or replaces the family part with a
call to the helper and keeps the extras (`--fix-style helper`; a canonical constant of enum
members is tested instead: `b in A2A_FAMILY`). Each fix states the backends
whose value flips; the fix is a behaviour change by design, so review those flips.

## Suppress
If a member is deliberately left out, say so where the list is:
`# driftcheck: allow-missing[pplx] -- not validated on K3`. If the helper later gains another
member, the site is reported again. A suppression that no longer matches is DC004.

## Use instead
```python
return is_deepep_class_backend() or b.is_megamoe() or b.is_ascend_fuseep()
```
"""
    fix_safety = FIX_SAFETY
    VALID = [
        Example(
            "def pinned() -> bool:\n"
            "    return current_device.is_accelerator() or current_device.is_cpu()\n",
            note="calls the canonical method and adds an extra",
            fixture="platform_like",
        ),
        Example(
            "def sprayed(cfg: MeshConfig) -> bool:\n    return cfg.use_mesh_ht or cfg.use_spray\n",
            note="properties of the family's class, but none of the family's members",
            fixture="config_like",
        ),
        Example(
            "def uses_a2a() -> bool:\n"
            "    return is_deepep_class_backend() or get_moe_a2a_backend().is_megamoe()\n",
            note="calls the helper and adds an extra",
        ),
        Example(
            "def only_deepep() -> bool:\n    return get_moe_a2a_backend().is_deepep()\n",
            note="a single-backend check is not an enumeration",
        ),
        Example(
            "def megamoe_like() -> bool:\n"
            "    b = get_moe_a2a_backend()\n"
            "    return b.is_megamoe() or b.is_flashinfer_megamoe() or b.is_deepep()\n",
            note="overlaps the family in one member only: an unrelated family",
        ),
        Example(
            "def uses_a2a() -> bool:\n"
            "    b = get_moe_a2a_backend()\n"
            "    return (\n"
            "        b.is_deepep()\n"
            "        or b.is_deepep_v2()\n"
            "        or b.is_mooncake()\n"
            "        or b.is_mori()\n"
            "        or b.is_pplx()\n"
            "        or b.is_megamoe()\n"
            "    )\n",
            note="complete (a superset spelled by hand is DC002, off by default)",
        ),
        Example(
            "def impl_class():\n"
            "    b = get_moe_a2a_backend()\n"
            "    if b.is_mori():\n"
            "        return 'mori'\n"
            "    if b.is_deepep() or b.is_mooncake() or b.is_deepep_v2() or b.is_pplx():\n"
            "        return 'deepep'\n"
            "    return None\n",
            note="mori already returned above: the second test is never reached for it",
        ),
    ]
    INVALID = [
        Example(
            "class Block:\n"
            "    def __init__(self, config):\n"
            "        self.hidden = config.hidden\n"
            "        b = get_moe_a2a_backend()\n"
            "        if b.is_deepep() or b.is_mooncake():\n"
            "            self.top_k = 2\n",
            missing=("deepep_v2", "mori", "pplx"),
            expected_fix="class Block:\n"
            "    def __init__(self, config):\n"
            "        self.hidden = config.hidden\n",
            note="its only effect is an attribute nothing reads: a warning that says so, and "
            "its fix deletes it (and the receiver only it read) rather than widen it",
        ),
        Example(
            "def packed(cfg: MeshConfig) -> bool:\n    return cfg.use_mesh_ll or cfg.use_relay\n",
            missing=("relay_v2",),
            expected_fix="def packed(cfg: MeshConfig) -> bool:\n"
            "    return cfg.use_mesh_ll or cfg.use_relay or cfg.use_relay_v2\n",
            note="properties of a config class over a string setting (vLLM's shape)",
            fixture="config_like",
        ),
        Example(
            "def packed(layer: LayerConfig) -> bool:\n"
            "    return layer.mesh.use_mesh_ll or layer.mesh.use_relay_v2\n",
            missing=("relay",),
            expected_fix="def packed(layer: LayerConfig) -> bool:\n"
            "    return layer.mesh.use_mesh_ll or layer.mesh.use_relay or layer.mesh.use_relay_v2\n",
            note="through an attribute the code annotates with the config class",
            fixture="config_like",
        ),
        Example(
            "def pinned() -> bool:\n"
            "    return current_device.is_gpu() or current_device.is_npu()\n",
            missing=("TPU",),
            expected_fix="def pinned() -> bool:\n"
            "    return current_device.is_gpu() or current_device.is_npu() or current_device.is_tpu()\n",
            note="methods of a base class over an IntEnum of auto() members; a global the "
            "package annotates with that class",
            fixture="platform_like",
        ),
        Example(
            "class NpuDevice(Device):\n"
            "    _kind = DeviceKind.NPU\n\n"
            "    def offload(self) -> bool:\n"
            "        return self.is_gpu() or self.is_tpu() or self.is_cpu()\n",
            missing=("NPU",),
            expected_fix="class NpuDevice(Device):\n"
            "    _kind = DeviceKind.NPU\n\n"
            "    def offload(self) -> bool:\n"
            "        return self.is_gpu() or self.is_npu() or self.is_tpu() or self.is_cpu()\n",
            note="self in a subclass of the holder",
            fixture="platform_like",
        ),
        Example(
            "def uses_ep_a2a() -> bool:\n"
            "    _a2a_backend = get_moe_a2a_backend()\n"
            "    return (\n"
            "        _a2a_backend.is_megamoe()\n"
            "        or _a2a_backend.is_deepep()\n"
            "        or _a2a_backend.is_mooncake()\n"
            "        or _a2a_backend.is_mori()\n"
            "    )\n",
            missing=("deepep_v2", "pplx"),
            expected_fix="def uses_ep_a2a() -> bool:\n"
            "    _a2a_backend = get_moe_a2a_backend()\n"
            "    return (\n"
            "        _a2a_backend.is_megamoe()\n"
            "        or _a2a_backend.is_deepep()\n"
            "        or _a2a_backend.is_deepep_v2()\n"
            "        or _a2a_backend.is_mooncake()\n"
            "        or _a2a_backend.is_mori()\n"
            "        or _a2a_backend.is_pplx()\n"
            "    )\n",
        ),
        Example(
            _served_list("megamoe", "deepep", "mooncake", "mori"),
            missing=("deepep_v2", "pplx"),
            held_back=("pplx",),
            expected_safe_fix=_served_list("megamoe", "deepep", "deepep_v2", "mooncake", "mori"),
            expected_fix=_served_list("megamoe", "deepep", "deepep_v2", "mooncake", "mori", "pplx"),
            note="latent wins: the registry rejects deepep_v2 for this model, so adding it is "
            "safe; pplx is live and no same-role site lists it: held back",
        ),
        Example(
            _a2a_block("Block", "b.is_deepep() or b.is_mooncake()"),
            missing=("deepep_v2", "mori", "pplx"),
            held_back=("deepep_v2", "pplx"),
            expected_safe_fix=_a2a_block(
                "Block", "b.is_deepep() or b.is_mooncake() or b.is_mori()"
            ),
            expected_fix=_a2a_block(
                "Block",
                "(\n"
                "            b.is_deepep()\n"
                "            or b.is_deepep_v2()\n"
                "            or b.is_mooncake()\n"
                "            or b.is_mori()\n"
                "            or b.is_pplx()\n"
                "        )",
            ),
            note="a same-role site (another file's _use_a2a) lists mori: safe; "
            "deepep_v2 and pplx no same-role site lists: held back",
            siblings={
                "sibling_moe.py": "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
                + _a2a_block("SiblingBlock", "b.is_deepep() or b.is_mori()"),
            },
        ),
        Example(
            "class Block:\n"
            "    def __init__(self):\n"
            "        self._a2a = get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mooncake()\n\n"
            "    def forward(self, x):\n"
            "        return -x if self._a2a else x\n",
            missing=("deepep_v2", "mori", "pplx"),
            expected_fix="class Block:\n"
            "    def __init__(self):\n"
            "        self._a2a = (\n"
            "            get_moe_a2a_backend().is_deepep()\n"
            "            or get_moe_a2a_backend().is_deepep_v2()\n"
            "            or get_moe_a2a_backend().is_mooncake()\n"
            "            or get_moe_a2a_backend().is_mori()\n"
            "            or get_moe_a2a_backend().is_pplx()\n"
            "        )\n\n"
            "    def forward(self, x):\n"
            "        return -x if self._a2a else x\n",
        ),
        Example(
            "def forward(x):\n"
            "    if not (get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()):\n"
            "        return x\n"
            "    return -x\n",
            missing=("deepep_v2", "mooncake", "pplx"),
            expected_fix="def forward(x):\n"
            "    if not (\n"
            "        get_moe_a2a_backend().is_deepep()\n"
            "        or get_moe_a2a_backend().is_deepep_v2()\n"
            "        or get_moe_a2a_backend().is_mooncake()\n"
            "        or get_moe_a2a_backend().is_mori()\n"
            "        or get_moe_a2a_backend().is_pplx()\n"
            "    ):\n"
            "        return x\n"
            "    return -x\n",
        ),
        Example(
            "def forward(x):\n"
            "    b = get_moe_a2a_backend()\n"
            "    if not b.is_deepep() and not b.is_mooncake() and not b.is_ascend_fuseep():\n"
            "        return x\n"
            "    return -x\n",
            missing=("deepep_v2", "mori", "pplx"),
            expected_fix="def forward(x):\n"
            "    b = get_moe_a2a_backend()\n"
            "    if (\n"
            "        not b.is_deepep()\n"
            "        and not b.is_deepep_v2()\n"
            "        and not b.is_mooncake()\n"
            "        and not b.is_mori()\n"
            "        and not b.is_pplx()\n"
            "        and not b.is_ascend_fuseep()\n"
            "    ):\n"
            "        return x\n"
            "    return -x\n",
        ),
    ]

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report a method-form enumeration that misses family members."""
        if site.form not in ("or-chain", "not-or", "and-not") or site.kind != "property":
            return []
        return family_findings(self, site, judgement)

    def plan_fix(self, ctx: FileContext, job: SiteJob, style: str) -> Rewrite:
        """Minimal style inserts the missing members; helper style calls the helper."""
        return plan_in_style(ctx, job, style)


def plan_in_style(ctx: FileContext, job: SiteJob, style: str) -> Rewrite:
    """The family rules' fix: ``minimal`` (add the missing members) or ``helper``."""
    from driftcheck.fix.flips import site_receivers
    from driftcheck.fix.helper import plan_helper
    from driftcheck.fix.minimal import plan_minimal

    receivers = frozenset(site_receivers(job.site, ctx.universe))
    plan = plan_helper if style == "helper" else plan_minimal
    return plan(ctx, job, receivers)


def family_findings(rule: Rule, site: Site, judgement: Judgement) -> list[Finding]:
    """The shared DC001/DC003 judgement: the site against the family it enumerates (DC010 and
    DC011 share it; they offer no fix, so their members carry no fix applicability)."""
    family = judgement.family
    universe = judgement.universe
    if family is None or site.enumerator == family.name:
        return []
    present, missing, extra = drift(site, family, universe)
    missing = tuple(m for m in missing if m not in judgement.allowed_missing)
    if not missing:
        return []
    verb = "excludes" if site.polarity == "negative" else "enumerates"
    covered = len(family.members) - len([m for m in family.members if m not in set(present)])
    latent = {m: why for m, why in judgement.latent.items() if m in missing}
    # a copy nothing reads is deleted, not widened: no member's applicability to rate
    rated = rule.fixable() and not judgement.unread
    verdicts = assess(site, missing, judgement) if rated else ()
    shown = marked(missing, verdicts, latent)
    message = (
        f"{subject(site)} {verb} {covered} of {len(family.members)} {noun(family, universe)}; "
        f"missing {shown} ({_canonical(family)}){unread_note(judgement)}"
    )
    severity = rule.severity
    if latent and all(m in latent for m in missing) and severity == "error":
        severity = "warning"
    if judgement.unread and severity == "error":
        severity = "warning"
    return [
        site_finding(
            rule,
            site,
            family,
            members=present,
            missing=missing,
            extra=extra,
            message=message,
            severity=severity,
            latent=latent,
            applicability=verdicts,
        )
    ]


def _canonical(family) -> str:
    """``canonical: is_deepep_class_backend``, or how an inferred family was found."""
    if family.inferred:
        return f"{family.provenance()}; no helper defines it: `driftcheck discover` proposes one"
    return f"canonical: {family.name}"
