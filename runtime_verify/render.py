"""``driftcheck verify`` output: the stable JSON contract and a readable table per site.

JSON: ``{"sites": [{"path", "line", "symbol", "verdict", "flips", "table", "reason", ...}]}``.
``table`` maps every enum member to ``{"before", "after", "canonical"}``. A cell is a bool;
when a member's value depends on a narrowing or a free input, the cells that vary are objects
mapping each setting (``"envs.SGLANG_MORI_EP_V2.get()=True"``) to the value under it.
"""

from __future__ import annotations

import json
from typing import Any

from .proof import SiteProof
from .truth_table import Row, TruthTable

COLUMNS = ("before", "after", "canonical")


def _cell(rows: tuple[Row, ...], column: str) -> bool | dict[str, bool]:
    values = {row.label(): getattr(row, column) for row in rows}
    distinct = set(values.values())
    return distinct.pop() if len(distinct) == 1 else values


def table_dict(table: TruthTable) -> dict[str, dict[str, Any]]:
    """``{member: {"before", "after", "canonical"}}`` in enum order (see module docstring)."""
    return {m: {c: _cell(table.rows_of(m), c) for c in COLUMNS} for m in table.members}


def proof_dict(proof: SiteProof) -> dict[str, Any]:
    """One entry of the ``sites`` array."""
    finding = proof.finding
    free = set(proof.free_inputs)
    conditions = proof.table.conditions() if proof.table is not None else ()
    return {
        "path": finding.path,
        "line": finding.span.line,
        "symbol": finding.symbol,
        "verdict": proof.verdict,
        "flips": list(proof.flips),
        "table": table_dict(proof.table) if proof.table is not None else {},
        "reason": proof.reason,
        "code": finding.code,
        "canonical": finding.canonical,
        "polarity": proof.polarity,
        "missing": list(finding.missing),
        "exempt": list(proof.exempt),
        "held_back": [m for m, _ in proof.fix.held_back] if proof.fix is not None else [],
        "style": proof.fix.style if proof.fix is not None else None,
        "narrowings": [c for c in conditions if c not in free],
        "free_inputs": [c for c in conditions if c in free],
        "disagreements": [d.to_dict() for d in proof.disagreements],
    }


def render_json(proofs: list[SiteProof]) -> str:
    """The whole JSON document, newline-terminated."""
    return json.dumps({"sites": [proof_dict(p) for p in proofs]}, indent=2) + "\n"


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def render_site(proof: SiteProof) -> str:
    """A heading, one line per member (per setting when it matters), and the reason."""
    finding = proof.finding
    lines = [
        f"{finding.path}:{finding.span.line} {finding.symbol} ({finding.code}): {proof.verdict}"
    ]
    table = proof.table
    if table is not None:
        disagreeing = {(d.row.member, d.row.setting) for d in proof.disagreements}
        labels = [
            row.member + (f" [{row.label()}]" if len(table.rows_of(row.member)) > 1 else "")
            for row in table.rows
        ]
        width = max(len("backend"), *(len(label) for label in labels))
        lines.append(f"  {'backend':<{width}}  before  after  canonical")
        for label, row in zip(labels, table.rows, strict=True):
            notes = []
            if row.before != row.after:
                notes.append("flipped")
            if row.member in proof.exempt:
                notes.append("exempt")
            if (row.member, row.setting) in disagreeing:
                notes.append("DISAGREES")
            lines.append(
                f"  {label:<{width}}  {_yes(row.before):<6}  {_yes(row.after):<5}  "
                f"{_yes(row.canonical):<9}  {' '.join(notes)}".rstrip()
            )
        if proof.polarity == "negative":
            lines.append(
                "  (negative site: it agrees with the helper where its value is the helper's negation)"
            )
    lines.append(f"  {proof.reason}")
    return "\n".join(lines)


def render_text(proofs: list[SiteProof]) -> str:
    """Every site's table, separated by blank lines."""
    return "\n\n".join(render_site(p) for p in proofs) + ("\n" if proofs else "")


def summary(proofs: list[SiteProof]) -> str:
    """``3 sites verified: 2 proven, 1 refuted.``"""
    counts = {v: sum(p.verdict == v for p in proofs) for v in ("proven", "refuted", "unproven")}
    parts = [f"{n} {v}" for v, n in counts.items() if n]
    noun = "site" if len(proofs) == 1 else "sites"
    return f"{len(proofs)} {noun} verified" + (f": {', '.join(parts)}." if parts else ".")
