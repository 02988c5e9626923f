"""SwiGLU expert compute over (token, expert) pairs, grouped by expert."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .weights import ExpertWeights


def swiglu(x: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """``w2 @ (silu(gate) * up)`` with ``gate, up = w13 @ x``; rows of ``x`` are tokens."""
    gate, up = (x @ w13.T).chunk(2, dim=-1)
    return (F.silu(gate) * up) @ w2.T


def apply_experts(
    bank: ExpertWeights, rows: torch.Tensor, expert_ids: torch.Tensor
) -> torch.Tensor:
    """Run each row through the expert named by ``expert_ids`` (which ``bank`` must hold).

    Rows are grouped by expert (stable, so a group keeps arrival order) and each group is one
    matmul chain; the result is returned in the rows' original order.
    """
    out = rows.new_empty(rows.shape[0], rows.shape[1])
    if rows.shape[0] == 0:
        return out
    held = torch.tensor(bank.experts, dtype=torch.int64, device=rows.device)
    size = max(int(held.max()), int(expert_ids.max())) + 1
    lookup = torch.full((size,), -1, dtype=torch.int64, device=rows.device)
    lookup[held] = torch.arange(len(bank.experts), device=rows.device)
    local = lookup[expert_ids]
    if bool((local < 0).any()):
        raise ValueError("a row was routed to an expert this bank does not hold")
    order = torch.argsort(local, stable=True)
    counts = torch.bincount(local, minlength=len(bank.experts)).tolist()
    start = 0
    for j, count in enumerate(counts):
        if count:
            index = order[start : start + count]
            out[index] = swiglu(rows[index], bank.w13[j], bank.w2[j])
            start += count
    return out


def weighted_sum(pair_outputs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Combine ``[n * k, H]`` per-pair outputs into ``[n, H]`` with top-k ``weights [n, k]``.

    Accumulates in float32 in slot order and rounds once to the outputs' dtype.
    """
    n, k = weights.shape
    stacked = pair_outputs.view(n, k, -1).float()
    return (stacked * weights.unsqueeze(-1)).sum(dim=1).to(pair_outputs.dtype)
