"""Human-readable output: one line per finding, ruff-style, and a summary."""

from __future__ import annotations

from collections import Counter

import click

from ..model import Finding, Problem


def format_finding(finding: Finding, color: bool, prefix: str = "") -> str:
    """``path:line:col: CODE message`` (column 1-based; ``prefix`` makes the path clickable
    from the working directory when the root is below it)."""
    where = f"{prefix}{finding.path}:{finding.span.line}:{finding.span.col + 1}:"
    code = finding.code if finding.severity == "error" else f"{finding.code} ({finding.severity})"
    if color:
        where = click.style(where, bold=True)
        code = click.style(code, fg="red" if finding.severity == "error" else "yellow", bold=True)
    return f"{where} {code} {finding.message}"


def format_problem(problem: Problem, color: bool, prefix: str = "") -> str:
    """``path:line: error: message``."""
    text = f"{prefix}{problem}" if prefix and not problem.path.startswith("/") else str(problem)
    return click.style(text, fg="red") if color else text


def summary(findings: list[Finding], files: int, baselined: int = 0, problems: int = 0) -> str:
    """``Found 3 findings (2 errors, 1 warning) in 120 files.`` (plus problems and baseline)."""
    if not findings:
        base = f"No drift found in {files} file{'s' if files != 1 else ''}."
    else:
        counts = Counter(f.severity for f in findings)
        parts = [
            f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}"
            for s in ("error", "warning", "info")
            if counts[s]
        ]
        n = len(findings)
        base = f"Found {n} finding{'s' if n != 1 else ''} ({', '.join(parts)}) in {files} file{'s' if files != 1 else ''}."
    if problems:
        base += f" {problems} file{'s' if problems != 1 else ''} could not be checked."
    if baselined:
        base += f" {baselined} baselined finding{'s' if baselined != 1 else ''} not shown."
    return base
