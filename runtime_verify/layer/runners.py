"""Routed-expert compute on the contiguous layout: torch matmuls, or DeepGEMM's JIT kernels.

Both runners compute the same SwiGLU expert, ``w2 @ (silu(gate) * up)`` with ``gate, up =
w13 @ x``, in the layer's dtype with float32 accumulation, group by group:

- ``torch``: one matmul chain per expert group;
- ``deep_gemm``: ``deep_gemm.m_grouped_bf16_gemm_nt_contiguous`` for ``w13`` and for ``w2`` over
  the whole layout (the call SGLang's ``grouped_gemm_nt_bf16_contig`` makes), the activation
  between them in torch. Only on CUDA with bf16; the buffer is padded to a fixed capacity so the
  JIT compiles one kernel per weight shape for the whole run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
import torch.nn.functional as F

from .contiguous import Contiguous
from .weights import ExpertWeights


class Runner(Protocol):
    """Computes each row of a contiguous layout through the expert of its group."""

    name: str
    version: str
    alignment: int

    def __call__(self, bank: ExpertWeights, layout: Contiguous) -> torch.Tensor: ...


def swiglu(x: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """``w2 @ (silu(gate) * up)`` with ``gate, up = w13 @ x``; rows of ``x`` are tokens."""
    gate, up = (x @ w13.T).chunk(2, dim=-1)
    return (F.silu(gate) * up) @ w2.T


@dataclass
class TorchRunner:
    """One torch matmul chain per expert group."""

    name: str = "torch"
    version: str = field(default_factory=lambda: torch.__version__)
    alignment: int = 1

    def __call__(self, bank: ExpertWeights, layout: Contiguous) -> torch.Tensor:
        """Expert outputs for every row of ``layout`` (padding rows are zero)."""
        out = torch.zeros_like(layout.rows)
        for j, (start, count) in enumerate(zip(layout.starts, layout.counts, strict=True)):
            if count:
                part = slice(start, start + count)
                out[part] = swiglu(layout.rows[part], bank.w13[j], bank.w2[j])
        return out


@dataclass
class DeepGemmRunner:
    """DeepGEMM's m-grouped bf16 contiguous GEMM for both expert projections."""

    module: Any
    name: str = "deep_gemm"
    version: str = ""
    alignment: int = 128

    def __call__(self, bank: ExpertWeights, layout: Contiguous) -> torch.Tensor:
        """Expert outputs for every row of ``layout`` (padding rows undefined, never read)."""
        rows, groups = layout.rows, layout.groups
        up_gate = rows.new_empty((rows.shape[0], bank.w13.shape[1]))
        self.module.m_grouped_bf16_gemm_nt_contiguous(rows, bank.w13, up_gate, groups)
        gate, up = up_gate.chunk(2, dim=-1)
        hidden = (F.silu(gate) * up).contiguous()
        out = rows.new_empty((rows.shape[0], bank.w2.shape[1]))
        self.module.m_grouped_bf16_gemm_nt_contiguous(hidden, bank.w2, out, groups)
        return out


def contiguous_capacity(
    world_size: int, tokens: int, top_k: int, groups: int, alignment: int
) -> int:
    """Rows enough for any call: every rank's every (token, expert) pair on one rank (the
    standard plan dispatches the gathered batch from each rank), plus a group's worst padding."""
    rows = world_size * tokens * top_k + groups * (alignment - 1)
    return -(-rows // alignment) * alignment


def make_runner(requested: str, device: torch.device, dtype: torch.dtype) -> tuple[Runner, str]:
    """The runner to use and a note on why, when it is not the one requested.

    ``deep_gemm`` needs CUDA, bf16 and an importable ``deep_gemm`` with the m-grouped bf16
    kernel; otherwise torch runs and the note says why.
    """
    if requested == "torch":
        return TorchRunner(), ""
    if requested != "deep_gemm":
        raise ValueError(f"unknown runner {requested!r}; known: torch, deep_gemm")
    if device.type != "cuda" or dtype != torch.bfloat16:
        return TorchRunner(), f"deep_gemm needs CUDA and bfloat16 (here {device.type}, {dtype})"
    try:
        import deep_gemm
    except Exception as exc:  # an ImportError, or a broken extension's OSError
        return TorchRunner(), f"deep_gemm is not importable: {type(exc).__name__}: {exc}"
    if not hasattr(deep_gemm, "m_grouped_bf16_gemm_nt_contiguous"):
        return TorchRunner(), "this deep_gemm has no m_grouped_bf16_gemm_nt_contiguous"
    runner = DeepGemmRunner(
        deep_gemm,
        version=str(getattr(deep_gemm, "__version__", "?")),
        alignment=int(deep_gemm.get_mk_alignment_for_contiguous_layout()),
    )
    return runner, ""


def describe_runner(runner: Runner, requested: str, note: str) -> dict[str, Any]:
    """The report's ``runner`` entry."""
    entry: dict[str, Any] = {
        "requested": requested,
        "used": runner.name,
        "version": runner.version,
        "alignment": runner.alignment,
    }
    if runner.name == "deep_gemm":
        entry["kernel"] = "m_grouped_bf16_gemm_nt_contiguous"
        entry["module"] = getattr(getattr(runner, "module", None), "__file__", None)
        entry["jit_cache"] = os.environ.get("DG_JIT_CACHE_DIR")
    if note:
        entry["fallback"] = note
    return entry
