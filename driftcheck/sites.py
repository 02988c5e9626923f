"""Find hand-written backend enumerations in one parsed module.

A *term* is one test of the backend: ``b.is_deepep()``, ``backend == "mori"``,
``b in (E.DEEPEP, E.MORI)``, a call to a canonical helper. A *site* is an expression that
combines terms naming at least two members (or a helper and a member): an ``or`` chain, a
negated chain, ``and``-of-negations, a membership test or an ``==`` chain. Everything else in
the file (unrelated conditions in the same chain) is kept as "other terms".
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .classify import classify
from .model import Operand, Site, Span, Universe
from .receivers import (
    ReceiverScope,
    annotated_params,
    collect_aliases,
    collect_self_attrs,
    terminal_name,
)
from .universe import string_constants


@dataclass(frozen=True)
class Term:
    """One test of the backend inside an enumeration."""

    node: ast.expr
    kind: str  # method | string | enum | helper
    members: frozenset[str]
    negated: bool
    predicate: str | None = None


def span_of(node: ast.AST) -> Span:
    """The node's source range (``ast`` positions)."""
    return Span(
        node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0
    )  # type: ignore[attr-defined]


class SiteFinder:
    """Walks one module and collects its :class:`Site` objects."""

    def __init__(
        self,
        universe: Universe,
        source: str,
        tree: ast.Module,
        path: str,
        hot_lines: Sequence[int] | None = None,
    ) -> None:
        self.universe = universe
        self.source = source
        # bytes.splitlines breaks only at \r\n, \r and \n, as Python's tokenizer does;
        # str.splitlines also breaks at \f, \v, \x85, \u2028... and shifts every line after
        self.lines = source.encode("utf-8").splitlines(keepends=True)
        self.hot_lines = sorted(hot_lines) if hot_lines is not None else None
        self.tree = tree
        self.path = path
        self.helpers = {f.name: f for f in universe.families}
        self.module_constants = string_constants(tree.body)
        self.sites: list[Site] = []
        self._consumed: set[int] = set()
        self._parents: dict[int, ast.AST] = {}

    # -- walking --------------------------------------------------------------------------
    def _hot(self, node: ast.AST) -> bool:
        """Whether ``node`` spans a line holding a member token (prefilter pruning)."""
        if self.hot_lines is None:
            return True
        start = getattr(node, "lineno", None)
        if start is None:
            return True
        end = getattr(node, "end_lineno", None) or start
        index = bisect.bisect_left(self.hot_lines, start)
        return index < len(self.hot_lines) and self.hot_lines[index] <= end

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
        module_scope = ReceiverScope(self.universe)
        module_scope.module_names = collect_aliases(
            [
                s
                for s in self.tree.body
                if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            ],
            module_scope,
        )
        self._visit_body(self.tree.body, [], module_scope, self.module_constants, None, (), None)
        self.sites.sort(key=lambda s: (s.span.line, s.span.col))
        return self.sites

    def _visit_body(
        self,
        body: list[ast.stmt],
        qualname: list[str],
        scope: ReceiverScope,
        constants: dict[str, frozenset[str]],
        func: ast.FunctionDef | ast.AsyncFunctionDef | None,
        guards: tuple[ast.expr, ...],
        parent_if: ast.If | None,
    ) -> None:
        for stmt in body:
            if not self._hot(stmt):
                continue
            if isinstance(stmt, ast.ClassDef):
                class_scope = ReceiverScope(self.universe, set(), set(), scope.module_names)
                class_scope.self_attrs = (
                    collect_self_attrs(stmt, class_scope)
                    if self._class_aliases_possible(stmt)
                    else set()
                )
                self._visit_body(
                    stmt.body, [*qualname, stmt.name], class_scope, constants, None, (), None
                )
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = ReceiverScope(
                    self.universe, set(), set(scope.self_attrs), set(scope.module_names)
                )
                inner.local_names = annotated_params(stmt, self.universe)
                inner.local_names |= collect_aliases(stmt.body, inner)
                local_constants = {**constants, **_function_constants(stmt)}
                for default in [*stmt.args.defaults, *stmt.args.kw_defaults]:
                    if default is not None:
                        self._visit_expr_tree(
                            default, stmt, qualname, scope, constants, func, (), None
                        )
                self._visit_body(
                    stmt.body, [*qualname, stmt.name], inner, local_constants, stmt, (), None
                )
                continue
            self._visit_statement(stmt, qualname, scope, constants, func, guards, parent_if)

    def _visit_statement(
        self,
        stmt: ast.stmt,
        qualname: list[str],
        scope: ReceiverScope,
        constants: dict[str, frozenset[str]],
        func: ast.FunctionDef | ast.AsyncFunctionDef | None,
        guards: tuple[ast.expr, ...],
        parent_if: ast.If | None,
    ) -> None:
        inner_guards = (*guards, stmt.test) if isinstance(stmt, (ast.If, ast.While)) else guards
        for field_name, value in ast.iter_fields(stmt):
            if isinstance(value, ast.expr):
                self._visit_expr_tree(
                    value, stmt, qualname, scope, constants, func, guards, parent_if
                )
            elif isinstance(value, list):
                nested = [v for v in value if isinstance(v, ast.stmt)]
                if nested:
                    is_elif = (
                        field_name == "orelse"
                        and isinstance(stmt, ast.If)
                        and len(nested) == 1
                        and isinstance(nested[0], ast.If)
                    )
                    self._visit_body(
                        nested, qualname, scope, constants, func,
                        guards if is_elif else inner_guards, stmt if is_elif else None,  # type: ignore[arg-type]
                    )  # fmt: skip
                for item in value:
                    if isinstance(item, ast.expr):
                        self._visit_expr_tree(
                            item, stmt, qualname, scope, constants, func, guards, parent_if
                        )
                    elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
                        self._visit_body(
                            item.body, qualname, scope, constants, func, inner_guards, None
                        )
                    elif isinstance(item, ast.withitem):
                        self._visit_expr_tree(
                            item.context_expr,
                            stmt,
                            qualname,
                            scope,
                            constants,
                            func,
                            guards,
                            parent_if,
                        )

    def _visit_expr_tree(
        self,
        root: ast.expr,
        stmt: ast.stmt,
        qualname: list[str],
        scope: ReceiverScope,
        constants: dict[str, frozenset[str]],
        func: ast.FunctionDef | ast.AsyncFunctionDef | None,
        guards: tuple[ast.expr, ...],
        parent_if: ast.If | None,
    ) -> None:
        stack: list[tuple[ast.AST, ast.AST]] = [(root, stmt)]
        while stack:
            node, parent = stack.pop()
            self._parents[id(node)] = parent
            if isinstance(node, ast.Lambda):
                continue
            if (
                isinstance(node, (ast.BoolOp, ast.UnaryOp, ast.Compare, ast.Call))
                and id(node) not in self._consumed
            ):
                site = self._site(node, stmt, qualname, scope, constants, func)
                if site is not None:
                    kind = self._classify(node, stmt, scope, constants, guards, parent_if)
                    self.sites.append(replace(site, kind=kind))  # type: ignore[arg-type]
            children = [
                c for c in ast.iter_child_nodes(node) if self._hot(c) or not hasattr(c, "lineno")
            ]
            stack.extend((child, node) for child in reversed(children))

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
        scope: ReceiverScope,
        constants: dict[str, frozenset[str]],
        guards: tuple[ast.expr, ...],
        parent_if: ast.If | None,
    ) -> str:
        def is_backend_term(sub: ast.expr) -> bool:
            term = self._term(sub, scope, constants) if isinstance(sub, ast.expr) else None
            return term is not None and term.kind != "helper"

        def is_other_backend_test(sub: ast.expr) -> bool:
            if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)):
                return False
            if not sub.func.attr.startswith("is_") or sub.func.attr in self.universe.predicates:
                return False
            receiver = sub.func.value
            if scope.is_receiver(receiver):
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
        )

    def _class_aliases_possible(self, cls: ast.ClassDef) -> bool:
        """Cheap text test before walking a class for ``self.x = get_backend()``."""
        start, end = cls.lineno - 1, cls.end_lineno or cls.lineno
        text = b"".join(self.lines[start:end])
        return any(getter.encode() in text for getter in self.universe.getters)

    # -- terms ----------------------------------------------------------------------------
    def _collection(
        self, node: ast.expr, constants: dict[str, frozenset[str]]
    ) -> tuple[str, frozenset[str]] | None:
        if isinstance(node, ast.Name) and node.id in constants:
            members = constants[node.id] & set(self.universe.values)
            return ("string", frozenset(members)) if members else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "frozenset", "set", "tuple", "list"
        ) and len(node.args) == 1:  # fmt: skip
            node = node.args[0]
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or not node.elts:
            return None
        kinds = set()
        members = set()
        for elt in node.elts:
            single = self._single_value(elt)
            if single is None:
                continue
            kinds.add(single[0])
            members.add(single[1])
        if not members:
            return None
        return ("enum" if kinds == {"enum"} else "string", frozenset(members))

    def _single_value(self, node: ast.expr) -> tuple[str, str] | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return ("string", node.value) if node.value in self.universe.values else None
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.universe.enum_name
        ):
            value = self.universe.value_of_attr(node.attr)
            return ("enum", value) if value is not None else None
        return None

    def _term(
        self, node: ast.expr, scope: ReceiverScope, constants: dict[str, frozenset[str]]
    ) -> Term | None:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self._term(node.operand, scope, constants)
            if inner is None:
                return None
            return Term(node, inner.kind, inner.members, not inner.negated, inner.predicate)
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            func = node.func
            if isinstance(func, ast.Attribute) and scope.is_receiver(func.value):
                pred = self.universe.predicates.get(func.attr)
                if pred is not None and len(pred.members) == 1 and pred.narrowing is None:
                    return Term(node, "method", pred.members, False, func.attr)
                return None
            name = terminal_name(func)
            if name in self.helpers:
                return Term(node, "helper", self.helpers[name].member_set, False, name)
            return None
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, op, right = node.left, node.ops[0], node.comparators[0]
            if isinstance(op, (ast.In, ast.NotIn)) and scope.is_value_expr(left):
                found = self._collection(right, constants)
                if found is not None:
                    return Term(node, found[0], found[1], isinstance(op, ast.NotIn))
                return None
            if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
                for subject, other in ((left, right), (right, left)):
                    if scope.is_value_expr(subject):
                        single = self._single_value(other)
                        if single is not None:
                            return Term(
                                node,
                                single[0],
                                frozenset({single[1]}),
                                isinstance(op, (ast.NotEq, ast.IsNot)),
                            )
        return None

    # -- sites ----------------------------------------------------------------------------
    def _flatten(self, node: ast.BoolOp) -> list[ast.expr]:
        out: list[ast.expr] = []
        for value in node.values:
            if isinstance(value, ast.BoolOp) and type(value.op) is type(node.op):
                self._consumed.add(id(value))
                out.extend(self._flatten(value))
            else:
                out.append(value)
        return out

    def _site(
        self,
        node: ast.expr,
        stmt: ast.stmt,
        qualname: list[str],
        scope: ReceiverScope,
        constants: dict[str, frozenset[str]],
        func: ast.FunctionDef | ast.AsyncFunctionDef | None,
    ) -> Site | None:
        if isinstance(node, ast.Call) or (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
        ):
            term = self._term(node, scope, constants)
            if term is None or term.kind == "helper" or len(term.members) != 1:
                return None
            return self._make(
                node, stmt, qualname, func, "single", "negative" if term.negated else "positive",
                [term], [], False, scope, None,
            )  # fmt: skip
        if isinstance(node, ast.Compare):
            term = self._term(node, scope, constants)
            if term is None or len(term.members) < 2:
                return None
            constant = node.comparators[0].id if isinstance(node.comparators[0], ast.Name) else None
            return self._make(
                node, stmt, qualname, func, "not-in" if term.negated else "in",
                "negative" if term.negated else "positive", [term], [], False, scope, constant,
            )  # fmt: skip
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = node.operand
            if isinstance(inner, ast.BoolOp) and isinstance(inner.op, ast.Or):
                result = self._chain(inner, scope, constants, want_negated=False)
                if result is None:
                    return None
                terms, helpers, other = result
                self._consumed.add(id(inner))
                return self._make(
                    node,
                    stmt,
                    qualname,
                    func,
                    "not-or",
                    "negative",
                    terms,
                    helpers,
                    other,
                    scope,
                    None,
                )
            return None
        if isinstance(node, ast.BoolOp):
            negated = isinstance(node.op, ast.And)
            result = self._chain(node, scope, constants, want_negated=negated)
            if result is None:
                return None
            terms, helpers, other = result
            if negated:
                form = "ne-chain" if all(t.kind != "method" for t in terms) else "and-not"
            else:
                form = "or-chain" if any(t.kind == "method" for t in terms) else "eq-chain"
            return self._make(
                node, stmt, qualname, func, form, "negative" if negated else "positive",
                terms, helpers, other, scope, None,
            )  # fmt: skip
        return None

    def _chain(
        self,
        node: ast.BoolOp,
        scope: ReceiverScope,
        constants: dict[str, frozenset[str]],
        want_negated: bool,
    ) -> tuple[list[Term], list[Term], bool] | None:
        operands = self._flatten(node)
        terms: list[Term] = []
        helpers: list[Term] = []
        other = False
        for operand in operands:
            term = self._term(operand, scope, constants)
            if term is None or term.negated != want_negated:
                other = True
                continue
            if term.kind == "helper":
                helpers.append(term)
            else:
                terms.append(term)
        members = set().union(*(t.members for t in terms)) if terms else set()
        if len(members) >= 2 or (helpers and members):
            for term in [*terms, *helpers]:
                self._consumed.add(id(term.node))
                if isinstance(term.node, ast.UnaryOp):
                    self._consumed.add(id(term.node.operand))
            return terms, helpers, other
        return None

    def _make(
        self,
        node: ast.expr,
        stmt: ast.stmt,
        qualname: list[str],
        func: ast.FunctionDef | ast.AsyncFunctionDef | None,
        form: str,
        polarity: str,
        terms: list[Term],
        helpers: list[Term],
        other: bool,
        scope: ReceiverScope,
        constant: str | None,
    ) -> Site:
        members: set[str] = set()
        for term in terms:
            members |= term.members
        context, role = self._context(node, stmt, func)
        enumerator = (
            func.name
            if (func is not None and context == "return" and self._is_whole_return(node, stmt))
            else None
        )
        operands = tuple(
            Operand(
                kind=t.kind,  # type: ignore[arg-type]
                members=t.members,
                span=span_of(t.node),
                text=self.segment(t.node),
                predicate=t.predicate,
            )
            for t in [*terms, *helpers]
        )
        receiver = self._receiver_text(terms)
        return Site(
            path=self.path,
            symbol=".".join(qualname) or "<module>",
            form=form,  # type: ignore[arg-type]
            polarity=polarity,  # type: ignore[arg-type]
            span=span_of(node),
            members=frozenset(members),
            operands=operands,
            receiver=receiver,
            helpers=tuple(dict.fromkeys(h.predicate or "" for h in helpers)),
            context=context,
            enumerator=enumerator,
            constant=constant,
            role=role,
            text=self.segment(node),
            has_other_terms=other,
            statement_line=stmt.lineno,
        )

    def _receiver_text(self, terms: list[Term]) -> str:
        for term in terms:
            node = term.node.operand if isinstance(term.node, ast.UnaryOp) else term.node
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                return ast.unparse(node.func.value)
            if isinstance(node, ast.Compare):
                return ast.unparse(node.left)
        return ""

    def _is_whole_return(self, node: ast.expr, stmt: ast.stmt) -> bool:
        return isinstance(stmt, ast.Return) and stmt.value is node

    def _context(
        self, node: ast.expr, stmt: ast.stmt, func: ast.FunctionDef | ast.AsyncFunctionDef | None
    ) -> tuple[str, str]:
        """Where the site's value goes: (context, role name)."""
        child: ast.AST = node
        parent = self._parents.get(id(node), stmt)
        while parent is not stmt:
            if isinstance(parent, ast.keyword):
                return "keyword", parent.arg or ""
            if isinstance(parent, ast.IfExp) and parent.test is child:
                return "ternary", _assigned_name(stmt) or (func.name if func else "")
            child, parent = parent, self._parents.get(id(parent), stmt)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return "assign", _assigned_name(stmt) or ""
        if isinstance(stmt, ast.Return):
            return "return", func.name if func else ""
        if isinstance(stmt, (ast.If, ast.While)):
            operation = _guarded_operation(stmt)
            role = func.name if func else ""
            if role and operation:
                role = f"{role}:{operation}"
            return ("if" if isinstance(stmt, ast.If) else "while"), role
        if isinstance(stmt, ast.Assert):
            return "assert", func.name if func else ""
        return "expression", func.name if func else ""


def _guarded_operation(stmt: ast.If | ast.While) -> str | None:
    """The first call or assignment the statement guards (``forward_normal``, ``ep_size``)."""
    if not stmt.body:
        return None
    first = stmt.body[0]
    assigned = _assigned_name(first)
    if assigned:
        return assigned
    for node in ast.walk(first):
        if isinstance(node, ast.Call):
            return terminal_name(node.func)
    return None


def _assigned_name(stmt: ast.stmt) -> str | None:
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    for target in targets:
        if isinstance(target, ast.Name):
            return target.id
        if isinstance(target, ast.Attribute):
            return target.attr
    return None


def _function_constants(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, frozenset[str]]:
    found: dict[str, frozenset[str]] = {}
    for node in ast.walk(func):
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef)):
            found.update(string_constants(getattr(node, "body", [])))
    found.update(string_constants(func.body))
    return found


def find_sites(
    universe: Universe,
    source: str,
    tree: ast.Module,
    path: str,
    hot_lines: Sequence[int] | None = None,
) -> list[Site]:
    """All enumeration sites in a parsed module (``hot_lines`` prunes statements without tokens)."""
    return SiteFinder(universe, source, tree, path, hot_lines).find()
