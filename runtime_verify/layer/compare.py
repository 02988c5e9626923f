"""Compare a test arm with the reference arm, and judge the before/after pair."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

# A routed-output ratio within this relative distance of the world size counts as a double
# reduce (the TP all-reduce summed ``world_size`` already-combined copies).
DOUBLE_REDUCE_TOLERANCE = 0.02


@dataclass
class ArmResult:
    """One arm's results for every token, all ranks' rows in rank order (on the CPU)."""

    output: torch.Tensor
    routed: torch.Tensor
    top_values: torch.Tensor
    top_ids: torch.Tensor


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when the tensors have the same shape, dtype and bytes (so -0.0 != 0.0, NaN == NaN)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def digest(tensor: torch.Tensor) -> str:
    """sha256 of the tensor's bytes: compares outputs across runs and collective backends."""
    import hashlib

    flat = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
    return hashlib.sha256(bytes(flat.tolist())).hexdigest()


def least_squares_ratio(test: torch.Tensor, reference: torch.Tensor) -> float:
    """The scalar ``c`` minimising ``|test - c * reference|``, computed in float64."""
    t, r = test.double().flatten(), reference.double().flatten()
    return float(t @ r / (r @ r))


def compare_arms(reference: ArmResult, test: ArmResult, world_size: int) -> dict[str, Any]:
    """The per-phase comparison fields of the report."""
    ids_agree = (reference.top_ids == test.top_ids).all(dim=-1)
    ratio = least_squares_ratio(test.routed, reference.routed)
    detected = abs(ratio - world_size) <= DOUBLE_REDUCE_TOLERANCE * world_size
    max_abs_diff = (test.output.double() - reference.output.double()).abs().max()
    return {
        "bit_exact": same_bytes(reference.output, test.output),
        "max_abs_diff": float(max_abs_diff),
        "top5_agree": bool(ids_agree.all()) and same_bytes(reference.top_values, test.top_values),
        "top5_token_agreement": f"{int(ids_agree.sum())}/{ids_agree.numel()}",
        "output_sha256": {"reference": digest(reference.output), "test": digest(test.output)},
        "double_reduce": {
            "detected": bool(detected),
            "ratio": ratio,
            "expected_ratio": world_size,
        },
    }


def verdict(report: dict[str, Any]) -> str:
    """``"confirmed"`` when before the fix the arms disagree and after it they are bit-exact."""
    before, after = report.get("before"), report.get("after")
    if before is None or after is None:
        return "inconclusive: the report needs both a 'before' and an 'after' phase"
    failures = []
    if before["bit_exact"]:
        failures.append("before the fix the arms already agree bit-exactly")
    if not after["bit_exact"]:
        failures.append(
            f"after the fix the arms still differ (max_abs_diff={after['max_abs_diff']:.3g})"
        )
    return "confirmed" if not failures else "not confirmed: " + "; ".join(failures)
