"""What a site's value controls, read from the code around it (CodeQL's "guards" idea): the
one analysis of a site's role, stored on the Site as :class:`~driftcheck.model.Role` and read
by every consumer (DC020, liveness, fix applicability, the verifier, gen-test).

A site is judged by what it decides, not by its name alone. Each thing its value reaches is
a :class:`~driftcheck.model.Reach` with its line and the lines of the steps leading to it.
The keys, comparable across files and spelled from the code's own identifiers (leading
underscores dropped):

- ``call:<name>``: what a branch the value chooses does — each top-level statement of the
  body or ``else`` of the ``if`` it tests: the call it makes or returns (``return
  self.forward_deepep(x)``), the name it assigns (``set:ep_size``) and the call computing that
  value (``how="computes"``: part of what the branch sets, not an effect of its own),
  ``raise`` — and the call a branch of the conditional expression it tests makes (incidental
  calls deeper in a branch are not its effect: ``get_parallel()`` in ``self.ep_size =
  get_parallel().ep_size``);
- ``kw:<name>``: a keyword the value feeds, directly or through a conditional expression
  (``reduce_results``), and the keywords of the calls such a branch makes
  (``dict(tp_rank=0, tp_size=1)``: ``kw:tp_size``);
- ``set:<name>``: the name or attribute the value is assigned to (a local name an ``if`` it
  tests assigns in both branches is ``how="binds"``: comparable only between the files of one
  package, so outside :attr:`~driftcheck.model.Role.keys`); the same keys are then
  collected for each place the class (``self.x``) or the function (a local) reads it, and
  for each call of a function that returns the value — three steps deep.

The pack's role operations (``[roles]``: which calls are the TP reduce, the DP gather, the
forward switch...) mark the reaches that are one (``operation``); a call of one of the
module's own functions or methods is followed one level further, and the role operations
made inside it are recorded (``how="inside"``: ``self._reduce_shared(x)`` makes
``tensor_model_parallel_all_reduce``). Nothing is matched by a name pattern: a logging helper
called ``all_gather_into_logging_buffer`` is an operation only if the pack says so, and a call
that resolves to the module's own code is that code, whatever it is called
(:mod:`.callees`: ``self.stats.combine(x)`` on the module's own ``Stats`` is no combine).

Also the *comment* that states what the value is for: the comment lines just above the
statement and those on its lines, and the enclosing function's docstring; and the *refusal*:
the message of the ``raise``, the logged warning or the returned reason of the branch an
``if`` whose whole test is the value takes (``if p.is_cpu() or p.is_xpu(): raise
ValueError("... requires a CUDA-alike platform")``), and on which of its values.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ..model import Reach, Role
from .callees import Callees
from .mentions import Mentions
from .names import terminal_name
from .receivers import child_statements

if TYPE_CHECKING:
    from ..partial import Added

DEPTH = 3
MAX_CALLS = 24
# names that say nothing about what a branch does
COMMON_CALLS = {
    "super", "len", "isinstance", "issubclass", "getattr", "setattr", "hasattr", "print",
    "dict", "list", "tuple", "set", "frozenset", "int", "float", "str", "bool", "range",
    "enumerate", "zip", "min", "max", "sum", "any", "all", "sorted", "type", "id", "format",
    "append", "extend", "get", "items", "keys", "values", "update", "pop", "join", "split",
    "warning", "warn", "info", "debug", "error", "exception", "critical", "log",
    "warning_once", "info_once", "view", "reshape", "contiguous", "size", "dim", "to",
}  # fmt: skip
COMMENT = re.compile(rb"#(.*)$")

Function = ast.FunctionDef | ast.AsyncFunctionDef
Operations = Mapping[str, str]  # reach key -> the pack's role operation it is
# a question about a name's mentions: (kind, name, owner, first line, last line, depth)
Asked = tuple[str, str, str, int, int, int]


def _key(name: str | None) -> str | None:
    if not name:
        return None
    stripped = name.lstrip("_")
    return stripped or None


def _call_reaches(call: ast.Call, how: str, scope: str) -> list[Reach]:
    """The ``call:`` key of ``call`` (unless it is a common one) and its ``kw:`` keys."""
    found: list[Reach] = []
    name = _key(terminal_name(call.func))
    if name and name not in COMMON_CALLS:
        found.append(Reach(f"call:{name}", call.lineno, how, scope))
    found.extend(
        Reach(f"kw:{k.arg.lstrip('_')}", k.value.lineno, how, scope) for k in call.keywords if k.arg
    )
    return found


def _effects(body: list[ast.stmt], scope: str) -> list[Reach]:
    """What each top-level statement of a branch does (the first few statements)."""
    found: list[Reach] = []
    for stmt in body[:6]:
        value: ast.AST | None = None
        how = "guards"
        if isinstance(stmt, (ast.Return, ast.Expr)):
            value = stmt.value
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            # an attribute a branch sets says what it configures (``self.ep_size``); a local
            # name (``hidden_states``) says nothing comparable across files
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            sets = [
                Reach(f"set:{n}", stmt.lineno, "guards", scope)
                for t in targets
                if isinstance(t, ast.Attribute) and (n := _key(t.attr))
            ]
            found.extend(sets)
            value = stmt.value
            if sets:
                how = "computes"
        elif isinstance(stmt, ast.Raise):
            found.append(Reach("raise", stmt.lineno, "guards", scope))
        if isinstance(value, ast.Await):
            value = value.value
        if isinstance(value, ast.Call):
            found.extend(_call_reaches(value, how, scope))
    return found


def _bound(body: list[ast.stmt]) -> dict[str, int]:
    """The local names the first statements of a branch assign a fresh value (one that does
    not read the name: ``x = x[:n]`` updates ``x``, it does not choose it), with the line."""
    found: dict[str, int] = {}
    for stmt in body[:6]:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        for target in targets:
            if isinstance(target, ast.Name) and target.id not in reads:
                found.setdefault(target.id, stmt.lineno)
    return found


def _chosen_locals(stmt: ast.If | ast.While, scope: str) -> list[Reach]:
    """The local names an ``if`` chooses between two values of, one in its body and one in its
    ``else`` (``activation_format = BatchedExperts`` / ``= Standard``), as ``binds`` reaches:
    a file's local vocabulary is shared by its package, not by the tree, so they are compared
    only there, outside :attr:`Role.keys`. A name only one branch assigns is a default
    overridden, or an update, and no choice the value makes."""
    if not isinstance(stmt, ast.If) or not stmt.orelse:
        return []
    if len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If):
        return []  # an elif chain: each arm is its own test
    body, orelse = _bound(stmt.body), _bound(stmt.orelse)
    return [
        Reach(f"set:{key}", line, "binds", scope)
        for name, line in body.items()
        if name in orelse and (key := _key(name))
    ]


def _calls(nodes: list[ast.AST], scope: str, how: str = "selects") -> list[Reach]:
    """``call:`` and ``kw:`` reaches of the calls in ``nodes`` (nested functions excluded)."""
    found: list[Reach] = []
    stack = list(reversed(nodes))
    while stack and len(found) < MAX_CALLS:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            found.extend(_call_reaches(node, how, scope))
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


# the calls that log a message (a fallback says why it falls back with one of them)
LOG_CALLS = {
    "warning", "warn", "warning_once", "info", "info_once", "debug", "error", "critical",
    "exception", "print_warning_once",
}  # fmt: skip


def _strings(node: ast.AST) -> list[str]:
    """The text of the string literals in ``node`` (an f-string's literal parts included)."""
    return [
        n.value
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip()
    ]


def refusal_text(body: list[ast.stmt]) -> tuple[str, int]:
    """What a branch says when it refuses or falls back, and the line of its first such
    statement: the message of the ``raise`` it makes, of the warning it logs, or the reason it
    returns (``return False, "needs ..."``), among its first three statements; ``("", 0)``
    when it does none of these."""
    found: list[str] = []
    line = 0
    for stmt in body[:3]:
        before = len(found)
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            found.extend(_strings(stmt.exc))
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and terminal_name(stmt.value.func) in LOG_CALLS
        ) or (isinstance(stmt, ast.Return) and stmt.value is not None):
            found.extend(_strings(stmt.value))
        if len(found) > before and not line:
            line = stmt.lineno
    return " ".join(" ".join(found).split())[:400], line


def _refusal(node: ast.AST, stmt: ast.stmt, parents: dict[int, ast.AST]) -> tuple[str, bool, int]:
    """The text of the refusal or fallback an ``if`` whose whole test is ``node`` (under any
    ``not``) runs, whether it runs when ``node`` is true, and its line: ``if not p.is_cuda():
    raise ValueError("needs a CUDA-alike platform")`` gives ``("needs a CUDA-alike
    platform", False, <line of the raise>)``. ``("", True, 0)`` when ``node`` is not such a
    test or neither branch refuses."""
    when = True
    child, parent = node, parents.get(id(node))
    while parent is not None and parent is not stmt:
        if not (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)):
            return "", True, 0
        when = not when
        child, parent = parent, parents.get(id(parent))
    if not isinstance(stmt, ast.If) or stmt.test is not child:
        return "", True, 0
    text, line = refusal_text(stmt.body)
    if text:
        return text, when, line
    is_elif = len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If)
    text, line = ("", 0) if is_elif else refusal_text(stmt.orelse)
    return (text, not when, line) if text else ("", True, 0)


def _calls_within(body: list[ast.stmt]) -> Iterator[ast.Call]:
    """Every call in ``body``, the functions defined in it included (they are its code too)."""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                yield node


def _scope_of(cls: ast.ClassDef | None, function: Function | None) -> str:
    return ".".join(n.name for n in (cls, function) if n is not None)


class _Statement:
    """One statement of the module, where it sits, and the last line of its own header."""

    __slots__ = ("cls", "function", "header", "header_end", "node", "parents")

    def __init__(self, node: ast.stmt, function: Function | None, cls: ast.ClassDef | None) -> None:
        self.node = node
        self.function = function
        self.cls = cls
        # the expression nodes of its own header, outermost first, and each one's parent
        # (walked when first searched)
        self.header: list[ast.AST] = []
        self.parents: dict[int, ast.AST] | None = None
        bodies = [
            child.lineno
            for name in ("body", "orelse", "finalbody")
            for child in getattr(node, name, [])[:1]
            if isinstance(child, ast.stmt)
        ]
        for handler in getattr(node, "handlers", []):
            bodies.append(handler.lineno)
        for case in getattr(node, "cases", []):
            bodies.append(case.pattern.lineno)
        self.header_end = (min(bodies) - 1) if bodies else (node.end_lineno or node.lineno)

    @property
    def scope(self) -> str:
        """``Class.function`` of the code the statement sits in."""
        return _scope_of(self.cls, self.function)


def _header(stmt: ast.stmt) -> Iterator[tuple[ast.AST, ast.AST]]:
    """``(node, parent)`` for every expression node of ``stmt`` itself (not of the statements
    nested in it), outermost first."""
    roots: list[ast.AST] = []
    for _, value in ast.iter_fields(stmt):
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, (ast.expr, ast.keyword, ast.withitem, ast.arguments)):
                roots.append(item)
            elif isinstance(item, ast.ExceptHandler) and item.type is not None:
                roots.append(item.type)
            elif isinstance(item, ast.match_case):
                roots.append(item.pattern)
                if item.guard is not None:
                    roots.append(item.guard)
    stack: list[tuple[ast.AST, ast.AST]] = [(r, stmt) for r in reversed(roots)]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        stack.extend((child, node) for child in reversed(list(ast.iter_child_nodes(node))))


def _prefixed(reaches: list[Reach], line: int) -> Iterator[Reach]:
    """``reaches`` found from the statement at ``line``, with that step in front of theirs."""
    for reach in reaches:
        yield replace(reach, via=(line, *reach.via))


class Controls:
    """Reads what the sites of one module control.

    The module's statements are indexed once (statements only, on first use); reads of an
    assigned name and calls of a function are found in the source lines of their scope first
    (:class:`~.mentions.Mentions`: searched, or indexed once a file asks many questions), so
    only the statements on those lines are walked.
    ``operations`` maps a reach key to the pack's role operation it is."""

    def __init__(
        self,
        tree: ast.Module,
        lines: list[bytes],
        grow: Callable[[set[int]], Added] | None = None,
        operations: Operations | None = None,
    ) -> None:
        self.tree = tree
        self.lines = lines
        self.grow = grow
        self.operations: Operations = operations or {}
        self._statements: list[_Statement] | None = None  # None: not indexed yet
        self._indexed: list[_Statement] = []
        self._by_node: dict[int, _Statement] = {}
        self._order: dict[_Statement, int] = {}  # an entry's place in the index
        self._lines: dict[int, list[_Statement]] = {}  # line -> the entries its header holds
        self._hit_reaches: dict[tuple[int, int], list[Reach]] = {}  # (node id, depth) -> found
        self._inside: dict[str, list[Reach]] = {}  # a function's name -> its role operations
        self._asked: dict[tuple[object, ...], list[_Statement]] = {}
        self._answers: dict[Asked, list[Reach]] = {}  # what the reads or calls asked reach
        self._mentions = Mentions(lines)
        # a role operation stands only where its call does not resolve to the module's own
        # code that makes none (:mod:`.callees`)
        self._callees = Callees(lines, self.operations)

    def _index(self) -> list[_Statement]:
        """Every statement of the tree with its function and class (walked on first use;
        what the tree gains later is added by :meth:`_add`)."""
        if self._statements is None:
            self._statements = self._indexed
            self._add([(stmt, None) for stmt in self.tree.body])
        return self._statements

    def _add(self, roots: list[tuple[ast.stmt, ast.ClassDef | None]]) -> None:
        """Index ``roots`` (top-level statements or methods, each with its class) and every
        statement nested in them. A statement indexed before keeps its entry."""
        stack: list[tuple[ast.stmt, Function | None, ast.ClassDef | None]] = [
            (stmt, None, cls) for stmt, cls in reversed(roots)
        ]
        while stack:
            stmt, function, cls = stack.pop()
            if id(stmt) in self._by_node:
                continue
            entry = _Statement(stmt, function, cls)
            self._order[entry] = len(self._indexed)
            self._indexed.append(entry)
            self._by_node[id(stmt)] = entry
            for line in range(stmt.lineno, entry.header_end + 1):
                self._lines.setdefault(line, []).append(entry)
            inner_function = (
                stmt if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            )
            inner_cls = stmt if isinstance(stmt, ast.ClassDef) else cls
            children = child_statements(stmt)
            stack.extend((c, inner_function, inner_cls) for c in reversed(children))

    def role(
        self,
        node: ast.AST,
        stmt: ast.stmt,
        parents: dict[int, ast.AST],
        *,
        name: str,
        scope: str,
        func: Function | None,
    ) -> Role:
        """The :class:`Role` of ``node``'s value (inside ``stmt``, in ``scope``; ``parents``
        maps its expression ancestors up to ``stmt``), named ``name``."""
        reaches: list[Reach] = []
        seen: set[tuple[str, int, str]] = set()
        for reach in self._reaches(node, stmt, parents, DEPTH, scope):
            mark = (reach.key, reach.line, reach.how)
            if mark not in seen:
                seen.add(mark)
                if reach.via and reach.via[-1] == reach.line:  # the step is the reach itself
                    reach = replace(reach, via=reach.via[:-1])
                reaches.append(reach if reach.how == "binds" else self._marked(reach))
        if self.operations:
            reaches.extend(self._operations_inside(reaches, seen))
        refusal, when, line = _refusal(node, stmt, parents)
        return Role(
            name=name,
            reaches=tuple(reaches),
            comment=self.comment(stmt, func),
            refusal=refusal,
            refusal_when=when,
            refusal_line=line,
        )

    def _marked(self, reach: Reach) -> Reach:
        operation = self.operations.get(reach.key, "")
        if operation and not self._callees.stands(reach):
            return reach
        return replace(reach, operation=operation) if operation else reach

    def _operations_inside(
        self, reaches: list[Reach], seen: set[tuple[str, int, str]]
    ) -> list[Reach]:
        """The role operations made inside the module's own functions that ``reaches`` call
        (one level: ``self._reduce_shared(x)`` -> ``tensor_model_parallel_all_reduce``)."""
        found: list[Reach] = []
        for reach in reaches:
            if reach.operation or not reach.key.startswith("call:"):
                continue
            for inner in self._inside_function(reach.key[5:]):
                mark = (inner.key, inner.line, inner.how)
                if mark not in seen:
                    seen.add(mark)
                    found.append(replace(inner, via=(*reach.via, reach.line)))
        return found

    def _inside_function(self, name: str) -> list[Reach]:
        """The role operations the module's functions or methods called ``name`` (with any
        leading underscores) make in their own bodies."""
        cached = self._inside.get(name)
        if cached is not None:
            return cached
        found: list[Reach] = []
        for entry in self._mentioned_at("def", name, 1, len(self.lines)):
            if not isinstance(entry.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if _key(entry.node.name) != name:
                continue
            scope = _scope_of(entry.cls, entry.node)
            for call in _calls_within(entry.node.body):
                for reach in _call_reaches(call, "inside", scope):
                    reach = self._marked(reach)
                    if reach.operation:
                        found.append(reach)
        self._inside[name] = found
        return found

    def _reaches(
        self, node: ast.AST, stmt: ast.stmt, parents: dict[int, ast.AST], depth: int, scope: str
    ) -> Iterator[Reach]:
        child, parent = node, parents.get(id(node))
        in_test = False
        while parent is not None and parent is not stmt:
            if isinstance(parent, ast.keyword) and parent.arg:
                yield Reach(f"kw:{parent.arg.lstrip('_')}", parent.value.lineno, "feeds", scope)
            if isinstance(parent, ast.IfExp) and parent.test is child:
                yield from _calls([parent.body, parent.orelse], scope)
            child, parent = parent, parents.get(id(parent))
        if isinstance(stmt, (ast.If, ast.While)) and child is stmt.test:
            in_test = True
        if in_test:
            yield from _effects(stmt.body, scope)  # type: ignore[attr-defined]
            yield from _effects(stmt.orelse, scope)  # type: ignore[attr-defined]
            yield from _chosen_locals(stmt, scope)  # type: ignore[arg-type]
        elif isinstance(stmt, ast.Assert):
            yield Reach("call:assert", stmt.lineno, "guards", scope)
        if depth <= 0:
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                name = _key(terminal_name(target))
                if name:
                    yield Reach(f"set:{name}", stmt.lineno, "stores", scope)
                    yield from self._reads(target, stmt, depth - 1)
        elif isinstance(stmt, ast.Return):
            self._index()
            entry = self._by_node.get(id(stmt))
            if entry is not None and entry.function is not None:
                yield from self._callers(entry.function, depth - 1)

    def _mentioned_at(self, kind: str, name: str, first: int, last: int) -> list[_Statement]:
        """The statements whose own header holds a line in ``[first, last]`` on which a
        mention of ``kind`` of ``name`` starts (:meth:`.Mentions.lines_of`: the
        questions every site asks, answered from an index once a file asks many), parsing
        the pieces of a partially parsed module that hold such lines. The same question is
        answered once."""
        asked = (kind, name, first, last)
        if asked not in self._asked:
            lines = self._mentions.lines_of(kind, name, first, last)
            self._asked[asked] = self._statements_on(lines)
        return self._asked[asked]

    def _statements_on(self, lines: set[int]) -> list[_Statement]:
        if not lines:
            return []
        if self.grow is not None:
            added = self.grow(lines)
            if added and self._statements is not None:
                self._add(added)
        self._index()
        found = {entry for line in lines for entry in self._lines.get(line, ())}
        return sorted(found, key=self._order.__getitem__)

    def _reads(self, target: ast.expr, stmt: ast.stmt, depth: int) -> Iterator[Reach]:
        """What every read of ``target`` (``self.x`` in its class, ``x`` in its function)
        reaches."""
        self._index()
        entry = self._by_node.get(id(stmt))
        if entry is None:
            return
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            scope: ast.AST | None = entry.cls
            attr, owner = target.attr, target.value.id
            kind, mentioned = "attr", attr

            def matches(n: ast.AST) -> bool:
                return (
                    isinstance(n, ast.Attribute)
                    and n.attr == attr
                    and isinstance(n.value, ast.Name)
                    and n.value.id == owner
                    and isinstance(n.ctx, ast.Load)
                )
        elif isinstance(target, ast.Name):
            scope = entry.function
            name = target.id
            kind, mentioned, owner = "name", name, ""

            def matches(n: ast.AST) -> bool:
                return isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        else:
            return
        first = scope.lineno if scope is not None else 1  # type: ignore[attr-defined]
        last = (scope.end_lineno if scope is not None else None) or len(self.lines)  # type: ignore[attr-defined]
        asked = (kind, mentioned, owner, first, last, depth)
        yield from self._found(asked, matches)

    def _found(self, asked: Asked, matches: Callable[[ast.AST], bool]) -> list[Reach]:
        """What the hits (``matches``) in the statements mentioning ``asked``'s name reach:
        ``asked`` is ``(kind, name, owner, first line, last line, depth)``. The same question
        is answered once (8,000 sites reaching a method called ``forward`` each asked who
        calls ``forward``, and walked the same 8,000 statements for it)."""
        found = self._answers.get(asked)
        if found is None:
            kind, name, _, first, last, depth = asked
            statements = self._mentioned_at(kind, name, first, last)
            found = self._answers[asked] = list(self._hits(statements, matches, depth))
        return found

    def _hits(
        self, statements: list[_Statement], matches: Callable[[ast.AST], bool], depth: int
    ) -> Iterator[Reach]:
        for found in statements:
            if found.parents is None:
                pairs = list(_header(found.node))
                found.parents = {id(node): parent for node, parent in pairs}
                found.header = [node for node, _ in pairs]
            for hit in [n for n in found.header if matches(n)]:
                # many sites ask about the same reads (``self.x`` assigned in one place, read
                # in many): what a node controls, to a depth, is worked out once
                reaches = self._hit_reaches.get((id(hit), depth))
                if reaches is None:
                    reaches = list(
                        self._reaches(hit, found.node, found.parents, depth, found.scope)
                    )
                    self._hit_reaches[(id(hit), depth)] = reaches
                yield from _prefixed(reaches, found.node.lineno)

    def _callers(self, func: Function, depth: int) -> Iterator[Reach]:
        name = func.name

        def matches(n: ast.AST) -> bool:
            return isinstance(n, ast.Call) and terminal_name(n.func) == name and not n.args

        yield from self._found(("call", name, "", 1, len(self.lines), depth), matches)

    def comment(self, stmt: ast.stmt, func: Function | None) -> str:
        """The comment of the paragraph ``stmt`` is in (the comment lines above it, across up
        to three lines of code but no blank line), those on its lines, and ``func``'s
        docstring."""
        parts: list[str] = []
        line = stmt.lineno - 2
        above: list[str] = []
        code_lines = 0
        while line >= 0 and len(above) < 12:
            text = self.lines[line].strip()
            if not text:
                break
            if text.startswith(b"#"):
                above.append(text[1:].strip().decode("utf-8", "replace"))
            else:
                code_lines += 1
                if code_lines > 3 or above:
                    break
            line -= 1
        parts.extend(reversed(above))
        for number in range(stmt.lineno - 1, min(stmt.end_lineno or stmt.lineno, len(self.lines))):
            match = COMMENT.search(self.lines[number])
            if match and b"driftcheck:" not in match.group(1):
                parts.append(match.group(1).strip().decode("utf-8", "replace"))
        if func is not None:
            docstring = ast.get_docstring(func)
            if docstring:
                parts.append(docstring.strip().splitlines()[0])
        return " ".join(p for p in parts if p)[:400]
