"""The router: gate linear, softmax or sigmoid scores, top-k, renormalised weights."""

from __future__ import annotations

import torch


def route(
    hidden: torch.Tensor, gate: torch.Tensor, top_k: int, scoring: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick ``top_k`` experts per token: ``(expert ids int64 [n, k], weights float32 [n, k])``.

    Scores are computed in float64 so that a token's choice does not flip between plans that
    route different batch compositions; the chosen scores are renormalised to sum to one.
    """
    logits = hidden.double() @ gate.T
    if scoring == "softmax":
        scores = torch.softmax(logits, dim=-1)
    elif scoring == "sigmoid":
        scores = torch.sigmoid(logits)
    else:
        raise ValueError(f"unknown scoring {scoring!r}")
    top_scores, top_ids = torch.topk(scores, top_k, dim=-1)
    weights = top_scores / top_scores.sum(dim=-1, keepdim=True)
    return top_ids, weights.float()
