"""Routed experts through DeepEP's real buffers (``--dispatcher deep_ep``).

- a ``legacy`` member (the pack's ``[verify.dispatchers]``) runs on the legacy ``deep_ep.Buffer``
  in normal (intranode) mode, the way SGLang's
  ``DeepEPNormalDispatcher`` does: ``get_dispatch_layout`` from the top-k ids, ``dispatch`` with
  the layout, the ids and the weights (received tokens by source rank, ids made local, ``-1``
  elsewhere), the received (token, slot) pairs scattered into the contiguous layout and run on
  the runner, each token's weighted sum over this rank's experts (``ep_gather``), and
  ``combine(x, handle)``, which adds the per-rank partials on the token's rank (no weights).
- an ``elastic`` member runs on ``deep_ep.ElasticBuffer`` with the expanded layout, the way
  SGLang's DeepEP V2 dispatcher feeds DeepGEMM: ``dispatch(..., do_expand=True)`` returns one row
  per (token, local expert) pair, expert-major, each expert's rows aligned to the runner's
  alignment, with one weight per row; the runner computes every row, each row is scaled by its
  weight, and ``combine(x, handle=handle)`` adds a token's rows on its rank (no weights).

Both buffers are built once per run (:class:`DeepEPBuffers`), sized as SGLang sizes them, and
shared by every run; this module replaces the dispatcher models of :mod:`.dispatchers` with
the real kernels behind the block's experts.
"""

from __future__ import annotations

from functools import cached_property
from types import ModuleType
from typing import Any

import torch

from .comm import Comm
from .contiguous import Contiguous, scatter
from .dispatchers import PARTIAL, Dispatcher, PartialSumDispatcher, PreCombine
from .runners import Runner
from .shapes import Shape

# The legacy buffer's intranode notify_dispatch kernel takes at most 128 local experts
# (csrc/kernels/legacy/intranode.cu: num_experts / num_ranks <= kNumThreads = 128); the elastic
# buffer at most 256 (deep_ep/include/deep_ep/common/layout.cuh: kNumMaxExpertsPerRank). Both
# arms run the same experts, so the tighter bound holds for the run.
MAX_LOCAL_EXPERTS = 128
LEGACY_BUFFER = "legacy-buffer"
ELASTIC_BUFFER = "elastic-buffer"
BUFFER_OF: dict[str, str] = {"legacy": LEGACY_BUFFER, "elastic": ELASTIC_BUFFER}


def deep_ep_expert_cap(world_size: int) -> int:
    """The most routed experts a ``deep_ep`` run over ``world_size`` ranks can hold."""
    return MAX_LOCAL_EXPERTS * world_size


def deep_ep_implementation_of(kind: str) -> str:
    """The real buffer dispatcher ``kind`` (:func:`.dispatchers.kind_of`) runs on."""
    return BUFFER_OF.get(kind, PARTIAL)


class DeepEPBuffers:
    """The run's legacy ``Buffer`` and ``ElasticBuffer``, each built on first use.

    ``group`` is the process group of all ranks (NCCL, one rank per GPU). The legacy buffer's
    NVLink bytes are the larger of the dispatch and combine configs' hints for bf16 tokens of
    the shape's hidden size (as SGLang's ``DeepEPBuffer.get_deepep_buffer``); the elastic
    buffer is sized from the MoE settings, with ``num_max_tokens_per_rank`` = every token of
    the shape, since the standard plan dispatches the DP-gathered batch from each rank.
    """

    def __init__(self, module: ModuleType, group: Any, shape: Shape) -> None:
        self.module, self.group, self.shape = module, group, shape
        self.max_tokens = shape.tokens
        self.built: dict[str, dict[str, int]] = {}

    @cached_property
    def legacy(self) -> Any:
        """``deep_ep.Buffer(group, num_nvl_bytes, 0)`` in normal mode."""
        buffer_class = self.module.Buffer
        ranks, hidden_bytes = self.group.size(), self.shape.hidden * 2
        configs = (buffer_class.get_dispatch_config(ranks), buffer_class.get_combine_config(ranks))
        nvl_bytes = max(config.get_nvl_buffer_size_hint(hidden_bytes, ranks) for config in configs)
        buffer = buffer_class(
            self.group,
            nvl_bytes,
            0,
            low_latency_mode=False,
            num_qps_per_rank=buffer_class.num_sms,
            explicitly_destroy=True,
        )
        self.built["legacy"] = {"num_nvl_bytes": int(nvl_bytes), "num_rdma_bytes": 0}
        return buffer

    @cached_property
    def elastic(self) -> Any:
        """``deep_ep.ElasticBuffer`` for one host over NVLink (direct mode)."""
        buffer = self.module.ElasticBuffer(
            self.group,
            num_max_tokens_per_rank=self.max_tokens,
            hidden=self.shape.hidden,
            num_topk=self.shape.top_k,
            allow_hybrid_mode=False,
            prefer_overlap_with_compute=False,
            sl_idx=0,
            explicitly_destroy=True,
        )
        self.built["elastic"] = {
            "num_bytes": int(buffer.num_bytes),
            "num_max_tokens_per_rank": self.max_tokens,
        }
        return buffer

    def destroy(self) -> None:
        """Release whichever buffers were built (they were made with ``explicitly_destroy``)."""
        for name in ("legacy", "elastic"):
            if name in self.__dict__:
                self.__dict__.pop(name).destroy()


class _BufferDispatcher:
    """What both DeepEP dispatchers hold: the arm, its communicator, the layer, the runner
    and the shared buffers; ``last`` is the partial sum the previous call combined."""

    combines = True

    def __init__(
        self,
        backend: str,
        comm: Comm,
        layer: Any,
        runner: Runner,
        capacity: int | None,
        buffers: DeepEPBuffers,
    ) -> None:
        self.backend, self.comm, self.layer = backend, comm, layer
        self.runner, self.capacity, self.buffers = runner, capacity, buffers
        self.last: PreCombine | None = None


class LegacyBufferDispatcher(_BufferDispatcher):
    """DeepEP's legacy ``Buffer``, normal-mode intranode dispatch and combine."""

    implementation = LEGACY_BUFFER

    def __call__(
        self, hidden: torch.Tensor, expert_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """The full top-k weighted expert sum for each row of ``hidden``."""
        buffer, experts = self.buffers.legacy, self.layer.shape.experts
        topk_idx = expert_ids.to(self.buffers.module.topk_idx_t).contiguous()
        per_rank, per_rdma_rank, per_expert, in_rank, _ = buffer.get_dispatch_layout(
            topk_idx, experts
        )
        recv_x, recv_ids, recv_weights, _counts, handle, _ = buffer.dispatch(
            hidden.contiguous(),
            topk_idx=topk_idx,
            topk_weights=weights.float().contiguous(),
            num_tokens_per_rank=per_rank,
            num_tokens_per_rdma_rank=per_rdma_rank,
            is_token_in_rank=in_rank,
            num_tokens_per_expert=per_expert,
            expert_alignment=1,
        )
        recv_ids = recv_ids.long()
        # ep_scatter: every (received token, slot) on this rank, grouped by local expert
        token_idx, slot = torch.nonzero(recv_ids >= 0, as_tuple=True)
        layout = scatter(
            recv_x[token_idx],
            recv_ids[token_idx, slot],
            experts // self.comm.world_size,
            self.runner.alignment,
            self.capacity,
        )
        pair_out = layout.gather(self.runner(self.layer.routed_ep, layout))
        # ep_gather: each received token's weighted sum over this rank's experts, in slot order
        partial = torch.zeros(recv_x.shape, dtype=torch.float32, device=recv_x.device)
        partial.index_add_(
            0, token_idx, pair_out.float() * recv_weights[token_idx, slot].unsqueeze(-1)
        )
        partial = partial.to(hidden.dtype)
        self.last = PreCombine(partial, _legacy_sources(handle, self.comm.rank))
        combined, _weights, _ = buffer.combine(partial, handle)
        return combined


class ElasticBufferDispatcher(_BufferDispatcher):
    """DeepEP V2's ``ElasticBuffer``, expanded-layout dispatch and combine."""

    implementation = ELASTIC_BUFFER

    def __call__(
        self, hidden: torch.Tensor, expert_ids: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """The full top-k weighted expert sum for each row of ``hidden``."""
        buffer = self.buffers.elastic
        topk_idx = expert_ids.to(self.buffers.module.topk_idx_t).contiguous()
        recv_x, _ids, recv_weights, handle, _ = buffer.dispatch(
            hidden.contiguous(),
            topk_idx=topk_idx,
            topk_weights=weights.float().contiguous(),
            num_experts=self.layer.shape.experts,
            num_max_tokens_per_rank=self.buffers.max_tokens,
            expert_alignment=self.runner.alignment,
            do_cpu_sync=True,
            do_expand=True,
            do_zero_padding=True,
        )
        rows = recv_x.shape[0]
        layout = expanded_layout(
            recv_x,
            handle.psum_num_recv_tokens_per_expert,
            handle.num_unaligned_recv_tokens_per_expert,
            self.capacity,
        )
        expert_out = self.runner(self.layer.routed_ep, layout)[:rows]
        valid = (layout.groups[:rows] >= 0).unsqueeze(-1)
        scaled = expert_out.float() * recv_weights[:rows].unsqueeze(-1)
        weighted = torch.where(valid, scaled, torch.zeros_like(scaled)).to(hidden.dtype)
        meta = torch.stack(
            [torch.arange(rows, device=recv_x.device), layout.groups[:rows].long()], dim=1
        )
        self.last = PreCombine(weighted, meta)
        combined, _weights, _ = buffer.combine(weighted, handle=handle)
        return combined


def expanded_layout(
    recv_x: torch.Tensor,
    psum_per_expert: torch.Tensor,
    unaligned_per_expert: torch.Tensor,
    capacity: int | None = None,
) -> Contiguous:
    """The contiguous layout of an expanded ``ElasticBuffer.dispatch`` output.

    In expand mode ``psum_num_recv_tokens_per_expert[i]`` is expert ``i``'s aligned start plus
    its real (unaligned) count, so expert ``i``'s rows are ``[psum[i] - count[i], psum[i])``;
    every other row is padding (group ``-1``). ``capacity``, when given, pads the buffer to that
    many rows so that a JIT kernel compiled for one ``M`` serves every call.
    """
    total = recv_x.shape[0]
    size = total if capacity is None else capacity
    if size < total:
        raise ValueError(f"{total} expanded rows exceed the capacity {capacity}")
    counts_t = unaligned_per_expert.to(device=recv_x.device, dtype=torch.int64)
    starts_t = psum_per_expert.to(device=recv_x.device, dtype=torch.int64) - counts_t
    experts = torch.arange(len(counts_t), device=recv_x.device)
    group_of = torch.repeat_interleave(experts, counts_t)
    first = torch.cumsum(counts_t, 0) - counts_t
    offset = torch.arange(len(group_of), device=recv_x.device) - first[group_of]
    groups = torch.full((size,), -1, dtype=torch.int32, device=recv_x.device)
    groups[starts_t[group_of] + offset] = group_of.to(torch.int32)
    rows = (
        recv_x
        if size == total
        else torch.cat([recv_x, recv_x.new_zeros(size - total, *recv_x.shape[1:])])
    )
    position = torch.arange(total, device=recv_x.device)
    return Contiguous(rows, groups, position, starts_t.tolist(), counts_t.tolist())


def _legacy_sources(handle: tuple, rank: int) -> torch.Tensor:
    """``(source rank, source token)`` of each received row, from the legacy dispatch handle:
    ``rank_prefix_matrix[i][rank]`` ends the rows from rank ``i``; ``recv_src_idx`` indexes the
    token in its source rank."""
    rank_prefix_matrix, recv_src_idx = handle[0], handle[3]
    ends = rank_prefix_matrix[:, rank].long()
    rows = torch.arange(recv_src_idx.shape[0], device=recv_src_idx.device)
    source = torch.searchsorted(ends, rows, right=True)
    return torch.stack([source, recv_src_idx.long()], dim=1)


def make_deep_ep_dispatcher(
    backend: str,
    kind: str,
    comm: Comm,
    layer: Any,
    runner: Runner,
    capacity: int | None = None,
    *,
    buffers: DeepEPBuffers,
) -> Dispatcher:
    """The real DeepEP dispatcher of ``kind`` for ``backend`` (the legacy ``Buffer`` or the
    ``ElasticBuffer``); a non-combining kind keeps the TP partial sum (no DeepEP buffer)."""
    implementation = deep_ep_implementation_of(kind)
    if implementation == LEGACY_BUFFER:
        return LegacyBufferDispatcher(backend, comm, layer, runner, capacity, buffers)
    if implementation == ELASTIC_BUFFER:
        return ElasticBufferDispatcher(backend, comm, layer, runner, capacity, buffers)
    return PartialSumDispatcher(backend, layer, runner)
