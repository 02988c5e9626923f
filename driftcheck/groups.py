"""Sites whose values meet in one block: one fact, read by the fixer and the verifier.

Sites of one file that drift from one family and whose values reach the pack's role
operations (:attr:`driftcheck.model.Role.operations`) decide one block's communication plan
together: 0.5.21's ``KimiK3MoE._ep_a2a`` and ``KimiK3DecoderLayer._sp_moe``, 0.5.17's
Qwen3-MoE EP setup and its forward gate. ``--fix`` fixes such a group as one change (the same
members at every site, or none) and ``verify --layer`` runs it as one unit.
"""

from __future__ import annotations

from .model import Site

Group = tuple[str, str]  # (path, canonical)


def block_group(path: str, canonical: str, site: Site | None) -> Group | None:
    """The group a finding's site is fixed and verified with, or None when its value reaches
    no role operation (it decides nothing another site of the block decides with it)."""
    if site is None or not site.role.operations:
        return None
    return (path, canonical)
