"""Where a rank runs: its device, the c10d backend, and the environment the report records."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Placement:
    """A rank's position: global rank and size, and its rank and count on this host."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int


def rank_device(device: str, placement: Placement) -> torch.device:
    """CPU, or a GPU of this host; ranks share GPUs round-robin when there are fewer GPUs."""
    if device == "cpu":
        return torch.device("cpu")
    gpus = torch.cuda.device_count()
    if gpus == 0:
        raise RuntimeError("device='cuda' but no CUDA GPU is visible")
    return torch.device("cuda", placement.local_rank % gpus)


def leave_group(finished: bool) -> None:
    """Leave the process group; after a run that finished, only once every rank has (a rank
    that exits while a peer still talks to it makes gloo's thread abort that peer)."""
    import torch.distributed as dist

    if finished:
        dist.barrier()
    dist.destroy_process_group()


def dist_backend(device: str, placement: Placement) -> str:
    """NCCL when every rank on this host has a GPU of its own, otherwise gloo.

    ``DRIFTCHECK_DIST_BACKEND=gloo`` forces gloo (to compare its reductions with NCCL's).
    """
    forced = os.environ.get("DRIFTCHECK_DIST_BACKEND")
    if forced in ("gloo", "nccl"):
        return forced
    if device == "cuda" and torch.cuda.device_count() >= placement.local_world_size:
        return "nccl"
    return "gloo"


def ranks_per_memory(device: str, placement: Placement) -> int:
    """How many of this host's ranks share one pool of memory (a GPU, or the host's RAM)."""
    if device == "cpu":
        return placement.local_world_size
    return -(-placement.local_world_size // torch.cuda.device_count())


def describe(
    torch_device: torch.device,
    backend: str,
    world_size: int,
    shape_name: str,
    dtype: torch.dtype,
    experts_used: int,
    experts_configured: int,
) -> dict[str, Any]:
    """The report's ``environment`` section."""
    nccl = None
    if backend == "nccl":
        version = torch.cuda.nccl.version()
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    on_gpu = torch_device.type == "cuda"
    return {
        "gpu": torch.cuda.get_device_name(torch_device) if on_gpu else "cpu",
        "gpus_visible": torch.cuda.device_count() if on_gpu else 0,
        "torch": torch.__version__,
        "world_size": world_size,
        "dist_backend": backend,
        "nccl_version": nccl,
        "device": torch_device.type,
        "shape": shape_name,
        "dtype": str(dtype).removeprefix("torch."),
        "experts_used": experts_used,
        "experts_configured": experts_configured,
    }
