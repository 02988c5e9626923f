"""The tree's own parameters, drawn as a checkpoint would give them, in the run's one dtype.

A block the tree builds may hold parameters of its own beside the substitutes' (a router
weight or a score-correction bias made with ``torch.empty``, a ``torch.nn.Linear`` gate):
the runtime fills them from a checkpoint, so as built they are uninitialised memory or the
global generator's draw. Each is drawn here from the run's seed, its name in the block and
its shape, so that every arm and phase sees the same numbers, and each tensor the tree makes
without naming a dtype has the run's dtype (:func:`default_dtype`): the runtime sets its model
dtype as torch's default while it builds the model.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
from torch import nn

from ..layer.seeds import derive_seed


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    """``dtype`` as torch's default floating dtype while the block is built and run."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _own_tensors(block: nn.Module, harness: tuple[type, ...]) -> Iterator[tuple[str, torch.Tensor]]:
    """The parameters and floating buffers of the block's modules that are the tree's own
    (not a substitute's: those draw their own), with their names in the block."""
    stack: list[tuple[str, nn.Module]] = [("", block)]
    while stack:
        prefix, module = stack.pop()
        if isinstance(module, harness):
            continue
        for name, tensor in [
            *module.named_parameters(recurse=False),
            *module.named_buffers(recurse=False),
        ]:
            if tensor is not None and tensor.is_floating_point():
                yield f"{prefix}{name}", tensor
        stack.extend((f"{prefix}{name}.", child) for name, child in module.named_children())


def draw_own_parameters(
    block: nn.Module, seed: int, harness: tuple[type, ...]
) -> list[dict[str, object]]:
    """Fill each of the tree's own parameters of ``block`` from ``seed``, its name and shape
    (normal values, a matrix's scaled by its fan-in); the ``{"name", "shape", "dtype"}`` of each."""
    drawn: list[dict[str, object]] = []
    for name, tensor in sorted(_own_tensors(block, harness), key=lambda item: item[0]):
        generator = torch.Generator(device=tensor.device)
        generator.manual_seed(derive_seed(seed, "tree-parameter", name, *tensor.shape))
        values = torch.randn(
            tuple(tensor.shape), generator=generator, device=tensor.device, dtype=torch.float32
        )
        # a matrix scaled by its fan-in, as the substitutes' weights; a vector (a bias, a
        # norm's scale) small beside the values it is added to
        scale = 1 / math.sqrt(tensor.shape[-1]) if tensor.dim() > 1 else 0.1
        with torch.no_grad():
            tensor.copy_((values * scale).to(tensor.dtype))
        drawn.append(
            {
                "name": name,
                "shape": list(tensor.shape),
                "dtype": str(tensor.dtype).removeprefix("torch."),
            }
        )
    return drawn
