"""The two communication plans K3 chooses between with its EP all-to-all predicate."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .comm import Comm
from .dispatchers import Dispatcher
from .experts import swiglu
from .router import route
from .store import LayerWeights

STANDARD = "standard"
EP_A2A = "ep_a2a"


@dataclass
class LayerOutput:
    """A rank's MoE output rows and, separately, the routed part as it reached them."""

    output: torch.Tensor
    routed: torch.Tensor


def plan_name(uses_ep_a2a: bool) -> str:
    """The plan K3 takes when its predicate returns ``uses_ep_a2a``."""
    return EP_A2A if uses_ep_a2a else STANDARD


def standard_plan(
    local: torch.Tensor, comm: Comm, layer: LayerWeights, dispatcher: Dispatcher
) -> LayerOutput:
    """DP-gather every token, run the TP-sharded MoE, TP all-reduce, keep this rank's rows.

    The shared expert is TP-sharded here, so its partial sum needs the all-reduce too. The
    routed part is also reduced on its own, as a probe that does not feed the output.
    """
    counts = comm.exchange_counts([local.shape[0]] * comm.world_size)
    tokens = comm.all_gather_rows(local, counts)
    expert_ids, weights = route(tokens, layer.router, layer.shape.top_k, layer.shape.scoring)
    routed = dispatcher(tokens, expert_ids, weights)
    shared = swiglu(tokens, layer.shared_tp.w13[0], layer.shared_tp.w2[0])
    reduced = comm.all_reduce(routed + shared)
    routed_reduced = comm.all_reduce(routed)
    start = sum(counts[: comm.rank])
    mine = slice(start, start + local.shape[0])
    return LayerOutput(reduced[mine], routed_reduced[mine])


def ep_a2a_plan(
    local: torch.Tensor, comm: Comm, layer: LayerWeights, dispatcher: Dispatcher
) -> LayerOutput:
    """Route this rank's own tokens through the dispatcher; no DP gather, no TP reduce.

    The shared expert is replicated and computed locally in full.
    """
    expert_ids, weights = route(local, layer.router, layer.shape.top_k, layer.shape.scoring)
    routed = dispatcher(local, expert_ids, weights)
    shared = swiglu(local, layer.shared_full.w13[0], layer.shared_full.w2[0])
    return LayerOutput(routed + shared, routed)


PLANS = {STANDARD: standard_plan, EP_A2A: ep_a2a_plan}
