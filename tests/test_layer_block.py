"""``verify --layer`` runs the linted tree's own MoE block: the verdict comes from the tree's
control flow, executed under the harness's substitutes, by A/B equality of a member the site
includes and one it misses, before and after the fix (CPU, gloo, the tiny shape).

``fixtures/block_like`` holds a block written from scratch whose shared-expert layout and TP
reduce follow a hand-written EP all-to-all predicate that misses deepep_v2 and pplx.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner
from driftcheck.runtime_verify.block.run import LayerSettings, run_layer
from driftcheck.runtime_verify.proof import prove

from driftcheck.cli import main
from driftcheck.engine import check
from driftcheck.fix.apply import attach_fixes
from driftcheck.model import Fix

pytestmark = pytest.mark.torch

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "block_like"
BLOCK = "sglang/srt/models/block_moe.py"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    target = tmp_path / "block_like"
    shutil.copytree(FIXTURE, target)
    return target


def edit(tree: Path, old: str, new: str) -> None:
    path = tree / BLOCK
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def verify(tree: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """``verify --layer`` on ``tree``: exit code, the layer report, and the text output."""
    report = tree.parent / "layer.json"
    result = CliRunner().invoke(
        main,
        [
            "verify",
            "--no-cache",
            "--unsafe-fixes",
            "--layer",
            "--report",
            str(report),
            *args,
            str(tree),
        ],
        catch_exceptions=False,
    )
    layer = json.loads(report.read_text()) if report.exists() else {}
    return result.exit_code, layer, result.stdout


def run_of(configuration: dict[str, Any], phase: str, arm: str) -> dict[str, Any]:
    return next(r for r in configuration["runs"] if r["phase"] == phase and r["arm"] == arm)


def lines_of(run: dict[str, Any], qualname: str) -> list[int]:
    return next(e["lines"] for e in run["executed_from_tree"] if e["qualname"] == qualname)


def test_the_trees_block_is_run_and_confirms_the_drift(tree: Path) -> None:
    code, report, _ = verify(tree)
    [unit] = report["units"]
    assert code == 0
    assert (unit["block"], unit["verdict"], unit["configuration"]) == (
        "BlockMoE",
        "confirmed",
        "ep-rows-latent",
    )
    assert unit["arms"] == {
        "reference": "deepep",
        "test": "deepep_v2",
        "control": "mooncake",
        "others": ["mori"],
    }
    assert report["engine"] == "tree"
    assert unit["verdict_reason"].startswith(
        "before the fix deepep_v2 differs from deepep (rel L2 "
    )


def test_the_report_says_which_lines_ran_in_one_arm_only(tree: Path) -> None:
    _, report, _ = verify(tree)
    [configuration] = report["units"][0]["configurations"]
    only = configuration["before"]["lines"]
    assert only["deepep_v2_only"][-1] == {
        "path": BLOCK,
        "qualname": "BlockMoE.forward",
        "lines": [80],
    }
    reference = run_of(configuration, "before", "deepep")
    test = run_of(configuration, "before", "deepep_v2")
    assert lines_of(test, "BlockMoE.forward") == [76, 77, 78, 79, 80, 81]
    assert lines_of(reference, "BlockMoE.forward") == [76, 77, 78, 79, 81]
    assert "tensor_model_parallel_all_reduce" in test["substituted"]
    assert "tensor_model_parallel_all_reduce" not in reference["substituted"]


def test_the_text_report_names_the_functions_and_their_line_counts(tree: Path) -> None:
    _, _, text = verify(tree)
    assert (
        "    ran from the tree (deepep_v2, before the fix): MoeA2ABackend.is_deepep (1 line), "
        "MoeA2ABackend.is_mooncake (1 line), MoeA2ABackend.is_mori (1 line), _uses_ep_a2a "
        "(2 lines), SharedMLP.__init__ (15 lines), SharedMLP.forward (3 lines), "
        "BlockMoE.__init__ (17 lines), BlockMoE.forward (6 lines)"
    ) in text.splitlines()


def test_when_the_trees_branch_cannot_run_the_difference_disappears(tree: Path) -> None:
    """The verdict comes from the tree: the same site, whose reduce the block never reaches
    and whose shared expert is replicated whatever it says, shows nothing."""
    edit(
        tree,
        "if self.tp_size > 1 and not self.ep_a2a:",
        "if self.tp_size > 99 and not self.ep_a2a:",
    )
    edit(
        tree,
        '"replicated" if self.ep_a2a else "tp"',
        '"replicated" if self.ep_a2a else "replicated"',
    )
    code, report, _ = verify(tree)
    [unit] = report["units"]
    assert (code, unit["verdict"]) == (1, "inconclusive")
    assert unit["verdict_reason"].startswith(
        "in every configuration tried (ep-rows-latent, tp-rows) the arms already agree before "
        "the fix: the drift does not reach the block's path in any of them"
    )


def test_a_stand_in_whose_answer_the_block_uses_makes_it_inconclusive(tree: Path) -> None:
    edit(
        tree,
        "        return out\n\n\nclass BlockForCausalLM",
        "        return out * get_scale()\n\n\nclass BlockForCausalLM",
    )
    edit(
        tree,
        "from sglang.srt.runtime_context import get_parallel",
        "from sglang.srt.runtime_context import get_parallel, get_scale",
    )
    code, report, _ = verify(tree)
    [unit] = report["units"]
    assert (code, unit["verdict"]) == (1, "inconclusive")
    assert unit["verdict_reason"] == (
        "the block reached sglang.srt.runtime_context.get_scale(), which the harness does not "
        f"provide (used as a tensor at {BLOCK}:81, deepep arm before the fix)"
    )


def test_the_negative_control_can_fail(tree: Path) -> None:
    """A control member the harness runs differently from the reference (here behind a
    non-combining dispatcher) is a harness that separates members the site treats alike."""
    result = check([tree], use_cache=False, select=["DC001"])
    verify_table = {**result.config.verify, "dispatchers": {"mooncake": "partial"}}
    result.project = replace(result.project, config=replace(result.config, verify=verify_table))
    [finding] = attach_fixes(result, result.findings, "minimal", unsafe=True)
    report = run_layer(result, [prove(result, finding)], LayerSettings())
    [unit] = report["units"]
    assert unit["verdict"] == "inconclusive"
    assert unit["verdict_reason"].startswith(
        "the harness separates members the site treats alike: mooncake differs from deepep "
        "before the fix (rel L2 "
    )


def test_a_wrong_fix_is_refuted_with_the_numbers(tree: Path) -> None:
    """A "fix" that drops deepep from the list instead of adding what is missing."""
    result = check([tree], use_cache=False, select=["DC001"])
    [finding] = attach_fixes(result, result.findings, "minimal", unsafe=True)
    assert finding.fix is not None
    wrong = Fix(
        "minimal", finding.fix.span, "b.is_mooncake() or b.is_mori() or b.is_deepep_v2()", ()
    )
    finding = replace(finding, fix=wrong)
    report = run_layer(result, [prove(result, finding)], LayerSettings())
    [unit] = report["units"]
    assert unit["verdict"] == "refuted"
    assert unit["verdict_reason"].startswith(
        "the fix changes the deepep arm, which the site already included (rel L2 "
    )
    assert unit["verdict_reason"].endswith(
        "a fix adds what the site misses and changes nothing else"
    )


def test_a_site_whose_value_reaches_no_role_operation_is_not_run(tmp_path: Path) -> None:
    """A logging helper called ``all_gather_...`` is no collective the pack declares."""
    tree = tmp_path / "logging_tree"
    shutil.copytree(FIXTURE / "sglang/srt/layers", tree / "sglang/srt/layers")
    (tree / "sglang/srt/metrics").mkdir(parents=True)
    (tree / "sglang/srt/metrics/stats.py").write_text(
        "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
        "def all_gather_into_logging_buffer(metrics):\n"
        "    return metrics\n\n\n"
        "class Stats:\n"
        "    def report(self, metrics):\n"
        "        b = get_moe_a2a_backend()\n"
        "        # DeepEP-family backends keep per-rank counters\n"
        "        if b.is_deepep() or b.is_mooncake() or b.is_mori():\n"
        "            return all_gather_into_logging_buffer(metrics)\n"
        "        return metrics\n"
    )
    code, report, text = verify(tree)
    assert code == 3
    assert report["units"] == []
    assert report["not_plan_sites"] == [
        {
            "path": "sglang/srt/metrics/stats.py",
            "line": 12,
            "symbol": "Stats.report",
            "reason": "not a communication-plan site: its value calls "
            "all_gather_into_logging_buffer, and none of it is a role operation the pack "
            "declares ([roles]: Stats.report's value reaches no TP reduce, DP gather or "
            "scatter, combine, forward switch or shared-expert layout)",
        }
    ]
    assert text.splitlines()[-1] == (
        "  no site is eligible for a layer run: none reaches a role operation the pack declares"
    )


def test_arms_the_sites_do_not_take_are_refused_with_the_reason(tree: Path) -> None:
    code, report, _ = verify(tree, "--arms", "deepep_v2,deepep")
    assert code == 3
    [skipped] = report["skipped"]
    assert skipped["reason"] == (
        "--arms deepep_v2,deepep: every site must include deepep_v2 before the fix and its fix "
        "must add deepep (the sites include deepep, mooncake, mori; the fixes add deepep_v2, pplx)"
    )
