"""Every verdict path of ``verify --layer``, on real runs (gloo, CPU, tiny shape).

confirmed: the test arm shows the role's failure signature before the fix and the arms agree
after it. refuted: the after phase still shows a signature (a fix that flips the wrong member).
inconclusive: the before phase shows no predicted failure. A site whose value chooses no
communication plan is listed with its reason and never run; a run with no eligible site
exits 3 and never says "confirmed".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from driftcheck.runtime_verify.layer.verdict import judge
from rule_harness import EXAMPLE_PATH, example_tree

from driftcheck.cli import main

torch = pytest.importorskip("torch")
from driftcheck.runtime_verify.layer import confirm_plans  # noqa: E402

pytestmark = pytest.mark.torch

K3_BEFORE = {"deepep": True, "deepep_v2": False}
# K3-like: the value decides whether the MoE output gets its TP all-reduce.
EP_A2A_SITE = (
    "def uses_ep_a2a() -> bool:\n"
    "    _a2a_backend = get_moe_a2a_backend()\n"
    "    return (\n"
    "        _a2a_backend.is_megamoe()\n"
    "        or _a2a_backend.is_deepep()\n"
    "        or _a2a_backend.is_mooncake()\n"
    "        or _a2a_backend.is_mori()\n"
    "    )\n"
    "\n\n"
    "class Moe:\n"
    "    def forward(self, hidden):\n"
    "        out = self.experts(hidden)\n"
    "        if not uses_ep_a2a():\n"
    "            out = tensor_model_parallel_all_reduce(out)\n"
    "        return out\n"
)
# Glm4MoeForCausalLM.shared_experts_fusion_disable_reason-like: the value picks a message.
MESSAGE_SITE = (
    "class Model:\n"
    "    def fusion_disable_reason(self):\n"
    "        if get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori():\n"
    '            return "fusion is not supported under deepep"\n'
    "        return None\n"
)


def verify(runner: CliRunner, path: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(
        main,
        # --unsafe-fixes: the full fix (the example's members are held back: nothing shares its role)
        ["verify", str(path), "--no-cache", "--unsafe-fixes", "--layer", "--device", "cpu", *args],
        catch_exceptions=False,
    )
    return result.exit_code, result.stdout, result.stderr


def test_confirmed_when_the_signature_appears_before_and_the_arms_agree_after(
    runner: CliRunner, tmp_path: Path
) -> None:
    report_path = tmp_path / "layer.json"
    code, out, _ = verify(
        runner, example_tree(tmp_path, EP_A2A_SITE) / EXAMPLE_PATH, "--report", str(report_path)
    )
    report = json.loads(report_path.read_text())
    assert code == 0
    assert report["verdict"] == "confirmed"
    [site] = report["sites"]
    assert site["role"] == "ep_a2a"
    assert (
        site["role_evidence"][-1] == "makes tensor_model_parallel_all_reduce(out) (example.py:22)"
    )
    assert site["before"]["signature"]["deepep_v2"]["ratio"] == pytest.approx(2.0, abs=1e-4)
    assert "sglang/srt/models/example.py:11 uses_ep_a2a [ep_a2a]: confirmed: before: " in out


def test_refuted_when_the_fix_flips_the_wrong_member() -> None:
    # The fix takes deepep out instead of adding deepep_v2: after it both arms keep the DP
    # gather and TP reduce behind a combining dispatcher.
    report = confirm_plans({"before": K3_BEFORE, "after": {"deepep": False, "deepep_v2": False}})
    assert report["verdict"] == "refuted"
    assert report["verdict_reason"] == (
        "after the fix deepep on standard still shows it: routed ratio 2.0000 (double reduce: 2); "
        "after the fix deepep_v2 on standard still shows it: routed ratio 2.0000 "
        "(double reduce: 2)"
    )
    assert report["after"]["agreement"]["passed"] is True  # the arms agree: both are wrong


@pytest.fixture(scope="module")
def no_signature_report() -> dict:
    # Two non-combining backends: the fix-to-be "removes" none from the family, so before it
    # none takes the EP all-to-all plan and its partial sum is never reduced. The arms differ
    # then and agree bit-exactly after, but the difference is not the double reduce.
    return confirm_plans(
        {"before": {"nixl": False, "none": True}, "after": {"nixl": False, "none": False}},
        arms=("nixl", "none"),
    )


def test_inconclusive_when_the_before_phase_lacks_the_predicted_signature(
    no_signature_report: dict,
) -> None:
    report = no_signature_report
    ratio = report["before"]["signature"]["none"]["ratio"]
    assert report["verdict"] == "inconclusive"
    assert report["verdict_reason"] == (
        f"before the fix none takes ep_a2a but shows no double_reduce: routed ratio {ratio:.4f} "
        "(double reduce: 2)"
    )
    assert report["criterion"]["kind"] == "bit-exact"  # one implementation: same order


def test_the_verdict_requires_the_failure_signature_not_just_a_difference(
    no_signature_report: dict,
) -> None:
    """Fails if the verdict goes back to "differs before, agrees after": this run does both."""
    before, after = no_signature_report["before"], no_signature_report["after"]
    assert before["bit_exact"] is False and before["rel_l2"] > 0.1
    assert after["bit_exact"] is True
    assert no_signature_report["verdict"] != "confirmed"


def _phase(plan_test: str, detected: bool, agree: bool, ratio: float) -> dict:
    signature = {"ratio": ratio, "expected_ratio": 2, "detected": detected}
    return {
        "plan": {"deepep": "ep_a2a", "deepep_v2": plan_test},
        "signature": {
            "deepep": {"ratio": 1.0, "expected_ratio": 2, "detected": False},
            "deepep_v2": signature,
        },
        "agreement": {"passed": agree, "summary": "rel L2 0 (<= 0.01)"},
    }


def _report(before: dict, after: dict) -> dict:
    arms = {"reference": "deepep", "test": "deepep_v2"}
    return {"role": "ep_a2a", "arms": arms, "before": before, "after": after}


def test_a_before_difference_without_the_signature_is_not_confirmed() -> None:
    before = _phase("standard", detected=False, agree=False, ratio=1.37)
    after = _phase("ep_a2a", detected=False, agree=True, ratio=1.0)
    assert judge(_report(before, after)) == (
        "inconclusive",
        "before the fix deepep_v2 takes standard but shows no double_reduce: routed ratio "
        "1.3700 (double reduce: 2)",
    )


def test_the_signature_before_and_agreement_after_is_confirmed() -> None:
    before = _phase("standard", detected=True, agree=False, ratio=2.0)
    after = _phase("ep_a2a", detected=False, agree=True, ratio=1.0)
    assert judge(_report(before, after))[0] == "confirmed"


def test_a_site_that_chooses_no_communication_plan_is_not_run_and_exits_3(
    runner: CliRunner, tmp_path: Path
) -> None:
    report_path = tmp_path / "layer.json"
    code, out, _ = verify(
        runner, example_tree(tmp_path, MESSAGE_SITE) / EXAMPLE_PATH, "--report", str(report_path)
    )
    report = json.loads(report_path.read_text())
    assert code == 3
    assert report["sites"] == []
    assert report["verdict"] == "no eligible site"
    assert report["not_plan_sites"] == [
        {
            "path": "sglang/srt/models/example.py",
            "line": 10,
            "symbol": "Model.fusion_disable_reason",
            "reason": "not a communication-plan site: the value of Model.fusion_disable_reason "
            "returns the message string 'fusion is not supported under deepep' (example.py:11)",
        }
    ]
    assert "confirmed" not in out
    assert (
        "  no site is eligible for a layer run: none chooses a communication plan the harness "
        "models"
    ) in out.splitlines()


@pytest.mark.corpus
def test_sglang_0_5_23_glm4_message_and_cuda_graph_sites_are_not_plan_sites(
    runner: CliRunner, sglang_0_5_23: Path
) -> None:
    code, out, _ = verify(
        runner,
        sglang_0_5_23 / "sglang",
        "--site", "glm4_moe.py:shared_experts_fusion_disable_reason",
        "--site", "tc_piecewise_cuda_graph_backend.py:build_compilation_config",
    )  # fmt: skip
    assert code == 3
    assert "confirmed" not in out
    assert (
        "  sglang/srt/models/glm4_moe.py:1026 Glm4MoeForCausalLM.shared_experts_fusion_disable"
        "_reason: not a communication-plan site: the value of Glm4MoeForCausalLM.shared_experts"
        "_fusion_disable_reason returns the message string 'GLM-4.5 cannot use shared experts "
        "fusion optimization und...' (glm4_moe.py:1027)"
    ) in out.splitlines()
    assert (
        "  sglang/srt/model_executor/runner_backend/tc_piecewise_cuda_graph_backend.py:131 "
        "TcPiecewiseCudaGraphBackend.build_compilation_config: not a communication-plan site: "
        "the value of TcPiecewiseCudaGraphBackend.build_compilation_config guards "
        "`config.add_split_op('sglang.moe_forward_piecewise_cuda_graph_impl')` "
        "(tc_piecewise_cuda_graph_backend.py:132)"
    ) in out.splitlines()
