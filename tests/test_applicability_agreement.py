"""One computation of each member's applicability and its reason (issue 30, item 3): on every
finding of the corpora the finding's message, the ``--fix``/``--diff`` notes, JSON, SARIF and
the language server's hover name the same held-back members with the same reasons, and a
member the finding's own evidence lists is never held back for want of a site that lists it
(0.5.17's Qwen3-MoE forward gate: "its use ... matches 4 sites" while the note said
"held back: mooncake, mori, pplx (no same-role site lists them)")."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from driftcheck.engine import CheckResult, check
from driftcheck.families import covered_members
from driftcheck.fix.apply import apply_fixes, attach_fixes
from driftcheck.gates import latent_members
from driftcheck.model import Finding
from driftcheck.report.json_report import render_json
from driftcheck.report.sarif import render_sarif
from driftcheck.server.hover import hover_text

pytestmark = pytest.mark.corpus

HELD = re.compile(r"(\w+) \(held back")
EVIDENCE_NOTES = ("a site whose use is the same", "a sibling site", "sibling site")


def held_in_message(finding: Finding) -> set[str]:
    """The members the message marks ``(held back...)``."""
    return set(HELD.findall(finding.message.split("; missing ", 1)[-1]))


def unsafe(finding: Finding) -> set[str]:
    return {a.member for a in finding.applicability if not a.safe}


def judged(release: Callable[[str], Path], version: str) -> tuple[CheckResult, list[Finding]]:
    result = check([release(version)], use_cache=False)
    return result, attach_fixes(result, result.findings, "minimal")


@pytest.mark.parametrize("version", ["0.5.17", "0.5.23"])
def test_every_output_names_the_same_held_back_members(
    sglang_release: Callable[[str], Path], version: str
) -> None:
    result, findings = judged(sglang_release, version)
    rated = [f for f in findings if f.applicability]
    assert rated, "no finding rates its members: the test would pass vacuously"
    outcome = apply_fixes(result, findings, write=False)
    notes = {n.split(": ", 1)[0]: n for n in outcome.notes if " DC0" in n}
    documents = json.loads(render_json(result.universes.values(), findings, [], "."))
    by_key = {(d["path"], d["line"], d["code"]): d for d in documents["findings"]}
    sarif = json.loads(render_sarif(result, findings))["runs"][0]["results"]
    held_sarif = {
        (
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["ruleId"],
            r["message"]["text"],
        ): r["properties"].get("heldBack")
        for r in sarif
    }
    for finding in rated:
        where = f"{finding.path}:{finding.span.line} {finding.code}"
        held = unsafe(finding)
        assert held_in_message(finding) == held, where
        document = by_key[(finding.path, finding.span.line, finding.code)]
        if finding.fix is None:
            continue
        reasons = {a.member: a.reason for a in finding.applicability}
        assert document["fix"]["members"] == [a.to_dict() for a in finding.fix.members], where
        listed = {h["member"]: h["reason"] for h in document["fix"]["held_back"]}
        assert {m for m in listed if m in held} == held & set(finding.missing), where
        assert all(listed[m] == reasons[m] for m in held if m in listed), where
        key = (finding.span.line, finding.code, finding.message)
        assert held_sarif.get(key, []) == document["fix"]["held_back"], where
        hover = hover_text(result, finding)
        for member in sorted(held):
            assert f"  - {member}: held back: {reasons[member]}" in hover, where
        note = notes.get(f"{finding.path}:{finding.span.line}")
        if note is not None and held:
            named = set(re.findall(r"(\w+)(?:, |\s\()", note.split("held back: ", 1)[-1]))
            assert held <= named, (where, note)


@pytest.mark.parametrize("version", ["0.5.17", "0.5.23"])
def test_a_member_the_findings_own_evidence_lists_is_never_held_back(
    sglang_release: Callable[[str], Path], version: str
) -> None:
    result, findings = judged(sglang_release, version)
    assert result.universe is not None
    latent = latent_members(result.root, result.config, result.universe, result.scans)
    checked = 0
    for finding in findings:
        cited = [r for r in finding.related if r.note.startswith(EVIDENCE_NOTES)]
        if not cited or not unsafe(finding):
            continue
        for place in cited:
            scan = result.scans.get(place.path)
            sites = [s for s in scan.sites if s.span.line == place.line] if scan else []
            for site in sites:
                universe = result.universes.get(site.universe, result.universe)
                live = covered_members(site, universe) - set(latent.get(site.path, {}))
                checked += 1
                assert not (live & unsafe(finding)), (
                    f"{finding.path}:{finding.span.line} holds back {sorted(live & unsafe(finding))} "
                    f"that the site it cites, {place.path}:{place.line}, lists"
                )
    assert checked, "no finding cites a site: the test would pass vacuously"


def test_qwen3_moe_forward_gate_adds_what_its_same_use_sites_list(
    sglang_release: Callable[[str], Path],
) -> None:
    """The issue's example: the forward gate's finding rests on 4 same-use sites; mooncake
    and mori, which they list, are safe; pplx, which none lists live, is held back."""
    _, findings = judged(sglang_release, "0.5.17")
    (gate,) = [
        f
        for f in findings
        if f.path == "sglang/srt/models/qwen3_moe.py" and f.symbol.endswith(".forward")
    ]
    assert "matches 4 sites in 4 files" in gate.message
    assert [(a.member, a.safe) for a in gate.applicability] == [
        ("mooncake", True),
        ("mori", True),
        ("pplx", False),
    ]
