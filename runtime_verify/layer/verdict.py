"""The verdict on one site's before/after pair: confirmed, refuted or inconclusive.

``confirmed`` needs all of: before the fix the test arm takes the other plan than the
reference and shows the failure signature the role predicts (measured against the arm's own
correct plan), the reference arm does not; after the fix no arm shows it and the arms agree
under the criterion. The after phase contradicting the fix (a signature, or disagreement) is
``refuted``; a before phase that shows no predicted failure is ``inconclusive``. Every reason
carries the measured numbers.
"""

from __future__ import annotations

from typing import Any

from .roles import SIGNATURE


def signature_text(key: str, entry: dict[str, Any]) -> str:
    """The measured numbers of one arm's signature."""
    if key == "double_reduce":
        return f"routed ratio {entry['ratio']:.4f} (double reduce: {entry['expected_ratio']})"
    return (
        f"shared rel error {entry['relative_error']:.3g}, "
        f"{entry['relative_error_once_reduced']:.3g} once reduced"
    )


def judge(report: dict[str, Any]) -> tuple[str, str]:
    """``(verdict, reason)`` for a report with ``role``, ``arms``, ``before`` and ``after``."""
    before, after = report.get("before"), report.get("after")
    if before is None or after is None:
        return "inconclusive", "the report needs both a 'before' and an 'after' phase"
    key = SIGNATURE[report["role"]]
    reference, test = report["arms"]["reference"], report["arms"]["test"]

    def sign(phase: dict[str, Any], arm: str) -> dict[str, Any]:
        return phase["signature"][arm]

    refuting = [
        f"after the fix {arm} on {after['plan'][arm]} still shows it: "
        + signature_text(key, sign(after, arm))
        for arm in (reference, test)
        if sign(after, arm)["detected"]
    ]
    if not after["agreement"]["passed"]:
        refuting.append("after the fix the arms disagree: " + after["agreement"]["summary"])
    if refuting:
        return "refuted", "; ".join(refuting)

    missing = []
    if before["plan"][test] == before["plan"][reference]:
        missing.append(
            f"before the fix {test} already takes {reference}'s plan ({before['plan'][test]})"
        )
    elif not sign(before, test)["detected"]:
        missing.append(
            f"before the fix {test} takes {before['plan'][test]} but shows no {key}: "
            + signature_text(key, sign(before, test))
        )
    if sign(before, reference)["detected"]:
        missing.append(f"before the fix the reference arm {reference} shows the {key} itself")
    if missing:
        return "inconclusive", "; ".join(missing)
    return "confirmed", (
        f"before: {test} on {before['plan'][test]}: "
        + signature_text(key, sign(before, test))
        + f"; after: {after['agreement']['summary']}"
    )
