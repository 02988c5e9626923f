"""What a rule is: a code, its documentation, its examples, and a check over one site.

Each rule module defines one :class:`Rule` subclass. Its ``VALID`` and ``INVALID`` examples
are model-file snippets evaluated against the fixture universe (``fixtures/sglang_like``) by
the test suite, fixit-style: an INVALID example must produce the rule's code (and its
``expected_fix`` text when given), a VALID one must not. Whether a rule offers a fix is
derived from its examples (any INVALID example with ``expected_fix``), not declared twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from driftcheck.model import Family, Finding, Severity, Site, Universe


@dataclass(frozen=True)
class Example:
    """A snippet placed in a model module of the fixture tree."""

    code: str
    expected_fix: str | None = None
    missing: tuple[str, ...] | None = None
    note: str = ""
    select: tuple[str, ...] = ()
    config: dict[str, object] = field(default_factory=dict)
    siblings: dict[str, str] = field(default_factory=dict)  # other model files: name -> code


@dataclass(frozen=True)
class Sibling:
    """A site in another model file that plays the same role (same attribute, same method)."""

    path: str
    symbol: str
    line: int
    members: frozenset[str]
    helpers: tuple[str, ...]


@dataclass
class Judgement:
    """What a rule needs beyond the site: the universe, the run's policy, the site's siblings."""

    universe: Universe
    min_overlap: int
    allowed_missing: frozenset[str] = frozenset()
    allowed_extra: frozenset[str] = frozenset()
    latent: dict[str, str] = field(default_factory=dict)
    siblings: tuple[Sibling, ...] = ()


class Rule:
    """Base class: subclasses fill the class attributes and implement :meth:`check`."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity] = "error"
    default_enabled: ClassVar[bool] = True
    summary: ClassVar[str]
    explanation: ClassVar[str]
    fix_safety: ClassVar[str] = "No fix."
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []

    @classmethod
    def fixable(cls) -> bool:
        """Whether the rule offers a fix: derived from its INVALID examples."""
        return any(example.expected_fix is not None for example in cls.INVALID)

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Findings for ``site`` (usually zero or one); rules judged per file return none."""
        return []


def site_finding(
    rule: type[Rule] | Rule,
    site: Site,
    family: Family,
    *,
    members: tuple[str, ...],
    missing: tuple[str, ...],
    extra: tuple[str, ...],
    message: str,
    severity: Severity | None = None,
    latent: dict[str, str] | None = None,
) -> Finding:
    """A finding located at ``site`` and judged against ``family`` (the fields every rule fills)."""
    latent = latent or {}
    return Finding(
        code=rule.code,
        severity=severity or rule.severity,
        path=site.path,
        span=site.span,
        symbol=site.symbol,
        canonical=family.name,
        members=members,
        missing=missing,
        extra=extra,
        message=message,
        kind=site.kind,
        subject=subject(site),
        live=tuple(m for m in missing if m not in latent),
        latent=latent,
    )


def subject(site: Site) -> str:
    """How a message names the site: the assigned attribute, the function, or the condition."""
    if site.context in ("assign", "return", "keyword", "ternary") and site.role:
        return site.role
    return f"condition in {site.symbol}"


def effective_members(site: Site, universe: Universe) -> frozenset[str]:
    """The members a site covers, counting canonical helpers it calls."""
    covered = set(site.members)
    for helper in site.helpers:
        family = universe.family(helper)
        if family is not None:
            covered |= family.member_set
    return frozenset(covered)


def drift(
    site: Site, family: Family, universe: Universe
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(members present in source order, missing in the helper's order, extras in source order)."""
    present: list[str] = []
    for operand in site.operands:
        if operand.kind == "helper":
            continue
        for member in universe.order(operand.members):
            if member not in present:
                present.append(member)
    covered = effective_members(site, universe)
    missing = tuple(m for m in family.members if m not in covered)
    extra = tuple(m for m in present if m not in family.member_set)
    return tuple(present), missing, extra


def enumerates_family(site: Site, family: Family, min_overlap: int) -> bool:
    """Whether the site is an enumeration of ``family`` rather than of an unrelated set."""
    if any(h == family.name for h in site.helpers):
        return True
    return len(site.members & family.member_set) >= min_overlap
