"""DeepEP's two dispatcher models are different implementations: they hold different buffers
before the combine and agree only within the layer verdict's tolerance after it (gloo, CPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from driftcheck.runtime_verify.block.verdict import TOLERANCE  # noqa: E402
from driftcheck.runtime_verify.layer.contiguous import scatter  # noqa: E402
from driftcheck.runtime_verify.layer.dispatch_probe import probe_dispatchers  # noqa: E402
from driftcheck.runtime_verify.layer.runners import contiguous_capacity  # noqa: E402

pytestmark = pytest.mark.torch

LEGACY, ELASTIC = "legacy-buffer-model", "elastic-buffer-model"


@pytest.fixture(scope="module")
def probe() -> dict:
    return probe_dispatchers("tiny-bf16", world_size=2)


def test_before_combine_legacy_holds_one_row_per_token_and_elastic_one_per_expert_slot(
    probe: dict,
) -> None:
    assert probe[LEGACY]["pre_combine_rows"] < probe[ELASTIC]["pre_combine_rows"]


def test_before_combine_legacy_rows_are_tokens_by_source_rank(probe: dict) -> None:
    sources = [source for source, _token in probe[LEGACY]["pre_combine_meta"]]
    assert sources == sorted(sources)


def test_before_combine_elastic_rows_are_expert_major(probe: dict) -> None:
    experts = [expert for _pair, expert in probe[ELASTIC]["pre_combine_meta"]]
    assert experts == sorted(experts)
    assert probe[LEGACY]["pre_combine_meta"] != probe[ELASTIC]["pre_combine_meta"]


def test_after_combine_they_differ_in_bytes_but_agree_within_the_criterion(probe: dict) -> None:
    after = probe["after_combine"]
    assert after["bit_exact"] is False
    assert 0 < after["rel_l2"] <= TOLERANCE


def test_the_contiguous_layout_groups_rows_by_expert_with_aligned_padding() -> None:
    rows = torch.arange(5, dtype=torch.float32).unsqueeze(-1)
    layout = scatter(rows, torch.tensor([1, 0, 1, 1, 0]), groups=2, alignment=4)
    assert layout.groups.tolist() == [0, 0, -1, -1, 1, 1, 1, -1]
    assert layout.rows.flatten().tolist() == [1, 4, 0, 0, 0, 2, 3, 0]
    assert torch.equal(layout.gather(layout.rows), rows)


def test_the_contiguous_layout_pads_to_a_fixed_capacity() -> None:
    rows = torch.ones(3, 2)
    layout = scatter(rows, torch.tensor([0, 0, 1]), groups=2, alignment=2, capacity=8)
    assert layout.groups.tolist() == [0, 0, 1, -1, -1, -1, -1, -1]


def test_the_deep_gemm_capacity_covers_the_standard_plan_at_k3_shape() -> None:
    # W ranks each dispatch all 192 tokens x top-8, plus 127 padding rows per local expert
    assert contiguous_capacity(2, 192, 8, 192, 128) == 27520
    assert contiguous_capacity(4, 192, 8, 96, 128) == 18432
