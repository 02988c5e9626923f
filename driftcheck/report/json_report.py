"""The stable JSON contract (documented in docs/json-output.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .. import __version__
from ..model import Finding, Problem, Universe
from .columns import ColumnMap


def json_document(
    universes: Iterable[Universe],
    findings: list[Finding],
    problems: list[Problem],
    root: str | None = None,
    columns: ColumnMap | None = None,
) -> dict[str, Any]:
    """``{"version", "root", "canonical", "findings", "errors"}``, deterministically ordered.

    ``universes`` are every universe of the run (none when it could not be read): the header
    names every family of each. ``root`` is the project root (relative to the working
    directory when under it): every ``path`` is relative to it (a canonical path). Columns
    are 1-based characters when ``columns`` reads the files, else UTF-8 bytes."""
    canonical = {f.name: list(f.members) for u in universes for f in u.families}
    return {
        "version": __version__,
        "root": root,
        "canonical": canonical,
        "findings": [_finding_dict(f, columns) for f in findings],
        "errors": [p.to_dict() for p in problems],
    }


def _finding_dict(finding: Finding, columns: ColumnMap | None) -> dict[str, Any]:
    data = finding.to_dict()
    if columns is None:
        return data
    span = finding.span
    data["col"] = columns.column(finding.path, span.line, span.col)
    data["end_col"] = columns.column(finding.path, span.end_line, span.end_col)
    if finding.fix is not None:
        fixed, where = finding.fix.span, data["fix"]["span"]
        where["col"] = columns.column(finding.path, fixed.line, fixed.col)
        where["end_col"] = columns.column(finding.path, fixed.end_line, fixed.end_col)
    return data


def render_json(
    universes: Iterable[Universe],
    findings: list[Finding],
    problems: list[Problem],
    root: str | None = None,
    columns: ColumnMap | None = None,
) -> str:
    """The JSON document as text (sorted keys, two-space indent, trailing newline)."""
    document = json_document(universes, findings, problems, root, columns)
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
