"""DC005's fix: delete the operands that a canonical helper in the same chain already covers.

``is_deepep_class_backend() or b.is_deepep_v2()`` becomes ``is_deepep_class_backend()``. The
value does not change for any backend (which the computed change confirms). Refused when
comments sit between the operands (the stale comment usually belongs to the deleted term;
deciding that is left to a person). The rewrite is a libcst transformation of the chain, as in
:func:`driftcheck.fix.helper.rebuild`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from .helper import parse_chain, rebuild
from .plan import FileContext, Refusal, Rewrite, SiteJob

if TYPE_CHECKING:
    import libcst as cst


def plan_removal(ctx: FileContext, job: SiteJob, receivers: frozenset[str]) -> Rewrite:
    """The rewrite without the redundant operands (raises :class:`Refusal`)."""
    parsed = parse_chain(ctx, job.site, "deleting the redundant operand")
    family = job.family.member_set
    kept: list[cst.BaseExpression] = []
    removed: list[tuple[int, int]] = []
    operands = zip(parsed.items, parsed.chain.items, parsed.members, parsed.kinds, strict=True)
    for item, node, members, kind in operands:
        if kind not in (None, "helper") and members and members <= family:
            removed.append((item.start, item.end))
        else:
            kept.append(cast("cst.BaseExpression", node))  # a chain's operands are expressions
    if not removed or not kept:
        raise Refusal("no operand of the chain is covered by the helper")
    return rebuild(ctx, job.site, parsed, kept, removed, "minimal", receivers)
