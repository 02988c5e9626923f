"""The LM head read-out: top-5 log-probabilities per token."""

from __future__ import annotations

import torch

TOP = 5


def top5(residual: torch.Tensor, lm_head: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """RMS-normalise the residual stream, project to the vocabulary, take the top five.

    Returns ``(log-probabilities float32 [n, 5], token ids int64 [n, 5])``.
    """
    hidden = residual.float()
    hidden = hidden * torch.rsqrt(hidden.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
    log_probs = torch.log_softmax(hidden @ lm_head.T, dim=-1)
    values, ids = torch.topk(log_probs, TOP, dim=-1)
    return values, ids
