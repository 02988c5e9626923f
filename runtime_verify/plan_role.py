"""What a site's value controls in its own module: the communication-plan role, if any.

A site gets a layer run only when its value chooses a communication plan the harness models
(:class:`PlanRole`); every other site is a :class:`NotPlanSite` with the reason. The role is
read from the code the value reaches, in the site's module alone, with :mod:`ast` (nothing
is imported or run), in the manner of a guards library: the branch the value guards, the
branch of a conditional expression it selects, the keyword it feeds, the attribute or name it
is stored in (then every read of it), the function it is returned from (then every call of
it). What is found there decides the role:

- ``ep_a2a``: the value guards a TP reduce or a DP gather (a call named ``*all_reduce*``,
  ``*reduce_scatter*``, ``*all_gather*``, ``dp_gather*``, or ``reduce_results = ...``), directly or
  through a method or function of the module that makes one;
- ``forward_switch``: it selects a ``forward_deepep``-style method over ``forward_normal``;
- ``shared_expert``: it selects the shared expert's parallel layout (``"replicated"`` against
  ``"tp"``, ``tp_size=1``, or an attribute naming the shared experts' TP width).

This is the narrow interface the engine will later feed from the role evidence it records on
each Site; until then :func:`plan_role` derives it from the finding's path, span and symbol.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from driftcheck.model import Span

from .layer.roles import ROLE_PLANS, ROLE_TEXT

RoleKind = Literal["ep_a2a", "forward_switch", "shared_expert"]

_COMM_CALL = re.compile(r"all_reduce|reduce_scatter|all_gather|^dp_gather|^dp_scatter")
_FORWARD_A2A = re.compile(r"^_?forward_(deepep|a2a|ep)")
# Collectives over routing bookkeeping (top-k ids, counts) do not carry the layer's output.
_BOOKKEEPING = re.compile(r"topk|indices|idx|ids|count|mask")
_SHARED_NAME = re.compile(r"shared_expert")
_SHARED_TP = re.compile(r"tp1|tp_size|replicat|parallel")
MAX_DEPTH = 4


@dataclass(frozen=True)
class PlanRole:
    """A site whose value chooses a communication plan the harness models."""

    kind: RoleKind
    evidence: tuple[str, ...]

    @property
    def plans(self) -> tuple[str, str]:
        """``(plan when the value says "family member", plan otherwise)``."""
        return ROLE_PLANS[self.kind]

    def describe(self) -> str:
        """One line: the role and the chain of code that shows it."""
        return f"{ROLE_TEXT[self.kind]}: " + "; ".join(self.evidence)


@dataclass(frozen=True)
class NotPlanSite:
    """A site whose value does not choose a communication plan; ``reason`` says what it does."""

    reason: str


@dataclass(frozen=True)
class _Found:
    kind: RoleKind
    what: str


class _Module:
    """The parsed module with parent links and the lookups the flow needs."""

    def __init__(self, tree: ast.Module, path: str) -> None:
        self.tree, self.path = tree, path
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.setdefault(node.name, []).append(node)

    def at(self, node: ast.AST) -> str:
        return f"{self.path.rsplit('/', 1)[-1]}:{getattr(node, 'lineno', '?')}"

    def enclosing(self, node: ast.AST, kinds: tuple[type, ...]) -> ast.AST | None:
        current = self.parent.get(node)
        while current is not None and not isinstance(current, kinds):
            current = self.parent.get(current)
        return current


def _short(node: ast.AST, limit: int = 60) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def find_site_expression(tree: ast.Module, span: Span) -> ast.expr | None:
    """The smallest expression whose extent covers ``span`` (lines 1-based, columns 0-based)."""
    best: ast.expr | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr) or not hasattr(node, "end_lineno"):
            continue
        start = (node.lineno, node.col_offset)
        end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
        if start <= (span.line, span.col) and (span.end_line, span.end_col) <= end:
            size = (end[0] - start[0], end[1] - start[1])
            if best is None or size < (
                (best.end_lineno or 0) - best.lineno,
                (best.end_col_offset or 0) - best.col_offset,
            ):
                best = node
    return best


class _Flow:
    """Follows the site's value through its module and collects what it controls."""

    def __init__(self, module: _Module) -> None:
        self.m = module
        self.found: list[tuple[_Found, tuple[str, ...]]] = []
        self.controls: list[str] = []
        self.seen: set[int] = set()

    def follow(self, node: ast.expr, chain: tuple[str, ...], depth: int) -> None:
        if id(node) in self.seen or depth > MAX_DEPTH:
            return
        self.seen.add(id(node))
        top = node
        parent = self.m.parent.get(top)
        while isinstance(parent, ast.BoolOp | ast.UnaryOp) or (
            isinstance(parent, ast.IfExp) and parent.test is top
        ):
            if isinstance(parent, ast.IfExp):
                self._choice(parent, chain)
            top, parent = parent, self.m.parent.get(parent)
        if isinstance(parent, ast.If | ast.While) and parent.test is top:
            self._guards(parent, chain, depth)
        elif isinstance(parent, ast.Return):
            self._returned(parent, chain, depth)
        elif isinstance(parent, ast.Assign | ast.AnnAssign) and parent.value is top:
            self._stored(parent, chain, depth)
        elif isinstance(parent, ast.keyword):
            self._keyword(parent, chain)
        elif isinstance(parent, ast.Assert):
            self.controls.append(f"asserts it ({self.m.at(parent)})")

    # -- where the value goes -------------------------------------------------------------
    def _guards(self, branch: ast.If | ast.While, chain: tuple[str, ...], depth: int) -> None:
        here = (*chain, f"{self.m.at(branch)} guards `if {_short(branch.test, 40)}:`")
        for statement in [*branch.body, *branch.orelse]:
            if self._inspect(statement, here):
                continue
            # `x = True` / `return False` under the guard: the value goes on through x or the call
            flag = getattr(statement, "value", None)
            if isinstance(flag, ast.Constant) and isinstance(flag.value, bool):
                if isinstance(statement, ast.Assign):
                    self._stored(statement, here, depth)
                    continue
                if isinstance(statement, ast.Return):
                    self._returned(statement, here, depth)
                    continue
            self.controls.append(self._phrase(statement, "guards"))

    def _choice(self, choice: ast.IfExp, chain: tuple[str, ...]) -> None:
        here = (*chain, f"{self.m.at(choice)} selects `{_short(choice, 50)}`")
        if not any([self._inspect(arm, here) for arm in (choice.body, choice.orelse)]):
            self.controls.append(f"selects `{_short(choice, 70)}` ({self.m.at(choice)})")
        holder = self.m.parent.get(choice)
        if isinstance(holder, ast.keyword):
            self._keyword(holder, here, value=choice)

    def _returned(self, ret: ast.Return, chain: tuple[str, ...], depth: int) -> None:
        function = self.m.enclosing(ret, (ast.FunctionDef, ast.AsyncFunctionDef))
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        calls = [
            node
            for node in ast.walk(self.m.tree)
            if isinstance(node, ast.Call) and _callee(node) == function.name
        ]
        if not calls:
            self.controls.append(f"is returned by {function.name}(), which this module never calls")
        for call in calls:
            self.follow(call, (*chain, f"{self.m.at(call)} `{_short(call, 40)}`"), depth + 1)

    def _stored(
        self, assign: ast.Assign | ast.AnnAssign, chain: tuple[str, ...], depth: int
    ) -> None:
        targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
        for target in targets:
            name = _short(target)
            here = (*chain, f"{self.m.at(assign)} `{name} = ...`")
            if _SHARED_NAME.search(name) and _SHARED_TP.search(name):
                self.found.append((_Found("shared_expert", f"sets {name}"), here))
            reads = list(self._reads(target, assign))
            if not reads:
                self.controls.append(f"is stored in {name}, which this module never reads")
            for read in reads:
                self.follow(read, here, depth + 1)

    def _reads(self, target: ast.expr, assign: ast.AST) -> Iterator[ast.expr]:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            scope = self.m.enclosing(assign, (ast.ClassDef,)) or self.m.tree
            for node in ast.walk(scope):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.ctx, ast.Load)
                    and node.attr == target.attr
                    and isinstance(node.value, ast.Name)
                    and node.value.id == target.value.id
                ):
                    yield node
        elif isinstance(target, ast.Name):
            scope = self.m.enclosing(assign, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(scope or self.m.tree):
                loads = isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                if loads and node.id == target.id:
                    yield node

    def _keyword(
        self, keyword: ast.keyword, chain: tuple[str, ...], value: ast.expr | None = None
    ) -> None:
        call = self.m.parent.get(keyword)
        arg = keyword.arg or "**"
        name = f"{_callee(call)}({arg}=...)" if isinstance(call, ast.Call) else arg
        holder = self.m.parent.get(call) if call is not None else None
        stored = _short(holder.targets[0]) if isinstance(holder, ast.Assign) else ""
        found = self._layout_choice(keyword.arg, value or keyword.value, stored)
        if found is not None:
            what = f"chooses {name} ({found}) for {stored or _callee(call)}"
            self.found.append((_Found("shared_expert", what), chain))
        else:
            self.controls.append(f"feeds {name} ({self.m.at(keyword.value)})")

    @staticmethod
    def _layout_choice(arg: str | None, value: ast.expr, stored: str) -> str | None:
        """The shared-expert layout a keyword (or a ``**dict(...)``) chooses, if it chooses one."""
        pairs: list[tuple[str | None, ast.expr]] = [(arg, value)]
        for node in ast.walk(value):
            if isinstance(node, ast.Call) and _callee(node) == "dict":
                pairs += [(kw.arg, kw.value) for kw in node.keywords]
        for key, expr in pairs:
            if key not in ("parallel_group", "tp_size"):
                continue
            constants = [n.value for n in ast.walk(expr) if isinstance(n, ast.Constant)]
            if "replicated" in constants or 1 in constants or _SHARED_NAME.search(stored):
                return f"{key}: " + ", ".join(map(repr, constants))
        return None

    # -- what the controlled code does ----------------------------------------------------
    def _inspect(self, node: ast.AST, chain: tuple[str, ...]) -> bool:
        """Record the role ``node`` shows, if any; whether it showed one."""
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call):
                found = self._call_role(inner)
                if found is not None:
                    self.found.append((found, chain))
                    return True
            if isinstance(inner, ast.Assign):
                for target in inner.targets:
                    if isinstance(target, ast.Attribute) and target.attr == "reduce_results":
                        what = f"sets {_short(target)} (the layer's own TP reduce)"
                        self.found.append((_Found("ep_a2a", what), chain))
                        return True
        return False

    def _phrase(self, node: ast.AST, verb: str) -> str:
        value = node.value if isinstance(node, ast.Return) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            text = value.value if len(value.value) <= 60 else value.value[:57] + "..."
            return f"returns the message string {text!r} ({self.m.at(node)})"
        return f"{verb} `{_short(node, 70)}` ({self.m.at(node)})"

    def _call_role(self, call: ast.Call) -> _Found | None:
        name = _callee(call)
        if _FORWARD_A2A.search(name):
            return _Found("forward_switch", f"selects {name}() ({self.m.at(call)})")
        if _COMM_CALL.search(name):
            if call.args and all(
                isinstance(a, ast.Name) and _BOOKKEEPING.search(a.id) for a in call.args
            ):
                self.controls.append(
                    f"guards {_short(call, 50)} over routing bookkeeping ({self.m.at(call)})"
                )
                return None
            return _Found("ep_a2a", f"makes {_short(call, 50)} ({self.m.at(call)})")
        for function in self.m.functions.get(name, ()):  # one level into the module's own code
            for inner in ast.walk(function):
                if isinstance(inner, ast.Call) and _COMM_CALL.search(_callee(inner)):
                    return _Found(
                        "ep_a2a",
                        f"calls {name}() ({self.m.at(call)}), which makes "
                        f"{_callee(inner)}(...) ({self.m.at(inner)})",
                    )
        return None


_PRIORITY: tuple[RoleKind, ...] = ("ep_a2a", "forward_switch", "shared_expert")


def plan_role(source: str, path: str, span: Span, symbol: str) -> PlanRole | NotPlanSite:
    """The communication-plan role of the site at ``span`` in ``source`` (the module at
    ``path``), or why it has none. ``symbol`` names the site in the reason.

    Returns the highest-priority role found (``ep_a2a``, then ``forward_switch``, then
    ``shared_expert``) with the chain of code that shows it, or :class:`NotPlanSite` naming what
    the value does control.
    """
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, RecursionError) as exc:
        return NotPlanSite(f"{path} does not parse ({exc})")
    module = _Module(tree, path)
    expr = find_site_expression(tree, span)
    if expr is None:
        return NotPlanSite(f"no expression at {path}:{span.line}")
    flow = _Flow(module)
    flow.follow(expr, (), 0)
    for kind in _PRIORITY:
        for found, chain in flow.found:
            if found.kind == kind:
                return PlanRole(kind, (*chain, found.what))
    controls = list(dict.fromkeys(flow.controls))[:3]
    what = "; ".join(controls) if controls else "reaches no code in this module"
    return NotPlanSite(f"not a communication-plan site: the value of {symbol} {what}")
