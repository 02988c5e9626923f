"""Every rule's VALID and INVALID examples are specifications (fixit's habit)."""

from __future__ import annotations

from pathlib import Path

import pytest
from driftcheck.rules import CATALOGUE, Example
from rule_harness import run_example, run_rule_example

CASES = [
    pytest.param(code, kind, index, example, id=f"{code}-{kind}-{index}")
    for code, rule in sorted(CATALOGUE.items())
    for kind, examples in (("valid", rule.VALID), ("invalid", rule.INVALID))
    for index, example in enumerate(examples)
]


@pytest.mark.parametrize(("code", "kind", "index", "example"), CASES)
def test_rule_example(tmp_path: Path, code: str, kind: str, index: int, example: Example) -> None:
    result = run_rule_example(tmp_path, example)
    assert not result.problems, result.problems
    codes = [f.code for f in result.findings if f.code == code]
    if kind == "valid":
        assert codes == [], [f.message for f in result.findings]
    else:
        assert codes == [code], [f.message for f in result.findings]
        if example.missing is not None:
            finding = next(f for f in result.findings if f.code == code)
            assert finding.missing == example.missing
        if example.held_back is not None:
            finding = next(f for f in result.findings if f.code == code)
            assert tuple(a.member for a in finding.held_back) == example.held_back


@pytest.mark.parametrize("code", sorted(CATALOGUE))
def test_invalid_examples_fail_without_the_rule(tmp_path: Path, code: str) -> None:
    """An INVALID example is only caught by its own rule: ignoring the rule silences it."""
    rule = CATALOGUE[code]
    for example in rule.INVALID:
        others = [c for c in CATALOGUE if c != code]
        result = run_example(
            tmp_path,
            example.code,
            select=tuple(others),
            siblings=example.siblings,
            fixture=example.fixture,
        )
        assert code not in {f.code for f in result.findings}


@pytest.mark.parametrize("code", sorted(CATALOGUE))
def test_every_rule_has_documentation_and_examples(code: str) -> None:
    rule = CATALOGUE[code]
    assert rule.summary and rule.explanation.strip()
    assert rule.INVALID, f"{code} has no INVALID example"
