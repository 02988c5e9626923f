"""The routed-expert runners: DeepGEMM's m-grouped contiguous call convention, checked on the
CPU against a stand-in with that kernel's documented semantics, and the torch runner."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from driftcheck.runtime_verify.layer.contiguous import scatter  # noqa: E402
from driftcheck.runtime_verify.layer.runners import (  # noqa: E402
    DeepGemmRunner,
    TorchRunner,
    make_runner,
)
from driftcheck.runtime_verify.layer.weights import ExpertWeights  # noqa: E402

pytestmark = pytest.mark.torch


class StandInDeepGemm:
    """``m_grouped_bf16_gemm_nt_contiguous(a [M, K], b [G, N, K], d [M, N], layout int32 [M])``:
    ``d[i] = a[i] @ b[layout[i]].T`` for every row whose layout entry is not -1."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def m_grouped_bf16_gemm_nt_contiguous(self, a, b, d, layout) -> None:
        assert a.is_contiguous() and b.is_contiguous() and layout.dtype == torch.int32
        assert a.shape[0] == d.shape[0] == layout.shape[0] and b.shape[2] == a.shape[1]
        self.calls.append((tuple(a.shape), tuple(b.shape)))
        for group in range(b.shape[0]):
            rows = layout == group
            d[rows] = (a[rows].float() @ b[group].float().T).to(d.dtype)


def _bank(groups: int, hidden: int, rows: int) -> ExpertWeights:
    generator = torch.Generator().manual_seed(0)
    w13 = torch.randn(groups, 2 * rows, hidden, generator=generator).to(torch.bfloat16) / 8
    w2 = torch.randn(groups, hidden, rows, generator=generator).to(torch.bfloat16) / 8
    return ExpertWeights(tuple(range(groups)), w13, w2)


def test_the_deep_gemm_runner_runs_w13_then_w2_over_the_whole_padded_layout() -> None:
    bank, module = _bank(3, 64, 32), StandInDeepGemm()
    rows = torch.randn(10, 64).to(torch.bfloat16)
    experts = torch.tensor([2, 0, 1, 1, 0, 2, 2, 1, 0, 0])
    layout = scatter(rows, experts, groups=3, alignment=128, capacity=512)
    out = DeepGemmRunner(module, version="2.5.0")(bank, layout)
    assert module.calls == [((512, 64), (3, 64, 64)), ((512, 32), (3, 64, 32))]
    expected = TorchRunner()(bank, scatter(rows, experts, groups=3, alignment=1))
    got = layout.gather(out).float()
    want = expected[scatter(rows, experts, groups=3, alignment=1).position].float()
    assert float((got - want).norm() / want.norm()) < 1e-2


def test_the_torch_runner_leaves_padding_rows_zero() -> None:
    bank = _bank(2, 64, 32)
    layout = scatter(torch.randn(3, 64).to(torch.bfloat16), torch.tensor([0, 1, 1]), 2, 4)
    out = TorchRunner()(bank, layout)
    assert out[layout.groups < 0].abs().sum() == 0


def test_an_unknown_runner_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown runner 'cutlass'"):
        make_runner("cutlass", torch.device("cpu"), torch.bfloat16)
