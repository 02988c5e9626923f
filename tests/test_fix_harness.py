"""Every rule's INVALID examples through the fixer (ruff's fix harness): the fix converges in
one pass, its output parses, keeps every comment, and matches what the rule claims: a rule
with a fixed example (``Rule.fixable()``) fixes every one of its examples, exactly as written
(``expected_fix`` with ``--unsafe-fixes``, ``expected_safe_fix`` with plain ``--fix``); a rule
without one never attaches a fix."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest
from driftcheck.rules import CATALOGUE, Example
from rule_harness import header_of, path_of, run_rule_example

from driftcheck.engine import check
from driftcheck.fix.apply import apply_fixes, attach_fixes

CASES = [
    pytest.param(code, index, example, style, id=f"{code}-invalid-{index}-{style}")
    for code, rule in sorted(CATALOGUE.items())
    for index, example in enumerate(rule.INVALID)
    for style in ("minimal", "helper")
]


def comments(text: str) -> list[str]:
    """Every comment token of ``text``, in order."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [t.string for t in tokens if t.type == tokenize.COMMENT]


@pytest.mark.parametrize(("code", "index", "example", "style"), CASES)
def test_invalid_example_through_the_fixer(
    tmp_path: Path, code: str, index: int, example: Example, style: str
) -> None:
    rule = CATALOGUE[code]
    result = run_rule_example(tmp_path, example)
    path = result.root / path_of(example.fixture)
    before = path.read_text()
    findings = attach_fixes(result, result.findings, style, unsafe=True)
    own = [f for f in findings if f.code == code]
    assert own, f"{code} example {index} produced no {code} finding"
    if not rule.fixable():
        assert all(f.fix is None for f in own), f"{code} claims no fix but attached one"
        return
    if style == "minimal":
        assert all(f.fix is not None for f in own), [f.fix_refusal for f in own]
    outcome = apply_fixes(result, findings, write=True)
    after = path.read_text()
    assert not outcome.problems, outcome.problems
    ast.parse(after)
    assert sorted(comments(after)) == sorted(comments(before))
    if style == "minimal" and example.expected_fix is not None:
        assert after == header_of(example.fixture) + example.expected_fix
    again = check([path], select=example.select or None, use_cache=False)
    second = apply_fixes(again, attach_fixes(again, again.findings, style, unsafe=True), write=True)
    assert second.changes == {}, second.diff_text
    if all(f.fix is not None for f in own):
        assert code not in {g.code for g in again.findings}, "a fixed site is still reported"


SAFE_CASES = [
    pytest.param(code, index, example, id=f"{code}-invalid-{index}")
    for code, rule in sorted(CATALOGUE.items())
    if rule.fixable()
    for index, example in enumerate(rule.INVALID)
]


@pytest.mark.parametrize(("code", "index", "example"), SAFE_CASES)
def test_invalid_example_through_the_safe_fixer(
    tmp_path: Path, code: str, index: int, example: Example
) -> None:
    """Plain ``--fix`` adds the safe members only, converges in one pass, and leaves the
    finding standing with exactly its held-back members missing."""
    result = run_rule_example(tmp_path, example)
    path = result.root / path_of(example.fixture)
    findings = attach_fixes(result, result.findings, "minimal")
    own = [f for f in findings if f.code == code]
    deleted = {id(f) for f in own if f.fix is not None and f.fix.style == "delete"}
    held = tuple(a.member for f in own if id(f) not in deleted for a in f.held_back)
    if example.held_back is not None:
        assert held == example.held_back
    for finding in own:
        assert finding.fix is not None, finding.fix_refusal
        if finding.fix.style == "delete":  # a dead copy: deleted, no backend changes
            assert (finding.fix.flips, finding.fix.held_back) == ((), ())
            continue
        assert finding.fix.flips == tuple(m for m in finding.missing if m not in held)
        assert tuple(m for m, _ in finding.fix.held_back) == held
    apply_fixes(result, findings, write=True)
    after = path.read_text()
    ast.parse(after)
    if example.expected_safe_fix is not None:
        assert after == header_of(example.fixture) + example.expected_safe_fix
    elif not held and example.expected_fix is not None:
        assert after == header_of(example.fixture) + example.expected_fix
    again = check([path], select=example.select or None, use_cache=False)
    second = apply_fixes(again, attach_fixes(again, again.findings, "minimal"), write=True)
    assert second.changes == {}, second.diff_text
    assert [g.missing for g in again.findings if g.missing] == ([held] if held else [])
