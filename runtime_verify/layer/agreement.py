"""When two arms count as agreeing after the fix.

- **Bit-exact** when both arms run the same dispatcher implementation with the same runner:
  the same operations in the same order on the same numbers must give the same bytes, so
  anything else is a real difference.
- **Tolerance** when the implementations differ (DeepEP legacy against elastic): they round in
  different places (per-rank partials against one sum over all top-k slots), so bytes differ by
  design. The arms then agree when (1) the relative L2 distance of the MoE outputs is at most
  ``REL_L2_MAX`` = 1e-2, the band bf16 rounding differences fall in (unit roundoff 2^-8 = 3.9e-3)
  and two orders of magnitude under what a double reduce does ((W - 1) x the routed part); and
  (2) at least ``TOP5_MIN_FRACTION`` = 0.95 of the tokens have the same top-5 token ids in the
  same order, the upstream author's first-token top-5 comparison, allowing near-tie swaps.
  The report also gives the largest top-5 log-probability gap on agreeing tokens.
"""

from __future__ import annotations

from typing import Any

REL_L2_MAX = 1e-2
TOP5_MIN_FRACTION = 0.95


def criterion_for(implementations: tuple[str, str], runner: str) -> dict[str, Any]:
    """The criterion for arms running ``implementations`` (reference, test) with ``runner``."""
    if implementations[0] == implementations[1]:
        return {
            "kind": "bit-exact",
            "why": f"both arms run {implementations[0]} with the {runner} runner: "
            "the same reduction order",
        }
    return {
        "kind": "tolerance",
        "rel_l2_max": REL_L2_MAX,
        "top5_min_fraction": TOP5_MIN_FRACTION,
        "why": f"{implementations[0]} and {implementations[1]} reduce in different orders, "
        "so bytes differ by design",
    }


def judge_agreement(criterion: dict[str, Any], comparison: dict[str, Any]) -> dict[str, Any]:
    """``{"passed": bool, "summary": str}`` for one phase's comparison under ``criterion``."""
    if criterion["kind"] == "bit-exact":
        passed = bool(comparison["bit_exact"])
        summary = (
            "bit-exact"
            if passed
            else f"not bit-exact (max abs diff {comparison['max_abs_diff']:.3g})"
        )
    else:
        rel, top5 = comparison["rel_l2"], comparison["top5_fraction"]
        passed = rel <= criterion["rel_l2_max"] and top5 >= criterion["top5_min_fraction"]
        summary = (
            f"rel L2 {rel:.2e} (<= {criterion['rel_l2_max']:g}), top-5 ids "
            f"{comparison['top5_token_agreement']} (>= {criterion['top5_min_fraction']:.0%})"
        )
    return {"passed": passed, "summary": summary}
