"""The m-grouped contiguous layout: rows grouped by expert, each group padded to an alignment.

This is the layout DeepGEMM's ``m_grouped_*_gemm_nt_contiguous`` kernels take and SGLang's
deep_gemm MoE runner builds (``ep_scatter``): a ``[M, hidden]`` buffer whose rows are grouped by
local expert in ascending order, each group starting at a multiple of ``alignment``, and an
``int32 [M]`` vector giving each row's group, ``-1`` on padding rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Contiguous:
    """Rows scattered into the contiguous layout, and where each input row went."""

    rows: torch.Tensor  # [M, hidden]; padding rows are zero
    groups: torch.Tensor  # int32 [M]: the local expert of each row, -1 on padding
    position: torch.Tensor  # int64 [n]: the row of the layout that input row i went to
    starts: list[int]  # first row of each group
    counts: list[int]  # real (unpadded) rows of each group

    def gather(self, out: torch.Tensor) -> torch.Tensor:
        """The layout's output rows back in the input rows' order (``ep_gather``'s read)."""
        return out[self.position]


def scatter(
    rows: torch.Tensor,
    local_expert: torch.Tensor,
    groups: int,
    alignment: int,
    capacity: int | None = None,
) -> Contiguous:
    """Group ``rows`` by ``local_expert`` (stable: a group keeps the input order).

    ``capacity``, when given, pads the buffer to that many rows with ``-1`` groups, so that a
    kernel compiled for one ``M`` (DeepGEMM's JIT specialises on it) serves every call.
    """
    counts = torch.bincount(local_expert, minlength=groups).tolist()
    starts, total = [], 0
    for count in counts:
        starts.append(total)
        total += -(-count // alignment) * alignment
    if capacity is not None:
        if total > capacity:
            raise ValueError(f"{total} contiguous rows exceed the capacity {capacity}")
        total = capacity
    order = torch.argsort(local_expert, stable=True)
    start_of = torch.tensor(starts, dtype=torch.int64, device=rows.device)
    first_in_group = torch.cumsum(
        torch.tensor([0, *counts[:-1]], dtype=torch.int64, device=rows.device), 0
    )
    rank_in_group = (
        torch.arange(len(order), device=rows.device) - first_in_group[local_expert[order]]
    )
    position = torch.empty_like(order)
    position[order] = start_of[local_expert[order]] + rank_in_group
    out = rows.new_zeros((total, rows.shape[1]))
    out[position] = rows
    layout = torch.full((total,), -1, dtype=torch.int32, device=rows.device)
    layout[position] = local_expert.to(torch.int32)
    return Contiguous(out, layout, position, starts, counts)
