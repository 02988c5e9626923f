"""The communication plans a site's value chooses between, one function per plan name.

``standard`` / ``forward_normal``: DP-gather every token, MoE over all of them, TP all-reduce of
routed + (TP-sharded) shared, keep this rank's rows. ``ep_a2a`` / ``forward_deepep``: this rank's
own tokens straight through the dispatcher, replicated shared expert, no gather, no reduce.
``shared_replicated`` / ``shared_tp``: the layer's routed plan is chosen by other code, taken
here to follow the helper: behind a combining dispatcher the EP all-to-all plan, with the shared
expert replicated, or TP-sharded and so left as this rank's partial with no reduce to complete
it; behind a non-combining one, ``shared_tp`` is the standard plan.

Every plan also returns probes that do not feed the output: the routed part as it reached the
rows (the standard plan all-reduces it separately), the shared part, and the shared part with
the missing TP reduce added (gather, every rank's partial on every row, all-reduce).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .comm import Comm
from .dispatchers import Dispatcher
from .router import route
from .runners import swiglu
from .store import LayerWeights


@dataclass
class LayerOutput:
    """A rank's MoE output rows and its probes."""

    output: torch.Tensor
    routed: torch.Tensor
    shared: torch.Tensor
    shared_completed: torch.Tensor


def _own_rows(comm: Comm, counts: list[int]) -> slice:
    start = sum(counts[: comm.rank])
    return slice(start, start + counts[comm.rank])


def _gather(local: torch.Tensor, comm: Comm) -> tuple[torch.Tensor, list[int]]:
    counts = comm.exchange_counts([local.shape[0]] * comm.world_size)
    return comm.all_gather_rows(local, counts), counts


def standard_plan(
    local: torch.Tensor, comm: Comm, layer: LayerWeights, dispatcher: Dispatcher
) -> LayerOutput:
    """DP gather, TP-sharded MoE on all tokens, TP all-reduce, this rank's rows."""
    tokens, counts = _gather(local, comm)
    expert_ids, weights = route(tokens, layer.router, layer.shape.top_k, layer.shape.scoring)
    routed = dispatcher(tokens, expert_ids, weights)
    shared = swiglu(tokens, layer.shared_tp.w13[0], layer.shared_tp.w2[0])
    reduced = comm.all_reduce(routed + shared)
    mine = _own_rows(comm, counts)
    routed_reduced = comm.all_reduce(routed)[mine]
    shared_reduced = comm.all_reduce(shared)[mine]
    return LayerOutput(reduced[mine], routed_reduced, shared_reduced, shared_reduced)


def _ep_routed(local: torch.Tensor, layer: LayerWeights, dispatcher: Dispatcher) -> torch.Tensor:
    expert_ids, weights = route(local, layer.router, layer.shape.top_k, layer.shape.scoring)
    return dispatcher(local, expert_ids, weights)


def ep_a2a_plan(
    local: torch.Tensor, comm: Comm, layer: LayerWeights, dispatcher: Dispatcher
) -> LayerOutput:
    """This rank's own tokens through the dispatcher, replicated shared expert; no collectives
    besides the dispatcher's own."""
    routed = _ep_routed(local, layer, dispatcher)
    shared = swiglu(local, layer.shared_full.w13[0], layer.shared_full.w2[0])
    return LayerOutput(routed + shared, routed, shared, shared)


def shared_tp_plan(
    local: torch.Tensor, comm: Comm, layer: LayerWeights, dispatcher: Dispatcher
) -> LayerOutput:
    """The EP all-to-all plan with a TP-sharded shared expert: its partial is never reduced.

    Behind a non-combining dispatcher the layer keeps its TP reduce (the standard plan), which
    completes the TP-sharded shared expert too.
    """
    if not dispatcher.combines:
        return standard_plan(local, comm, layer, dispatcher)
    routed = _ep_routed(local, layer, dispatcher)
    w13, w2 = layer.shared_tp.w13[0], layer.shared_tp.w2[0]
    partial = swiglu(local, w13, w2)
    tokens, counts = _gather(local, comm)  # the probe: the reduce this plan leaves out
    completed = comm.all_reduce(swiglu(tokens, w13, w2))[_own_rows(comm, counts)]
    return LayerOutput(routed + partial, routed, partial, completed)


PLANS: dict[str, Callable[[torch.Tensor, Comm, LayerWeights, Dispatcher], LayerOutput]] = {
    "standard": standard_plan,
    "forward_normal": standard_plan,
    "ep_a2a": ep_a2a_plan,
    "forward_deepep": ep_a2a_plan,
    "shared_replicated": ep_a2a_plan,
    "shared_tp": shared_tp_plan,
}
