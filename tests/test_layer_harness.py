"""The K3-style MoE layer harness: a double reduce is measured, not assumed.

Every run here is the tiny shape over gloo on CPU. The arms are (reference, test); a phase
gives each arm's value of K3's ``_uses_ep_a2a()`` predicate.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from driftcheck.runtime_verify.layer import confirm_plans, report_markdown  # noqa: E402
from driftcheck.runtime_verify.layer.compare import verdict  # noqa: E402
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


def test_before_the_fix_the_test_arm_is_not_bit_exact(k3_report: dict) -> None:
    assert k3_report["before"]["bit_exact"] is False
    assert k3_report["before"]["max_abs_diff"] > 0.1
    assert k3_report["before"]["plan"] == {"deepep": "ep_a2a", "deepep_v2": "standard"}


def test_before_the_fix_the_routed_output_is_reduced_world_size_times(k3_report: dict) -> None:
    double_reduce = k3_report["before"]["double_reduce"]
    assert double_reduce["detected"] is True
    assert double_reduce["expected_ratio"] == 2
    assert double_reduce["ratio"] == pytest.approx(2.0, abs=1e-2)


def test_after_the_fix_the_arms_are_byte_identical_and_top5_agree(k3_report: dict) -> None:
    after = k3_report["after"]
    assert after["plan"] == {"deepep": "ep_a2a", "deepep_v2": "ep_a2a"}
    assert after["bit_exact"] is True
    assert after["max_abs_diff"] == 0.0
    assert after["top5_agree"] is True
    assert after["top5_token_agreement"] == f"{TINY_TOKENS}/{TINY_TOKENS}"
    assert after["double_reduce"]["detected"] is False


def test_the_k3_before_and_after_pair_is_confirmed(k3_report: dict) -> None:
    assert k3_report["verdict"] == "confirmed"


def test_the_environment_records_where_it_ran(k3_report: dict) -> None:
    environment = k3_report["environment"]
    assert environment["gpu"] == "cpu"
    assert environment["device"] == "cpu"
    assert environment["dist_backend"] == "gloo"
    assert environment["nccl_version"] is None
    assert environment["world_size"] == 2
    assert environment["shape"] == "tiny"
    assert environment["dtype"] == "float32"
    assert environment["experts_used"] == 8
    assert environment["torch"] == torch.__version__


def test_progress_names_each_phase_and_arm_with_the_world_size(
    k3_report: dict, progress_lines: list[str]
) -> None:
    assert progress_lines == [
        "[before] reference arm deepep: ep_a2a plan, combining dispatcher, world size 2",
        "[before] test arm deepep_v2: standard plan, combining dispatcher, world size 2",
        "[after] reference arm deepep: ep_a2a plan, combining dispatcher, world size 2",
        "[after] test arm deepep_v2: ep_a2a plan, combining dispatcher, world size 2",
    ]


def test_the_report_is_json_serialisable(k3_report: dict) -> None:
    assert json.loads(json.dumps(k3_report)) == k3_report


def test_markdown_has_the_environment_and_phase_tables(k3_report: dict) -> None:
    text = report_markdown(k3_report)
    assert "**Verdict:** confirmed" in text
    assert "| dist_backend | gloo |" in text
    assert "| before | ep_a2a | standard | no |" in text
    assert "| after | ep_a2a | ep_a2a | yes | 0 | yes |" in text


def test_a_partial_sum_backend_on_the_standard_plan_equals_the_ep_plan() -> None:
    report = confirm_plans({"check": {"deepep": True, "none": False}}, arms=("deepep", "none"))
    check = report["check"]
    assert check["dispatcher"] == {"deepep": "combining", "none": "partial-sum"}
    assert check["max_abs_diff"] < 1e-5
    assert check["top5_token_agreement"] == f"{TINY_TOKENS}/{TINY_TOKENS}"
    assert check["double_reduce"]["ratio"] == pytest.approx(1.0, abs=1e-5)
    assert check["double_reduce"]["detected"] is False


def test_four_ranks_reduce_the_routed_output_four_times() -> None:
    report = confirm_plans(K3_PLANS, world_size=4)
    assert report["before"]["double_reduce"]["ratio"] == pytest.approx(4.0, abs=1e-2)
    assert report["before"]["double_reduce"]["expected_ratio"] == 4
    assert report["verdict"] == "confirmed"


def test_bfloat16_collectives_over_gloo_confirm_the_same_pair() -> None:
    report = confirm_plans(K3_PLANS, shape="tiny-bf16")
    assert report["environment"]["dtype"] == "bfloat16"
    assert report["before"]["double_reduce"]["ratio"] == pytest.approx(2.0, abs=1e-2)
    assert report["after"]["bit_exact"] is True
    assert report["verdict"] == "confirmed"


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


def _phase(bit_exact: bool) -> dict:
    return {"bit_exact": bit_exact, "max_abs_diff": 0.0 if bit_exact else 1.5}


def test_verdict_is_confirmed_only_when_before_differs_and_after_is_bit_exact() -> None:
    assert verdict({"before": _phase(False), "after": _phase(True)}) == "confirmed"


def test_verdict_says_when_the_arms_already_agreed_before_the_fix() -> None:
    assert verdict({"before": _phase(True), "after": _phase(True)}) == (
        "not confirmed: before the fix the arms already agree bit-exactly"
    )


def test_verdict_says_when_the_arms_still_differ_after_the_fix() -> None:
    assert verdict({"before": _phase(False), "after": _phase(False)}) == (
        "not confirmed: after the fix the arms still differ (max_abs_diff=1.5)"
    )


def test_verdict_needs_both_phases() -> None:
    assert verdict({"before": _phase(False)}) == (
        "inconclusive: the report needs both a 'before' and an 'after' phase"
    )


def test_a_phase_without_a_predicate_for_an_arm_is_rejected_before_any_rank_starts() -> None:
    with pytest.raises(ValueError, match="no predicate value for \\['deepep_v2'\\]"):
        confirm_plans({"before": {"deepep": True}})
