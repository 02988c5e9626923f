"""Helper style for a canonical constant: the family's operands become ``<receiver> in NAME``.

With ``canonical = ["...utils:A2A_FAMILY"]`` (a collection of ``MoeA2ABackend`` members),
``b.is_deepep() or b.is_mooncake()`` becomes ``b in A2A_FAMILY`` (``not b.is_deepep() and not
b.is_mooncake()`` becomes ``b not in A2A_FAMILY``). That tests the same member only when the
receiver holds the member itself (not an object whose predicates read it) and the constant
holds enum members (not their strings); both are read from the source, never run, and
anything else is refused.
"""

from __future__ import annotations

import ast

from driftcheck.model import Family
from driftcheck.sites.terms import collection_spellings

from .bindings import holds_member
from .plan import FileContext, Refusal, SiteJob


def membership_test(ctx: FileContext, job: SiteJob, receivers: frozenset[str]) -> str:
    """``<receiver> in <NAME>`` for the site's one receiver (raises :class:`Refusal`)."""
    family = job.family
    name = family.name
    if family.owner:
        raise Refusal(
            f"{name} is an attribute of {family.owner}; the helper style rewrites to module "
            "constants only (use --fix-style minimal)"
        )
    if len(receivers) != 1:
        raise Refusal(
            f"the site tests more than one object; a test against {name} reads one, "
            "rewrite it by hand"
        )
    (receiver,) = receivers
    enum = ctx.universe.enum_name
    if not enum or not holds_member(ctx, job, receiver):
        raise Refusal(
            f"'{receiver}' is not known to be a {enum or 'enum'} member, which "
            f"'{receiver} in {name}' needs (use --fix-style minimal)"
        )
    spellings = constant_spellings(ctx, family)
    if spellings is None:
        raise Refusal(
            f"cannot read {name}'s members again ({family.path}:{family.line}); "
            "use --fix-style minimal"
        )
    if spellings != {"enum"}:
        raise Refusal(
            f"{name} lists members as strings and '{receiver}' is a {enum} member, so "
            f"'{receiver} in {name}' may be false for every one (use --fix-style minimal)"
        )
    return f"{receiver} in {name}"


def constant_spellings(ctx: FileContext, family: Family) -> frozenset[str] | None:
    """How the canonical constant spells its members (``{"enum"}``, ``{"string"}``), read
    from its module's syntax tree; None when its definition cannot be read again."""
    if family.path == ctx.rel:
        tree = ctx.tree
    else:
        try:
            tree = ast.parse((ctx.root / family.path).read_bytes(), filename=family.path)
        except (OSError, SyntaxError, ValueError):
            return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno == family.line:
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.lineno == family.line and node.value:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == family.name for t in targets):
            return collection_spellings(value, ctx.universe)
    return None
