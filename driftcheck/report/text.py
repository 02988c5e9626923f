"""Human-readable output: one line per finding, ruff-style, and a summary."""

from __future__ import annotations

from collections import Counter

import click

from ..model import Finding, Problem
from .columns import ColumnMap


def format_finding(
    finding: Finding, color: bool, path: str | None = None, columns: ColumnMap | None = None
) -> str:
    """``path:line:col: CODE message`` (column 1-based, in characters when ``columns`` reads
    the file, as ruff and editors count; ``path`` is the display path, the finding's
    canonical path by default)."""
    span = finding.span
    col = columns.column(finding.path, span.line, span.col) if columns else span.col + 1
    where = f"{path or finding.path}:{span.line}:{col}:"
    code = finding.code if finding.severity == "error" else f"{finding.code} ({finding.severity})"
    if color:
        where = click.style(where, bold=True)
        code = click.style(code, fg="red" if finding.severity == "error" else "yellow", bold=True)
    return f"{where} {code} {finding.message}"


def format_problem(problem: Problem, color: bool, path: str | None = None) -> str:
    """``path:line: error: message`` (``path``: how to show the problem's path)."""
    text = str(Problem(path, problem.line, problem.message)) if path is not None else str(problem)
    return click.style(text, fg="red") if color else text


def _files(count: int) -> str:
    return f"{count} file{'s' if count != 1 else ''}"


def _paths(count: int) -> str:
    return f"{count} path{'s' if count != 1 else ''}"


def summary(findings: list[Finding], files: int, baselined: int = 0, problems: int = 0) -> str:
    """``Found 3 findings (2 errors, 1 warning) in 120 files.`` (plus problems and baseline).

    ``files`` counts the files checked; ``problems`` the paths named by the errors printed
    beside the findings (files, links or directories that could not be checked)."""
    if not findings and not files:
        if problems:
            return f"{_paths(problems)} could not be checked; no other file was checked."
        return "No Python file to check: the paths given hold none that is included."
    if not findings:
        base = f"No drift found in {_files(files)}."
    else:
        counts = Counter(f.severity for f in findings)
        parts = [
            f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}"
            for s in ("error", "warning", "info")
            if counts[s]
        ]
        n = len(findings)
        base = f"Found {n} finding{'s' if n != 1 else ''} ({', '.join(parts)}) in {_files(files)}."
    if problems:
        base += f" {_paths(problems)} could not be checked."
    if baselined:
        base += f" {baselined} baselined finding{'s' if baselined != 1 else ''} not shown."
    return base
