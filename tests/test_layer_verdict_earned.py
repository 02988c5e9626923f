"""A layer verdict the code earns: a fix that changes any member the site already included is
refuted naming it, whatever the reference and test arms show (CPU, gloo, the tiny shape, the
block of ``fixtures/block_like``)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from driftcheck.runtime_verify.block.run import LayerSettings, run_layer
from driftcheck.runtime_verify.proof import prove

from driftcheck.engine import check
from driftcheck.fix.apply import attach_fixes
from driftcheck.model import Fix

pytestmark = pytest.mark.torch

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "block_like"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    target = tmp_path / "block_like"
    shutil.copytree(FIXTURE, target)
    return target


def run_with_fix(tree: Path, text: str) -> dict[str, Any]:
    """The layer report of the site fixed as ``text`` says (instead of as --fix writes it)."""
    result = check([tree], use_cache=False, select=["DC001"])
    [finding] = attach_fixes(result, result.findings, "minimal", unsafe=True)
    assert finding.fix is not None
    finding = replace(finding, fix=Fix("minimal", finding.fix.span, text, ()))
    [unit] = run_layer(result, [prove(result, finding)], LayerSettings())["units"]
    return unit


def test_a_fix_that_drops_the_control_is_refuted_naming_it(tree: Path) -> None:
    unit = run_with_fix(tree, "b.is_deepep() or b.is_mori() or b.is_deepep_v2() or b.is_pplx()")
    assert unit["verdict"] == "refuted"
    assert unit["verdict_reason"].startswith(
        "the fix changes the mooncake arm, which the site already included (rel L2 "
    )


def test_a_fix_that_drops_another_included_member_is_refuted_naming_it(tree: Path) -> None:
    unit = run_with_fix(tree, "b.is_deepep() or b.is_mooncake() or b.is_deepep_v2() or b.is_pplx()")
    assert unit["arms"]["others"] == ["mori"]
    assert unit["verdict"] == "refuted"
    assert unit["verdict_reason"].startswith(
        "the fix changes the mori arm, which the site already included (rel L2 "
    )


def test_a_fix_that_keeps_every_included_member_is_confirmed(tree: Path) -> None:
    """The negative control: the same fix, keeping mooncake and mori."""
    unit = run_with_fix(
        tree,
        "b.is_deepep() or b.is_mooncake() or b.is_mori() or b.is_deepep_v2() or b.is_pplx()",
    )
    assert unit["verdict"] == "confirmed"
    [configuration] = unit["configurations"]
    assert configuration["included_changed_by_fix"] == {"deepep": 0.0, "mooncake": 0.0, "mori": 0.0}
