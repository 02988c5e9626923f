"""Turn sites into findings: the rule catalogue, policies and suppressions.

For each site the judge finds its universe and the family it enumerates
(:func:`driftcheck.families.family_for`), applies per-site policies and suppression comments,
and asks every selected rule. Rules own their hooks: :meth:`Rule.prepare` sees every file's
scan first (cross-file rules), :meth:`Rule.finish_file` runs after each file (stale
suppressions). Rules come from :mod:`driftcheck.rules`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from driftcheck.rules import CATALOGUE, Judgement, Rule
from driftcheck.rules.applicability import SameRoleSites
from driftcheck.rules.base import RunIndex

from .config import Config
from .families import family_for
from .keys import finding_key
from .liveness import AttributeReads
from .model import Finding, Site, Universe
from .scan import FileScan
from .suppressions import Suppression


def _applicable(suppression: Suppression, site: Site, statement_line: int) -> bool:
    first = min(site.span.line, statement_line)
    return first - 1 <= suppression.line <= site.span.end_line


class Judge:
    """Judges every site of a run against its universe's families and the configuration."""

    def __init__(
        self,
        universes: Mapping[str, Universe],
        primary: Universe,
        config: Config,
        codes: set[str],
        latent: dict[str, dict[str, str]] | None = None,
        reads: AttributeReads | None = None,
    ) -> None:
        self.reads = reads
        self.universes = universes
        self.primary = primary
        self.config = config
        self.codes = codes
        self.rules: list[Rule] = [CATALOGUE[c]() for c in sorted(codes) if c in CATALOGUE]
        # the rules that honour allow-missing but did not run (see :meth:`unjudged`)
        self.unrun: list[Rule] = [
            rule()
            for code, rule in sorted(CATALOGUE.items())
            if code not in codes and rule.honours_allow_missing
        ]
        self.latent = latent or {}
        self.same_role: SameRoleSites | None = None

    def prepare(self, scans: Mapping[str, FileScan]) -> None:
        """Run every rule's cross-file hook over the whole run's scans, and index the sites
        by role for the fixes' applicability."""
        run = RunIndex(scans, self.universes, self.config, self.primary)
        self.same_role = SameRoleSites(run, self.latent)
        for rule in self.rules:
            rule.prepare(run)

    def universe_of(self, site: Site) -> Universe:
        """The universe ``site`` belongs to (the primary one for an unnamed universe)."""
        return self.universes.get(site.universe, self.primary)

    def judge_file(self, scan: FileScan) -> list[Finding]:
        """Findings for one file, suppressions applied, plus the per-file hooks' findings."""
        findings: list[Finding] = []
        used: set[int] = set()
        for site in scan.sites:
            findings.extend(self._judge_site(site, scan.suppressions, used))
        for rule in self.rules:
            findings.extend(rule.finish_file(scan, used, self.codes))
        return findings

    def _judge_site(
        self, site: Site, suppressions: list[Suppression], used: set[int]
    ) -> list[Finding]:
        nearby = [
            s
            for s in suppressions
            if s.error is None and _applicable(s, site, site.statement_line or site.span.line)
        ]
        allowed_missing, allowed_extra, ignored = _allowed(nearby)
        policy = self.config.policy_for(site.path, site.symbol)
        if policy is not None:
            allowed_missing |= policy.allow_missing
            allowed_extra |= policy.allow_extra
            if policy.kind:
                site = replace(site, kind=policy.kind)  # type: ignore[arg-type]
        universe = self.universe_of(site)
        judgement = Judgement(
            universe=universe,
            min_overlap=self.config.min_overlap,
            family=family_for(site, universe, self.config.min_overlap),
            allowed_missing=frozenset(allowed_missing),
            allowed_extra=frozenset(allowed_extra),
            latent=self.latent.get(site.path, {}),
            unread=self.reads.unread(site) if self.reads is not None else (),
            same_role=self.same_role,
        )
        results: list[Finding] = []
        for rule in self.rules:
            for finding in rule.check(site, judgement):
                if rule.code in ignored or "*" in ignored:
                    self._mark(nearby, used, "ignore", {rule.code, "*"})
                    continue
                results.append(replace(finding, key=finding_key(finding, site.text)))
            if allowed_missing:
                unfiltered = rule.check(site, replace(judgement, allowed_missing=frozenset()))
                reported = {m for f in unfiltered for m in f.missing}
                for s in nearby:
                    if s.verb == "allow-missing" and set(s.items) & reported:
                        used.add(s.line)
        if allowed_extra:
            for s in nearby:
                if s.verb == "allow-extra" and set(s.items) & set(site.members):
                    used.add(s.line)
        if allowed_missing and self.unrun:
            used |= self.unjudged(site, judgement, nearby, used)
        return results

    def unjudged(
        self, site: Site, judgement: Judgement, nearby: list[Suppression], used: set[int]
    ) -> set[int]:
        """The lines of the ``allow-missing`` suppressions on ``site`` that no rule of this run
        matched but that a rule honouring them, which did not run, may need: one whose
        judgement of the site, asked now, reports a member they accept, or a cross-file rule
        (it cannot be asked about one site). DC004 leaves them alone: a suppression is stale
        only when every rule it could apply to ran and none matched (as ruff's RUF100 calls a
        ``# noqa`` code unused only when its rule ran)."""
        pending = [s for s in nearby if s.verb == "allow-missing" and s.line not in used]
        unfiltered = replace(judgement, allowed_missing=frozenset())
        kept: set[int] = set()
        for rule in self.unrun:
            if not pending:
                break
            if rule.cross_file():
                return kept | {s.line for s in pending}
            reported = {m for f in rule.check(site, unfiltered) for m in f.missing}
            kept |= {s.line for s in pending if set(s.items) & reported}
            pending = [s for s in pending if s.line not in kept]
        return kept

    @staticmethod
    def _mark(nearby: list[Suppression], used: set[int], verb: str, codes: set[str]) -> None:
        for s in nearby:
            if s.verb == verb and (not s.items or set(s.items) & codes):
                used.add(s.line)


def _allowed(nearby: list[Suppression]) -> tuple[set[str], set[str], set[str]]:
    """What the suppressions on a site accept: its missing members, its extra members, and
    the codes it ignores (``*``: every code)."""
    allowed_missing: set[str] = set()
    allowed_extra: set[str] = set()
    ignored: set[str] = set()
    for s in nearby:
        if s.verb == "allow-missing":
            allowed_missing |= set(s.items)
        elif s.verb == "allow-extra":
            allowed_extra |= set(s.items)
        elif s.verb == "ignore":
            ignored |= set(s.items) or {"*"}
    return allowed_missing, allowed_extra, ignored
