"""The collectives the layer uses, over one torch.distributed process group.

All three are plain c10d calls on tensors of the layer's dtype. gloo in torch 2.13 supports
bfloat16 for ``all_reduce``, ``all_gather`` and ``all_to_all_single`` (on CPU and CUDA
tensors), so nothing is re-encoded: a bf16 all-reduce is a real bf16 reduction and the
copies are bit-exact by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Comm:
    """This rank's place in the group and the device its collectives run on."""

    rank: int
    world_size: int
    device: torch.device

    def all_reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over all ranks (a new tensor; the input is left untouched)."""
        out = tensor.contiguous().clone()
        dist.all_reduce(out)
        return out

    def all_gather_rows(self, tensor: torch.Tensor, counts: list[int]) -> torch.Tensor:
        """Concatenate every rank's rows in rank order; rank ``r`` contributes ``counts[r]`` rows.

        Uneven batches are padded to the largest count, gathered, then unpadded.
        """
        if tensor.shape[0] != counts[self.rank]:
            raise ValueError(
                f"rank {self.rank} holds {tensor.shape[0]} rows, not {counts[self.rank]}"
            )
        most = max(counts)
        padded = tensor.new_zeros((most, *tensor.shape[1:]))
        padded[: tensor.shape[0]] = tensor
        parts = [torch.empty_like(padded) for _ in range(self.world_size)]
        dist.all_gather(parts, padded)
        return torch.cat([part[:count] for part, count in zip(parts, counts, strict=True)])

    def exchange_counts(self, send_counts: list[int]) -> list[int]:
        """Tell each rank how many rows this rank sends it; return how many each sends here."""
        send = torch.tensor(send_counts, dtype=torch.int64, device=self.device)
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send)
        return [int(count) for count in recv.tolist()]

    def all_to_all_rows(
        self, tensor: torch.Tensor, send_counts: list[int], recv_counts: list[int]
    ) -> torch.Tensor:
        """Send rows ``[sum(send_counts[:r]), ...)`` to rank ``r``; receive in rank order."""
        out = tensor.new_empty((sum(recv_counts), *tensor.shape[1:]))
        dist.all_to_all_single(
            out, tensor.contiguous(), output_split_sizes=recv_counts, input_split_sizes=send_counts
        )
        return out
