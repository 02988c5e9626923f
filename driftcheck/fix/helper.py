"""Helper style: replace the family part of an enumeration with a call to the canonical helper.

``b.is_megamoe() or b.is_deepep() or b.is_mori()`` becomes ``is_deepep_class_backend() or
b.is_megamoe()``: the helper takes the place of the first backend operand, the other family
operands go, extras and unrelated conditions stay in place. Negative forms become
``not is_deepep_class_backend() and not b.is_x()`` / ``not is_deepep_class_backend()``.

Refused when the helper would read a different backend than the list does: value
comparisons (``server_args.moe_a2a_backend in (...)`` runs before the runtime backend is
set), a receiver not bound to the getter (a parameter), or a site whose suppression or policy
deliberately leaves members out (the helper would add them).
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from driftcheck.model import Site
from driftcheck.sites.names import call_name

from .chain import Chain, site_chain
from .cstfragment import CstFragment, replace_nodes
from .fragment import Fragment, FragmentError
from .operands import Item, boolop_items
from .plan import FileContext, Refusal, Replacement, Rewrite, SiteJob

if TYPE_CHECKING:
    import libcst as cst

METHOD_FORMS = ("or-chain", "not-or", "and-not")


def helper_call(ctx: FileContext, job: SiteJob, receivers: frozenset[str]) -> str:
    """How the rewrite calls the family: ``is_x()``, or — for a method or property of a class
    holding the setting — ``<receiver>.is_x()`` / ``<receiver>.use_x`` on the site's own
    receiver, when that receiver is known to be an instance of the defining class."""
    family = job.family
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
    if site.form == "single" and site.operands and site.operands[0].kind in ("method", "property"):
        return _plan_single(ctx, job, receivers)
    if site.form not in METHOD_FORMS:
        raise Refusal(
            f"helper style is not offered for value comparisons: they usually run on server "
            f"arguments, before the runtime backend that {family.call_text()} reads is set; "
            "use --fix-style minimal"
        )
    if job.allowed_missing:
        raise Refusal(
            f"the site deliberately leaves out {', '.join(sorted(job.allowed_missing))}; "
            f"{family.name}() would add {'it' if len(job.allowed_missing) == 1 else 'them'} "
            "(use --fix-style minimal)"
        )
    if family.access == "function":
        for receiver in sorted(receivers):
            if not _bound_to_getter(ctx, job, receiver):
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
        call = cst.UnaryOperation(operator=cst.Not(), expression=call)
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
    return rebuild(ctx, site, parsed, kept, removed, "helper", receivers)


def _plan_single(ctx: FileContext, job: SiteJob, receivers: frozenset[str]) -> Rewrite:
    """A single-backend check (``b.is_deepep()``, judged by DC020) becomes the helper call."""
    if job.allowed_missing:
        raise Refusal(
            f"the site deliberately leaves out {', '.join(sorted(job.allowed_missing))}; "
            f"{job.family.name}() would add them"
        )
    if job.family.access == "function":
        for receiver in sorted(receivers):
            if not _bound_to_getter(ctx, job, receiver):
                raise Refusal(
                    f"'{receiver}' is not known to be the global backend that "
                    f"{job.family.name}() reads; rewrite it by hand"
                )
    start, end = ctx.index.range_of(job.site.span)
    return _rewrite(
        "helper",
        ctx.source.text,
        (start, end),
        (start, end),
        helper_call(ctx, job, receivers),
        receivers,
        [(start, end)],
    )


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
    separators in order; a chain left with one operand loses its grouping parentheses."""
    import libcst as cst

    text = ctx.source.text
    chain, start, end = parsed.chain, parsed.start, parsed.end
    tree = chain.fragment
    if len(kept) == 1 and site.form == "not-or":
        root = tree.root
        negated = cst.UnaryOperation(
            operator=cst.Not(), expression=kept[0], lpar=root.lpar, rpar=root.rpar
        )
        body = tree.code(negated)
        return _rewrite(style, text, (start, end), (start, end), body, receivers, removed)
    if len(kept) == 1:
        outer = _grouping_parens(text, start, end)
        if outer != (start, end):
            tree = _tree(text[outer[0] : outer[1]])
        root = tree.root  # the grouping parentheses, if any, are its own beside the wrapper's
        body = tree.code(kept[0].with_changes(lpar=root.lpar[:1], rpar=root.rpar[-1:]))
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


def _bound_to_getter(ctx: FileContext, job: SiteJob, receiver: str) -> bool:
    """Whether ``receiver`` is the getter's value: a getter call, or a variable or ``self``
    attribute that is only ever assigned a getter call."""
    try:
        node = Fragment(receiver).node
    except FragmentError:
        return False
    getters = ctx.universe.getters
    if call_name(node) in getters:
        return True
    line = job.site.span.line
    if isinstance(node, ast.Name):
        function = ctx.enclosing_function(line)
        if function is not None:
            args = function.args
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            if any(p is not None and p.arg == node.id for p in params):
                return False
            stores, good = _stores(
                [function], lambda t: isinstance(t, ast.Name) and t.id == node.id, getters
            )
            if stores:
                return stores == good
        stores, good = _stores(
            list(ctx.tree.body), lambda t: isinstance(t, ast.Name) and t.id == node.id, getters
        )
        return bool(stores) and stores == good
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        classes = [n for n in ctx.enclosing(line) if isinstance(n, ast.ClassDef)]
        if not classes:
            return False

        def is_attr(t: ast.AST) -> bool:
            return (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
                and t.attr == node.attr
            )

        stores, good = _stores([classes[-1]], is_attr, getters)
        return bool(stores) and stores == good
    return False


def _stores(
    roots: list[ast.AST], matches: Callable[[ast.AST], bool], getters: frozenset[str]
) -> tuple[int, int]:
    """(how many times a matching target is bound, how many of those bind a getter call)."""
    stores = good = 0
    for root in roots:
        for node in ast.walk(root):
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(
                node.ctx, (ast.Store, ast.Del)
            ):
                stores += matches(node)
            elif (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and matches(node.targets[0])
                and call_name(node.value) in getters
            ):
                good += 1
    return stores, good
