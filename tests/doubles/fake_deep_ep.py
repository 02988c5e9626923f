"""A CPU stand-in for DeepEP's two buffers, with DeepEP's call signatures (tests only).

It imitates ``deep_ep`` 2.1 (deepseek-ai/DeepEP, main) as far as the layer harness uses it:
``Buffer`` (``deep_ep/buffers/legacy.py``: ``get_dispatch_layout``, normal-mode intranode
``dispatch`` returning ``(recv_x, recv_topk_idx, recv_topk_weights,
num_recv_tokens_per_expert_list, handle, event)`` with a 6-tuple handle, ``combine(x, handle)``
summing the per-rank rows without weights) and ``ElasticBuffer`` (``deep_ep/buffers/elastic.py``:
``dispatch(..., do_expand=True)`` returning expert-major aligned rows, one weight per row and an
``EPHandle``; ``combine(x, handle=handle)`` adding a token's rows, once per rank first when
``allow_multiple_reduction``). The data moves with ``torch.distributed`` all-to-alls over the
group (gloo). Padding rows are NaN unless ``do_zero_padding`` asks for zeros, so a caller that
reads them shows it.

Every constructor and call appends a JSON line to ``$FAKE_DEEP_EP_LOG/rank<R>.jsonl``: which
buffer, which call, how many tokens, and the rank's NVLink-multicast and DeepEP variables.
"""

from __future__ import annotations

import json
import os
from typing import Any

import torch
import torch.distributed as dist

__version__ = "2.1.0-stand-in"
topk_idx_t = torch.int64
WATCHED = (
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "EP_DISABLE_GIN",
    "EP_REUSE_NCCL_COMM",
)


def _log(group: Any, buffer: str, call: str, **fields: Any) -> None:
    directory = os.environ.get("FAKE_DEEP_EP_LOG")
    if not directory:
        return
    entry = {
        "rank": group.rank(),
        "buffer": buffer,
        "call": call,
        **fields,
        "env": {name: os.environ.get(name) for name in WATCHED},
    }
    with open(os.path.join(directory, f"rank{group.rank()}.jsonl"), "a") as out:
        out.write(json.dumps(entry) + "\n")


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _exchange(
    send: torch.Tensor, send_counts: list[int], group: Any
) -> tuple[torch.Tensor, list[int]]:
    counts = torch.tensor(send_counts, dtype=torch.int64)
    recv_counts = torch.empty_like(counts)
    dist.all_to_all_single(recv_counts, counts, group=group)
    recv_list = recv_counts.tolist()
    out = send.new_empty((sum(recv_list), *send.shape[1:]))
    dist.all_to_all_single(
        out, send.contiguous(), output_split_sizes=recv_list, input_split_sizes=send_counts,
        group=group,
    )  # fmt: skip
    return out, recv_list


class EventOverlap:
    """DeepEP's event wrapper; the stand-in is synchronous."""

    def __init__(self, event: Any = None) -> None:
        self.event = event

    def current_stream_wait(self) -> None:
        pass


class Config:
    """DeepEP's legacy performance config."""

    def __init__(
        self,
        num_sms: int,
        num_max_nvl_chunked_send_tokens: int,
        num_max_nvl_chunked_recv_tokens: int,
        num_max_rdma_chunked_send_tokens: int = 6,
        num_max_rdma_chunked_recv_tokens: int = 128,
    ) -> None:
        self.num_sms = num_sms
        self.num_max_nvl_chunked_recv_tokens = num_max_nvl_chunked_recv_tokens

    def get_nvl_buffer_size_hint(self, hidden_bytes: int, num_ranks: int) -> int:
        channels = self.num_sms // 2
        per_token = hidden_bytes + 128 * 8 + 128 * 4 + 128 * 4
        size = channels * num_ranks * self.num_max_nvl_chunked_recv_tokens * per_token
        return _align(size, 128)


class Buffer:
    """DeepEP's legacy buffer: normal-mode intranode dispatch and combine."""

    num_sms: int = 20

    def __init__(
        self,
        group: Any,
        num_nvl_bytes: int = 0,
        num_rdma_bytes: int = 0,
        low_latency_mode: bool = False,
        num_qps_per_rank: int = 24,
        allow_nvlink_for_low_latency_mode: bool = True,
        allow_mnnvl: bool = False,
        explicitly_destroy: bool = False,
        enable_shrink: bool = False,
        comm: Any = None,
    ) -> None:
        assert num_nvl_bytes > 0 and num_nvl_bytes % 128 == 0, "intranode needs NVLink bytes"
        assert not low_latency_mode and num_rdma_bytes == 0, "the stand-in is normal mode only"
        self.group, self.rank, self.group_size = group, group.rank(), group.size()
        self.num_nvl_bytes, self.explicitly_destroy = num_nvl_bytes, explicitly_destroy
        self.destroyed = False
        _log(group, "Buffer", "init", num_nvl_bytes=num_nvl_bytes)

    @staticmethod
    def get_dispatch_config(num_ranks: int) -> Config:
        assert num_ranks in (2, 4, 8), f"Unsupported number of EP ranks: {num_ranks}"
        return Config(Buffer.num_sms, 24, 256, 6, 128)

    @staticmethod
    def get_combine_config(num_ranks: int) -> Config:
        assert num_ranks in (2, 4, 8), f"Unsupported number of EP ranks: {num_ranks}"
        return Config(Buffer.num_sms, 10, 256, 6, 128)

    def get_dispatch_layout(
        self,
        topk_idx: torch.Tensor,
        num_experts: int,
        previous_event: Any = None,
        async_finish: bool = False,
        allocate_on_comm_stream: bool = False,
    ) -> tuple[torch.Tensor, None, torch.Tensor, torch.Tensor, EventOverlap]:
        assert topk_idx.dtype == topk_idx_t and topk_idx.dim() == 2 and topk_idx.is_contiguous()
        per_rank = num_experts // self.group_size
        ranks = torch.arange(self.group_size)
        rank_of = torch.where(topk_idx >= 0, topk_idx // per_rank, -1)
        is_token_in_rank = (rank_of.unsqueeze(-1) == ranks).any(dim=1)
        num_tokens_per_rank = is_token_in_rank.sum(dim=0).to(torch.int32)
        valid = topk_idx[topk_idx >= 0]
        num_tokens_per_expert = torch.bincount(valid, minlength=num_experts).to(torch.int32)
        _log(self.group, "Buffer", "get_dispatch_layout", tokens=topk_idx.shape[0])
        return num_tokens_per_rank, None, num_tokens_per_expert, is_token_in_rank, EventOverlap()

    def dispatch(
        self,
        x: torch.Tensor,
        handle: tuple | None = None,
        num_tokens_per_rank: torch.Tensor | None = None,
        num_tokens_per_rdma_rank: torch.Tensor | None = None,
        is_token_in_rank: torch.Tensor | None = None,
        num_tokens_per_expert: torch.Tensor | None = None,
        topk_idx: torch.Tensor | None = None,
        topk_weights: torch.Tensor | None = None,
        expert_alignment: int = 1,
        num_worst_tokens: int = 0,
        config: Config | None = None,
        previous_event: Any = None,
        async_finish: bool = False,
        allocate_on_comm_stream: bool = False,
    ) -> tuple:
        assert handle is None, "the stand-in has no cached dispatch"
        assert num_tokens_per_rank is not None and is_token_in_rank is not None
        assert num_tokens_per_expert is not None and topk_idx is not None
        assert x.dtype == torch.bfloat16 and x.dim() == 2 and x.is_contiguous()
        assert topk_weights is not None and topk_weights.dtype == torch.float32
        assert is_token_in_rank.shape == (x.shape[0], self.group_size)
        world, rank = self.group_size, self.rank
        per_rank = num_tokens_per_expert.numel() // world
        tokens = [torch.nonzero(is_token_in_rank[:, r]).flatten() for r in range(world)]
        order = torch.cat(tokens)
        send_counts = [len(t) for t in tokens]
        dest = torch.cat([torch.full_like(t, r) for r, t in enumerate(tokens)])
        mine = (topk_idx[order] // per_rank == dest.unsqueeze(-1)) & (topk_idx[order] >= 0)
        local_ids = torch.where(mine, topk_idx[order] - dest.unsqueeze(-1) * per_rank, -1)
        recv_x, recv_counts = _exchange(x[order], send_counts, self.group)
        recv_ids, _ = _exchange(local_ids, send_counts, self.group)
        recv_weights, _ = _exchange(topk_weights[order], send_counts, self.group)
        recv_src_idx, _ = _exchange(order.to(torch.int32), send_counts, self.group)
        counts = torch.bincount(recv_ids[recv_ids >= 0], minlength=per_rank).tolist()
        per_expert_list = [_align(count, expert_alignment) for count in counts]
        all_counts = [torch.empty(world, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(all_counts, torch.tensor(send_counts, dtype=torch.int64), group=self.group)
        # rank_prefix_matrix[i][j]: rows rank j holds from ranks 0..i (DeepEP's layout)
        rank_prefix_matrix = torch.stack(all_counts).cumsum(dim=0).to(torch.int32)
        assert int(rank_prefix_matrix[-1, rank]) == recv_x.shape[0] == sum(recv_counts)
        send_state = (order, send_counts, recv_counts)
        handle = (rank_prefix_matrix, None, None, recv_src_idx, is_token_in_rank, send_state)
        _log(self.group, "Buffer", "dispatch", tokens=x.shape[0], received=recv_x.shape[0])
        return recv_x, recv_ids, recv_weights, per_expert_list, handle, EventOverlap()

    def combine(
        self,
        x: torch.Tensor,
        handle: tuple,
        topk_weights: torch.Tensor | None = None,
        bias: Any = None,
        config: Config | None = None,
        previous_event: Any = None,
        async_finish: bool = False,
        allocate_on_comm_stream: bool = False,
    ) -> tuple[torch.Tensor, None, EventOverlap]:
        assert x.dtype == torch.bfloat16 and x.is_contiguous()
        order, send_counts, recv_counts = handle[5]
        assert x.shape[0] == sum(recv_counts), "combine takes one row per received token"
        returned, _ = _exchange(x, recv_counts, self.group)
        total = torch.zeros((len(handle[4]), x.shape[1]), dtype=torch.float32)
        start = 0
        for count in send_counts:  # rank order, float32, rounded once
            part = slice(start, start + count)
            total[order[part]] += returned[part].float()
            start += count
        _log(self.group, "Buffer", "combine", rows=x.shape[0])
        return total.to(torch.bfloat16), None, EventOverlap()

    def destroy(self) -> None:
        assert self.explicitly_destroy and not self.destroyed
        self.destroyed = True
        _log(self.group, "Buffer", "destroy")


class EPHandle:
    """The elastic dispatch handle (the attributes the harness and combine read)."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class ElasticBuffer:
    """DeepEP V2's elastic buffer, expanded layout only."""

    def __init__(
        self,
        group: Any,
        num_bytes: int | None = None,
        num_cpu_bytes: int = 0,
        num_max_tokens_per_rank: int = 0,
        hidden: int = 0,
        num_topk: int = 0,
        use_fp8_dispatch: bool = False,
        deterministic: bool = False,
        allow_hybrid_mode: bool = True,
        allow_multiple_reduction: bool = True,
        prefer_overlap_with_compute: bool = True,
        sl_idx: int = 3,
        num_allocated_qps: int = 0,
        num_cpu_timeout_secs: int = 300,
        num_gpu_timeout_secs: int = 100,
        explicitly_destroy: bool = False,
    ) -> None:
        assert not use_fp8_dispatch, "the stand-in moves bf16 only"
        self.group, self.rank_idx, self.num_ranks = group, group.rank(), group.size()
        self.allow_multiple_reduction = allow_multiple_reduction
        self.num_max_tokens_per_rank, self.hidden, self.num_topk = (
            num_max_tokens_per_rank,
            hidden,
            num_topk,
        )
        self.num_bytes = num_bytes or _align(
            2 * self.num_ranks * num_max_tokens_per_rank * max(num_topk, 1) * hidden * 2, 2 << 20
        )
        self.explicitly_destroy, self.destroyed = explicitly_destroy, False
        _log(group, "ElasticBuffer", "init", num_bytes=self.num_bytes,
             allow_hybrid_mode=allow_hybrid_mode)  # fmt: skip

    def get_logical_domain_size(self) -> tuple[int, int]:
        """``(scaleout ranks, scaleup ranks)``: one host, every rank over NVLink."""
        return 1, self.num_ranks

    def get_physical_domain_size(self) -> tuple[int, int]:
        """``(RDMA ranks, NVLink ranks)``."""
        return 1, self.num_ranks

    def dispatch(
        self,
        x: torch.Tensor,
        topk_idx: torch.Tensor | None = None,
        topk_weights: torch.Tensor | None = None,
        cumulative_local_expert_recv_stats: torch.Tensor | None = None,
        num_experts: int | None = None,
        num_max_tokens_per_rank: int | None = None,
        expert_alignment: int | None = None,
        num_sms: int = 0,
        num_qps: int = 0,
        previous_event: Any = None,
        previous_event_before_epilogue: Any = None,
        async_with_compute_stream: bool = False,
        allocate_on_comm_stream: bool = False,
        handle: EPHandle | None = None,
        do_handle_copy: bool = True,
        do_cpu_sync: bool | None = None,
        do_expand: bool = False,
        do_zero_padding: bool = False,
        use_tma_aligned_col_major_sf: bool = False,
    ) -> tuple:
        assert handle is None, "the stand-in has no cached dispatch"
        assert do_expand, "the stand-in implements the expanded layout only"
        assert topk_idx is not None and topk_idx.dtype == topk_idx_t and num_experts is not None
        assert x.dtype == torch.bfloat16 and x.is_contiguous()
        assert topk_weights is not None and topk_weights.dtype == torch.float32
        max_tokens = num_max_tokens_per_rank or self.num_max_tokens_per_rank
        assert x.shape[0] <= max_tokens, "more tokens than num_max_tokens_per_rank"
        alignment = expert_alignment or 1
        world, rank = self.num_ranks, self.rank_idx
        per_rank = num_experts // world
        dest_of = torch.where(topk_idx >= 0, topk_idx // per_rank, -1)
        tokens = [torch.nonzero((dest_of == r).any(dim=1)).flatten() for r in range(world)]
        order = torch.cat(tokens)
        send_counts = [len(t) for t in tokens]
        recv_x, recv_counts = _exchange(x[order], send_counts, self.group)
        recv_ids, _ = _exchange(topk_idx[order], send_counts, self.group)
        recv_w, _ = _exchange(topk_weights[order], send_counts, self.group)
        recv_src, _ = _exchange(order + rank * max_tokens, send_counts, self.group)
        local = torch.where(recv_ids // per_rank == rank, recv_ids - rank * per_rank, -1)
        counts = torch.bincount(local[local >= 0], minlength=per_rank)
        starts, psum, total = [], [], 0
        for count in counts.tolist():
            starts.append(total)
            psum.append(total + count)
            total = _align(total + count, alignment)
        fill = 0.0 if do_zero_padding else float("nan")
        expanded_x = torch.full((total, x.shape[1]), fill, dtype=x.dtype)
        expanded_w = torch.full((total,), fill, dtype=torch.float32)
        slots = torch.full(local.shape, -1, dtype=torch.int64)
        cursor = list(starts)
        for token in range(local.shape[0]):  # arrival order: by source rank, then token
            for slot in range(local.shape[1]):
                expert = int(local[token, slot])
                if expert >= 0:
                    row, cursor[expert] = cursor[expert], cursor[expert] + 1
                    expanded_x[row], expanded_w[row] = recv_x[token], recv_w[token, slot]
                    slots[token, slot] = row
        metadata = torch.cat(
            [recv_src.unsqueeze(1), torch.zeros_like(recv_src).unsqueeze(1), slots], 1
        )
        handle = EPHandle(
            do_expand=True,
            num_experts=num_experts,
            expert_alignment=alignment,
            num_max_tokens_per_rank=max_tokens,
            num_sms=num_sms,
            topk_idx=topk_idx.clone(),
            num_recv_tokens=recv_x.shape[0],
            num_expanded_tokens=total,
            num_recv_tokens_per_expert_list=[_align(c, alignment) for c in counts.tolist()],
            psum_num_recv_tokens_per_scaleup_rank=torch.tensor(recv_counts).cumsum(0),
            psum_num_recv_tokens_per_expert=torch.tensor(psum, dtype=torch.int32),
            num_unaligned_recv_tokens_per_expert=counts.to(torch.int32),
            recv_src_metadata=metadata,
            dst_buffer_slot_idx=None,
            token_metadata_at_forward=None,
            channel_linked_list=None,
            send_state=(order, send_counts, recv_counts, x.shape[0]),
        )
        _log(self.group, "ElasticBuffer", "dispatch", tokens=x.shape[0], expanded=total,
             do_expand=do_expand, expert_alignment=alignment)  # fmt: skip
        return expanded_x, None, expanded_w, handle, EventOverlap()

    def combine(
        self,
        x: torch.Tensor,
        handle: EPHandle,
        topk_weights: torch.Tensor | None = None,
        bias: Any = None,
        num_sms: int = 0,
        num_qps: int = 0,
        previous_event: Any = None,
        previous_event_before_epilogue: Any = None,
        async_with_compute_stream: bool = False,
        allocate_on_comm_stream: bool = False,
    ) -> tuple[torch.Tensor, None, EventOverlap]:
        assert x.dtype == torch.bfloat16 and x.shape[0] == handle.num_expanded_tokens
        order, _send_counts, recv_counts, num_tokens = handle.send_state
        slots = handle.recv_src_metadata[:, 2:]
        valid = slots >= 0
        rows = x[slots.clamp(min=0)].float() * valid.unsqueeze(-1)
        if self.allow_multiple_reduction:  # reduce this rank's slots first, once per rank
            sent = rows.sum(dim=1).to(torch.bfloat16).unsqueeze(1)
        else:
            sent = x[slots.clamp(min=0)] * valid.unsqueeze(-1)
        returned, _ = _exchange(sent.contiguous(), recv_counts, self.group)
        total = torch.zeros((num_tokens, x.shape[1]), dtype=torch.float32)
        total.index_add_(0, order, returned.float().sum(dim=1))
        _log(self.group, "ElasticBuffer", "combine", rows=x.shape[0])
        return total.to(torch.bfloat16), None, EventOverlap()

    def destroy(self) -> None:
        assert self.explicitly_destroy and not self.destroyed
        self.destroyed = True
        _log(self.group, "ElasticBuffer", "destroy")
