"""MoE dispatchers with each backend's real reduce semantics.

A DeepEP-family backend (deepep, deepep_v2, mooncake, mori, pplx) owns whole experts per rank,
sends each (token, expert) pair to the owner with an all-to-all, and combines the weighted
expert outputs back on the token's origin rank: what it returns is already the full sum over
ranks. Any other backend computes the local TP slice of every expert and returns a partial
sum that only the layer's TP all-reduce completes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from .comm import Comm
from .experts import apply_experts, weighted_sum
from .store import LayerWeights


class Dispatcher(Protocol):
    """Routed-expert compute for the tokens a rank hands it."""

    backend: str
    combines: bool

    def __call__(
        self, hidden: torch.Tensor, expert_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor: ...


@dataclass
class CombiningDispatcher:
    """All-to-all dispatch to the owner rank, expert compute there, all-to-all combine back."""

    backend: str
    comm: Comm
    layer: LayerWeights
    combines: bool = True

    def __call__(
        self, hidden: torch.Tensor, expert_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """The full top-k weighted expert sum for each row of ``hidden``."""
        top_k = expert_ids.shape[1]
        pair_experts = expert_ids.reshape(-1)
        owner = pair_experts // (self.layer.shape.experts // self.comm.world_size)
        order = torch.argsort(owner, stable=True)
        send_counts = torch.bincount(owner, minlength=self.comm.world_size).tolist()
        recv_counts = self.comm.exchange_counts(send_counts)

        rows = self.comm.all_to_all_rows(hidden[order // top_k], send_counts, recv_counts)
        row_experts = self.comm.all_to_all_rows(pair_experts[order], send_counts, recv_counts)
        outputs = apply_experts(self.layer.routed_ep, rows, row_experts)
        returned = self.comm.all_to_all_rows(outputs, recv_counts, send_counts)

        pair_outputs = torch.empty_like(returned)
        pair_outputs[order] = returned
        return weighted_sum(pair_outputs, weights)


@dataclass
class PartialSumDispatcher:
    """Local compute over this rank's intermediate slice of every expert; no communication."""

    backend: str
    layer: LayerWeights
    combines: bool = False

    def __call__(
        self, hidden: torch.Tensor, expert_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """This rank's partial sum; the layer's TP all-reduce completes it."""
        rows = hidden.repeat_interleave(expert_ids.shape[1], dim=0)
        outputs = apply_experts(self.layer.routed_tp, rows, expert_ids.reshape(-1))
        return weighted_sum(outputs, weights)


def make_dispatcher(
    backend: str, family: frozenset[str], comm: Comm, layer: LayerWeights
) -> Dispatcher:
    """The dispatcher ``backend`` really is: combining when it is in ``family``."""
    if backend in family:
        return CombiningDispatcher(backend, comm, layer)
    return PartialSumDispatcher(backend, layer)
