"""One rank's layer weights, each piece built on first use and kept for later arms."""

from __future__ import annotations

from functools import cached_property

import torch

from . import weights
from .shapes import Shape


class LayerWeights:
    """The weights rank ``rank`` of ``world_size`` needs, generated lazily from ``seed``.

    Arms and phases share one store, so every arm sees the same numbers and a piece no arm
    uses (say the TP slice of the routed experts when every arm's dispatcher is EP) is never
    built.
    """

    def __init__(
        self,
        shape: Shape,
        seed: int,
        rank: int,
        world_size: int,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        self.shape = shape
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.device = device
        self.dtype = dtype

    @cached_property
    def routed_ep(self) -> weights.ExpertWeights:
        """The whole routed experts this rank owns (all-to-all dispatchers)."""
        return weights.routed_ep_shard(*self._where())

    @cached_property
    def routed_tp(self) -> weights.ExpertWeights:
        """This rank's intermediate slice of every routed expert (non-combining backends)."""
        return weights.routed_tp_slice(*self._where())

    @cached_property
    def shared_full(self) -> weights.ExpertWeights:
        """The whole shared expert (EP all-to-all plan: replicated)."""
        return weights.shared_expert(self.shape, self.seed, self.device, self.dtype)

    @cached_property
    def shared_tp(self) -> weights.ExpertWeights:
        """This rank's slice of the shared expert (standard plan: TP-sharded)."""
        tp = (self.rank, self.world_size)
        return weights.shared_expert(self.shape, self.seed, self.device, self.dtype, tp=tp)

    @cached_property
    def router(self) -> torch.Tensor:
        """The gate linear, replicated."""
        return weights.router_weight(self.shape, self.seed, self.device)

    @cached_property
    def lm_head(self) -> torch.Tensor:
        """The LM head, replicated."""
        return weights.lm_head_weight(self.shape, self.seed, self.device)

    def _where(self) -> tuple[Shape, int, int, int, torch.device, torch.dtype]:
        return self.shape, self.seed, self.rank, self.world_size, self.device, self.dtype
