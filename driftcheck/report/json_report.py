"""The stable JSON contract (documented in docs/json-output.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .. import __version__
from ..model import Finding, Problem, Universe


def json_document(
    universes: Iterable[Universe],
    findings: list[Finding],
    problems: list[Problem],
    root: str | None = None,
) -> dict[str, Any]:
    """``{"version", "root", "canonical", "findings", "errors"}``, deterministically ordered.

    ``universes`` are every universe of the run (none when it could not be read): the header
    names every family of each. ``root`` is the project root (relative to the working
    directory when under it): every ``path`` is relative to it (a canonical path)."""
    canonical = {f.name: list(f.members) for u in universes for f in u.families}
    return {
        "version": __version__,
        "root": root,
        "canonical": canonical,
        "findings": [f.to_dict() for f in findings],
        "errors": [p.to_dict() for p in problems],
    }


def render_json(
    universes: Iterable[Universe],
    findings: list[Finding],
    problems: list[Problem],
    root: str | None = None,
) -> str:
    """The JSON document as text (sorted keys, two-space indent, trailing newline)."""
    document = json_document(universes, findings, problems, root)
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
