"""The K3-style MoE layer harness: a double reduce is measured, not assumed.

Every run here is the tiny shape over gloo on CPU. The arms are (reference, test); a phase
gives each arm's membership as the site's predicate reads it (K3's ``_uses_ep_a2a()``).
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from driftcheck.runtime_verify.layer import confirm_plans, report_markdown  # noqa: E402
from driftcheck.runtime_verify.layer.shapes import get_shape  # noqa: E402
from driftcheck.runtime_verify.layer.weights import routed_ep_shard, routed_tp_slice  # noqa: E402

pytestmark = pytest.mark.torch

K3_PLANS = {
    "before": {"deepep": True, "deepep_v2": False},
    "after": {"deepep": True, "deepep_v2": True},
}
TINY_TOKENS = get_shape("tiny").tokens


@pytest.fixture(scope="module")
def progress_lines() -> list[str]:
    return []


@pytest.fixture(scope="module")
def k3_report(progress_lines: list[str]) -> dict:
    return confirm_plans(K3_PLANS, world_size=2, device="cpu", progress=progress_lines.append)


def test_before_the_fix_the_test_arm_takes_the_standard_plan(k3_report: dict) -> None:
    before = k3_report["before"]
    assert before["plan"] == {"deepep": "ep_a2a", "deepep_v2": "standard"}
    assert before["correct_plan"] == {"deepep": "ep_a2a", "deepep_v2": "ep_a2a"}


def test_before_the_fix_the_test_arm_reduces_its_routed_part_twice(k3_report: dict) -> None:
    signature = k3_report["before"]["signature"]
    assert signature["deepep_v2"]["detected"] is True
    assert signature["deepep_v2"]["ratio"] == pytest.approx(2.0, abs=1e-4)
    assert signature["deepep_v2"]["expected_ratio"] == 2
    assert signature["deepep"]["detected"] is False
    assert signature["deepep"]["ratio"] == pytest.approx(1.0, abs=1e-6)


def test_the_arms_run_different_dispatcher_implementations(k3_report: dict) -> None:
    assert k3_report["after"]["dispatcher"] == {
        "deepep": "deepep-legacy-normal",
        "deepep_v2": "deepep-elastic-expand",
    }
    assert k3_report["criterion"]["kind"] == "tolerance"


def test_after_the_fix_the_arms_agree_under_the_criterion(k3_report: dict) -> None:
    after = k3_report["after"]
    assert after["plan"] == {"deepep": "ep_a2a", "deepep_v2": "ep_a2a"}
    assert after["rel_l2"] <= 1e-6
    assert after["top5_token_agreement"] == f"{TINY_TOKENS}/{TINY_TOKENS}"
    assert after["agreement"]["passed"] is True
    assert after["signature"]["deepep_v2"]["detected"] is False


def test_the_k3_before_and_after_pair_is_confirmed_with_its_numbers(k3_report: dict) -> None:
    assert k3_report["verdict"] == "confirmed"
    assert k3_report["verdict_reason"].startswith(
        "before: deepep_v2 on standard: routed ratio 2.0000 (double reduce: 2); after: rel L2 "
    )


def test_the_environment_and_runner_record_where_and_how_it_ran(k3_report: dict) -> None:
    environment = k3_report["environment"]
    assert (environment["gpu"], environment["dist_backend"], environment["world_size"]) == (
        "cpu",
        "gloo",
        2,
    )
    assert (environment["shape"], environment["dtype"], environment["experts_used"]) == (
        "tiny",
        "float32",
        8,
    )
    assert k3_report["runner"] == {
        "requested": "torch",
        "used": "torch",
        "version": torch.__version__,
        "alignment": 1,
    }


def test_progress_names_each_phase_arm_plan_and_dispatcher(
    k3_report: dict, progress_lines: list[str]
) -> None:
    assert progress_lines == [
        "[before] reference arm deepep: ep_a2a plan, deepep-legacy-normal dispatcher, "
        "torch experts, world size 2",
        "[before] test arm deepep_v2: standard plan, deepep-elastic-expand dispatcher, "
        "torch experts, world size 2",
        "[after] reference arm deepep: ep_a2a plan, deepep-legacy-normal dispatcher, "
        "torch experts, world size 2",
        "[after] test arm deepep_v2: ep_a2a plan, deepep-elastic-expand dispatcher, "
        "torch experts, world size 2",
    ]


def test_the_report_is_json_serialisable(k3_report: dict) -> None:
    assert json.loads(json.dumps(k3_report)) == k3_report


def test_markdown_has_a_row_per_phase_and_arm(k3_report: dict) -> None:
    text = report_markdown(k3_report)
    assert "**Verdict:** confirmed: before: deepep_v2 on standard" in text
    assert (
        "| before | deepep_v2 | deepep-elastic-expand | standard (ep_a2a) | **yes**: "
        "routed ratio 2.0000 (double reduce: 2) |"
    ) in text
    assert "| runner | torch " in text


def test_bf16_arms_are_not_bit_exact_after_the_fix_but_agree_within_tolerance() -> None:
    report = confirm_plans(K3_PLANS, shape="tiny-bf16")
    after = report["after"]
    assert after["bit_exact"] is False
    assert 0 < after["rel_l2"] <= 1e-2
    assert after["agreement"]["passed"] is True
    assert report["verdict"] == "confirmed"


def test_four_ranks_reduce_the_routed_output_four_times() -> None:
    report = confirm_plans(K3_PLANS, world_size=4)
    assert report["before"]["signature"]["deepep_v2"]["ratio"] == pytest.approx(4.0, abs=1e-4)
    assert report["verdict"] == "confirmed"


def test_a_partial_sum_backend_on_the_standard_plan_matches_deepep_on_its_own() -> None:
    report = confirm_plans({"check": {"deepep": True, "none": False}}, arms=("deepep", "none"))
    check = report["check"]
    assert check["dispatcher"] == {"deepep": "deepep-legacy-normal", "none": "tp-partial-sum"}
    assert check["correct_plan"] == {"deepep": "ep_a2a", "none": "standard"}
    assert check["rel_l2"] < 1e-5
    assert check["top5_token_agreement"] == f"{TINY_TOKENS}/{TINY_TOKENS}"


def test_a_tp_sharded_shared_expert_without_a_reduce_is_an_unreduced_partial() -> None:
    report = confirm_plans(K3_PLANS, role="shared_expert")
    before = report["before"]
    assert before["plan"] == {"deepep": "shared_replicated", "deepep_v2": "shared_tp"}
    partial = before["signature"]["deepep_v2"]
    assert partial["detected"] is True
    assert partial["relative_error"] > 0.3
    assert partial["relative_error_once_reduced"] < 1e-5
    assert report["after"]["signature"]["deepep_v2"]["detected"] is False
    assert report["verdict"] == "confirmed"


def test_deep_gemm_on_cpu_falls_back_to_torch_and_says_why() -> None:
    report = confirm_plans(K3_PLANS, runner="deep_gemm")
    assert report["runner"]["requested"] == "deep_gemm"
    assert report["runner"]["used"] == "torch"
    assert report["runner"]["fallback"] == (
        "deep_gemm needs CUDA and bfloat16 (here cpu, torch.float32)"
    )


def test_tp_slices_of_an_expert_assemble_into_its_ep_copy() -> None:
    shape, cpu = get_shape("tiny"), torch.device("cpu")
    whole = [routed_ep_shard(shape, 0, rank, 2, cpu, torch.float32) for rank in (0, 1)]
    sliced = [routed_tp_slice(shape, 0, rank, 2, cpu, torch.float32) for rank in (0, 1)]
    w13_whole = torch.cat([bank.w13 for bank in whole])
    gate = torch.cat([bank.w13[:, : bank.rows] for bank in sliced], dim=1)
    up = torch.cat([bank.w13[:, bank.rows :] for bank in sliced], dim=1)
    assert torch.equal(w13_whole, torch.cat([gate, up], dim=1))
    assert torch.equal(
        torch.cat([bank.w2 for bank in whole]), torch.cat([b.w2 for b in sliced], -1)
    )


def test_a_phase_without_a_predicate_for_an_arm_is_rejected_before_any_rank_starts() -> None:
    with pytest.raises(ValueError, match="no predicate value for \\['deepep_v2'\\]"):
        confirm_plans({"before": {"deepep": True}})


def test_an_unknown_role_is_rejected_before_any_rank_starts() -> None:
    with pytest.raises(ValueError, match="role must be one of ep_a2a, forward_switch"):
        confirm_plans(K3_PLANS, role="cuda_graph_split")


def test_a_tp_sharded_shared_expert_behind_a_partial_sum_backend_keeps_its_tp_reduce() -> None:
    report = confirm_plans(
        {"check": {"deepep": True, "none": False}}, arms=("deepep", "none"), role="shared_expert"
    )
    check = report["check"]
    assert check["plan"] == {"deepep": "shared_replicated", "none": "shared_tp"}
    assert check["signature"]["none"]["detected"] is False
    assert check["rel_l2"] < 1e-5
