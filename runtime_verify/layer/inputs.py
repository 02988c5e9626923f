"""The fixed prompts (token embeddings) and their split into DP-local batches."""

from __future__ import annotations

import torch

from .seeds import derive_seed
from .shapes import Shape


def prompt_embeddings(
    shape: Shape, seed: int, device: torch.device, dtype: torch.dtype
) -> torch.Tensor:
    """All prompts' token embeddings, concatenated: ``[shape.tokens, hidden]``.

    Each prompt has its own seed, so a prompt's tokens do not depend on the other prompts.
    """
    generator = torch.Generator(device=device)
    prompts = []
    for index, length in enumerate(shape.prompt_lengths):
        generator.manual_seed(derive_seed(seed, "prompt", index))
        prompts.append(torch.randn(length, shape.hidden, generator=generator, device=device))
    return torch.cat(prompts).to(dtype)


def dp_row_counts(tokens: int, world_size: int) -> list[int]:
    """Tokens per DP rank: contiguous, as even as possible, earlier ranks take the remainder."""
    base, extra = divmod(tokens, world_size)
    return [base + (rank < extra) for rank in range(world_size)]


def dp_rows(tokens: int, rank: int, world_size: int) -> slice:
    """The rows of the concatenated prompts that DP rank ``rank`` holds."""
    counts = dp_row_counts(tokens, world_size)
    start = sum(counts[:rank])
    return slice(start, start + counts[rank])
