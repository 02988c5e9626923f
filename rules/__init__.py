"""The rule catalogue: one module per code, with its docs and examples (installed as
``driftcheck.rules``)."""

from __future__ import annotations

from .base import Example, Judgement, Rule
from .dc001_missing_members import MissingFamilyMembers
from .dc002_spelled_family import SpelledOutFamily
from .dc003_string_forms import StringFormMissingMembers
from .dc004_stale_suppression import StaleSuppression
from .dc005_redundant_member import RedundantMember
from .dc010_allowlist_drift import AllowlistDrift
from .dc011_dispatch_drift import DispatchDrift
from .dc020_role_consensus import RoleConsensus
from .dc021_named_refusal import NamedRefusal
from .dc030_no_canonical import FamilyWithoutCanonical

CATALOGUE: dict[str, type[Rule]] = {
    rule.code: rule
    for rule in (
        MissingFamilyMembers,
        SpelledOutFamily,
        StringFormMissingMembers,
        StaleSuppression,
        RedundantMember,
        AllowlistDrift,
        DispatchDrift,
        RoleConsensus,
        NamedRefusal,
        FamilyWithoutCanonical,
    )
}

__all__ = ["CATALOGUE", "Example", "Judgement", "Rule"]
