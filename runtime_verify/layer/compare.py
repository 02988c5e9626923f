"""Comparing tensors: relative distance, byte equality, and a digest for reports."""

from __future__ import annotations

import hashlib

import torch


def relative_error(test: torch.Tensor, reference: torch.Tensor) -> float:
    """``|test - reference| / |reference|`` (L2, float64)."""
    t, r = test.double().flatten(), reference.double().flatten()
    norm = float(r.norm())
    return float((t - r).norm()) / norm if norm else float((t - r).norm())


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when the tensors have the same shape, dtype and bytes (so -0.0 != 0.0, NaN == NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def digest(tensor: torch.Tensor) -> str:
    """sha256 of the tensor's bytes: compares outputs across runs and collective backends."""
    flat = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
    return hashlib.sha256(flat.numpy().tobytes()).hexdigest()
