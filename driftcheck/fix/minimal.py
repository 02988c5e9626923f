"""Minimal style: insert the missing members into the hand-written list itself.

Each missing member goes right after the present operand whose member is its nearest
predecessor in the canonical helper's order (``deepep, deepep_v2, mooncake, mori, pplx``), or
before the first family operand when none precedes it; several at one anchor keep family
order. It is spelled like its sibling (:mod:`driftcheck.fix.spelling`) and separated like its
neighbours (:mod:`driftcheck.fix.insertion`). For ``x in CONST`` the constant's literal is
edited when the site is its only use.

``ast`` locates the list and names each operand's members; libcst parses only the rewritten
expression's text (with the comment ending its last line, which a new last operand moves) and
the insertion is a transformation of that tree.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from driftcheck.sites.terms import collection_members

from .chain import Chain, LayoutError, collection_chain, site_chain
from .cstfragment import CstFragment
from .fragment import Fragment, FragmentError
from .insertion import ChainEdit
from .operands import Item, boolop_items, collection_items
from .plan import FileContext, Refusal, Replacement, Rewrite, SiteJob
from .spelling import member_of, respell

if TYPE_CHECKING:
    import libcst as cst


def plan_minimal(ctx: FileContext, job: SiteJob, receivers: frozenset[str]) -> Rewrite:
    """The minimal rewrite of ``job``'s site (raises :class:`Refusal`)."""
    site = job.site
    if site.form == "match":
        return _plan_match(ctx, job)
    if site.form == "single":
        return _plan_single(ctx, job, receivers)
    text = ctx.source.text
    start, end = ctx.index.range_of(site.span)
    fragment = _fragment(text, start, end)
    node = fragment.node
    membership = site.form in ("in", "not-in")
    if membership:
        if not isinstance(node, ast.Compare) or len(node.comparators) != 1:
            raise Refusal("the membership test is not a single comparison")
        collection = node.comparators[0]
        if isinstance(collection, ast.Name):
            return _plan_constant(ctx, job, collection.id, (start, end), receivers)
        items = collection_items(fragment, collection)
        if items is None:
            raise Refusal("the members are not written as a bracketed literal")
        members = [_value_members(item.node, ctx) for item in items]
    else:
        inner = node.operand if isinstance(node, ast.UnaryOp) else node
        if not isinstance(inner, ast.BoolOp):
            raise Refusal("the enumeration is not a boolean chain")
        items = boolop_items(fragment, inner)
        members = _operand_members(items, ctx, job)
    groups = _groups(members, job)
    new_end, replacement = _insert(
        ctx, job, (start, end), items, members, groups, lambda t: site_chain(t, membership)
    )
    return Rewrite(
        style="minimal",
        primary=Replacement(start, new_end, replacement),
        extra=(),
        before=text[start:new_end],
        after=replacement,
        receivers=receivers,
    )


def _plan_match(ctx: FileContext, job: SiteJob) -> Rewrite:
    """``case E.A | E.C:`` -> ``case E.A | E.B | E.C:``: the missing members become
    alternatives of the case's pattern, spelled like their neighbours, in family order."""
    site = job.site
    statement = next(
        (
            n
            for n in ast.walk(ctx.tree)
            if isinstance(n, ast.Match) and n.lineno == site.statement_line
        ),
        None,
    )
    case = None
    if statement is not None:
        case = next(
            (
                c
                for c in statement.cases
                if (c.pattern.lineno, c.pattern.col_offset) == (site.span.line, site.span.col)
            ),
            None,
        )
    if statement is None or case is None:
        raise Refusal("the case's pattern was not found again")
    pattern = case.pattern
    alternatives = pattern.patterns if isinstance(pattern, ast.MatchOr) else [pattern]
    text = ctx.source.text
    start, end = ctx.range_of(pattern)
    if pattern.lineno != pattern.end_lineno or "#" in text[start:end]:
        raise Refusal("the pattern spans lines or holds comments; add the members by hand")
    values: list[tuple[str, str | None]] = []
    for alternative in alternatives:
        a_start, a_end = ctx.range_of(alternative)
        member = (
            member_of(alternative.value, ctx.universe)
            if isinstance(alternative, ast.MatchValue)
            else None
        )
        values.append((text[a_start:a_end], member))
    spelled = [t for t, m in values if m is not None]
    if not spelled:
        raise Refusal("no alternative of the pattern names a member to spell the others like")
    order = {m: i for i, m in enumerate(job.family.members)}
    new = list(values)
    for member in job.adds:
        spelling = _spell_like(spelled[0], member, ctx)
        position = len(new)
        for index, (_, present) in enumerate(new):
            if present in order and order[present] > order[member]:
                position = index
                break
        new.insert(position, (spelling, member))
    replacement = " | ".join(t for t, _ in new)
    subject = ast.get_source_segment(text, statement.subject) or ast.unparse(statement.subject)
    before = f"({subject}) in ({', '.join(t for t, _ in values)},)"
    after = f"({subject}) in ({', '.join(t for t, _ in new)},)"
    return Rewrite(
        style="minimal",
        primary=Replacement(start, end, replacement),
        extra=(),
        before=before,
        after=after,
        receivers=frozenset({ast.unparse(statement.subject)}),
    )


PARENTLESS = (ast.If, ast.While, ast.Assign, ast.AnnAssign, ast.Return, ast.keyword, ast.Expr)


def _plan_single(ctx: FileContext, job: SiteJob, receivers: frozenset[str]) -> Rewrite:
    """``b.is_deepep()`` -> ``b.is_deepep() or b.is_deepep_v2() or ...`` (``not b.is_x()``
    -> ``not b.is_x() and not b.is_y()``), the new terms spelled like the old one, in the
    family's order; parenthesised unless the term is a whole condition or value."""
    site = job.site
    text = ctx.source.text
    start, end = ctx.index.range_of(site.span)
    fragment = _fragment(text, start, end)
    node = fragment.node
    present = next(iter(site.members))
    tree = CstFragment(text[start:end])
    terms: dict[str, str] = {present: text[start:end]}
    for member in job.adds:
        spelled = respell(node, tree.root, member, ctx.universe)
        if spelled is None:
            raise Refusal(f"cannot spell a test of {member} like '{text[start:end]}'")
        terms[member] = tree.render(spelled)
    order = [m for m in job.family.members if m in terms]
    order += [m for m in terms if m not in order]
    joiner = " and " if site.polarity == "negative" else " or "
    replacement = joiner.join(terms[m] for m in order)
    if not stands_alone(ctx, site):
        replacement = f"({replacement})"
    return Rewrite(
        style="minimal",
        primary=Replacement(start, end, replacement),
        extra=(),
        before=text[start:end],
        after=replacement,
        receivers=receivers,
    )


def stands_alone(ctx: FileContext, site) -> bool:
    """Whether the term is a whole ``if`` test, assigned or returned value, or keyword."""
    for node in ast.walk(ctx.tree):
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.expr)
                and (child.lineno, child.col_offset) == (site.span.line, site.span.col)
                and (child.end_lineno, child.end_col_offset)
                == (site.span.end_line, site.span.end_col)
            ):
                return isinstance(node, PARENTLESS)
    return False


def _spell_like(sibling: str, member: str, ctx: FileContext) -> str:
    """``MoeA2ABackend.MORI`` or ``"mori"``, written like ``sibling``."""
    universe = ctx.universe
    if sibling[:1] in "'\"":
        quote = sibling[0]
        return f"{quote}{member}{quote}"
    attr = next((m.attr for m in universe.members if m.value == member), member)
    return f"{sibling.rsplit('.', 1)[0]}.{attr}"


def _fragment(text: str, start: int, end: int) -> Fragment:
    try:
        return Fragment(text[start:end], base=start)
    except FragmentError as exc:
        raise Refusal(f"cannot re-read the expression on its own: {exc}") from exc


def _value_members(node: ast.expr, ctx: FileContext) -> frozenset[str]:
    member = member_of(node, ctx.universe)
    return frozenset({member}) if member is not None else frozenset()


def _operand_members(items: list[Item], ctx: FileContext, job: SiteJob) -> list[frozenset[str]]:
    """Each chain item's members, taken from the site's operands found at the same place."""
    by_range = {ctx.index.range_of(op.span): op for op in job.site.operands if op.kind != "helper"}
    return [
        by_range[(item.start, item.end)].members
        if (item.start, item.end) in by_range
        else frozenset()
        for item in items
    ]


def _groups(members: list[frozenset[str]], job: SiteJob) -> dict[tuple[str, int], list[str]]:
    """The missing members by where they go: ``("after", i)`` or ``("before", i)``."""
    family = job.family.members
    present = {m for ms in members for m in ms if m in family}
    if not present:
        raise Refusal("no operand of the enumeration names a family member to copy")
    groups: dict[tuple[str, int], list[str]] = {}
    for member in sorted(job.adds, key=family.index):
        rank = family.index(member)
        predecessor = next(
            (family[j] for j in range(rank - 1, -1, -1) if family[j] in present), None
        )
        if predecessor is not None:
            key = ("after", next(i for i, ms in enumerate(members) if predecessor in ms))
        else:
            key = ("before", next(i for i, ms in enumerate(members) if ms & set(family)))
        groups.setdefault(key, []).append(member)
    return groups


def _insert(
    ctx: FileContext,
    job: SiteJob,
    span: tuple[int, int],
    items: list[Item],
    members: list[frozenset[str]],
    groups: dict[tuple[str, int], list[str]],
    chain_of: Callable[[CstFragment], Chain | None],
) -> tuple[int, str]:
    """The end of the rewritten range and its new text: ``text[span]`` (with the comment that
    ends its last line, when the insertion moves it) with the groups' members added."""
    text = ctx.source.text
    start, end = span
    line_end = ctx.index.line_end(end)
    stop = line_end if text[end:line_end].strip().startswith("#") else end
    try:
        tree = CstFragment(text[start:stop])
    except FragmentError as exc:
        raise Refusal(f"cannot re-read the expression on its own: {exc}") from exc
    chain = chain_of(tree)
    if chain is None or len(chain.items) != len(items):
        raise Refusal("libcst and ast read the enumeration's operands differently")
    edit = ChainEdit(chain)
    try:
        for (where, index), group in groups.items():
            nodes = [_spell(chain, items, members, index, member, ctx) for member in group]
            insert = edit.insert_after if where == "after" else edit.insert_before
            insert(index, nodes)
    except LayoutError as exc:
        raise Refusal(str(exc)) from exc
    rendered = tree.code(edit.result())
    if edit.tail_used or stop == end:
        return stop, rendered
    tail = text[end:stop]
    if not rendered.endswith(tail):
        raise Refusal("libcst moved the comment after the enumeration")
    return end, rendered[: len(rendered) - len(tail)]


def _spell(
    chain: Chain,
    items: list[Item],
    members: list[frozenset[str]],
    anchor: int,
    member: str,
    ctx: FileContext,
) -> cst.BaseExpression:
    """``member`` spelled like the anchor, else like the nearest single-member sibling."""
    singles = [i for i, ms in enumerate(members) if len(ms) == 1]
    for index in sorted(singles, key=lambda i: (i != anchor, abs(i - anchor))):
        spelled = respell(items[index].node, chain.items[index], member, ctx.universe)
        if spelled is not None:
            return spelled
    raise Refusal(f"no operand of the enumeration can be re-spelled to name {member}")


def _plan_constant(
    ctx: FileContext,
    job: SiteJob,
    name: str,
    site_range: tuple[int, int],
    receivers: frozenset[str],
) -> Rewrite:
    """Edit the literal of ``name`` when this site is its only use."""
    value, scope_node, local = _constant_definition(ctx, job, name)
    uses = [
        n.lineno
        for n in ast.walk(scope_node)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    ]
    if len(uses) != 1:
        others = ", ".join(str(line) for line in uses if line != job.site.span.line) or "elsewhere"
        raise Refusal(
            f"constant {name} is also used at line {others}; editing it would change that use "
            "too, so add the members by hand"
        )
    if not local and not name.startswith("_"):
        importer = _other_file_naming(ctx, name)
        if importer is not None:
            raise Refusal(f"constant {name} is public and {importer} names it; edit it by hand")
    text = ctx.source.text
    start, end = ctx.range_of(value)
    fragment = _fragment(text, start, end)
    items = collection_items(fragment, fragment.node)
    if items is None:
        raise Refusal(f"constant {name} is not a bracketed literal")
    members = [_value_members(item.node, ctx) for item in items]
    groups = _groups(members, job)
    new_end, replacement = _insert(
        ctx, job, (start, end), items, members, groups, lambda t: collection_chain(t, t.root)
    )
    old = collection_members(value, ctx.universe) or frozenset()
    expression = text[site_range[0] : site_range[1]]
    return Rewrite(
        style="minimal",
        primary=Replacement(start, new_end, replacement),
        extra=(),
        before=expression,
        after=expression,
        receivers=receivers,
        before_names={name: old},
        after_names={name: old | set(job.adds)},
    )


def _constant_definition(
    ctx: FileContext, job: SiteJob, name: str
) -> tuple[ast.expr, ast.AST, bool]:
    """The literal assigned to ``name``, the scope it lives in, and whether that is a function."""
    function = ctx.enclosing_function(job.site.span.line)
    for scope_node, nodes, local in (
        (function, list(ast.walk(function)) if function else [], True),
        (ctx.tree, list(ctx.tree.body), False),
    ):
        values = [v for v in _assigned_values(nodes, name)]
        if not values:
            continue
        if len(values) > 1:
            raise Refusal(f"constant {name} is assigned more than once; edit it by hand")
        if collection_members(values[0], ctx.universe) is None:
            raise Refusal(f"constant {name} is not a literal collection of members")
        return values[0], scope_node or ctx.tree, local
    raise Refusal(f"constant {name} is not assigned in this module")


def _assigned_values(nodes: Sequence[ast.AST], name: str) -> list[ast.expr]:
    values: list[ast.expr] = []
    for node in nodes:
        assigns = (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ) or (
            isinstance(node, (ast.AnnAssign, ast.AugAssign))
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        )
        value = getattr(node, "value", None)
        if assigns and isinstance(value, ast.expr):
            values.append(value)
    return values


def _other_file_naming(ctx: FileContext, name: str) -> str | None:
    pattern = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
    for rel in ctx.all_files:
        if rel == ctx.rel:
            continue
        try:
            data = (ctx.root / rel).read_bytes()
        except OSError:
            continue
        if pattern.search(data):
            return rel
    return None
