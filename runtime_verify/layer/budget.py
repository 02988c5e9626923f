"""How many routed experts fit in memory for a run."""

from __future__ import annotations

from .shapes import Shape

# Fraction of the free memory the expert weights may take; the rest is for activations,
# communication buffers and the allocator's slack.
WEIGHT_FRACTION = 0.6


def experts_that_fit(
    shape: Shape,
    world_size: int,
    banks: int,
    ranks_per_memory: int,
    free_bytes: int,
    dtype_bytes: int,
) -> int:
    """The most routed experts (a multiple of ``world_size``, at most ``shape.experts``) that fit.

    ``banks`` is how many layouts of the routed experts a rank holds (EP shard, TP slice, or
    both): each costs ``experts / world_size`` whole experts per rank. ``ranks_per_memory`` is
    how many ranks share ``free_bytes`` (several ranks on one GPU, or all ranks on the host).
    """
    per_expert = 3 * shape.intermediate * shape.hidden * dtype_bytes
    shared = 3 * shape.shared_intermediate * shape.hidden * dtype_bytes * 2
    per_rank = free_bytes * WEIGHT_FRACTION / ranks_per_memory - shared
    fit = int(per_rank // (per_expert * max(banks, 1))) * world_size
    fit = min(fit, shape.experts) // world_size * world_size
    least = -(-max(shape.top_k, world_size) // world_size) * world_size
    if fit < least:
        raise MemoryError(
            f"shape {shape.name!r} needs at least {least} experts over {world_size} ranks; "
            f"only {max(fit, 0)} fit in {free_bytes / 2**30:.1f} GiB"
        )
    return fit


def free_host_bytes() -> int:
    """``MemAvailable`` from ``/proc/meminfo`` (Linux), else a conservative 8 GiB."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 * 2**30
