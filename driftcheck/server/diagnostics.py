"""Findings and problems as the protocol's diagnostics.

A finding becomes a diagnostic at its site with its rule code, its severity, its message, a
``codeDescription`` linking the rule's documentation (the rule's page in ``docs/rules/`` of the
driftcheck checkout it runs from, a ``file:`` URI; none where driftcheck was installed without its
checkout: driftcheck has no hosted documentation, and ``driftcheck explain CODE`` prints the same
text), and related information for each place it rests on (``Finding.related``: the canonical's
definition, a DC020 finding's evidence). A problem (a syntax error, an undecodable file)
becomes an error diagnostic on its line with no code, as ruff reports a syntax error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from lsprotocol import types
from pygls.uris import from_fs_path

from driftcheck.model import Finding, Problem, Related
from driftcheck.project import Project

from .positions import LineMap, split_lines

SOURCE = "driftcheck"
RULE_DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"  # in a checkout's install
SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}
SKIPPED = "; file skipped"  # the CLI's words for a file it leaves out; an editor keeps it open


def rule_url(code: str) -> str | None:
    """The rule's documentation page in driftcheck's checkout, or None without one."""
    page = RULE_DOCS / f"{code}.md"
    return from_fs_path(str(page)) if page.is_file() else None


def _code_description(code: str) -> types.CodeDescription | None:
    url = rule_url(code)
    return types.CodeDescription(href=url) if url is not None else None


def finding_diagnostic(
    finding: Finding,
    lines: LineMap,
    project: Project,
    lines_of: Callable[[Path], LineMap | None],
) -> types.Diagnostic:
    """``finding`` in the document ``lines`` maps; ``lines_of`` gives another file's lines
    (for a related place's column), or None when it cannot be read."""
    span = finding.span
    return types.Diagnostic(
        range=types.Range(
            lines.position(span.line, span.col), lines.position(span.end_line, span.end_col)
        ),
        severity=SEVERITY[finding.severity],
        code=finding.code,
        code_description=_code_description(finding.code),
        source=SOURCE,
        message=finding.message,
        related_information=[_related(r, project, lines_of) for r in finding.related] or None,
        data={"key": finding.key},
    )


def _related(
    related: Related, project: Project, lines_of: Callable[[Path], LineMap | None]
) -> types.DiagnosticRelatedInformation:
    path = project.path_of(related.path)
    lines = lines_of(path) if related.col else None
    if lines is None:
        position = types.Position(max(0, related.line - 1), 0)
    else:
        position = lines.position(related.line, related.col)
    return types.DiagnosticRelatedInformation(
        location=types.Location(
            uri=from_fs_path(str(path)) or "", range=types.Range(position, position)
        ),
        message=related.note,
    )


def problem_diagnostic(problem: Problem, lines: LineMap) -> types.Diagnostic:
    """A problem of the document (its line, or the first line when it has none)."""
    return types.Diagnostic(
        range=lines.line_range(problem.line or 1),
        severity=types.DiagnosticSeverity.Error,
        source=SOURCE,
        message=problem.message.removesuffix(SKIPPED),
    )


def carried_over(
    old_text: str, diagnostics: Sequence[types.Diagnostic], new_text: str
) -> list[types.Diagnostic]:
    """The ``diagnostics`` of ``old_text`` whose lines ``new_text`` still holds unchanged
    (before the first changed line, or after the last), moved to where those lines are now."""
    old, new = split_lines(old_text), split_lines(new_text)
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    shift = len(new) - len(old)
    kept = []
    for diagnostic in diagnostics:
        first, last = diagnostic.range.start.line, diagnostic.range.end.line
        if last < prefix:
            kept.append(diagnostic)
        elif first >= len(old) - suffix:
            moved = types.Range(
                types.Position(first + shift, diagnostic.range.start.character),
                types.Position(last + shift, diagnostic.range.end.character),
            )
            kept.append(attrs.evolve(diagnostic, range=moved))
    return kept
