"""DC021: a check in front of a raise or a fallback whose text names the family, that is not
the family (or its negation).

``if p.is_cpu() or p.is_xpu(): raise ValueError("... requires a CUDA-alike platform")``
lists by hand the members the family excludes — a *complement* — and the message says what
the check means: not CUDA-alike. The check is judged as that negation: the members it lets
through should be exactly the family's. A single check in front of such a refusal (``if not
p.is_cuda(): raise ValueError("... CUDA-alike ...")``) is judged the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from driftcheck.families import enumerates, family_naming, member_named
from driftcheck.model import Family, Finding, Related, Site, Universe

from .base import Example, Judgement, Rule, drift, site_finding, subject

if TYPE_CHECKING:
    from driftcheck.config import Config

# the examples' tree: transports of a mesh runtime, the packed-layout family (mesh_ll, relay,
# relay_v2) among naive, ring, mesh_ht and spray (fixtures/config_like)
FIXTURE = "config_like"


class NamedRefusal(Rule):
    """The refusal's own text says which family the check is; the check disagrees."""

    code = "DC021"
    honours_allow_missing = True
    name = "named-refusal"
    findings_read_every_site = False  # no same-role evidence, no liveness
    severity = "error"
    summary = "Check in front of a raise or fallback that names the family disagrees with it"
    explanation = """\
## What it does
Reads the check of an `if` whose branch refuses or falls back — it raises, logs a warning,
or returns a reason (`return False, "needs ..."`) — together with that branch's text. When
the text **names a canonical family**, the check is judged as that family, or as its
negation when the refusal runs on its true branch: the members the check lets through must
be exactly the family's. It reports

- a **hand-written complement**: the members the family excludes, listed by hand in front of
  the refusal (`if p.is_cpu() or p.is_xpu(): raise ValueError("requires a CUDA-alike
  platform")`), which lets through members that are not in the family (`tpu`, and every
  member added since the list was written);
- a **single check** (or a partial list) in front of such a refusal (`if not p.is_cuda(): raise
  ValueError("requires a CUDA-alike platform")`), which refuses members of the family
  (`rocm`).

**How a text names the family**: it contains, as whole words (case, `-`, `_` and spaces
alike), the family's label (`label = "CUDA-alike"` in the configuration or pack) or its
canonical's name without the predicate prefix `is_`, `use_`, `uses_`, `has_` or `supports_`
(`is_cuda_alike` -> "cuda alike", `use_batched_activation_format` -> "batched activation
format"). A phrase that is also a member's name (a label `CUDA`) or a single word of fewer
than four letters names nothing, and a phrase inside a member's name ("MoRI" in "MoRI
low-latency") names that member, not the family. Or it names each of the family's members
by value or attribute, and no other member (`"supports CUDA and ROCm only"` names the
CUDA-alike family). A family inferred from copies has no name a text could use.

**Thresholds**: a check that calls a canonical, lists `min-overlap` or more of the family's
members (DC001/DC003 judge those), or has other terms (`x and not p.is_cuda()`: the refusal
runs for a subset only) is not judged; nor is one that disagrees with the family in both
directions (it lets through a non-member and refuses a member: the text then names the family
for another reason), nor one whose text names a member it tests (`raise ValueError("spray has
no packed-layout kernel")` is about spray). A member the text itself names is meant (`raise ValueError("only
CUDA-alike and XPU devices")` lets XPU through on purpose).

## Why it matters
A complement is drift waiting for the next member: the list of platforms that *cannot* run a
kernel is written once, and each platform added later passes the check, to fail deeper in
the kernel with an error that no longer says why. The refusal's message is the author's own
statement of what the check should be.

## Fix
No automatic fix: replace the check with the canonical or its negation, as the message says
(`if not current_platform.is_cuda_alike(): raise ...`), and check that the members it newly
lets through, or refuses, should be.
"""
    fix_safety = "No automatic fix: the message names the canonical to test instead."
    VALID = [
        Example(
            "def packed_kernel(layer: LayerConfig):\n"
            '    if layer.mesh.transport in ("naive", "ring", "mesh_ht", "spray"):\n'
            '        raise ValueError("the packed kernel needs a packed-layout transport")\n'
            "    return layer\n",
            note="the whole complement: it lets through exactly the family",
            fixture=FIXTURE,
        ),
        Example(
            "def packed_kernel(layer: LayerConfig):\n"
            '    if layer.mesh.transport in ("naive", "ring", "mesh_ht"):\n'
            '        raise ValueError("the packed kernel is not built for naive, ring or mesh_ht")\n'
            "    return layer\n",
            note="the refusal's text names no family: nothing says what the list means",
            fixture=FIXTURE,
        ),
        Example(
            "def packed_kernel(layer: LayerConfig):\n"
            '    if layer.mesh.transport in ("naive", "ring", "mesh_ht"):\n'
            '        raise ValueError("the packed kernel needs a packed-layout transport or spray")\n'
            "    return layer\n",
            note="the member it lets through beyond the family (spray) is named by the text",
            fixture=FIXTURE,
        ),
        Example(
            "def packed_kernel(layer: LayerConfig):\n"
            "    if layer.mesh.use_spray:\n"
            '        raise ValueError("spray has no packed-layout kernel")\n'
            "    return layer\n",
            note="the text names the member it refuses (spray): the refusal is about that "
            "member, not the family",
            fixture=FIXTURE,
        ),
        Example(
            "def packed_kernel(layer: LayerConfig):\n"
            '    if layer.mesh.transport in ("naive", "ring"):\n'
            '        raise ValueError("runs on mesh_ll, relay, relay_v2 or spray only")\n'
            "    return layer\n",
            note="the text names the family's members and one more (spray): it names no family",
            fixture=FIXTURE,
        ),
    ]
    INVALID = [
        Example(
            "def packed_kernel(layer: LayerConfig):\n"
            '    if layer.mesh.transport in ("naive", "ring", "mesh_ht"):\n'
            '        raise ValueError("the packed kernel needs a packed-layout transport")\n'
            "    return layer\n",
            missing=(),
            note="a hand-written complement: spray, added after the list, is let through",
            fixture=FIXTURE,
        ),
        Example(
            "def packed_kernel(layer: LayerConfig):\n"
            "    if not layer.use_mesh_ll:\n"
            '        logger.warning("no packed-layout transport: using the flat kernel")\n'
            "        return flat_kernel(layer)\n"
            "    return packed(layer)\n",
            missing=("relay", "relay_v2"),
            note="a single check in front of a fallback whose warning names the family",
            fixture=FIXTURE,
        ),
        Example(
            "def packed_kernel(layer: LayerConfig):\n"
            '    if layer.mesh.transport in ("naive", "ring"):\n'
            '        raise ValueError("the packed kernel runs on mesh_ll, relay and relay_v2 only")\n'
            "    return layer\n",
            missing=(),
            note="the text names the family by its members: mesh_ht and spray are let through",
            fixture=FIXTURE,
        ),
    ]

    def reads_single_checks(self, universes: Sequence[Universe], config: Config) -> bool:
        """The single checks it judges stand in front of a refusal whose text names a family,
        and a file whose text may name one is analysed (:mod:`driftcheck.singles`): no other
        needs reading."""
        return False

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Judge a check in front of a refusal whose text names a family as that family."""
        universe = judgement.universe
        if not judged(site):
            return []
        for family in universe.families:
            naming = family_naming(site.role.refusal, family, universe)
            if naming is None:
                continue
            if enumerates(site, family, universe, judgement.min_overlap):
                return []  # DC001/DC003 judge a list of the family's own members
            finding = self._against(site, family, universe, judgement, naming)
            return [finding] if finding is not None else []
        return []

    def _against(
        self, site: Site, family: Family, universe: Universe, judgement: Judgement, naming: str
    ) -> Finding | None:
        """The finding for ``site`` judged as ``family`` (or its negation; the text names it
        as ``naming`` says), or None when it agrees, or when the refusal is about something
        else."""
        text = site.role.refusal
        if any(member_named(text, m, family, universe) for m in site.members):
            return None  # the refusal names a member it tests: it is about that member
        every = frozenset(universe.values)
        true_for = site.members if site.polarity == "positive" else every - site.members
        refused = true_for if site.role.refusal_when else every - true_for
        accepted = every - refused
        if not accepted & family.member_set:
            return None  # it refuses the whole family: the text names what it is not
        missing = tuple(
            m
            for m in family.members
            if m not in accepted
            and m not in judgement.allowed_missing
            and not member_named(text, m, family, universe)
        )
        extra = tuple(
            m
            for m in universe.order(accepted - family.member_set)
            if m not in judgement.allowed_extra and not member_named(text, m, family, universe)
        )
        if not (missing or extra) or (missing and extra):
            return None
        present = drift(site, family, universe)[0]
        label = family.label or family.name
        complement = not site.members & family.member_set
        how = (
            f"lists {', '.join(present)} by hand, {universe.noun} that {label} excludes,"
            if complement
            else f"tests {', '.join(present)}"
        )
        if extra:
            which = "is" if len(extra) == 1 else "are"
            tail = f"it lets through {', '.join(extra)}, which {which} not {label}"
        else:
            tail = f"missing {', '.join(missing)}"
        negation = "not " if site.role.refusal_when else ""
        message = (
            f"{subject(site)} {how} in front of a raise or fallback whose text names {naming} "
            f'("{_quote(text)}"): {tail}; test {negation}{_advised(site, family)} instead'
        )
        finding = site_finding(
            self, site, family, members=present, missing=missing, extra=extra, message=message
        )
        place = Related(
            site.path, site.role.refusal_line, 0, f"the raise or fallback whose text names {naming}"
        )
        return replace(finding, related=(*finding.related, place))


def judged(site: Site) -> bool:
    """Whether ``site`` is a hand-written check this rule reads: it stands alone in front of a
    refusal (its whole ``if`` test), and calls no canonical."""
    return bool(
        site.role.refusal
        and not site.helpers
        and not site.has_other_terms
        and site.form not in ("helper", "match")
    )


def _quote(text: str) -> str:
    return text if len(text) <= 80 else text[:77].rstrip() + "..."


def _advised(site: Site, family: Family) -> str:
    """How the site would test the canonical (``Platform.is_cuda_alike()``)."""
    if family.access in ("property", "method") and family.owner:
        inside = site.symbol.startswith(f"{family.owner}.")
        return ("self" if inside else family.owner) + family.call_text()
    return family.call_text()
