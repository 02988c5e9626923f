"""Turn sites into findings: apply the rule catalogue, policies and suppressions.

Also reports suppressions that matched nothing (DC004). Rules come from
:mod:`driftcheck.rules`; selection follows ruff's habit (``--select``/``--ignore`` by code or
prefix, with each rule's ``default_enabled`` deciding the default set).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from driftcheck.rules import CATALOGUE, Judgement, Rule
from driftcheck.rules.base import Sibling

from .config import Config
from .model import Finding, Site, Span, Universe
from .scan import FileScan
from .suppressions import Suppression


def finding_key(finding: Finding, site_text: str) -> str:
    """A baseline key that survives line moves: code, path, symbol, normalised text, missing."""
    normalised = re.sub(r"\s+", " ", re.sub(r"#[^\n]*", "", site_text)).strip()
    payload = "|".join(
        [finding.code, finding.path, finding.symbol, normalised, ",".join(finding.missing)]
    )
    return hashlib.blake2b(payload.encode(), digest_size=10).hexdigest()


GENERIC_ROLES = {"", "__init__", "forward", "__call__", "main", "run", "apply"}


def sibling_key(site: Site) -> str | None:
    """The role a site plays, comparable across model files (None when too generic)."""
    if site.kind != "property" or site.role in GENERIC_ROLES:
        return None
    return f"{site.context if site.context == 'return' else 'value'}:{site.role}"


def _applicable(suppression: Suppression, site: Site, statement_line: int) -> bool:
    first = min(site.span.line, statement_line)
    return first - 1 <= suppression.line <= site.span.end_line


class Judge:
    """Judges every site of a run against the universe and the configuration."""

    def __init__(
        self,
        universe: Universe,
        config: Config,
        codes: set[str],
        latent: dict[str, dict[str, str]] | None = None,
    ) -> None:
        self.universe = universe
        self.config = config
        self.codes = codes
        self.rules: list[Rule] = [CATALOGUE[c]() for c in sorted(codes) if c in CATALOGUE]
        self.latent = latent or {}
        self.siblings: dict[str, list[Sibling]] = {}

    def index_siblings(self, scans: dict[str, FileScan]) -> None:
        """Group the sites of model files (files with an ``EntryClass``) by role.

        In path order: the first sibling is the one a DC020 message cites, and ``scans`` is
        in the order files came back (cache hits first, then the workers' completion order),
        so a warm run cited another sibling than a cold one."""
        for path, scan in sorted(scans.items()):
            if not scan.entry_classes:
                continue
            for site in scan.sites:
                key = sibling_key(site)
                if key is None:
                    continue
                covered = set(site.members)
                for helper in site.helpers:
                    family = self.universe.family(helper)
                    if family is not None:
                        covered |= family.member_set
                self.siblings.setdefault(key, []).append(
                    Sibling(path, site.symbol, site.span.line, frozenset(covered), site.helpers)
                )

    def judge_file(self, scan: FileScan) -> list[Finding]:
        """Findings for one file, suppressions applied, plus DC004 for unused suppressions."""
        findings: list[Finding] = []
        used: set[int] = set()
        for site in scan.sites:
            findings.extend(self._judge_site(site, scan.suppressions, used))
        if "DC004" in self.codes:
            findings.extend(self._stale(scan, used))
        return findings

    def _judge_site(
        self, site: Site, suppressions: list[Suppression], used: set[int]
    ) -> list[Finding]:
        nearby = [
            s
            for s in suppressions
            if s.error is None and _applicable(s, site, site.statement_line or site.span.line)
        ]
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
        policy = self.config.policy_for(site.path, site.symbol)
        if policy is not None:
            allowed_missing |= policy.allow_missing
            allowed_extra |= policy.allow_extra
            if policy.kind:
                site = replace(site, kind=policy.kind)  # type: ignore[arg-type]
        judgement = Judgement(
            universe=self.universe,
            min_overlap=self.config.min_overlap,
            allowed_missing=frozenset(allowed_missing),
            allowed_extra=frozenset(allowed_extra),
            latent=self.latent.get(site.path, {}),
            siblings=self._siblings_of(site),
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
        return results

    def _siblings_of(self, site: Site) -> tuple[Sibling, ...]:
        key = sibling_key(site)
        if key is None:
            return ()
        return tuple(s for s in self.siblings.get(key, ()) if s.path != site.path)

    @staticmethod
    def _mark(nearby: list[Suppression], used: set[int], verb: str, codes: set[str]) -> None:
        for s in nearby:
            if s.verb == verb and (not s.items or set(s.items) & codes):
                used.add(s.line)

    def _stale(self, scan: FileScan, used: set[int]) -> list[Finding]:
        stale = []
        for s in scan.suppressions:
            if s.error is None and s.line in used:
                continue
            if s.verb == "ignore" and s.items and not set(s.items) & self.codes and s.error is None:
                continue  # silences a rule this run does not report: cannot judge it
            reason = s.error or f"'{s.text.strip()}' matches no finding at this site; remove it"
            span = Span(s.line, s.col, s.line, s.col + len(s.text))
            finding = Finding(
                code="DC004",
                severity="error",
                path=scan.path,
                span=span,
                symbol="",
                canonical="",
                members=(),
                missing=(),
                extra=tuple(s.items),
                message=reason,
            )
            stale.append(replace(finding, key=finding_key(finding, s.text)))
        return stale
