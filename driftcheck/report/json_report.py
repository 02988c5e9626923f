"""The stable JSON contract (documented in docs/json-output.md)."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..model import Finding, Problem, Universe


def json_document(
    universe: Universe | None, findings: list[Finding], problems: list[Problem]
) -> dict[str, Any]:
    """``{"version", "canonical", "findings", "errors"}`` with deterministic ordering."""
    canonical = {}
    if universe is not None:
        canonical = {f.name: list(f.members) for f in universe.families}
    return {
        "version": __version__,
        "canonical": canonical,
        "findings": [f.to_dict() for f in findings],
        "errors": [p.to_dict() for p in problems],
    }


def render_json(universe: Universe | None, findings: list[Finding], problems: list[Problem]) -> str:
    """The JSON document as text (sorted keys, two-space indent, trailing newline)."""
    return json.dumps(json_document(universe, findings, problems), indent=2, sort_keys=True) + "\n"
