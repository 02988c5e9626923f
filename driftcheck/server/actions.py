"""Every code action the server offers, built in one place, as plain proposals.

A proposal is a titled new text for the document, or a refusal with its reason (the client
shows it and offers no edit):

- the quick fixes of a finding, one per fix style (``Add the missing members (minimal)``,
  ``Call the helper``), each exactly what ``driftcheck check --fix --fix-style STYLE`` writes
  for that finding (:func:`driftcheck.fix.apply.attach_fixes` then
  :func:`~driftcheck.fix.apply.apply_fixes`, nothing written), titled with the backends it
  flips (``deepep_v2: False -> True``); where the finding holds members back, each style is
  offered a second time as ``--unsafe-fixes`` writes it, its title ending in ``(unsafe)``:
  choosing a quick fix is the review an unsafe fix asks for, as in ``ruff server``;
- a suppression: ``# driftcheck: allow-missing[...] -- <reason>`` on the site's first line
  (``ignore[CODE]`` for a finding that misses nothing);
- fix all: what ``driftcheck check --fix`` writes for the whole document (with the
  ``unsafeFixes`` setting, what ``--fix --unsafe-fixes`` writes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from driftcheck.engine import CheckResult
from driftcheck.fix.apply import FixOutcome, apply_fixes, attach_fixes, fixable
from driftcheck.model import Finding, Fix
from driftcheck.suppressions import parse_suppressions

from .positions import split_lines

QUICKFIX = "quickfix"
FIX_ALL = "source.fixAll.driftcheck"
STYLES = ("minimal", "helper")
REASON = "<reason>"


@dataclass(frozen=True)
class Proposal:
    """One code action: its title and kind, and the document's new text or why there is none."""

    title: str
    kind: str
    new_text: str | None
    reason: str | None = None
    preferred: bool = False
    finding: Finding | None = None


def _proposal(
    title: str,
    kind: str,
    outcome: tuple[str | None, str | None],
    preferred: bool = False,
    finding: Finding | None = None,
) -> Proposal:
    new_text, reason = outcome
    return Proposal(title, kind, new_text, reason, preferred and new_text is not None, finding)


def flips_title(change: str) -> str:
    """``False -> True for deepep_v2, pplx`` as a title says it: ``deepep_v2, pplx: False -> True``."""
    parts = []
    for group in change.split("; "):
        direction, found, members = group.partition(" for ")
        parts.append(f"{members}: {direction}" if found else group)
    return "; ".join(parts)


def _fixed(result: CheckResult, findings: list[Finding]) -> tuple[str | None, str | None]:
    """The document's text once ``findings`` (their fixes planned) are applied as ``--fix``
    applies them, or None and why nothing would change."""
    refused = [f.fix_refusal for f in findings if f.fix is None and f.fix_refusal]
    if not any(f.fix is not None for f in findings):
        return None, refused[0] if refused else "nothing to fix"
    outcome = apply_fixes(result, findings, write=False)
    for _, new_text in outcome.changes.values():
        return new_text, None
    return None, _refusal(outcome) or "the fix changes nothing"


def _refusal(outcome: FixOutcome) -> str | None:
    """Why applying left the file as it was (a problem, else a note's reason)."""
    for problem in outcome.problems:
        return problem.message.removeprefix("not fixed: ")
    for note in outcome.notes:
        match = re.search(r": not fixed DC\d+: (.*)$", note)
        if match:
            return match.group(1)
    return None


def _title(result: CheckResult, finding: Finding, style: str, fix: Fix | None) -> str:
    """What a fix does, in the action's title."""
    style = fix.style if fix is not None else style
    if style == "helper":
        universe = result.universes.get(finding.site.universe if finding.site else "")
        universe = universe or result.universe
        family = universe.family(finding.canonical) if universe is not None else None
        what = f"Call the helper {family.call_text() if family else finding.canonical}"
    elif finding.missing:
        what = "Add the missing members (minimal)"
    else:
        what = "Remove the redundant member"
    return f"{what}: {flips_title(fix.change)}" if fix is not None else what


def quick_fixes(result: CheckResult, finding: Finding, preferred: str) -> list[Proposal]:
    """The fix of ``finding`` in each style (one when the rule or a policy chooses the style),
    or the reason each is refused; ``preferred`` is the style ``--fix`` would use."""
    if not fixable(finding):
        return []
    proposals: list[Proposal] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    for unsafe in (False, True):
        for style in STYLES:
            planned = attach_fixes(result, [finding], style, unsafe=unsafe)
            fix = planned[0].fix
            outcome = _fixed(result, planned)
            title = _title(result, finding, style, fix)
            offered = {text for _, text, _ in seen}
            if (title, *outcome) in seen or (unsafe and outcome[0] in offered | {None}):
                continue
            seen.add((title, *outcome))
            title += " (unsafe)" if unsafe else ""
            chosen = fix.style if fix is not None else style
            preferred_here = chosen == preferred and not unsafe
            proposals.append(_proposal(title, QUICKFIX, outcome, preferred_here, finding))
    return proposals


def fix_all(result: CheckResult, style: str, unsafe: bool = False) -> Proposal:
    """Every fix of the document, as ``driftcheck check --fix`` makes them (``unsafe``: as
    ``--fix --unsafe-fixes`` makes them)."""
    findings = attach_fixes(result, result.findings, style, unsafe=unsafe)
    return _proposal("Fix all driftcheck findings", FIX_ALL, _fixed(result, findings))


def suppression(text: str, finding: Finding) -> Proposal | None:
    """A comment accepting ``finding`` where it is written (None for a finding about a
    suppression comment itself)."""
    if finding.site is None:
        return None
    verb = "allow-missing" if finding.missing else "ignore"
    items = list(finding.missing) if finding.missing else [finding.code]
    lines = split_lines(text)
    index = finding.span.line - 1
    line = lines[index]
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    existing = [
        s for s in parse_suppressions(text) if s.line == finding.span.line and s.verb == verb
    ]
    if existing:
        merged = [*existing[0].items, *(i for i in items if i not in existing[0].items)]
        start = existing[0].col
        comment = body[start:]
        head = re.match(r"#\s*driftcheck:\s*[\w-]+(?:\[[^\]]*\])?", comment)
        assert head is not None
        body = f"{body[:start]}# driftcheck: {verb}[{', '.join(merged)}]{comment[head.end() :]}"
        shown = f"{verb}[{', '.join(merged)}]"
    else:
        shown = f"{verb}[{', '.join(items)}]"
        comment = f"# driftcheck: {shown} -- {REASON}"
        if _ends_in_code(body):
            body = f"{body}  {comment}"
        else:
            # the line goes on past its end (a backslash, a string): the line above applies too
            first = min(finding.span.line, finding.site.statement_line or finding.span.line)
            index = first - 1
            body = lines[index].rstrip("\r\n")
            indent = body[: len(body) - len(body.lstrip())]
            ending = lines[index][len(body) :] or "\n"
            body = f"{indent}{comment}{ending}{body}"
    lines[index] = body + ending
    return Proposal(f"Suppress with # driftcheck: {shown}", QUICKFIX, "".join(lines), None)


def _ends_in_code(line: str) -> bool:
    """Whether a comment may follow ``line`` (it continues neither with a backslash nor in
    a triple-quoted string it opens)."""
    stripped = line.rstrip()
    return not stripped.endswith("\\") and (line.count('"""') + line.count("'''")) % 2 == 0
