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


BLOCK = "sglang/srt/models/block_moe.py"


def edit(tree: Path, old: str, new: str) -> None:
    path = tree / BLOCK
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def run_fixed(tree: Path) -> dict[str, Any]:
    """The layer report of the site fixed as --fix writes it."""
    result = check([tree], use_cache=False, select=["DC001"])
    [finding] = attach_fixes(result, result.findings, "minimal", unsafe=True)
    [unit] = run_layer(result, [prove(result, finding)], LayerSettings())["units"]
    return unit


def shared_expert_sharded_everywhere(tree: Path, a2a_sum: str) -> None:
    """The shared expert TP-sharded for every backend; the a2a arms complete its sum with
    ``a2a_sum`` (a statement over ``shared``), the others with the block's TP reduce."""
    edit(tree, '"replicated" if self.ep_a2a else "tp"', '"tp"')
    edit(
        tree,
        "        out = self.experts(hidden_states, topk_output) + self.shared_experts(hidden_states)\n",
        "        shared = self.shared_experts(hidden_states)\n"
        "        if self.ep_a2a:\n"
        f"            {a2a_sum}\n"
        "        out = self.experts(hidden_states, topk_output) + shared\n",
    )
    edit(
        tree,
        "from sglang.srt.runtime_context import get_parallel\n",
        "from sglang.srt.runtime_context import get_parallel\n"
        "from sgl_kernel import custom_all_reduce_inplace, record_sample\n",
    )


def test_a_stand_in_handed_a_tensor_the_block_uses_is_never_a_confirmation(tree: Path) -> None:
    """An in-place kernel the harness does not provide completes the a2a arms' shared sum:
    in reality both arms compute the same; the harness must not confirm a difference."""
    shared_expert_sharded_everywhere(tree, "custom_all_reduce_inplace(shared)")
    unit = run_fixed(tree)
    assert unit["verdict"] == "inconclusive"
    assert unit["verdict_reason"] == (
        "the block handed a tensor to sgl_kernel.custom_all_reduce_inplace at "
        f"{BLOCK}:81, which the harness does not provide, and used it again at {BLOCK}:82 "
        "(deepep arm before the fix): what sgl_kernel.custom_all_reduce_inplace does to it "
        "is missing from what followed"
    )
    run = unit["configurations"][0]["runs"][0]
    assert run["stand_ins_called"] == [
        {
            "name": "sgl_kernel.custom_all_reduce_inplace",
            "where": f"{BLOCK}:81",
            "arguments": "tensor[10, 64] float32",
        }
    ]


def test_a_stand_in_handed_a_tensor_the_block_does_not_use_again_is_recorded(
    tree: Path,
) -> None:
    """The negative control: a copy handed to a recorder is not read again; the verdict is
    the block's, and the call is in the report."""
    edit(
        tree,
        "        return out\n\n\nclass BlockForCausalLM",
        "        record_sample(out.clone())\n        return out\n\n\nclass BlockForCausalLM",
    )
    edit(
        tree,
        "from sglang.srt.runtime_context import get_parallel\n",
        "from sglang.srt.runtime_context import get_parallel\nfrom sgl_kernel import record_sample\n",
    )
    unit = run_fixed(tree)
    assert unit["verdict"] == "confirmed"
    run = unit["configurations"][0]["runs"][0]
    assert run["stand_ins_called"] == [
        {
            "name": "sgl_kernel.record_sample",
            "where": f"{BLOCK}:82",
            "arguments": "tensor[10, 64] float32",
        }
    ]


def test_sites_that_meet_in_one_block_take_the_arms_their_fixes_add_together(
    tree: Path,
) -> None:
    """Two sites of one block: the shared-expert layout misses deepep_v2 and pplx, the TP
    reduce's predicate misses mori. No member is missed by both, yet the fixes, together,
    add deepep_v2 to the block: it is the test arm, and the fixed block is confirmed."""
    edit(
        tree,
        "        self.ep_a2a = _uses_ep_a2a()\n",
        "        self.ep_a2a = _uses_ep_a2a()\n"
        "        b = get_moe_a2a_backend()\n"
        "        self.skip_reduce = b.is_deepep() or b.is_mooncake() or b.is_deepep_v2() or b.is_pplx()\n",
    )
    edit(
        tree,
        "if self.tp_size > 1 and not self.ep_a2a:",
        "if self.tp_size > 1 and not self.skip_reduce:",
    )
    edit(
        tree,
        '            "replicated" if self.ep_a2a else "tp",\n',
        '            parallel_group="replicated" if self.ep_a2a else "tp",\n',
    )
    result = check([tree], use_cache=False, select=["DC001"])
    findings = attach_fixes(result, result.findings, "minimal", unsafe=True)
    assert len(findings) == 2
    [unit] = run_layer(result, [prove(result, f) for f in findings], LayerSettings())["units"]
    assert unit["arms"] == {
        "reference": "deepep",
        "test": "deepep_v2",
        "control": "mooncake",
        "others": [],
    }
    assert unit["verdict"] == "confirmed"
