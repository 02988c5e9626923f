"""MoE dispatchers: distinct models of DeepEP's two buffers, and a non-combining backend.

Each DeepEP-family dispatcher owns whole experts per rank (rank ``r`` holds experts
``[r*E/W, (r+1)*E/W)``), moves tokens to the owners with an all-to-all, runs the experts there
on the m-grouped contiguous layout, and combines the weighted outputs back on the token's rank,
so what it returns is already the full sum over ranks. The two differ the way DeepEP's
buffers do (``deep_ep/buffers/legacy.py`` ``Buffer`` in normal mode; ``deep_ep/buffers/elastic.py``
``ElasticBuffer`` with ``do_expand=True``):

| | legacy (normal mode) | elastic (expanded layout) |
| --- | --- | --- |
| dispatch sends | each token once per destination rank, with its top-k ids made local (-1 elsewhere) and weights | one row per (token, expert) pair, sorted by (rank, expert, token) |
| received buffer | tokens by source rank, then token order | expert-major, aligned to the runner's alignment, by global token index |
| expert compute | scattered into the contiguous layout (``ep_scatter``) | on the received layout itself |
| before combine | each received token's weighted sum over the rank's own experts, rounded to the dtype (``ep_gather``) | each pair's unweighted expert output |
| combine | the token's rank adds the per-rank partials in rank order (float32, rounded once) | the token's rank adds all top-k weighted pair outputs in slot order (float32, rounded once) |

So the two arms agree only up to rounding: the legacy path rounds once per rank and again
after the cross-rank sum, the elastic path once. Which member runs behind which model is the
pack's (``[verify.dispatchers]``); a family member it does not name gets the legacy model. A
backend outside the family computes its TP slice of every expert and returns a partial sum that
only the layer's TP all-reduce completes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from .comm import Comm
from .contiguous import scatter
from .runners import Runner

LEGACY = "legacy-buffer-model"
ELASTIC = "elastic-buffer-model"
PARTIAL = "tp-partial-sum"


class Dispatcher(Protocol):
    """Routed-expert compute for the tokens a rank hands it."""

    backend: str
    implementation: str
    combines: bool

    def __call__(
        self, hidden: torch.Tensor, expert_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor: ...


@dataclass
class PreCombine:
    """What a combining dispatcher holds just before its combine: the tensor it sends back and
    the metadata that says which token (and slot) each of its rows belongs to."""

    tensor: torch.Tensor
    rows_meta: torch.Tensor  # int64 [rows, 2]: (source rank, source token) or (token, slot)


class LegacyNormalDispatcher:
    """DeepEP's legacy ``Buffer`` in normal mode (intranode), with its SGLang expert path."""

    implementation = LEGACY
    combines = True

    def __init__(
        self, backend: str, comm: Comm, layer: Any, runner: Runner, capacity: int | None
    ) -> None:
        self.backend, self.comm, self.layer = backend, comm, layer
        self.runner, self.capacity = runner, capacity
        self.last: PreCombine | None = None

    def __call__(
        self, hidden: torch.Tensor, expert_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """The full top-k weighted expert sum for each row of ``hidden``."""
        comm, world = self.comm, self.comm.world_size
        per_rank = self.layer.shape.experts // world
        dest = expert_ids // per_rank  # [n, k]
        ranks = torch.arange(world, device=hidden.device)
        in_rank = (dest.unsqueeze(-1) == ranks).any(dim=1)  # is_token_in_rank [n, W]
        tokens = [torch.nonzero(in_rank[:, r]).flatten() for r in range(world)]
        send_counts = [len(t) for t in tokens]
        recv_counts = comm.exchange_counts(send_counts)
        order = torch.cat(tokens)
        rank_of = torch.cat([torch.full_like(t, r) for r, t in enumerate(tokens)])
        local_ids = torch.where(
            dest[order] == rank_of.unsqueeze(-1),
            expert_ids[order] - rank_of.unsqueeze(-1) * per_rank,
            -1,
        )
        recv_x = comm.all_to_all_rows(hidden[order], send_counts, recv_counts)
        recv_ids = comm.all_to_all_rows(local_ids, send_counts, recv_counts)
        recv_w = comm.all_to_all_rows(weights[order], send_counts, recv_counts)
        recv_src = comm.all_to_all_rows(order, send_counts, recv_counts)

        # ep_scatter: every (received token, slot) on this rank, grouped by local expert
        token_idx, slot = torch.nonzero(recv_ids >= 0, as_tuple=True)
        layout = scatter(
            recv_x[token_idx],
            recv_ids[token_idx, slot],
            per_rank,
            self.runner.alignment,
            self.capacity,
        )
        pair_out = layout.gather(self.runner(self.layer.routed_ep, layout))
        # ep_gather: each received token's weighted sum over this rank's experts, in slot order
        partial = torch.zeros(recv_x.shape, dtype=torch.float32, device=hidden.device)
        partial.index_add_(0, token_idx, pair_out.float() * recv_w[token_idx, slot].unsqueeze(-1))
        partial = partial.to(hidden.dtype)
        source = torch.repeat_interleave(
            torch.arange(world, device=hidden.device),
            torch.tensor(recv_counts, device=hidden.device),
        )
        self.last = PreCombine(partial, torch.stack([source, recv_src], dim=1))

        # combine: partials back to the token's rank, summed over ranks in rank order
        returned = comm.all_to_all_rows(partial, recv_counts, send_counts)
        total = torch.zeros(hidden.shape, dtype=torch.float32, device=hidden.device)
        start = 0
        for count in send_counts:
            part = slice(start, start + count)
            total[order[part]] += returned[part].float()
            start += count
        return total.to(hidden.dtype)


class ElasticExpandDispatcher:
    """DeepEP v2's ``ElasticBuffer`` with the expanded (one row per expert slot) layout."""

    implementation = ELASTIC
    combines = True

    def __init__(
        self, backend: str, comm: Comm, layer: Any, runner: Runner, capacity: int | None
    ) -> None:
        self.backend, self.comm, self.layer = backend, comm, layer
        self.runner, self.capacity = runner, capacity
        self.last: PreCombine | None = None

    def __call__(
        self, hidden: torch.Tensor, expert_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """The full top-k weighted expert sum for each row of ``hidden``."""
        comm, world = self.comm, self.comm.world_size
        per_rank = self.layer.shape.experts // world
        n, top_k = expert_ids.shape
        pair_expert = expert_ids.reshape(-1)
        pair_token = torch.arange(n, device=hidden.device).repeat_interleave(top_k)
        # sorted by (destination rank, expert, token): the global expert id orders both
        order = torch.argsort(pair_expert * n + pair_token)
        dest = pair_expert[order] // per_rank
        send_counts = torch.bincount(dest, minlength=world).tolist()
        recv_counts = comm.exchange_counts(send_counts)
        recv_x = comm.all_to_all_rows(hidden[pair_token[order]], send_counts, recv_counts)
        recv_expert = comm.all_to_all_rows(pair_expert[order], send_counts, recv_counts)
        local = recv_expert - comm.rank * per_rank
        # expert-major by global token index: stable in (source rank, token) within an expert
        layout = scatter(recv_x, local, per_rank, self.runner.alignment, self.capacity)
        expert_out = self.runner(self.layer.routed_ep, layout)
        slot_of = torch.full((layout.rows.shape[0],), -1, dtype=torch.int64, device=hidden.device)
        slot_of[layout.position] = torch.arange(len(local), device=hidden.device)
        self.last = PreCombine(expert_out, torch.stack([slot_of, layout.groups.long()], dim=1))

        # combine: each pair's output back to its token's rank, weighted sum over slots there
        returned = comm.all_to_all_rows(layout.gather(expert_out), recv_counts, send_counts)
        pair_out = torch.empty_like(returned)
        pair_out[order] = returned
        stacked = pair_out.view(n, top_k, -1).float()
        return (stacked * weights.unsqueeze(-1)).sum(dim=1).to(hidden.dtype)


@dataclass
class PartialSumDispatcher:
    """Local compute over this rank's intermediate slice of every expert; no communication."""

    backend: str
    layer: Any
    runner: Runner
    implementation: str = PARTIAL
    combines: bool = False

    def __call__(
        self, hidden: torch.Tensor, expert_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """This rank's partial sum; the layer's TP all-reduce completes it."""
        n, top_k = expert_ids.shape
        rows = hidden.repeat_interleave(top_k, dim=0)
        layout = scatter(
            rows, expert_ids.reshape(-1), self.layer.shape.experts, self.runner.alignment
        )
        pair_out = layout.gather(self.runner(self.layer.routed_tp, layout))
        stacked = pair_out.view(n, top_k, -1).float()
        return (stacked * weights.unsqueeze(-1)).sum(dim=1).to(hidden.dtype)


KINDS = {"legacy": LEGACY, "elastic": ELASTIC, "partial": PARTIAL}


def kind_of(backend: str, family: frozenset[str], named: Mapping[str, str]) -> str:
    """The dispatcher model ``backend`` runs behind: the one the pack names for it
    (``[verify.dispatchers]``), else ``legacy`` for a family member (its dispatcher combines)
    and ``partial`` for any other backend."""
    if backend not in family:
        return "partial"
    kind = named.get(backend, "legacy")
    if kind not in KINDS:
        raise ValueError(
            f"[verify.dispatchers] {backend} = {kind!r}: known dispatchers are {', '.join(KINDS)}"
        )
    return kind


def implementation_of(kind: str) -> str:
    """The implementation name of dispatcher ``kind`` (reports name it)."""
    return KINDS[kind]


def make_dispatcher(
    backend: str,
    kind: str,
    comm: Comm,
    layer: Any,
    runner: Runner,
    capacity: int | None = None,
) -> Dispatcher:
    """The dispatcher model ``kind`` (:func:`kind_of`) for ``backend``; ``layer`` gives the
    routed experts (``shape``, ``routed_ep``, ``routed_tp``)."""
    if kind == "elastic":
        return ElasticExpandDispatcher(backend, comm, layer, runner, capacity)
    if kind == "legacy":
        return LegacyNormalDispatcher(backend, comm, layer, runner, capacity)
    return PartialSumDispatcher(backend, layer, runner)
