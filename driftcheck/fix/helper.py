"""Helper style: replace the family part of an enumeration with a call to the canonical helper.

``b.is_megamoe() or b.is_deepep() or b.is_mori()`` becomes ``is_deepep_class_backend() or
b.is_megamoe()``: the helper takes the place of the first backend operand, the other family
operands go, extras and unrelated conditions stay in place. Negative forms become
``not is_deepep_class_backend() and not b.is_x()`` / ``not is_deepep_class_backend()``. A
canonical constant is tested instead of called: ``b in A2A_FAMILY`` / ``b not in A2A_FAMILY``
(:mod:`driftcheck.fix.membership`).

Refused when the helper would read a different backend than the list does: value
comparisons (``server_args.moe_a2a_backend in (...)`` runs before the runtime backend is
set), a receiver not bound to the getter (a parameter), or a site whose suppression or policy
deliberately leaves members out (the helper would add them).
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from driftcheck.model import Family, Site

from .bindings import bound_to_getter
from .chain import Chain, site_chain
from .cstfragment import CstFragment, replace_nodes
from .fragment import Fragment, FragmentError
from .held import unless_held
from .membership import membership_test
from .minimal import stands_alone
from .operands import Item, boolop_items
from .plan import FileContext, Refusal, Replacement, Rewrite, SiteJob

if TYPE_CHECKING:
    import libcst as cst

METHOD_FORMS = ("or-chain", "not-or", "and-not")


def helper_call(ctx: FileContext, job: SiteJob, receivers: frozenset[str]) -> str:
    """How the rewrite calls the family: ``is_x()``, or — for a method or property of a class
    holding the setting — ``<receiver>.is_x()`` / ``<receiver>.use_x`` on the site's own
    receiver, when that receiver is known to be an instance of the defining class; for a
    constant, ``<receiver> in NAME``."""
    family = job.family
    if family.access == "constant":
        return membership_test(ctx, job, receivers)
    if family.access == "union":
        raise Refusal(
            f"the family is read from {family.call_text()}, not one helper; rewrite it by hand "
            "(or use --fix-style minimal)"
        )
    if family.access not in ("method", "property"):
        return f"{family.name}()"
    if len(receivers) != 1:
        raise Refusal(
            f"{family.name} is a {family.access} of {family.owner}, and the site tests more "
            "than one object; rewrite it by hand"
        )
    (receiver,) = receivers
    if not _holds_owner(ctx, job, receiver):
        raise Refusal(
            f"'{receiver}' is not known to be a {family.owner}, which defines {family.name} "
            "(use --fix-style minimal)"
        )
    return f"{receiver}.{family.name}" + ("()" if family.access == "method" else "")


def _holds_owner(ctx: FileContext, job: SiteJob, receiver: str) -> bool:
    """``self`` in the owner class or a class deriving from it, a parameter annotated with
    the owner, or a name or attribute the universe's modules annotate with a holder class."""
    owner = job.family.owner
    if receiver == "self":
        classes = [n for n in ctx.enclosing(job.site.span.line) if isinstance(n, ast.ClassDef)]
        if not classes:
            return False
        cls = classes[-1]
        bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases}
        return cls.name == owner or owner in bases
    function = ctx.enclosing_function(job.site.span.line)
    if function is not None and receiver.isidentifier():
        args = function.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if arg.arg == receiver and arg.annotation is not None:
                return owner in {
                    n.id if isinstance(n, ast.Name) else getattr(n, "attr", "")
                    for n in ast.walk(arg.annotation)
                } | {getattr(arg.annotation, "value", None)}
    last = receiver.rsplit(".", 1)[-1]
    return last.isidentifier() and last in ctx.universe.holder_names


def plan_helper(ctx: FileContext, job: SiteJob, receivers: frozenset[str]) -> Rewrite:
    """The helper-style rewrite of ``job``'s site (raises :class:`Refusal`)."""
    site, family = job.site, job.family
    if family.inferred:
        raise Refusal(
            f"no helper defines {family.label} (it was inferred from the tree's copies): add "
            f"--create-helper to write {family.name}() beside the enum, or use --fix-style minimal"
        )
    if site.form == "single" and site.operands and site.operands[0].kind in ("method", "property"):
        return _plan_single(ctx, job, receivers)
    if site.form not in METHOD_FORMS:
        raise Refusal(_value_refusal(family))
    if job.allowed_missing:
        raise Refusal(
            f"the site deliberately leaves out {', '.join(sorted(job.allowed_missing))}; "
            f"{_named(family)} would add {'it' if len(job.allowed_missing) == 1 else 'them'} "
            "(use --fix-style minimal)"
        )
    if family.access == "function":
        for receiver in sorted(receivers):
            if not bound_to_getter(ctx, job, receiver):
                getter = sorted(ctx.universe.getters or {"the getter"})[0]
                raise Refusal(
                    f"'{receiver}' is not known to be {getter}(): {family.name}() reads the "
                    "global backend instead (use --fix-style minimal)"
                )
    call_text = helper_call(ctx, job, receivers)
    parsed = parse_chain(ctx, site, "the helper style")
    family_set = set(family.members)
    if any(ms & family_set and not ms <= family_set for ms in parsed.members):
        raise Refusal("an operand names family members and others at once; rewrite it by hand")
    import libcst as cst

    call: cst.BaseExpression = (
        cst.Call(func=cst.Name(family.name))
        if family.access == "function"
        else cst.parse_expression(call_text)
    )
    if site.form == "and-not":
        call = negated(call)
    kept: list[cst.BaseExpression] = []
    removed: list[tuple[int, int]] = []
    placed = False
    operands = zip(parsed.items, parsed.chain.items, parsed.members, parsed.kinds, strict=True)
    for item, node, ms, kind in operands:
        if kind == "helper":  # a canonical helper the chain already calls stays as it is
            ms = frozenset()
        if ms and not placed:  # the helper takes the place of the first backend operand
            kept.append(call)
            placed = True
        if ms and ms <= family_set:
            removed.append((item.start, item.end))
            continue
        kept.append(node)  # type: ignore[arg-type]
    rewrite = rebuild(ctx, site, parsed, kept, removed, "helper", receivers)
    return unless_held(job, _for_family(rewrite, family))


def _plan_single(ctx: FileContext, job: SiteJob, receivers: frozenset[str]) -> Rewrite:
    """A single-backend check (``b.is_deepep()``, judged by DC020) becomes the helper call."""
    if job.allowed_missing:
        raise Refusal(
            f"the site deliberately leaves out {', '.join(sorted(job.allowed_missing))}; "
            f"{_named(job.family)} would add them"
        )
    if job.family.access == "function":
        for receiver in sorted(receivers):
            if not bound_to_getter(ctx, job, receiver):
                raise Refusal(
                    f"'{receiver}' is not known to be the global backend that "
                    f"{job.family.name}() reads; rewrite it by hand"
                )
    start, end = ctx.index.range_of(job.site.span)
    body = helper_call(ctx, job, receivers)
    if job.family.access == "constant" and not stands_alone(ctx, job.site):
        body = f"({body})"
    rewrite = _rewrite(
        "helper", ctx.source.text, (start, end), (start, end), body, receivers, [(start, end)]
    )
    return unless_held(job, _for_family(rewrite, job.family))


def _value_refusal(family: Family) -> str:
    """Why value comparisons keep their hand-written members in the helper style."""
    if family.access == "constant":
        why = f"the value may be spelled unlike {family.name}'s members (a string, an enum member)"
    else:
        why = (
            "they usually run on server arguments, before the runtime backend that "
            f"{family.call_text()} reads is set"
        )
    return f"helper style is not offered for value comparisons: {why}; use --fix-style minimal"


def _named(family: Family) -> str:
    """How a refusal names the family: ``is_x()``, or a constant's ``NAME``."""
    return family.name if family.access == "constant" else f"{family.name}()"


def _for_family(rewrite: Rewrite, family: Family) -> Rewrite:
    """``rewrite`` as a constant's rewrite: the flip check learns what the constant holds,
    and no operand counts as removed (the membership test still reads the receiver, so no
    assignment of it may go)."""
    if family.access != "constant":
        return rewrite
    members = {family.name: family.member_set}
    return replace(rewrite, removed=(), before_names=members, after_names=members)


def negated(expression: cst.BaseExpression) -> cst.BaseExpression:
    """``not <expression>``, written ``a not in b`` when it is ``a in b``."""
    import libcst as cst

    if (
        isinstance(expression, cst.Comparison)
        and len(expression.comparisons) == 1
        and isinstance(expression.comparisons[0].operator, cst.In)
    ):
        target = expression.comparisons[0]
        return expression.with_changes(comparisons=[target.with_changes(operator=cst.NotIn())])
    return cst.UnaryOperation(operator=cst.Not(), expression=expression)


@dataclass(frozen=True)
class ParsedChain:
    """A site's chain: its operands located by ``ast`` (with each operand's members; empty:
    not a backend term) and the same chain in libcst's tree of the site's text."""

    start: int
    end: int
    items: list[Item]
    chain: Chain
    members: list[frozenset[str]]
    kinds: list[str | None]


def parse_chain(ctx: FileContext, site: Site, style: str) -> ParsedChain:
    """The site's boolean chain, refused when ``style`` would move comments or parentheses."""
    text = ctx.source.text
    start, end = ctx.index.range_of(site.span)
    try:
        fragment = Fragment(text[start:end], base=start)
    except FragmentError as exc:
        raise Refusal(f"cannot re-read the expression on its own: {exc}") from exc
    node = fragment.node
    inner = node.operand if isinstance(node, ast.UnaryOp) else node
    if not isinstance(inner, ast.BoolOp):
        raise Refusal("the enumeration is not a boolean chain")
    items = boolop_items(fragment, inner)
    by_range = {ctx.index.range_of(op.span): op for op in site.operands}
    operands = [by_range.get((i.start, i.end)) for i in items]
    if "#" in text[items[0].start : items[-1].end]:
        raise Refusal(
            f"comments between the operands would be moved or dropped by {style}; "
            "use --fix-style minimal or rewrite by hand"
        )
    chain = site_chain(_tree(text[start:end]), membership=False)
    if chain is None or len(chain.items) != len(items):
        raise Refusal("libcst and ast read the enumeration's operands differently")
    if not all(chain.plain(i) for i in range(len(chain.gaps))):
        raise Refusal("the chain nests parentheses; rewrite it by hand")
    return ParsedChain(
        start,
        end,
        items,
        chain,
        [op.members if op is not None else frozenset() for op in operands],
        [op.kind if op is not None else None for op in operands],
    )


def _tree(text: str) -> CstFragment:
    try:
        return CstFragment(text)
    except FragmentError as exc:
        raise Refusal(f"cannot re-read the expression on its own: {exc}") from exc


def rebuild(
    ctx: FileContext,
    site: Site,
    parsed: ParsedChain,
    kept: list[cst.BaseExpression],
    removed: list[tuple[int, int]],
    style: str,
    receivers: frozenset[str],
) -> Rewrite:
    """The site with its chain's operands replaced by ``kept``, joined by the chain's own
    separators in order; a chain left with one operand loses its grouping parentheses unless
    that operand binds looser than a call (``b in A2A_FAMILY``, ``not is_x()``) and the chain
    is not a whole condition or value."""
    import libcst as cst

    text = ctx.source.text
    chain, start, end = parsed.chain, parsed.start, parsed.end
    tree = chain.fragment
    if len(kept) == 1 and site.form == "not-or":
        root = tree.root
        body = tree.code(negated(kept[0]).with_changes(lpar=root.lpar, rpar=root.rpar))
        return _rewrite(style, text, (start, end), (start, end), body, receivers, removed)
    if len(kept) == 1:
        outer = _grouping_parens(text, start, end)
        if outer != (start, end):
            tree = _tree(text[outer[0] : outer[1]])
        root = tree.root  # the grouping parentheses, if any, are its own beside the wrapper's
        primary = isinstance(kept[0], (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
        grouped = not primary and not stands_alone(ctx, site)
        lpar, rpar = (root.lpar, root.rpar) if grouped else (root.lpar[:1], root.rpar[-1:])
        body = tree.code(kept[0].with_changes(lpar=lpar, rpar=rpar))
        return _rewrite(style, text, outer, outer, body, receivers, removed)
    joined = kept[0]
    for gap, operand in zip(chain.gaps, kept[1:], strict=False):
        joined = cst.BooleanOperation(left=joined, operator=gap.separator, right=operand)  # type: ignore[arg-type]
    top = joined.with_changes(lpar=chain.top.lpar, rpar=chain.top.rpar)
    after = tree.code(replace_nodes(tree.root, {id(chain.top): top}))
    rstart, rend = parsed.items[0].start, parsed.items[-1].end
    head, tail = text[start:rstart], text[rend:end]
    if not (after.startswith(head) and after.endswith(tail)):
        raise Refusal("libcst changed the text around the enumeration's operands")
    body = after[len(head) : len(after) - len(tail)]
    return _rewrite(style, text, (rstart, rend), (start, end), body, receivers, removed)


def _rewrite(
    style: str,
    text: str,
    replaced: tuple[int, int],
    whole: tuple[int, int],
    body: str,
    receivers: frozenset[str],
    removed: list[tuple[int, int]],
) -> Rewrite:
    """The rewrite replacing ``text[replaced]`` with ``body``; ``whole`` (holding it, or held
    by it) is the expression whose value before and after states the change."""
    rstart, rend = replaced
    before_start, before_end = min(rstart, whole[0]), max(rend, whole[1])
    after = text[before_start:rstart] + body + text[rend:before_end]
    return Rewrite(
        style=style,
        primary=Replacement(rstart, rend, body),
        extra=(),
        before=text[before_start:before_end],
        after=after,
        receivers=receivers,
        removed=tuple(removed),
    )


def _grouping_parens(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` widened to the grouping parentheses around it, when there are some."""
    before = re.search(r"\(\s*\Z", text[max(0, start - 200) : start])
    after = re.match(r"\s*\)", text[end : end + 200])
    if before is None or after is None:
        return start, end
    open_at = start - len(before.group())
    preceding = re.search(r"(\w+|\S)\s*\Z", text[max(0, open_at - 200) : open_at])
    if preceding is not None:
        token = preceding.group(1)
        if token[0].isidentifier() and not keyword.iskeyword(token):
            return start, end  # a call: f(...)
        if token in (")", "]", "}", "'", '"'):
            return start, end  # a call or subscript on an expression
    return open_at, end + len(after.group())
