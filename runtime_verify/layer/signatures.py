"""The failure signatures a role predicts, measured against the arm's own correct plan.

An arm's correct plan is the one its dispatcher needs: a combining (DeepEP-family) dispatcher
the family plan, any other the other plan (:func:`roles.plan_for`). Running the arm on that plan
too gives a per-arm reference, so a phase shows which arm is wrong, not only that the arms
differ (both arms on the wrong plan would agree with each other and still be wrong).
"""

from __future__ import annotations

from typing import Any

import torch

# A routed ratio within this relative distance of W is a double reduce.
DOUBLE_REDUCE_TOLERANCE = 0.02
# The shared part is an unreduced partial when it is this far from the correct one ...
PARTIAL_MIN_ERROR = 0.1
# ... and adding the missing TP reduce brings it this close.
COMPLETED_MAX_ERROR = 1e-2


def least_squares_ratio(test: torch.Tensor, reference: torch.Tensor) -> float:
    """The scalar ``c`` minimising ``|test - c * reference|``, computed in float64."""
    t, r = test.double().flatten(), reference.double().flatten()
    denominator = float(r @ r)
    return float(t @ r) / denominator if denominator else float("nan")


def relative_error(test: torch.Tensor, reference: torch.Tensor) -> float:
    """``|test - reference| / |reference|`` (L2, float64)."""
    t, r = test.double().flatten(), reference.double().flatten()
    norm = float(r.norm())
    return float((t - r).norm()) / norm if norm else float((t - r).norm())


def double_reduce(routed: torch.Tensor, correct: torch.Tensor, world_size: int) -> dict[str, Any]:
    """Routed part = W x the correct plan's routed part?"""
    ratio = least_squares_ratio(routed, correct)
    return {
        "ratio": ratio,
        "expected_ratio": world_size,
        "detected": abs(ratio - world_size) <= DOUBLE_REDUCE_TOLERANCE * world_size,
    }


def unreduced_partial(
    shared: torch.Tensor, completed: torch.Tensor, correct: torch.Tensor
) -> dict[str, Any]:
    """Shared part far from the correct one, and the missing reduce would repair it?"""
    error, repaired = relative_error(shared, correct), relative_error(completed, correct)
    return {
        "relative_error": error,
        "relative_error_once_reduced": repaired,
        "detected": error >= PARTIAL_MIN_ERROR and repaired <= COMPLETED_MAX_ERROR,
    }
