"""Compare the test arm's outputs with the reference arm's."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import torch

from .signatures import relative_error


@dataclass
class ArmResult:
    """One arm's results for every token, all ranks' rows in rank order (on the CPU)."""

    output: torch.Tensor
    routed: torch.Tensor
    shared: torch.Tensor
    shared_completed: torch.Tensor
    top_values: torch.Tensor
    top_ids: torch.Tensor


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when the tensors have the same shape, dtype and bytes (so -0.0 != 0.0, NaN == NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def digest(tensor: torch.Tensor) -> str:
    """sha256 of the tensor's bytes: compares outputs across runs and collective backends."""
    flat = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
    return hashlib.sha256(flat.numpy().tobytes()).hexdigest()


def compare_arms(reference: ArmResult, test: ArmResult) -> dict[str, Any]:
    """How far the test arm's layer output and top-5 read-out are from the reference arm's."""
    ids_agree = (reference.top_ids == test.top_ids).all(dim=-1)
    difference = (test.output.double() - reference.output.double()).abs()
    logprob_gap = (test.top_values.double() - reference.top_values.double()).abs()
    return {
        "bit_exact": same_bytes(reference.output, test.output),
        "max_abs_diff": float(difference.max()),
        "rel_l2": relative_error(test.output, reference.output),
        "routed_rel_l2": relative_error(test.routed, reference.routed),
        "top5_agree": bool(ids_agree.all()) and same_bytes(reference.top_values, test.top_values),
        "top5_token_agreement": f"{int(ids_agree.sum())}/{ids_agree.numel()}",
        "top5_fraction": float(ids_agree.float().mean()),
        "top5_max_logprob_diff": float(logprob_gap[ids_agree].max())
        if bool(ids_agree.any())
        else None,
        "output_sha256": {"reference": digest(reference.output), "test": digest(test.output)},
    }
