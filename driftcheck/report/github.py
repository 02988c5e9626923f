"""GitHub Actions annotations (``--format github``): one workflow command per finding.

``::error file=F,line=L,col=C,endLine=EL,endColumn=EC,title=DC001::message`` — ``error``,
``warning`` or ``notice`` after the finding's severity. Columns are 1-based characters (as
the text output counts them, not UTF-8 bytes) and given only
when the span is on one line: GitHub's annotations support a column range on a single line
only and reject or drop columns otherwise. Files that could not be checked become
``::error`` commands titled ``driftcheck``.

Escaping follows the Actions toolkit: in the message ``%``, ``\\r`` and ``\\n``; in property
values also ``:`` and ``,``. Paths are made relative to the working directory (GitHub
resolves ``file=`` against the checkout, where the workflow step runs), else canonical paths.
"""

from __future__ import annotations

from ..model import Finding, Problem
from ..project import Project
from .columns import ColumnMap

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """Escape a workflow command's message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, properties: list[tuple[str, str | int]]) -> str:
    """One workflow command line: ``::kind k=v,k=v::message``."""
    props = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    return f"::{kind} {props}::{escape_data(message)}"


def finding_command(
    finding: Finding, project: Project | None = None, columns: ColumnMap | None = None
) -> str:
    """The annotation for one finding (``file=`` is the project's display path; columns in
    characters when ``columns`` reads the file, else UTF-8 bytes)."""
    span = finding.span
    shown = project.display(finding.path) if project is not None else finding.path
    properties: list[tuple[str, str | int]] = [("file", shown), ("line", span.line)]
    if span.line == span.end_line:
        start, end = span.col + 1, span.end_col + 1
        if columns is not None:
            start = columns.column(finding.path, span.line, span.col)
            end = columns.column(finding.path, span.end_line, span.end_col)
        properties += [("col", start), ("endLine", span.end_line), ("endColumn", end)]
    else:
        properties.append(("endLine", span.end_line))
    properties.append(("title", finding.code))
    return command(COMMANDS[finding.severity], finding.message, properties)


def problem_command(problem: Problem, project: Project | None = None) -> str:
    """The annotation for a file or configuration driftcheck could not process."""
    shown = project.show(problem.path) if project is not None else problem.path
    properties: list[tuple[str, str | int]] = [("file", shown)]
    if problem.line:
        properties.append(("line", problem.line))
    properties.append(("title", "driftcheck"))
    return command("error", problem.message, properties)


def render_github(
    findings: list[Finding], problems: list[Problem], project: Project | None = None
) -> str:
    """All annotations, findings first, one per line (empty when there is nothing to say);
    columns in characters, read from the project's files."""
    columns = ColumnMap(project.root, "characters") if project is not None else None
    lines = [finding_command(f, project, columns) for f in findings]
    lines += [problem_command(p, project) for p in problems]
    return "".join(line + "\n" for line in lines)
