"""The tree's own parameters are drawn as a checkpoint would give them, in the run's one
dtype: a block holding a ``torch.empty`` bias and a ``torch.nn.Linear`` gate of its own gets
the same numbers in every arm and phase, on the CPU as on CUDA, so its verdict is the
block's, never the harness's (CPU, gloo, the block of ``fixtures/block_like``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from driftcheck.runtime_verify.block.run import LayerSettings, run_layer
from driftcheck.runtime_verify.proof import prove

from driftcheck.engine import check
from driftcheck.fix.apply import attach_fixes

pytestmark = pytest.mark.torch

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "block_like"
BLOCK = "sglang/srt/models/block_moe.py"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The fixture's block, with a router bias made by ``torch.empty`` (uninitialised until a
    checkpoint fills it) and a shared-expert gate of torch's own ``Linear``."""
    target = tmp_path / "block_like"
    shutil.copytree(FIXTURE, target)
    path = target / BLOCK
    text = path.read_text()
    for old, new in (
        ("from torch import nn\n", "import torch\nfrom torch import nn\n"),
        (
            "        self.topk = TopK(",
            "        self.score_bias = nn.Parameter(\n"
            "            torch.empty(config.num_experts, dtype=torch.float32)\n"
            "        )\n"
            "        self.shared_gate = nn.Linear(config.hidden_size, 1, bias=False)\n"
            "        self.topk = TopK(",
        ),
        (
            "        topk_output = self.topk(hidden_states, router_logits)\n",
            "        router_logits = router_logits.float() + self.score_bias\n"
            "        topk_output = self.topk(hidden_states, router_logits)\n",
        ),
        (
            "+ self.shared_experts(hidden_states)\n",
            "+ torch.sigmoid(\n"
            "            self.shared_gate(hidden_states)\n"
            "        ) * self.shared_experts(hidden_states)\n",
        ),
    ):
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    return target


def layer(tree: Path, settings: LayerSettings) -> dict[str, Any]:
    result = check([tree], use_cache=False, select=["DC001"])
    [finding] = attach_fixes(result, result.findings, "minimal", unsafe=True)
    [unit] = run_layer(result, [prove(result, finding)], settings)["units"]
    return unit


def test_the_trees_own_parameters_are_drawn_alike_in_every_arm(tree: Path) -> None:
    unit = layer(tree, LayerSettings())
    assert unit["verdict"] == "confirmed"
    [configuration] = unit["configurations"]
    assert configuration["included_changed_by_fix"] == {"deepep": 0.0, "mooncake": 0.0, "mori": 0.0}
    assert configuration["runs"][0]["tree_parameters_drawn"] == [
        {"name": "score_bias", "shape": [8], "dtype": "float32"},
        {"name": "shared_gate.weight", "shape": [1, 64], "dtype": "float32"},
    ]


def test_a_tensor_made_without_a_dtype_has_the_runs_dtype(tree: Path) -> None:
    """A bfloat16 run: torch's own ``Linear`` gate is made in bfloat16, as the runtime's model
    dtype makes it (no "mat1 and mat2 must have the same dtype"); a dtype the tree names is
    kept."""
    unit = layer(tree, LayerSettings(shape="tiny-bf16"))
    assert unit["verdict"] == "confirmed"
    assert unit["configurations"][0]["runs"][0]["tree_parameters_drawn"] == [
        {"name": "score_bias", "shape": [8], "dtype": "float32"},
        {"name": "shared_gate.weight", "shape": [1, 64], "dtype": "bfloat16"},
    ]
