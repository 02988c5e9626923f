"""What kind of enumeration a site is, read from its syntactic context.

- **allowlist**: it guards a ``raise``/``assert``/warning about support (validation);
- **dispatch**: it is one arm of a per-backend ``if``/``elif`` chain, or it is conjoined with
  (or nested under) a test of another backend kind such as the MoE runner, a dtype or a
  kernel flag (a kernel capability list: which implementation runs);
- **property**: anything else — its value decides a code path (K3's ``_uses_ep_a2a``).

Only property predicates are errors by default; the other kinds have their own codes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from .names import terminal_name

WARNING_CALLS = {"warning", "warn", "error", "critical", "exception"}


def _raises_or_warns(body: Sequence[ast.stmt]) -> bool:
    for stmt in body:
        if isinstance(stmt, (ast.Raise, ast.Assert)):
            return True
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and terminal_name(stmt.value.func) in WARNING_CALLS
        ):
            return True
    return False


def _chain_tests(stmt: ast.If, parent_if: ast.If | None) -> list[ast.expr]:
    """The other tests of the ``if``/``elif`` chain ``stmt`` belongs to."""
    tests: list[ast.expr] = [parent_if.test] if parent_if is not None else []
    node = stmt
    while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        node = node.orelse[0]
        tests.append(node.test)
    return tests


def classify(
    node: ast.expr,
    stmt: ast.stmt,
    ancestors: Sequence[ast.AST],
    guards: Sequence[ast.expr],
    parent_if: ast.If | None,
    is_backend_term: Callable[[ast.expr], bool],
    is_other_backend_test: Callable[[ast.expr], bool],
    implementation_words: tuple[str, ...] = (),
) -> str:
    """``property``, ``allowlist`` or ``dispatch`` for the site ``node`` inside ``stmt``.

    ``ancestors`` are the expression nodes between ``stmt`` and ``node`` (outermost first);
    ``guards`` are the tests of the ``if`` statements enclosing ``stmt`` in its function;
    ``implementation_words`` the codebase's own words for a kernel library.
    """
    in_test = isinstance(stmt, (ast.If, ast.While)) and (
        stmt.test is node or any(a is stmt.test for a in ancestors)
    )
    conjunctions = [a for a in ancestors if isinstance(a, ast.BoolOp) and isinstance(a.op, ast.And)]
    for conjunction in conjunctions:
        if any(
            _implementation_evidence(sub, is_other_backend_test, implementation_words)
            for value in conjunction.values
            for sub in ast.walk(value)
        ):
            return "dispatch"
    if isinstance(stmt, ast.Assert):
        return "allowlist"
    if in_test and isinstance(stmt, ast.If):
        is_elif = len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If)
        if _raises_or_warns(stmt.body) or (not is_elif and _raises(stmt.orelse)):
            return "allowlist"
        for test in _chain_tests(stmt, parent_if):
            if any(isinstance(sub, ast.expr) and is_backend_term(sub) for sub in ast.walk(test)):
                return "dispatch"
    for guard in guards:
        if any(isinstance(sub, ast.expr) and is_other_backend_test(sub) for sub in ast.walk(guard)):
            return "dispatch"
    return "property"


# words that name an implementation in any codebase; a codebase's own kernel libraries are
# its pack's ``implementation-words`` (the universe's ``implementation_words``)
IMPLEMENTATION_WORDS = ("runner", "kernel", "dtype", "quant")


def _implementation_evidence(
    node: ast.AST, is_other_backend_test: Callable[[ast.expr], bool], words: tuple[str, ...]
) -> bool:
    """A conjunct that pins an implementation: another backend's ``is_*()``, a dtype, a kernel."""
    if isinstance(node, ast.expr) and is_other_backend_test(node):
        return True
    name = terminal_name(node) if isinstance(node, ast.expr) else None
    return name is not None and any(
        word in name.lower() for word in (*IMPLEMENTATION_WORDS, *words)
    )


def _raises(body: Sequence[ast.stmt]) -> bool:
    return any(isinstance(stmt, ast.Raise) for stmt in body[:2])
