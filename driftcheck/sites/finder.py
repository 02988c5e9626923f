"""Walk one parsed module and collect its sites, for every universe of the run at once.

The walk keeps, per universe, the receivers in scope (module, class, function), the
constants holding members, the guards enclosing each statement and each expression's parent;
:mod:`.build` recognises the sites, :mod:`.context` says where their value goes and
:mod:`.classify` what kind of enumeration they are. ``hot_lines`` (from the prefilter) prunes
statements that hold no token of any universe.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..model import Site, Universe
from .build import Shape, SiteBuilder, make_site
from .classify import classify
from .context import Function, site_context
from .controls import Controls, Operations
from .receivers import (
    ReceiverScope,
    annotated_params,
    assignments_in,
    collect_aliases,
    collect_holder_aliases,
    collect_self_attrs,
    derives_from_holder,
    holder_params,
    local_getters,
    statements,
)
from .terms import member_constants

if TYPE_CHECKING:
    from ..partial import Added


# the operator and load/store singletons beneath expressions: never a site, nothing beneath
OPERATORS = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


@dataclass
class Lens:
    """One universe as the walk sees it at one point: its builder, receivers and constants."""

    builder: SiteBuilder
    scope: ReceiverScope
    constants: dict[str, frozenset[str]]


class SiteFinder:
    """Walks one module and collects its :class:`Site` objects."""

    def __init__(
        self,
        universes: Sequence[Universe],
        source: str,
        tree: ast.Module,
        path: str,
        hot_lines: Sequence[int] | None = None,
        grow: Callable[[set[int]], Added] | None = None,
        operations: Operations | None = None,
        own_hot_lines: Sequence[Sequence[int]] | None = None,
    ) -> None:
        self.universes = list(universes)
        self.source = source
        # bytes.splitlines breaks only at \r\n, \r and \n, as Python's tokenizer does;
        # str.splitlines also breaks at \f, \v, \x85, \u2028... and shifts every line after
        self.lines = source.encode("utf-8").splitlines(keepends=True)
        self.hot_lines = sorted(hot_lines) if hot_lines is not None else None
        self.tree = tree
        self.path = path
        self.sites: list[Site] = []
        self._parents: dict[int, ast.AST] = {}
        self._builders = [SiteBuilder(u) for u in self.universes]
        self._index = {id(b): index for index, b in enumerate(self._builders)}
        # per universe (by its builder), the hot lines of its own tokens: a class or function
        # spanning none of them holds none of its sites, and is walked without its lens
        self._own_hot: dict[int, list[int]] = (
            {id(b): sorted(lines) for b, lines in zip(self._builders, own_hot_lines, strict=True)}
            if own_hot_lines is not None and len(own_hot_lines) == len(self._builders)
            else {}
        )
        self._controls = Controls(tree, self.lines, grow, operations)
        # per universe, the members earlier exits of the enclosing blocks sent elsewhere
        self._settled: dict[str, frozenset[str]] = {}
        self._test_sites: dict[int, list[Site]] = {}  # an ``if`` test's id -> its sites
        self._getter_bytes = [
            [g.encode() for g in (*u.getters, *u.holder_names)] for u in self.universes
        ]
        # the names of each condition a family implies (``moe_ep_size`` of ``moe_ep_size >
        # 1``): a test whose text lacks one of them cannot be that condition
        self._implied_names = [
            re.findall(r"[A-Za-z_]\w*", condition)
            for u in self.universes
            for condition, _ in u.implied
        ]

    # -- walking --------------------------------------------------------------------------
    def _hot(self, node: ast.AST, lines: list[int] | None = None) -> bool:
        """Whether ``node`` spans a line holding a member token (prefilter pruning), or one
        of ``lines`` when given."""
        hot = self.hot_lines if lines is None else lines
        if hot is None:
            return True
        start = getattr(node, "lineno", None)
        if start is None:
            return True
        end = getattr(node, "end_lineno", None) or start
        index = bisect.bisect_left(hot, start)
        return index < len(hot) and hot[index] <= end

    def _own(self, node: ast.AST, lenses: list[Lens]) -> list[Lens]:
        """The lenses of the universes whose own tokens ``node`` spans (all without
        per-universe hot lines)."""
        if not self._own_hot:
            return lenses
        return [lens for lens in lenses if self._hot(node, self._own_hot[id(lens.builder)])]

    def segment(self, node: ast.AST) -> str:
        """The exact source text of ``node`` (``ast`` columns are UTF-8 byte offsets)."""
        start, end = node.lineno - 1, (node.end_lineno or node.lineno) - 1  # type: ignore[attr-defined]
        if start == end:
            raw = self.lines[start][node.col_offset : node.end_col_offset]  # type: ignore[attr-defined]
        else:
            parts = [self.lines[start][node.col_offset :]]  # type: ignore[attr-defined]
            parts.extend(self.lines[start + 1 : end])
            parts.append(self.lines[end][: node.end_col_offset])  # type: ignore[attr-defined]
            raw = b"".join(parts)
        return raw.decode("utf-8", errors="replace")

    def find(self) -> list[Site]:
        """All sites in the module, in source order."""
        module_level = [
            s
            for s in self.tree.body
            if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
        lenses = []
        module_assignments = assignments_in(module_level)
        for builder in self._builders:
            scope = ReceiverScope(builder.universe)
            scope.local_getters = local_getters(self.tree.body, builder.universe)
            scope.module_names = collect_aliases(module_assignments, scope)
            constants = member_constants(self.tree.body, builder.universe)
            lenses.append(Lens(builder, scope, constants))
        self._visit_body(self.tree.body, [], lenses, None, (), None)
        self.sites.sort(key=lambda s: (s.span.line, s.span.col))
        return self.sites

    def _class_lenses(self, cls: ast.ClassDef, lenses: list[Lens]) -> list[Lens]:
        out = []
        for lens in self._own(cls, lenses):
            index = self._index[id(lens.builder)]
            universe = lens.builder.universe
            scope = ReceiverScope(
                universe, set(), set(), set(lens.scope.module_names),
                local_getters=lens.scope.local_getters,
            )  # fmt: skip
            scope.holder_self = derives_from_holder(cls, universe)
            if self._mentions(cls, self._getter_bytes[index]):
                scope.self_attrs = collect_self_attrs(cls, scope)
            out.append(Lens(lens.builder, scope, lens.constants))
        return out

    def _function_lenses(self, func: Function, lenses: list[Lens]) -> list[Lens]:
        out = []
        assignments, blocks = assignments_in(func.body), _blocks(func)
        for lens in self._own(func, lenses):
            universe = lens.builder.universe
            scope = lens.scope.child()
            scope.local_names = annotated_params(func, universe)
            scope.local_names |= collect_aliases(assignments, scope)
            scope.holder_locals = holder_params(func, universe)
            if universe.holders or universe.holder_names:
                scope.holder_locals |= collect_holder_aliases(assignments, scope)
            constants = {**lens.constants, **_function_constants(blocks, universe)}
            out.append(Lens(lens.builder, scope, constants))
        return out

    def _visit_body(
        self,
        body: list[ast.stmt],
        qualname: list[str],
        lenses: list[Lens],
        func: Function | None,
        guards: tuple[ast.expr, ...],
        parent_if: ast.If | None,
    ) -> None:
        outer = self._settled
        for stmt in body:
            if not self._hot(stmt):
                self._settle(stmt)  # ``if moe_ep_size > 1: return`` holds no member token
                continue
            if isinstance(stmt, ast.ClassDef):
                inner = self._class_lenses(stmt, lenses)
                self._settled = {}
                self._visit_body(stmt.body, [*qualname, stmt.name], inner, None, (), None)
                self._settled = outer
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = self._function_lenses(stmt, lenses)
                for default in [*stmt.args.defaults, *stmt.args.kw_defaults]:
                    if default is not None:
                        self._visit_expr_tree(default, stmt, qualname, lenses, func, (), None)
                self._settled = {}
                self._visit_body(stmt.body, [*qualname, stmt.name], inner, stmt, (), None)
                self._settled = outer
                continue
            self._visit_statement(stmt, qualname, lenses, func, guards, parent_if)
            self._settle(stmt)
        self._settled = outer

    def _settle(self, stmt: ast.stmt) -> None:
        """After ``if <members>: return ...`` (no ``else``), later statements of the block
        are never reached for those members."""
        if isinstance(stmt, ast.If) and not stmt.orelse and _exits(stmt.body):
            self._settled = self._settled_by(stmt.test)

    def _settled_by(self, test: ast.expr) -> dict[str, frozenset[str]]:
        """The settled members once ``test`` was false: the members it tests positively
        (alone), or those the configuration says imply it (``moe_ep_size > 1``)."""
        settled = dict(self._settled)
        for site in self._test_sites.get(id(test), ()):
            if site.polarity == "positive" and not site.has_other_terms and not site.helpers:
                settled[site.universe] = settled.get(site.universe, frozenset()) | site.members
        if self._may_be_implied(test):
            text = ast.unparse(test)
            for universe in self.universes:
                implied = universe.implied_by(text)
                if implied:
                    settled[universe.key] = settled.get(universe.key, frozenset()) | implied
        return settled

    def _may_be_implied(self, test: ast.expr) -> bool:
        """Whether ``test`` may be a condition a family implies: its text holds every name of
        one (unparsing every exiting test to compare it costs a tenth of a large file's scan).
        A test spelled with other than ASCII is unparsed (Python normalises its names)."""
        if not self._implied_names:
            return False
        text = self.segment(test)
        if not text.isascii():
            return True
        return any(all(name in text for name in names) for names in self._implied_names)

    def _visit_statement(
        self,
        stmt: ast.stmt,
        qualname: list[str],
        lenses: list[Lens],
        func: Function | None,
        guards: tuple[ast.expr, ...],
        parent_if: ast.If | None,
    ) -> None:
        if isinstance(stmt, ast.Match):
            self._visit_match(stmt, qualname, lenses, func)
        inner_guards = (*guards, stmt.test) if isinstance(stmt, (ast.If, ast.While)) else guards
        for field_name, value in ast.iter_fields(stmt):
            if isinstance(value, ast.expr):
                self._visit_expr_tree(value, stmt, qualname, lenses, func, guards, parent_if)
            elif isinstance(value, list):
                nested = [v for v in value if isinstance(v, ast.stmt)]
                if nested:
                    is_elif = (
                        field_name == "orelse"
                        and isinstance(stmt, ast.If)
                        and len(nested) == 1
                        and isinstance(nested[0], ast.If)
                    )
                    outer = self._settled
                    if is_elif:  # an elif arm is reached only when the earlier tests were false
                        self._settled = self._settled_by(stmt.test)  # type: ignore[attr-defined]
                    self._visit_body(
                        nested, qualname, lenses, func,
                        guards if is_elif else inner_guards, stmt if is_elif else None,  # type: ignore[arg-type]
                    )  # fmt: skip
                    self._settled = outer
                for item in value:
                    if isinstance(item, ast.expr):
                        self._visit_expr_tree(item, stmt, qualname, lenses, func, guards, parent_if)
                    elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                        if isinstance(item, ast.match_case) and item.guard is not None:
                            self._visit_expr_tree(
                                item.guard, stmt, qualname, lenses, func, guards, parent_if
                            )
                        self._visit_body(item.body, qualname, lenses, func, inner_guards, None)
                    elif isinstance(item, ast.withitem):
                        self._visit_expr_tree(
                            item.context_expr, stmt, qualname, lenses, func, guards, parent_if
                        )

    def _visit_match(
        self, stmt: ast.Match, qualname: list[str], lenses: list[Lens], func: Function | None
    ) -> None:
        for lens in lenses:
            cases = lens.builder.match_cases(stmt, lens.scope)
            listing = [c for c in cases if c[1].terms]
            for case, shape in cases:
                members = set().union(*(t.members for t in shape.terms))
                if len(members) < 2 and len(listing) < 2:
                    continue
                kind = "dispatch" if len(listing) > 1 else "property"
                site = make_site(
                    shape,
                    case.pattern,
                    path=self.path,
                    symbol=".".join(qualname) or "<module>",
                    context="match",
                    role=func.name if func else "",
                    enumerator=None,
                    segment=self.segment,
                    statement_line=stmt.lineno,
                    universe=lens.builder.universe.key,
                )
                self.sites.append(replace(site, kind=kind))  # type: ignore[arg-type]

    def _visit_expr_tree(
        self,
        root: ast.expr,
        stmt: ast.stmt,
        qualname: list[str],
        lenses: list[Lens],
        func: Function | None,
        guards: tuple[ast.expr, ...],
        parent_if: ast.If | None,
    ) -> None:
        stack: list[tuple[ast.AST, ast.AST]] = [(root, stmt)]
        while stack:
            node, parent = stack.pop()
            self._parents[id(node)] = parent
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, (ast.BoolOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Attribute)):
                for lens in lenses:
                    shape = lens.builder.shape(node, lens.scope, lens.constants)
                    if shape is not None:
                        self._add(shape, node, stmt, qualname, lens, func, guards, parent_if)
            children = [
                c
                for c in ast.iter_child_nodes(node)
                if not isinstance(c, OPERATORS) and (self._hot(c) or not hasattr(c, "lineno"))
            ]
            stack.extend((child, node) for child in reversed(children))

    def _add(
        self,
        shape: Shape,
        node: ast.expr,
        stmt: ast.stmt,
        qualname: list[str],
        lens: Lens,
        func: Function | None,
        guards: tuple[ast.expr, ...],
        parent_if: ast.If | None,
    ) -> None:
        context, role_name = site_context(node, stmt, func, self._parents)
        whole_return = isinstance(stmt, ast.Return) and stmt.value is node
        enumerator = (
            func.name if (func is not None and context == "return" and whole_return) else None
        )
        site = make_site(
            shape,
            node,
            path=self.path,
            symbol=".".join(qualname) or "<module>",
            context=context,
            role=role_name,
            enumerator=enumerator,
            segment=self.segment,
            statement_line=stmt.lineno,
            universe=lens.builder.universe.key,
        )
        kind = self._classify(node, stmt, lens, guards, parent_if)
        role = self._controls.role(
            node, stmt, self._parents, name=role_name, scope=".".join(qualname), func=func
        )
        site = replace(
            site,
            kind=kind,  # type: ignore[arg-type]
            role=role,
            settled=self._settled.get(site.universe, frozenset()) - site.members,
        )
        if isinstance(stmt, ast.If) and stmt.test is node:
            self._test_sites.setdefault(id(node), []).append(site)
        self.sites.append(site)

    def _ancestors(self, node: ast.AST, stmt: ast.stmt) -> list[ast.AST]:
        chain: list[ast.AST] = []
        parent = self._parents.get(id(node))
        while parent is not None and parent is not stmt:
            chain.append(parent)
            parent = self._parents.get(id(parent))
        return list(reversed(chain))

    def _classify(
        self,
        node: ast.expr,
        stmt: ast.stmt,
        lens: Lens,
        guards: tuple[ast.expr, ...],
        parent_if: ast.If | None,
    ) -> str:
        universe = lens.builder.universe

        def is_backend_term(sub: ast.expr) -> bool:
            reader = lens.builder.reader
            term = (
                reader.term(sub, lens.scope, lens.constants) if isinstance(sub, ast.expr) else None
            )
            return term is not None and term.kind != "helper"

        def is_other_backend_test(sub: ast.expr) -> bool:
            if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)):
                return False
            if not sub.func.attr.startswith("is_") or sub.func.attr in universe.predicates:
                return False
            receiver = sub.func.value
            if lens.scope.is_receiver(receiver):
                return False
            text = ast.unparse(receiver).lower()
            return "runner" in text or "backend" in text

        return classify(
            node,
            stmt,
            self._ancestors(node, stmt),
            guards,
            parent_if,
            is_backend_term,
            is_other_backend_test,
            universe.implementation_words,
        )

    def _mentions(self, cls: ast.ClassDef, names: list[bytes]) -> bool:
        """Cheap text test before walking a class for ``self.x = get_backend()``."""
        start, end = cls.lineno - 1, cls.end_lineno or cls.lineno
        text = b"".join(self.lines[start:end])
        return any(name in text for name in names)


def _exits(body: list[ast.stmt]) -> bool:
    """Whether a block always leaves its function or loop (ends in return/raise/...)."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _blocks(func: Function) -> list[list[ast.stmt]]:
    """The bodies of the blocks nested in ``func`` (functions defined in it too), then its
    own body: where :func:`_function_constants` looks."""
    nested = (
        node.body
        for node in statements(func.body, nested=True)
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef))
    )
    return [*nested, func.body]


def _function_constants(
    blocks: list[list[ast.stmt]], universe: Universe
) -> dict[str, frozenset[str]]:
    found: dict[str, frozenset[str]] = {}
    for body in blocks:
        found.update(member_constants(body, universe))
    return found


def find_sites(
    universes: Universe | Sequence[Universe],
    source: str,
    tree: ast.Module,
    path: str,
    hot_lines: Sequence[int] | None = None,
    grow: Callable[[set[int]], Added] | None = None,
    operations: Operations | None = None,
    own_hot_lines: Sequence[Sequence[int]] | None = None,
) -> list[Site]:
    """All sites in a parsed module (``hot_lines`` prunes statements without tokens; ``grow``
    parses more of a partially parsed module when a question needs it; ``operations`` maps
    reach keys to the pack's role operations; ``own_hot_lines``, one list per universe: the
    lines holding that universe's own tokens, which prune its lens from classes and functions
    spanning none)."""
    if isinstance(universes, Universe):
        universes = [universes]
    finder = SiteFinder(universes, source, tree, path, hot_lines, grow, operations, own_hot_lines)
    return finder.find()
