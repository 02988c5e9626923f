"""Deterministic weights: each rank generates only the expert slices it holds.

Expert ``e``'s weights are generated in blocks of ``shape.block_rows`` intermediate rows, each
block from its own seed ``(seed, tag, e, block)``. A block holds, for its rows, the gate
projection rows, the up projection rows and the down projection columns, so a TP slice
(a run of blocks for every expert) and an EP shard (every block of a few experts) are cut from
the same numbers and every arm sees identical weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .seeds import derive_seed
from .shapes import Shape


@dataclass
class ExpertWeights:
    """SwiGLU weights for a set of experts, possibly sliced along the intermediate dimension.

    ``w13[j]`` is ``[2 * rows, hidden]`` (gate rows then up rows) and ``w2[j]`` is
    ``[hidden, rows]`` for the ``j``-th held expert, whose global index is ``experts[j]``.
    """

    experts: tuple[int, ...]
    w13: torch.Tensor
    w2: torch.Tensor

    @property
    def rows(self) -> int:
        """Intermediate rows held per expert."""
        return self.w2.shape[-1]

    def local_index(self) -> dict[int, int]:
        """Map a global expert index to its position in this bank."""
        return {e: j for j, e in enumerate(self.experts)}


def build_experts(
    shape: Shape,
    seed: int,
    tag: str,
    experts: Sequence[int],
    full_rows: int,
    row_range: tuple[int, int],
    device: torch.device,
    dtype: torch.dtype,
) -> ExpertWeights:
    """Generate ``experts``' weights for intermediate rows ``[start, end)`` of ``full_rows``."""
    start, end = row_range
    b, hidden = shape.block_rows, shape.hidden
    if start % b or end % b or not 0 <= start < end <= full_rows:
        raise ValueError(f"row range {row_range} is not a run of {b}-row blocks in {full_rows}")
    rows = end - start
    w13 = torch.empty(len(experts), 2 * rows, hidden, device=device, dtype=dtype)
    w2 = torch.empty(len(experts), hidden, rows, device=device, dtype=dtype)
    in_scale, out_scale = 1.0 / math.sqrt(hidden), 1.0 / math.sqrt(full_rows)
    generator = torch.Generator(device=device)
    for j, expert in enumerate(experts):
        for block in range(start // b, end // b):
            generator.manual_seed(derive_seed(seed, tag, expert, block))
            values = torch.randn(3, b, hidden, generator=generator, device=device)
            lo = block * b - start
            w13[j, lo : lo + b] = (values[0] * in_scale).to(dtype)
            w13[j, rows + lo : rows + lo + b] = (values[1] * in_scale).to(dtype)
            w2[j, :, lo : lo + b] = (values[2] * out_scale).T.to(dtype)
    return ExpertWeights(tuple(experts), w13, w2)


def tp_row_range(full_rows: int, rank: int, world_size: int) -> tuple[int, int]:
    """The intermediate rows TP rank ``rank`` holds."""
    per_rank = full_rows // world_size
    return rank * per_rank, (rank + 1) * per_rank


def ep_experts(experts: int, rank: int, world_size: int) -> range:
    """The whole experts EP rank ``rank`` owns: a contiguous run of ``experts / world_size``."""
    per_rank = experts // world_size
    return range(rank * per_rank, (rank + 1) * per_rank)


def routed_ep_shard(
    shape: Shape, seed: int, rank: int, world_size: int, device: torch.device, dtype: torch.dtype
) -> ExpertWeights:
    """Whole routed experts owned by ``rank`` (all-to-all dispatchers)."""
    owned = ep_experts(shape.experts, rank, world_size)
    full = shape.intermediate
    return build_experts(shape, seed, "routed", owned, full, (0, full), device, dtype)


def routed_tp_slice(
    shape: Shape, seed: int, rank: int, world_size: int, device: torch.device, dtype: torch.dtype
) -> ExpertWeights:
    """``rank``'s intermediate slice of every routed expert (tensor-parallel MoE)."""
    full = shape.intermediate
    rows = tp_row_range(full, rank, world_size)
    return build_experts(shape, seed, "routed", range(shape.experts), full, rows, device, dtype)


def shared_expert(
    shape: Shape,
    seed: int,
    device: torch.device,
    dtype: torch.dtype,
    tp: tuple[int, int] | None = None,
) -> ExpertWeights:
    """The shared expert: whole, or the slice of TP rank ``tp = (rank, world_size)``."""
    full = shape.shared_intermediate
    rows = (0, full) if tp is None else tp_row_range(full, *tp)
    return build_experts(shape, seed, "shared", (0,), full, rows, device, dtype)


def router_weight(shape: Shape, seed: int, device: torch.device) -> torch.Tensor:
    """The gate linear ``[experts, hidden]`` in float64 (routing is computed in float64)."""
    generator = torch.Generator(device=device).manual_seed(derive_seed(seed, "router"))
    weight = torch.randn(shape.experts, shape.hidden, generator=generator, device=device)
    return (weight / math.sqrt(shape.hidden)).double()


def lm_head_weight(shape: Shape, seed: int, device: torch.device) -> torch.Tensor:
    """The LM head ``[vocab, hidden]`` in float32."""
    generator = torch.Generator(device=device).manual_seed(derive_seed(seed, "lm_head"))
    weight = torch.randn(shape.vocab, shape.hidden, generator=generator, device=device)
    return weight / math.sqrt(shape.hidden)
