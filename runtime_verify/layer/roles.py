"""The communication-plan roles the layer models: what each chooses between, and the failure
signature the wrong choice leaves."""

from __future__ import annotations

# role -> (the plan a DeepEP-family backend must take, the plan any other backend takes)
ROLE_PLANS: dict[str, tuple[str, str]] = {
    "ep_a2a": ("ep_a2a", "standard"),
    "forward_switch": ("forward_deepep", "forward_normal"),
    "shared_expert": ("shared_replicated", "shared_tp"),
}
ROLE_TEXT: dict[str, str] = {
    "ep_a2a": "skips the DP gather / TP reduce",
    "forward_switch": "switches forward_deepep / forward_normal",
    "shared_expert": "replicates the shared expert instead of TP-sharding it",
}
# role -> the report key of the signature a combining dispatcher on the wrong plan leaves
SIGNATURE: dict[str, str] = {
    "ep_a2a": "double_reduce",
    "forward_switch": "double_reduce",
    "shared_expert": "unreduced_partial",
}
SIGNATURE_TEXT: dict[str, str] = {
    "double_reduce": "routed part = W x the arm's own correct plan (a double reduce)",
    "unreduced_partial": (
        "shared part is an unreduced TP partial (adding the missing reduce recovers it)"
    ),
}


def plan_for(role: str, member: bool) -> str:
    """The plan a site with ``role`` takes when its value says the backend is a family member."""
    if role not in ROLE_PLANS:
        raise ValueError(f"unknown role {role!r}; known: {', '.join(ROLE_PLANS)}")
    return ROLE_PLANS[role][0 if member else 1]
