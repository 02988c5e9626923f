"""SARIF 2.1.0 output (``--format sarif``) for code-scanning services and editors.

One run with the full rule catalogue as ``tool.driver.rules`` (help rendered from the rule
modules, as ``driftcheck explain`` shows it), one result per finding, a ``fixes`` entry when
the finding carries a fix, ``relatedLocations`` for the places it rests on (``Finding.related``:
the canonical's definition, DC020's siblings and sites of the same use, DC021's refusal), and
``invocations[0]`` saying whether every file could be checked
(problems become ``toolExecutionNotifications``). ``partialFingerprints`` carry the
line-independent finding key, so a result keeps its identity when code above it moves.

Artifact URIs are relative to the working directory (``%SRCROOT%``) when the file lies under
it, as GitHub code scanning expects when driftcheck runs from the repository root, else
relative to the project root (``PROJECTROOT``, the canonical path), both declared in
``originalUriBaseIds``. Columns are converted from the engine's 0-based UTF-8
byte offsets to SARIF's default 1-based UTF-16 code units.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from driftcheck.rules import CATALOGUE, Rule

from .. import __version__
from ..explain import render_rule
from ..fix.held import applied_note
from ..model import Finding, Problem, Span
from .columns import ColumnMap

if TYPE_CHECKING:
    from ..engine import CheckResult

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SRCROOT = "%SRCROOT%"
PROJECTROOT = "PROJECTROOT"
FINGERPRINT = "driftcheck/v1"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


class ArtifactLocator:
    """Builds ``artifactLocation`` objects: relative to the working directory (``%SRCROOT%``)
    when the file lies under it, else its canonical path relative to the project root
    (``PROJECTROOT``); a path outside both is an absolute file URI."""

    def __init__(self, root: Path, cwd: Path) -> None:
        self.root = root
        self.cwd = cwd

    def location(self, path: str) -> dict[str, Any]:
        """``{"uri", "uriBaseId"}`` for a canonical (or absolute) path."""
        absolute = Path(
            os.path.normpath(Path(path) if Path(path).is_absolute() else self.root / path)
        )
        for base, base_id in ((self.cwd, SRCROOT), (self.root, PROJECTROOT)):
            try:
                rel = absolute.relative_to(base)
            except ValueError:
                continue
            return {"uri": _uri_path(rel.as_posix()), "uriBaseId": base_id}
        return {"uri": absolute.as_uri()}


def _uri_path(posix: str) -> str:
    """Percent-encode what a relative URI reference may not contain literally."""
    return quote(posix, safe="/-._~!$&'()*+,;=@")


def _first_section(explanation: str) -> str:
    """The text of the explanation's first ``##`` section ("What it does"), as one paragraph."""
    body: list[str] = []
    for line in explanation.strip().splitlines():
        if line.startswith("## "):
            if body:
                break
            continue
        body.append(line.strip())
    return " ".join(part for part in body if part)


def rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    """``reportingDescriptor`` for one rule: names, descriptions, help and default level."""
    help_markdown = render_rule(rule.code) or rule.summary
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary + "."},
        "fullDescription": {"text": _first_section(rule.explanation) or rule.summary + "."},
        "help": {"text": help_markdown, "markdown": help_markdown},
        "defaultConfiguration": {"level": LEVELS[rule.severity], "enabled": rule.default_enabled},
        "properties": {"fixable": rule.fixable(), "tags": ["correctness", "predicate-drift"]},
    }


def _region(span: Span, path: str, columns: ColumnMap) -> dict[str, int]:
    return {
        "startLine": span.line,
        "startColumn": columns.column(path, span.line, span.col),
        "endLine": span.end_line,
        "endColumn": columns.column(path, span.end_line, span.end_col),
    }


def _fix(finding: Finding, locator: ArtifactLocator, columns: ColumnMap) -> dict[str, Any] | None:
    """The finding's fix as one SARIF ``fix``: the rewrite plus its further edits (the helper's
    import, a receiver variable left unused), in file order, as the fixer applies them."""
    fix = finding.fix
    if fix is None or not fix.writes:  # every member held back: nothing to apply
        return None
    edits = sorted([(fix.span, fix.replacement), *fix.edits], key=lambda edit: edit[0])
    what = fix.change or f"the predicate becomes true for {', '.join(fix.flips) or 'nothing'}"
    return {
        "description": {"text": f"{fix.style} fix: {what}{applied_note(fix)}"},
        "artifactChanges": [
            {
                "artifactLocation": locator.location(finding.path),
                "replacements": [
                    {
                        "deletedRegion": _region(span, finding.path, columns),
                        "insertedContent": {"text": text},
                    }
                    for span, text in edits
                ],
            }
        ],
    }


def sarif_result(
    finding: Finding, rule_index: dict[str, int], locator: ArtifactLocator, columns: ColumnMap
) -> dict[str, Any]:
    """One SARIF ``result`` for ``finding``."""
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": locator.location(finding.path),
            "region": _region(finding.span, finding.path, columns),
        }
    }
    if finding.symbol:
        location["logicalLocations"] = [{"fullyQualifiedName": finding.symbol}]
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT: finding.key},
        "properties": {
            "canonical": finding.canonical,
            "members": list(finding.members),
            "missing": list(finding.missing),
            "extra": list(finding.extra),
            "kind": finding.kind,
        },
    }
    if finding.related:
        result["relatedLocations"] = [
            {
                "id": index,
                "physicalLocation": {
                    "artifactLocation": locator.location(place.path),
                    "region": {
                        "startLine": place.line,
                        "startColumn": columns.column(place.path, place.line, place.col),
                    },
                },
                "message": {"text": place.note},
            }
            for index, place in enumerate(finding.related)
        ]
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.latent:
        result["properties"]["latent"] = dict(sorted(finding.latent.items()))
    if finding.fix is not None:
        result["properties"]["fixApplicability"] = [a.to_dict() for a in finding.fix.members]
        result["properties"]["heldBack"] = [
            {"member": m, "reason": why} for m, why in finding.fix.held_back
        ]
    fix = _fix(finding, locator, columns)
    if fix is not None:
        result["fixes"] = [fix]
    elif finding.fix_refusal is not None:
        result["properties"]["fixRefused"] = finding.fix_refusal
    return result


def _notification(problem: Problem, locator: ArtifactLocator) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": locator.location(problem.path)}
    if problem.line:
        physical["region"] = {"startLine": problem.line}
    return {
        "level": "error",
        "message": {"text": problem.message},
        "locations": [{"physicalLocation": physical}],
    }


def sarif_document(
    result: CheckResult, findings: list[Finding], cwd: Path | None = None
) -> dict[str, Any]:
    """The SARIF log for one run as plain data (``cwd`` defaults to the working directory)."""
    here = Path(os.path.normpath(cwd or result.project.cwd))
    locator = ArtifactLocator(result.root, here)
    columns = ColumnMap(result.root)
    rules = [CATALOGUE[code] for code in sorted(CATALOGUE)]
    rule_index = {rule.code: index for index, rule in enumerate(rules)}
    notifications = [_notification(p, locator) for p in result.problems]
    notifications += [{"level": "warning", "message": {"text": w}} for w in result.warnings]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "driftcheck",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [rule_descriptor(rule) for rule in rules],
            }
        },
        "invocations": [
            {
                "executionSuccessful": not result.problems,
                "toolExecutionNotifications": notifications,
            }
        ],
        "originalUriBaseIds": {
            SRCROOT: {"uri": here.as_uri().rstrip("/") + "/"},
            PROJECTROOT: {"uri": result.root.as_uri().rstrip("/") + "/"},
        },
        "results": [sarif_result(f, rule_index, locator, columns) for f in findings],
        "columnKind": "utf16CodeUnits",
    }
    if result.universe is not None:
        run["properties"] = {
            "canonical": {fam.name: list(fam.members) for fam in result.universe.families}
        }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(result: CheckResult, findings: list[Finding]) -> str:
    """The SARIF log as text (two-space indent, trailing newline)."""
    return json.dumps(sarif_document(result, findings), indent=2, ensure_ascii=False) + "\n"
