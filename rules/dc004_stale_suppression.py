"""DC004: a suppression comment that matches nothing (or is malformed)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from driftcheck.keys import finding_key
from driftcheck.model import Finding, Span

from .base import Example, Rule

if TYPE_CHECKING:
    from driftcheck.scan import FileScan


class StaleSuppression(Rule):
    """A ``# driftcheck:`` comment that no longer accepts any divergence, or lacks a reason."""

    code = "DC004"
    name = "stale-suppression"
    reads = "suppressions"
    findings_read_every_site = False  # no same-role evidence, no liveness
    severity = "error"
    summary = "Suppression comment matches no finding, or is malformed"
    explanation = """\
## What it does
Reports `# driftcheck: allow-missing[...] -- reason` (and `allow-extra`, `ignore`) comments
that no longer match a finding at their site: the member was added, the list was replaced by
the helper, or the helper dropped the member. Also reports suppressions without a reason or
without the members they accept.

A suppression is judged only against the rules it could apply to, and only when every one
of them ran (as ruff's RUF100 calls a `# noqa` code unused only when its rule is enabled):
`ignore[DC001, ...]` applies to the codes it names (a bare `ignore` to every rule but DC004), and
`allow-missing[...]` to the rules that report missing members (DC001, DC003, DC010, DC011,
DC020, DC021) that may judge its site. A rule of those that did not run is asked about the
site (a rule that reads every file first, DC020, cannot be, and leaves the suppression
unjudged), so `--select DC004` or `--ignore DC001` never reports a suppression the full run
needs. `allow-extra[...]` matches a site that lists the member, whatever ran, and a
suppression no site is in reach of is stale under any selection. Suppressions are read with
the tokenizer, so a syntax error elsewhere in the file leaves them in force.

## Why it matters
A stale suppression hides the next real drift at that line and documents a decision that no
longer holds.

## Fix
Delete the comment, or narrow it to the members still deliberately left out.
"""
    VALID = [
        Example(
            "def uses_ep_a2a() -> bool:\n"
            "    b = get_moe_a2a_backend()\n"
            "    return (  # driftcheck: allow-missing[pplx] -- not validated here\n"
            "        b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori()\n"
            "    )\n"
        )
    ]
    INVALID = [
        Example(
            "def uses_ep_a2a() -> bool:\n"
            "    # driftcheck: allow-missing[pplx] -- not validated here\n"
            "    return is_deepep_class_backend()\n",
            missing=(),
        ),
        Example(
            "def uses_ep_a2a() -> bool:\n"
            "    b = get_moe_a2a_backend()\n"
            "    return b.is_deepep() or b.is_mori()  # driftcheck: allow-missing[pplx]\n",
            missing=(),
        ),
    ]

    def finish_file(self, scan: FileScan, used: set[int], codes: set[str]) -> list[Finding]:
        """Every suppression of the file that matched no finding, or is malformed."""
        stale = []
        for s in scan.suppressions:
            if s.error is None and s.line in used:
                continue
            if s.verb == "ignore" and s.error is None and not self._all_ran(s.items, codes):
                continue  # silences a rule this run does not report: cannot judge it
            reason = s.error or f"'{s.text.strip()}' matches no finding at this site; remove it"
            span = Span(s.line, s.col, s.line, s.col + len(s.text))
            finding = Finding(
                code=self.code,
                severity=self.severity,
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

    def _all_ran(self, items: tuple[str, ...], codes: set[str]) -> bool:
        """Whether every rule an ``ignore[...]`` names ran (a bare ``ignore`` names every rule
        but this one; codes that name no rule are left out, and one naming none is judged by
        no run)."""
        from driftcheck.rules import CATALOGUE

        named = set(items) & set(CATALOGUE) if items else set(CATALOGUE) - {self.code}
        return bool(named) and named <= codes
