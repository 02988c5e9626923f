"""The harness provides what the tree declares: an environment flag's default from the tree's
own declaration, the model configuration's defaults from the tree's own configuration class
(a field no one declares is missing, never None), and classes whose bases are stand-ins build
(CPU, gloo, the block of ``fixtures/block_like``, with small additions written here)."""

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

ENVIRON = '''"""Environment flags, each declared with its default."""

import os


class EnvBool:
    def __init__(self, default):
        self.default = default

    def __set_name__(self, owner, name):
        self.name = name

    def get(self):
        value = os.getenv(self.name)
        return self.default if value is None else value.lower() in ("1", "true")


class Envs:
    SGLANG_BLOCK_TP_REDUCE = EnvBool({default})


envs = Envs()
'''

CONFIG = '''"""The block model's configuration."""

from transformers import PretrainedConfig


class BlockConfig(PretrainedConfig):
    model_type = "block"

    def __init__(self, hidden_size=4096, shared_scale=0.5, **kwargs):
        self.hidden_size = hidden_size
        self.shared_scale = shared_scale
        super().__init__(**kwargs)
'''


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    target = tmp_path / "block_like"
    shutil.copytree(FIXTURE, target)
    return target


def edit(tree: Path, *pairs: tuple[str, str]) -> None:
    path = tree / BLOCK
    text = path.read_text()
    for old, new in pairs:
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)


def layer(tree: Path) -> dict[str, Any]:
    result = check([tree], use_cache=False, select=["DC001"])
    [finding] = attach_fixes(result, result.findings, "minimal", unsafe=True)
    [unit] = run_layer(result, [prove(result, finding)], LayerSettings())["units"]
    return unit


def reduce_behind_a_flag(tree: Path, default: str) -> None:
    (tree / "sglang/srt/environ.py").write_text(ENVIRON.format(default=default))
    edit(
        tree,
        (
            "from sglang.srt.runtime_context import get_parallel\n",
            "from sglang.srt.environ import envs\n"
            "from sglang.srt.runtime_context import get_parallel\n",
        ),
        (
            "if self.tp_size > 1 and not self.ep_a2a:",
            "if self.tp_size > 1 and not self.ep_a2a and envs.SGLANG_BLOCK_TP_REDUCE.get():",
        ),
    )


def test_an_environment_flag_takes_the_default_the_tree_declares(tree: Path) -> None:
    reduce_behind_a_flag(tree, "True")
    unit = layer(tree)
    assert unit["verdict"] == "confirmed"
    test = next(r for r in unit["configurations"][0]["runs"] if r["arm"] == "deepep_v2")
    assert "tensor_model_parallel_all_reduce" in test["substituted"]
    assert test["stand_ins_used"] == []


def test_a_flag_declared_off_keeps_its_branch_off(tree: Path) -> None:
    """The negative control: the same flag declared False; the reduce never runs."""
    reduce_behind_a_flag(tree, "False")
    unit = layer(tree)
    test = next(r for r in unit["configurations"][0]["runs"] if r["arm"] == "deepep_v2")
    assert "tensor_model_parallel_all_reduce" not in test["substituted"]
    assert test["stand_ins_used"] == []


def scale_from_the_config(tree: Path, *, import_config: bool) -> None:
    (tree / "sglang/srt/configs").mkdir(parents=True)
    (tree / "sglang/srt/configs/__init__.py").write_text("")
    (tree / "sglang/srt/configs/block_config.py").write_text(CONFIG)
    imported = "from sglang.srt.configs.block_config import BlockConfig\n" if import_config else ""
    edit(
        tree,
        ("from torch import nn\n", f"from torch import nn\n{imported}"),
        (
            "        self.ep_a2a = _uses_ep_a2a()\n",
            "        self.ep_a2a = _uses_ep_a2a()\n"
            "        self.groups = getattr(config, 'undeclared_groups', 1)\n"
            "        if config.shared_scale != 0.5:\n"
            "            raise ValueError('shared_scale')\n",
        ),
    )


def test_the_configuration_takes_the_trees_own_class_defaults(tree: Path) -> None:
    """``shared_scale`` is the class's default; ``hidden_size`` stays the shape's; a field no
    one declares takes the tree's ``getattr`` default."""
    scale_from_the_config(tree, import_config=True)
    unit = layer(tree)
    assert unit["verdict"] == "confirmed"
    run = unit["configurations"][0]["runs"][0]
    assert run["config_fields_missing"] == ["undeclared_groups"]


def test_a_field_no_one_declares_is_missing_never_none(tree: Path) -> None:
    """The negative control: without the class, ``config.shared_scale`` is missing."""
    scale_from_the_config(tree, import_config=False)
    unit = layer(tree)
    assert unit["verdict"] == "inconclusive"
    assert unit["verdict_reason"] == (
        "the harness's model configuration has no field 'shared_scale' ([verify.config] gives "
        f"none), which the block reads at {BLOCK}:58 (deepep arm, before the fix)"
    )


def test_classes_whose_bases_are_stand_ins_build(tree: Path) -> None:
    """Two stand-in mixins beside ``nn.Module``, and a parameter the tree registers on a
    substitute (the gate's correction bias)."""
    edit(
        tree,
        (
            "from torch import nn\n",
            "import torch\nfrom torch import nn\n\n"
            "from sglang.srt.layers.mixins import CachedMixin, LoggedMixin\n",
        ),
        ("class SharedMLP(nn.Module):", "class SharedMLP(nn.Module, CachedMixin, LoggedMixin):"),
        (
            "        self.topk = TopK(",
            "        self.gate.e_score_correction_bias = nn.Parameter(\n"
            "            torch.zeros(config.num_experts, dtype=torch.float32)\n"
            "        )\n"
            "        self.topk = TopK(",
        ),
    )
    assert layer(tree)["verdict"] == "confirmed"


def test_what_the_pack_says_is_off_does_nothing_to_the_values() -> None:
    """``rows-present``: an idle or empty batch is one without rows (the negative control: a
    batch with rows is present); ``no-op-context``: symmetric memory's context and tags."""
    import torch
    from driftcheck.runtime_verify.block.substitutes import NoOpContext, _rows_present

    assert _rows_present(None, torch.zeros(0, 4)) is False
    assert _rows_present(None, torch.zeros(2, 4)) is True
    tensor = torch.ones(3)
    with NoOpContext() as memory:
        assert memory.tag(tensor) is None
    assert torch.equal(tensor, torch.ones(3))
