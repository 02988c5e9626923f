"""Which sites get a layer run: what the site's value controls in its own module (ast only)."""

from __future__ import annotations

from pathlib import Path

import pytest
from driftcheck.runtime_verify.plan_role import NotPlanSite, PlanRole, plan_role

from driftcheck.engine import check
from driftcheck.model import Span


def _role(code: str, line: int, col: int, end_col: int) -> PlanRole | NotPlanSite:
    return plan_role(code, "pkg/model.py", Span(line, col, line, end_col), "site")


def test_a_value_that_skips_the_tp_reduce_chooses_the_ep_a2a_plan() -> None:
    code = (
        "class Moe:\n"
        "    def __init__(self):\n"
        "        self.a2a = b.is_deepep() or b.is_mori()\n"
        "    def forward(self, x):\n"
        "        if not self.a2a:\n"
        "            x = tensor_model_parallel_all_reduce(x)\n"
        "        return x\n"
    )
    assert _role(code, 3, 19, 47) == PlanRole(
        "ep_a2a",
        (
            "model.py:3 `self.a2a = ...`",
            "model.py:5 guards `if not self.a2a:`",
            "makes tensor_model_parallel_all_reduce(x) (model.py:6)",
        ),
    )


def test_a_value_that_skips_the_dp_gather_through_a_helper_method_chooses_ep_a2a() -> None:
    code = (
        "def gather(x):\n"
        "    return dp_gather_replicate(x)\n"
        "def forward(x):\n"
        "    if not (b.is_deepep() or b.is_mori()):\n"
        "        x = gather(x)\n"
        "    return x\n"
    )
    role = _role(code, 4, 12, 41)
    assert isinstance(role, PlanRole) and role.kind == "ep_a2a"
    assert role.evidence[-1] == (
        "calls gather() (model.py:5), which makes dp_gather_replicate(...) (model.py:2)"
    )


def test_a_value_that_selects_forward_deepep_switches_the_forward() -> None:
    code = (
        "def forward(self, x):\n"
        "    if b.is_deepep() or b.is_mori():\n"
        "        return self.forward_deepep(x)\n"
        "    return self.forward_normal(x)\n"
    )
    role = _role(code, 2, 7, 35)
    assert isinstance(role, PlanRole) and role.kind == "forward_switch"
    assert role.plans == ("forward_deepep", "forward_normal")


def test_a_value_that_picks_the_shared_experts_parallel_group_is_the_shared_expert_role() -> None:
    code = (
        "class Block:\n"
        "    def __init__(self):\n"
        "        self.shared_experts = Mlp(\n"
        "            parallel_group='replicated' if b.is_deepep() or b.is_mori() else 'tp',\n"
        "        )\n"
    )
    role = _role(code, 4, 43, 71)
    assert role == PlanRole(
        "shared_expert",
        (
            "model.py:4 selects `'replicated' if b.is_deepep() or b.is_mori() el...`",
            "chooses Mlp(parallel_group=...) (parallel_group: 'replicated', 'tp') for "
            "self.shared_experts",
        ),
    )


def test_a_value_that_picks_a_message_string_is_not_a_plan_site() -> None:
    code = (
        "def reason():\n"
        "    if b.is_deepep() or b.is_mori():\n"
        "        return 'no fusion under deepep'\n"
        "    return None\n"
    )
    assert _role(code, 2, 7, 35) == NotPlanSite(
        "not a communication-plan site: the value of site returns the message string "
        "'no fusion under deepep' (model.py:3)"
    )


def test_a_gather_of_routing_indices_is_bookkeeping_not_a_plan() -> None:
    code = (
        "def capture(topk_ids):\n"
        "    if b.is_deepep() or b.is_mori():\n"
        "        topk_ids = all_gather(topk_ids)\n"
        "    return topk_ids\n"
    )
    role = _role(code, 2, 7, 35)
    assert isinstance(role, NotPlanSite)
    assert "all_gather(topk_ids) over routing bookkeeping" in role.reason


def test_a_stored_value_nobody_reads_is_not_a_plan_site() -> None:
    code = "class M:\n    def __init__(self):\n        self.flag = b.is_deepep() or b.is_mori()\n"
    assert _role(code, 3, 20, 48) == NotPlanSite(
        "not a communication-plan site: the value of site is stored in self.flag, which this "
        "module never reads"
    )


def _sglang_role(tree: Path, path: str, symbol: str) -> PlanRole | NotPlanSite:
    result = check([tree / path], select=["DC001"], use_cache=False)
    [finding] = [f for f in result.findings if f.symbol == symbol]
    return plan_role((tree / path).read_text(), path, finding.span, symbol)


@pytest.mark.corpus
def test_sglang_0_5_23_kimi_k3_uses_ep_a2a_skips_the_tp_reduce(sglang_0_5_23: Path) -> None:
    role = _sglang_role(sglang_0_5_23, "sglang/srt/models/kimi_k3.py", "_uses_ep_a2a")
    assert isinstance(role, PlanRole) and role.kind == "ep_a2a"
    assert role.evidence == (
        "kimi_k3.py:578 `_uses_ep_a2a()`",
        "kimi_k3.py:578 `self._ep_a2a = ...`",
        "kimi_k3.py:599 `self._shared_experts_tp1 = ...`",
        "kimi_k3.py:1255 guards `if self.tp_size > 1 and (not self._share...:`",
        "calls _reduce_shared() (kimi_k3.py:1260), which makes "
        "tensor_model_parallel_all_reduce(...) (kimi_k3.py:1019)",
    )


@pytest.mark.corpus
def test_sglang_0_5_23_glm4_fusion_disable_reason_is_not_a_plan_site(sglang_0_5_23: Path) -> None:
    symbol = "Glm4MoeForCausalLM.shared_experts_fusion_disable_reason"
    role = _sglang_role(sglang_0_5_23, "sglang/srt/models/glm4_moe.py", symbol)
    assert isinstance(role, NotPlanSite)
    assert "returns the message string 'GLM-4.5 cannot use shared experts" in role.reason


@pytest.mark.corpus
def test_sglang_0_5_23_cuda_graph_split_op_is_not_a_plan_site(sglang_0_5_23: Path) -> None:
    path = "sglang/srt/model_executor/runner_backend/tc_piecewise_cuda_graph_backend.py"
    symbol = "TcPiecewiseCudaGraphBackend.build_compilation_config"
    role = _sglang_role(sglang_0_5_23, path, symbol)
    assert isinstance(role, NotPlanSite)
    assert "guards `config.add_split_op('sglang.moe_forward_piecewise_cuda_graph_impl')`" in (
        role.reason
    )
