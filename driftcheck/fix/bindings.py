"""What the helper-style fixer knows of a site's receivers: which ones hold the enum member.

A receiver is *bound to the getter* when it is a getter call, or a variable or ``self``
attribute only ever assigned one: a function helper reads the same global backend. It *holds
a member* when it is bound to the getter, a parameter annotated with the enum (or defaulting
to the getter) that the function never rebinds, or the enum built from a value
(``MoeA2ABackend(name)``): a membership test of it against a constant of members reads the
same member its ``is_*()`` calls test.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from driftcheck.sites.names import call_name
from driftcheck.sites.receivers import ReceiverScope, annotated_params

from .fragment import Fragment, FragmentError
from .plan import FileContext, SiteJob


def holds_member(ctx: FileContext, job: SiteJob, receiver: str) -> bool:
    """Whether ``receiver``'s value is known to be the enum member itself."""
    if bound_to_getter(ctx, job, receiver):
        return True
    try:
        node = Fragment(receiver).node
    except FragmentError:
        return False
    if ReceiverScope(ctx.universe).is_enum_construction(node):
        return True
    function = ctx.enclosing_function(job.site.span.line)
    if not isinstance(node, ast.Name) or function is None:
        return False
    rebound, _ = _stores(
        [function], lambda t: isinstance(t, ast.Name) and t.id == node.id, frozenset()
    )
    return node.id in annotated_params(function, ctx.universe) and not rebound


def bound_to_getter(ctx: FileContext, job: SiteJob, receiver: str) -> bool:
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
