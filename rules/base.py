"""What a rule is: a code, its documentation, its examples, its checks and its fix.

Each rule module defines one :class:`Rule` subclass and owns all of its behaviour:

- :meth:`Rule.check` judges one site against the family it enumerates;
- :meth:`Rule.prepare` is the cross-file hook, called once with every file's scan before any
  site is judged (sibling consensus indexes the model files there);
- :meth:`Rule.finish_file` is the per-file hook, called after a file's sites were judged,
  with the suppression comments that matched something (stale suppressions are found there);
- :meth:`Rule.plan_fix` plans the rewrite for one of its findings;
- :meth:`Rule.reads_single_checks` and :meth:`Rule.single_check_directories` say which files
  holding only single checks it reads (the others are analysed only once something is
  reported: :mod:`driftcheck.singles`).

Its ``VALID`` and ``INVALID`` examples are model-file snippets evaluated against a fixture
universe (``fixtures/sglang_like`` unless the example names another) by the test suite,
fixit-style: an INVALID example must
produce the rule's code (and its ``expected_fix`` text when given: every missing member added,
as ``--unsafe-fixes`` writes it; ``expected_safe_fix`` and ``held_back`` say what plain ``--fix``
writes and leaves out), a VALID one must not.
Whether a rule offers a fix is derived from its examples (any INVALID example with
``expected_fix``), and the test suite checks that such a rule implements :meth:`plan_fix`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from driftcheck.families import covered_members
from driftcheck.model import Applicability, Family, Finding, Related, Severity, Site, Universe

if TYPE_CHECKING:
    from driftcheck.rules.applicability import SameRoleSites

    from driftcheck.config import Config
    from driftcheck.fix.plan import FileContext, Rewrite, SiteJob
    from driftcheck.scan import FileScan
    from driftcheck.universe.load import Unresolved


@dataclass(frozen=True)
class Example:
    """A snippet placed in a model module of the fixture tree."""

    code: str
    # what the fix writes with every missing member added (``--unsafe-fixes``; plain ``--fix``
    # too when no member is held back)
    expected_fix: str | None = None
    missing: tuple[str, ...] | None = None
    # the members plain ``--fix`` holds back, and what it writes then (safe members only)
    held_back: tuple[str, ...] | None = None
    expected_safe_fix: str | None = None
    note: str = ""
    select: tuple[str, ...] = ()
    siblings: dict[str, str] = field(default_factory=dict)  # other model files: name -> code
    fixture: str = "sglang_like"  # the fixture tree (fixtures/<name>) it is checked in


@dataclass
class Judgement:
    """What a rule needs beyond the site: its universe, the family it enumerates (if any),
    the run's policy for it, and the members gated per model for its file."""

    universe: Universe
    min_overlap: int
    family: Family | None = None
    allowed_missing: frozenset[str] = frozenset()
    allowed_extra: frozenset[str] = frozenset()
    latent: dict[str, str] = field(default_factory=dict)
    # the attributes the site sets when that is all it does and nothing reads them
    # (:mod:`driftcheck.liveness`): such a copy decides nothing today; its finding is a warning
    unread: tuple[str, ...] = ()
    # every site of the run by role, for the fix's applicability (:mod:`.applicability`)
    same_role: SameRoleSites | None = None


@dataclass
class RunIndex:
    """Everything a cross-file hook may read: every file's scan, the universes, the config."""

    scans: Mapping[str, FileScan]
    universes: Mapping[str, Universe]
    config: Config
    primary: Universe

    def universe_of(self, site: Site) -> Universe:
        """The universe ``site`` belongs to."""
        return self.universes.get(site.universe, self.primary)


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
    # what the rule reads: "every site" (the default), "enumerations" (a helper call or two
    # members and more; a single check is one only where min-overlap is 1) or "suppressions"
    reads: ClassVar[str] = "every site"
    # whether its findings read every site of the run: the same-role sites of a fix's
    # applicability, the reads of what a site sets (liveness); a run that reports one reads
    # the files it deferred as holding only single checks (:mod:`driftcheck.singles`)
    findings_read_every_site: ClassVar[bool] = True
    # whether an ``allow-missing[...]`` suppression accepts members its findings report
    # missing (DC004 judges such a suppression stale only once every rule that honours it
    # and may judge its site ran: :meth:`driftcheck.judge.Judge.unjudged`)
    honours_allow_missing: ClassVar[bool] = False

    @classmethod
    def cross_file(cls) -> bool:
        """Whether the rule reads every file's scan before it judges a site (:meth:`prepare`):
        it cannot be asked about one site outside a run that selected it."""
        return cls.prepare is not Rule.prepare

    @classmethod
    def fixable(cls) -> bool:
        """Whether the rule offers a fix: derived from its INVALID examples."""
        return any(example.expected_fix is not None for example in cls.INVALID)

    def prepare(self, run: RunIndex) -> None:
        """Cross-file hook: read every file's scan before any site is judged."""

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Findings for ``site`` (usually zero or one)."""
        return []

    def canonical_findings(self, unresolved: Sequence[Unresolved]) -> list[Finding]:
        """Run-level hook: findings about the configured families the run could not read a
        canonical for (:attr:`driftcheck.universe.Loaded.unresolved`)."""
        return []

    def finish_file(self, scan: FileScan, used: set[int], codes: set[str]) -> list[Finding]:
        """Per-file hook, after the file's sites were judged: ``used`` holds the lines of the
        suppressions that matched a finding, ``codes`` the rules this run reports."""
        return []

    def plan_fix(self, ctx: FileContext, job: SiteJob, style: str) -> Rewrite:
        """The rewrite that fixes ``job`` in ``style`` (``minimal``/``helper``); raises
        :class:`~driftcheck.fix.plan.Refusal` with the reason when it cannot be made."""
        raise NotImplementedError(f"{self.code} offers no fix")

    def reads_single_checks(self, universes: Sequence[Universe], config: Config) -> bool:
        """Whether a run over ``universes`` must analyse every file holding only single checks
        for this rule (before any is judged): by :attr:`reads`, true unless the rule reads
        only enumerations (and ``min-overlap`` is 2 or more) or suppressions."""
        if self.reads == "enumerations":
            return config.min_overlap < 2
        return self.reads != "suppressions"

    def single_check_directories(self, run: RunIndex) -> set[str]:
        """The directories whose files holding only single checks this rule reads, asked once
        every other file is scanned (``run``); none by default."""
        return set()


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
    applicability: tuple[Applicability, ...] = (),
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
        site=site,
        inferred=family.inferred,
        related=canonical_related(family),
        applicability=applicability,
    )


def canonical_related(family: Family) -> tuple[Related, ...]:
    """Where the canonical is defined (nothing for a family inferred from copies)."""
    if family.inferred or not family.path:
        return ()
    return (Related(family.path, family.line, 0, f"{family.name} is defined here"),)


def subject(site: Site) -> str:
    """How a message names the site: the assigned attribute, the function, or the condition."""
    if site.context in ("assign", "return", "keyword", "ternary") and site.role.name:
        return site.role.name
    if site.context == "match":
        return f"case in {site.symbol}"
    return f"condition in {site.symbol}"


def unread_note(judgement: Judgement) -> str:
    """``; nothing reads top_k: delete it rather than widen it`` for a site whose only effect
    is attributes nothing reads (:mod:`driftcheck.liveness`): it decides nothing today, so
    its finding is a warning."""
    if not judgement.unread:
        return ""
    return f"; nothing reads {', '.join(judgement.unread)}: delete it rather than widen it"


def provenance_note(family: Family) -> str:
    """`` (inferred from ...; no helper defines it)`` for a family read from the tree's
    copies: every message about such a family says so."""
    return f" ({family.provenance()}; no helper defines it)" if family.inferred else ""


def noun(family: Family, universe: Universe) -> str:
    """``DeepEP-family backends``, ``is_cuda_alike members``: how messages name members."""
    return f"{family.label or family.name} {universe.noun}"


def effective_members(site: Site, universe: Universe) -> frozenset[str]:
    """The members a site covers, counting canonical helpers it calls."""
    return covered_members(site, universe)


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
    covered = effective_members(site, universe) | site.settled
    missing = tuple(m for m in family.members if m not in covered)
    extra = tuple(m for m in present if m not in family.member_set)
    return tuple(present), missing, extra
