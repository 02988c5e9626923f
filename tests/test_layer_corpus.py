"""``verify --layer`` on released SGLang: SGLang's own blocks run under the harness's
substitutes (CPU, gloo, the tiny shape), and SGLang's control flow decides each verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner

from driftcheck.cli import main

pytestmark = [pytest.mark.corpus, pytest.mark.torch]
K3 = "sglang/srt/models/kimi_k3.py"


def layer(tree: Path, tmp_path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    report = tmp_path / "layer.json"
    result = CliRunner().invoke(
        main,
        ["verify", "--no-cache", "--layer", "--report", str(report), *args],
        catch_exceptions=False,
    )
    return result.exit_code, json.loads(report.read_text())


def only_lines(unit: dict[str, Any], arm: str) -> dict[str, list[int]]:
    deciding = next(c for c in unit["configurations"] if c.get("decides"))
    return {e["qualname"]: e["lines"] for e in deciding["before"]["lines"][f"{arm}_only"]}


def test_kimi_k3_on_0_5_23_is_confirmed_by_its_own_shared_expert_reduce(
    sglang_0_5_23: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In 0.5.23 ``_uses_ep_a2a`` picks the shared expert's layout: the test arm TP-shards it
    and ``_reduce_shared`` sums rows that belong to other ranks."""
    monkeypatch.chdir(sglang_0_5_23)
    code, report = layer(sglang_0_5_23, tmp_path, K3)
    [unit] = report["units"]
    assert (code, unit["block"], unit["verdict"], unit["configuration"]) == (
        0,
        "KimiK3MoE",
        "confirmed",
        "ep-rows-latent",
    )
    assert [s["line"] for s in unit["sites"]] == [440]
    assert only_lines(unit, "deepep_v2")["KimiK3MoE._reduce_shared"] == [1019]
    assert "KimiK3MoE._reduce_shared" not in only_lines(unit, "deepep")


def test_kimi_k3_on_0_5_21_runs_its_two_sites_as_one_fix(
    sglang_release, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``KimiK3MoE._ep_a2a`` and ``KimiK3DecoderLayer._sp_moe`` are fixed together; with DP
    attention the test arm's own DP gather makes it agree, and under attention TP its TP
    all-reduce of an already-combined output shows."""
    tree = sglang_release("0.5.21")
    monkeypatch.chdir(tree)
    code, report = layer(tree, tmp_path, K3)
    [unit] = report["units"]
    assert (code, unit["verdict"], unit["configuration"]) == (0, "confirmed", "tp-rows")
    assert [(s["line"], s["symbol"]) for s in unit["sites"]] == [
        (544, "KimiK3MoE.__init__"),
        (2405, "KimiK3DecoderLayer.__init__"),
    ]
    [first, _] = unit["configurations"]
    assert (first["configuration"]["name"], first["verdict"]) == ("ep-rows-latent", "inconclusive")
    assert only_lines(unit, "deepep_v2")["KimiK3MoE._forward_unfused"] == [1186]


def test_qwen3_moe_on_0_5_17_runs_its_real_forward_switch(
    sglang_release, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = sglang_release("0.5.17")
    monkeypatch.chdir(tree)
    code, report = layer(
        tree,
        tmp_path,
        "--select",
        "DC001,DC003,DC020",
        "--unsafe-fixes",  # every member it misses is held back: run the full fix
        "sglang/srt/models/qwen3_moe.py",
    )
    [unit] = report["units"]
    assert (code, unit["block"], unit["verdict"]) == (0, "Qwen3MoeSparseMoeBlock", "confirmed")
    assert unit["arms"] == {
        "reference": "deepep",
        "test": "mooncake",
        "control": None,
        "others": [],
    }
    test_only = only_lines(unit, "mooncake")
    assert "Qwen3MoeSparseMoeBlock.forward_normal" in test_only
    assert "Qwen3MoeSparseMoeBlock.forward_deepep" in only_lines(unit, "deepep")
