"""A small, explicit interpreter for backend predicates, evaluated per enum member.

It never executes linted code. It understands: ``and``/``or``/``not``; the enum's zero-argument
methods (their bodies are interpreted too); ``==``/``!=``/``is``/``in``/``not in`` against enum
members, their string values and named constants; collections of those (literals, and
``frozenset(...)``/``set(...)``/``tuple(...)``/``list(...)`` of a collection); the backend getter
and aliases of it; and calls to other zero-argument module functions. A body is read statement
by statement: assignments to locals, ``if``/``elif``/``else`` chains and early returns,
``match`` over values, and imports (skipped). A predicate may return a member of another enum
(a *value enum*, ``FusedMoEActivationFormat.BatchedExperts``): such values compare by name, and
their own zero-argument properties are interpreted too.
Conditions inside enum methods that fall outside the grammar (``envs.X.get()``) are
*narrowings*: they become named free variables, evaluated under each setting. Anything else
raises :class:`Unproven` naming the construct.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .sites.names import source_text

Truth = bool | None  # None: depends on an unassigned narrowing
COLLECTION_CALLS = ("frozenset", "set", "tuple", "list")


class Unproven(Exception):
    """The expression uses a construct outside the interpreter's grammar."""

    def __init__(self, construct: str, line: int | None = None) -> None:
        super().__init__(construct)
        self.construct = construct
        self.line = line


@dataclass(frozen=True)
class Backend:
    """The object a predicate asks about, for one member of the universe: an enum member
    (``self`` in ``MoeA2ABackend.is_deepep``), or an instance of a class holding the setting
    (``self`` in ``FusedMoEParallelConfig.use_deepep_ll_kernels``). ``owner`` names the class
    whose methods and properties apply ("" for the enum, or whichever class defines a name)."""

    value: str
    owner: str = ""


@dataclass(frozen=True)
class EnumValue:
    """A member of a value enum (not the universe): what ``return Format.Batched`` denotes."""

    enum: str
    member: str


@dataclass(frozen=True)
class ValueEnum:
    """An enum whose members predicates return (``-> FusedMoEActivationFormat``): its member
    names and its zero-argument methods and properties (``is_batched``)."""

    name: str
    members: frozenset[str]
    methods: Mapping[str, ast.FunctionDef] = field(default_factory=dict)
    properties: frozenset[str] = frozenset()


class _Pending(Exception):
    """A statement's condition depends on a narrowing not set yet: the whole evaluation is
    undecided (None), and the caller sets that narrowing and evaluates again."""


_FALLTHROUGH = object()  # a block that ended without returning
_SKIPPED = (ast.Import, ast.ImportFrom, ast.Pass)


@dataclass(frozen=True)
class HolderClass:
    """What the interpreter knows of one class that holds the setting.

    ``methods`` are its zero-argument methods and properties (inherited ones included), by
    name; ``properties`` those read without a call; ``settings`` the attributes whose value
    is the member itself (``all2all_backend``, ``_enum``); ``holders`` the attributes holding
    another holder (``moe_parallel_config: FusedMoEParallelConfig``)."""

    name: str
    methods: Mapping[str, ast.FunctionDef] = field(default_factory=dict)
    properties: frozenset[str] = frozenset()
    settings: frozenset[str] = frozenset()
    holders: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Scope:
    """What the interpreter knows about names while evaluating one expression."""

    enum_name: str
    attr_to_value: Mapping[str, str]
    methods: Mapping[str, ast.FunctionDef]
    functions: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef]
    getters: frozenset[str]
    constants: Mapping[str, frozenset[str]] = field(default_factory=dict)
    value_attributes: tuple[str, ...] = ()
    aliases: frozenset[str] = frozenset()
    # source texts of operands outside the grammar that the caller enumerates as free
    # boolean inputs, exactly like narrowings (the truth-table engine's unrelated operands)
    free: frozenset[str] = frozenset()
    # classes other than the enum whose instances answer predicates about the member
    classes: Mapping[str, HolderClass] = field(default_factory=dict)
    # enums whose members predicates return, by class name
    value_enums: Mapping[str, ValueEnum] = field(default_factory=dict)
    # methods' values already read: (name, owner, member, functions) -> [(the narrowings
    # met, as assigned then, value)] (:meth:`Interpreter._call_method`); a scope made with
    # ``replace`` (other free inputs, aliases) starts its own
    memo: dict[
        tuple[str, str, str, int], list[tuple[tuple[tuple[str, bool | None], ...], object]]
    ] = field(default_factory=dict, init=False, compare=False, repr=False)

    def defining(self, owner: str, name: str) -> HolderClass | None:
        """The holder class whose method or property ``name`` applies to a ``Backend`` of
        ``owner``: ``owner`` itself (its methods include inherited ones); for a ``Backend``
        of no known class, the first class that defines it."""
        if owner:
            info = self.classes.get(owner)
            return info if info is not None and name in info.methods else None
        return next((c for c in self.classes.values() if name in c.methods), None)


# the source text of each node asked about, for as long as the node lives
_TEXTS: weakref.WeakKeyDictionary[ast.AST, str] = weakref.WeakKeyDictionary()


def _text(node: ast.AST) -> str:
    try:
        return source_text(node)
    except Exception:  # pragma: no cover - ast.unparse handles every parsed node
        return type(node).__name__


def _and(values: list[Truth]) -> Truth:
    if any(v is False for v in values):
        return False
    if all(v is True for v in values):
        return True
    return None


def _or(values: list[Truth]) -> Truth:
    if any(v is True for v in values):
        return True
    if all(v is False for v in values):
        return False
    return None


class Interpreter:
    """Evaluates predicate expressions for one backend member under one narrowing setting."""

    def __init__(self, scope: Scope, member: str, narrowings: Mapping[str, bool] | None = None):
        self.scope = scope
        self.member = member
        self.narrowings = dict(narrowings or {})
        # in the order first met (a dict: a chain of 10,000 free inputs meets them all)
        self.seen_narrowings: dict[str, None] = {}
        self._stack: list[str] = []

    # -- entry points -------------------------------------------------------------------
    def truth(self, expr: ast.expr, local: Mapping[str, object] | None = None) -> Truth:
        """Evaluate ``expr`` to True/False, or None when an unset narrowing decides it."""
        try:
            value = self._eval(expr, dict(local or {}), in_enum=False)
        except _Pending:
            return None
        return self._as_truth(value, expr)

    def value(self, expr: ast.expr) -> object:
        """Evaluate ``expr`` to whatever it denotes (a member, a collection, a truth value)."""
        try:
            return self._eval(expr, {}, in_enum=False)
        except _Pending:
            return None

    def call_function(self, name: str) -> Truth:
        """Evaluate a zero-argument module function ``name`` by interpreting its body."""
        func = self.scope.functions.get(name)
        if func is None:
            raise Unproven(f"call to {name}() whose definition is not in the linted tree")
        try:
            return self._as_truth(self._run_body(func, {}, in_enum=False), func)
        except _Pending:
            return None

    def method(self, name: str, owner: str = "") -> Truth:
        """Evaluate method or property ``name`` (of the enum, or of holder class ``owner``) for
        this interpreter's member."""
        try:
            return self._as_truth(self._call_method(name, None, owner), None)
        except _Pending:
            return None

    def method_equals(self, name: str, owner: str, expected: EnumValue) -> Truth:
        """Whether method or property ``name`` of ``owner`` returns ``expected`` (a value
        enum's member) for this interpreter's member."""
        try:
            value = self._call_method(name, None, owner)
        except _Pending:
            return None
        if value is None:
            return None
        if not isinstance(value, EnumValue):
            raise Unproven(f"{name} returns {value!r}, not a member of {expected.enum}")
        return value == expected

    # -- internals ----------------------------------------------------------------------
    def _as_truth(self, value: object, node: ast.AST | None) -> Truth:
        if value is None or isinstance(value, bool):
            return value
        where = getattr(node, "lineno", None)
        raise Unproven(f"non-boolean value {value!r}", where)

    def _narrowing(self, node: ast.AST) -> Truth:
        key = self._text_of(node)
        self.seen_narrowings.setdefault(key)
        return self.narrowings.get(key)

    def _text_of(self, node: ast.AST) -> str:
        """:func:`_text`, once per node: each member's interpreter asks of the same nodes."""
        text = _TEXTS.get(node)
        if text is None:
            text = _TEXTS[node] = _text(node)
        return text

    def _run_body(
        self,
        func: ast.FunctionDef | ast.AsyncFunctionDef,
        local: dict[str, object],
        *,
        in_enum: bool,
    ) -> object:
        if func.name in self._stack:
            raise Unproven(f"recursive predicate {func.name}()", func.lineno)
        self._stack.append(func.name)
        try:
            body = list(func.body)
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            result = self._block(body, local, func.name, in_enum=in_enum)
            if result is _FALLTHROUGH:
                raise Unproven(f"{func.name}() has no return", func.lineno)
            return result
        finally:
            self._stack.pop()

    def _block(
        self, body: list[ast.stmt], local: dict[str, object], name: str, *, in_enum: bool
    ) -> object:
        """Run statements until one returns (its value), or the block ends (``_FALLTHROUGH``)."""
        for stmt in body:
            result = self._statement(stmt, local, name, in_enum=in_enum)
            if result is not _FALLTHROUGH:
                return result
        return _FALLTHROUGH

    def _statement(
        self, stmt: ast.stmt, local: dict[str, object], name: str, *, in_enum: bool
    ) -> object:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                local[target.id] = self._eval(stmt.value, local, in_enum=in_enum)
                return _FALLTHROUGH
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            local[stmt.target.id] = self._eval(stmt.value, local, in_enum=in_enum)
            return _FALLTHROUGH
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            return self._eval(stmt.value, local, in_enum=in_enum)
        elif isinstance(stmt, _SKIPPED) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            return _FALLTHROUGH
        elif isinstance(stmt, ast.If):
            test = self._as_truth(self._eval(stmt.test, local, in_enum=in_enum), stmt)
            if test is None and self._unset_narrowing():
                raise _Pending
            if test is not None:
                body = stmt.body if test else stmt.orelse
                return self._block(body, local, name, in_enum=in_enum)
        elif isinstance(stmt, ast.Match):
            return self._match(stmt, local, name, in_enum=in_enum)
        raise Unproven(f"statement '{_text(stmt).splitlines()[0]}' in {name}()", stmt.lineno)

    def _unset_narrowing(self) -> bool:
        """Whether a narrowing met so far has no value yet (an undecided condition then waits
        for it; otherwise the condition is outside the grammar)."""
        return any(n not in self.narrowings for n in self.seen_narrowings)

    def _match(
        self, stmt: ast.Match, local: dict[str, object], name: str, *, in_enum: bool
    ) -> object:
        """``match subject:`` over values: the first case whose pattern (and guard) holds."""
        subject = self._eval(stmt.subject, local, in_enum=in_enum)
        if subject is None:
            if self._unset_narrowing():
                raise _Pending
            raise Unproven(f"match on '{_text(stmt.subject)}' in {name}()", stmt.lineno)
        for case in stmt.cases:
            if not self._pattern(case.pattern, subject, local, in_enum=in_enum):
                continue
            if case.guard is not None:
                guard = self._as_truth(self._eval(case.guard, local, in_enum=in_enum), case.guard)
                if guard is None:
                    if self._unset_narrowing():
                        raise _Pending
                    raise Unproven(f"guard '{_text(case.guard)}' in {name}()", case.guard.lineno)
                if not guard:
                    continue
            return self._block(case.body, local, name, in_enum=in_enum)
        return _FALLTHROUGH

    def _pattern(
        self, pattern: ast.pattern, subject: object, local: dict[str, object], *, in_enum: bool
    ) -> bool:
        if isinstance(pattern, ast.MatchAs) and pattern.pattern is None:
            if pattern.name:
                local[pattern.name] = subject
            return True
        if isinstance(pattern, ast.MatchOr):
            return any(self._pattern(p, subject, local, in_enum=in_enum) for p in pattern.patterns)
        if isinstance(pattern, ast.MatchValue):
            value = self._eval(pattern.value, local, in_enum=in_enum)
            plain = subject.value if isinstance(subject, Backend) else subject
            other = value.value if isinstance(value, Backend) else value
            return plain == other
        if isinstance(pattern, ast.MatchSingleton):
            return subject is pattern.value
        raise Unproven(f"match pattern '{_text(pattern)}'", pattern.lineno)

    def _call_method(self, name: str, node: ast.AST | None, owner: str = "") -> object:
        """A method's value for the member, read once per assignment of the narrowings it
        meets (every setting and predicate of a universe asks the same properties again)."""
        key = (name, owner, self.member, id(self.scope.functions))
        for met, value in self.scope.memo.get(key, ()):
            if all(self.narrowings.get(text) == truth for text, truth in met):
                self.seen_narrowings.update(dict.fromkeys(text for text, _ in met))
                if value is _Pending:
                    raise _Pending
                return value
        outer, self.seen_narrowings = self.seen_narrowings, {}
        try:
            value = self._method_value(name, node, owner)
        except _Pending:
            value = _Pending
        finally:
            met_texts, self.seen_narrowings = self.seen_narrowings, outer
            outer.update(met_texts)
        assignment = tuple((text, self.narrowings.get(text)) for text in met_texts)
        self.scope.memo.setdefault(key, []).append((assignment, value))
        if value is _Pending:
            raise _Pending
        return value

    def _method_value(self, name: str, node: ast.AST | None, owner: str) -> object:
        holder = (
            self.scope.defining(owner, name) if owner or name not in self.scope.methods else None
        )
        if holder is not None:
            func = holder.methods[name]
            return self._run_body(func, {"self": Backend(self.member, holder.name)}, in_enum=True)
        method = self.scope.methods.get(name)
        if method is None:
            line = getattr(node, "lineno", None)
            where = owner or self.scope.enum_name
            raise Unproven(f"method {name}() is not defined on {where}", line)
        return self._run_body(method, {"self": Backend(self.member)}, in_enum=True)

    def _holder_attribute(self, owner: Backend, node: ast.Attribute) -> tuple[bool, object]:
        """``(True, value)`` when ``owner.attr`` is a holder's property, setting or holder."""
        holder = self.scope.defining(owner.owner, node.attr)
        if holder is not None and node.attr in holder.properties:
            saved = self.member
            self.member = owner.value
            try:
                return True, self._call_method(node.attr, node, holder.name)
            finally:
                self.member = saved
        info = self.scope.classes.get(owner.owner)
        if info is not None:
            if node.attr in info.settings:
                return True, owner.value if self.scope.enum_name == "" else Backend(owner.value)
            if node.attr in info.holders:
                return True, Backend(owner.value, info.holders[node.attr])
        return False, None

    def _is_backend_expr(self, node: ast.expr, local: Mapping[str, object]) -> bool:
        try:
            return isinstance(self._eval(node, dict(local), in_enum=False), Backend)
        except Unproven:
            return False

    def _eval(self, node: ast.expr, local: dict[str, object], *, in_enum: bool) -> object:  # noqa: C901 - one branch per expression kind the interpreter evaluates
        if self.scope.free and self._text_of(node) in self.scope.free:
            return self._narrowing(node)
        if isinstance(node, ast.BoolOp):
            values = [self._eval(v, local, in_enum=in_enum) for v in node.values]
            truths = [self._as_truth(v, node) for v in values]
            return _and(truths) if isinstance(node.op, ast.And) else _or(truths)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self._as_truth(self._eval(node.operand, local, in_enum=in_enum), node)
            return None if inner is None else not inner
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, str)) or node.value is None:
                return node.value
            raise Unproven(f"constant {node.value!r}", node.lineno)
        if isinstance(node, ast.Name):
            if node.id in local:
                return local[node.id]
            if node.id in self.scope.aliases:
                return Backend(self.member)
            if node.id in self.scope.constants:
                return self.scope.constants[node.id]
            if node.id.split(".")[-1] in self.scope.value_attributes:
                return self.member
            if in_enum:
                return self._narrowing(node)
            raise Unproven(f"name '{node.id}'", node.lineno)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return frozenset(self._member_value(e, local, in_enum) for e in node.elts)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, local, in_enum)
        if isinstance(node, ast.Call):
            return self._call(node, local, in_enum)
        if isinstance(node, ast.Compare):
            if not in_enum:
                return self._compare(node, local, in_enum)
            recorded = dict(self.seen_narrowings)
            try:
                return self._compare(node, local, in_enum)
            except Unproven:
                # inside a predicate, a comparison of something other than the member
                # (``self.dp_size > 1``) is a condition of the run: a narrowing
                self.seen_narrowings = recorded
                return self._narrowing(node)
        if isinstance(node, ast.IfExp):
            test = self._as_truth(self._eval(node.test, local, in_enum=in_enum), node)
            if test is None:
                raise Unproven(f"conditional on a narrowing: {_text(node)}", node.lineno)
            return self._eval(node.body if test else node.orelse, local, in_enum=in_enum)
        if in_enum:
            return self._narrowing(node)
        raise Unproven(f"{type(node).__name__} '{_text(node)}'", getattr(node, "lineno", None))

    def _value_enum_attribute(
        self, node: ast.Attribute, local: dict[str, object], in_enum: bool
    ) -> tuple[bool, object]:
        """``(True, value)`` for ``Format.Batched`` (a value enum's member, also through a
        module: ``mk.Format.Batched``) or ``<value>.is_batched`` (its property)."""
        base = node.value
        enum_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
        info = self.scope.value_enums.get(enum_name or "")
        if info is not None and node.attr in info.members:
            return True, EnumValue(info.name, node.attr)
        if not any(node.attr in v.methods for v in self.scope.value_enums.values()):
            return False, None  # not a value enum's property: the base is not evaluated twice
        if isinstance(base, ast.Name) and base.id in local:
            owner: object = local[base.id]
        elif isinstance(base, (ast.Attribute, ast.Call)):
            recorded = dict(self.seen_narrowings)
            try:
                owner = self._eval(base, local, in_enum=in_enum)
            except Unproven:
                self.seen_narrowings = recorded
                return False, None
            if not isinstance(owner, EnumValue):
                self.seen_narrowings = recorded
        else:
            return False, None
        if isinstance(owner, EnumValue):
            return True, self._value_enum_method(owner, node.attr, node, call=False)
        return False, None

    def _value_enum_method(
        self, owner: EnumValue, name: str, node: ast.AST, *, call: bool
    ) -> object:
        info = self.scope.value_enums[owner.enum]
        func = info.methods.get(name)
        if func is None or (not call and name not in info.properties):
            raise Unproven(
                f"{owner.enum}.{name} is not a zero-argument property of the enum",
                getattr(node, "lineno", None),
            )
        return self._run_body(func, {"self": owner}, in_enum=True)

    def _member_value(self, node: ast.expr, local: dict[str, object], in_enum: bool) -> str:
        value = self._eval(node, local, in_enum=in_enum)
        if isinstance(value, Backend):
            return value.value
        if isinstance(value, str):
            return value
        raise Unproven(f"collection element '{_text(node)}'", node.lineno)

    def _attribute(self, node: ast.Attribute, local: dict[str, object], in_enum: bool) -> object:
        base = node.value
        if isinstance(base, ast.Name) and base.id == self.scope.enum_name:
            value = self.scope.attr_to_value.get(node.attr)
            if value is None:
                raise Unproven(f"{self.scope.enum_name}.{node.attr} is not a member", node.lineno)
            return Backend(value)
        if self.scope.value_enums:
            found, held = self._value_enum_attribute(node, local, in_enum)
            if found:
                return held
        if node.attr == "value" or self.scope.classes:
            recorded = dict(self.seen_narrowings)
            try:
                owner = self._eval(base, local, in_enum=in_enum)
            except Unproven:
                owner = None
            if isinstance(owner, Backend):
                if node.attr == "value":
                    return owner.value
                found, held = self._holder_attribute(owner, node)
                if found:
                    return held
            self.seen_narrowings = recorded
        if node.attr in self.scope.value_attributes:
            return self.member
        text = _text(node)
        if text in self.scope.aliases:
            return Backend(self.member)
        if in_enum:
            return self._narrowing(node)
        raise Unproven(f"attribute '{text}'", node.lineno)

    def _call(self, node: ast.Call, local: dict[str, object], in_enum: bool) -> object:
        func = node.func
        collection = self._collection_call(node, local, in_enum)
        if collection is not None:
            return collection
        if node.args or node.keywords:
            if in_enum:
                return self._narrowing(node)
            raise Unproven(f"call with arguments '{_text(node)}'", node.lineno)
        if isinstance(func, ast.Name):
            if func.id in self.scope.getters:
                return Backend(self.member)
            if func.id in COLLECTION_CALLS and not node.args:
                return frozenset()
            if func.id in self.scope.functions:
                return self._run_body(self.scope.functions[func.id], {}, in_enum=False)
            if in_enum:
                return self._narrowing(node)
            raise Unproven(
                f"call to {func.id}() whose definition is not in the linted tree", node.lineno
            )
        if isinstance(func, ast.Attribute):
            if func.attr in self.scope.getters:
                return Backend(self.member)
            recorded = dict(self.seen_narrowings)
            try:
                owner = self._eval(func.value, local, in_enum=in_enum)
            except Unproven:
                owner = None
            self.seen_narrowings = recorded
            if isinstance(owner, EnumValue):
                return self._value_enum_method(owner, func.attr, node, call=True)
            if isinstance(owner, Backend):
                saved = self.member
                self.member = owner.value
                try:
                    return self._call_method(func.attr, node, owner.owner)
                finally:
                    self.member = saved
        if in_enum:
            return self._narrowing(node)
        raise Unproven(f"call '{_text(node)}'", node.lineno)

    def _collection_call(
        self, node: ast.Call, local: dict[str, object], in_enum: bool
    ) -> frozenset[str] | None:
        """The members of ``frozenset({...})`` (``set``, ``tuple``, ``list``) when its one
        argument is a collection, else None (and no narrowing recorded)."""
        func = node.func
        if not (
            isinstance(func, ast.Name)
            and func.id in COLLECTION_CALLS
            and len(node.args) == 1
            and not node.keywords
        ):
            return None
        recorded = dict(self.seen_narrowings)
        try:
            value = self._eval(node.args[0], local, in_enum=in_enum)
        except Unproven:
            value = None
        if isinstance(value, frozenset):
            return value
        self.seen_narrowings = recorded
        return None

    def _compare(self, node: ast.Compare, local: dict[str, object], in_enum: bool) -> object:
        left = self._eval(node.left, local, in_enum=in_enum)
        results: list[Truth] = []
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self._eval(comparator, local, in_enum=in_enum)
            results.append(self._compare_one(op, left, right, node))
            left = right
        return _and(results)

    def _compare_one(self, op: ast.cmpop, left: object, right: object, node: ast.Compare) -> Truth:
        if left is None or right is None:
            return None
        lv = left.value if isinstance(left, Backend) else left
        if isinstance(op, (ast.Eq, ast.Is, ast.NotEq, ast.IsNot)):
            rv = right.value if isinstance(right, Backend) else right
            if isinstance(op, (ast.Is, ast.IsNot)) and type(left) is not type(right):
                equal = False
            else:
                equal = lv == rv
            return equal if isinstance(op, (ast.Eq, ast.Is)) else not equal
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, frozenset):
            inside = lv in right
            return inside if isinstance(op, ast.In) else not inside
        raise Unproven(f"comparison '{_text(node)}'", node.lineno)


def member_truths(
    scope: Scope,
    members: tuple[str, ...],
    evaluate: Callable[[Interpreter], bool | None],
) -> dict[str, dict[tuple[tuple[str, bool], ...], bool]]:
    """Evaluate ``evaluate(interp)`` for every member under every narrowing setting it meets.

    Returns ``{member: {setting: value}}`` where ``setting`` is a tuple of
    ``(narrowing text, bool)`` pairs; a member untouched by narrowings has the single key ``()``.
    """
    table: dict[str, dict[tuple[tuple[str, bool], ...], bool]] = {}
    for member in members:
        results: dict[tuple[tuple[str, bool], ...], bool] = {}
        pending: list[dict[str, bool]] = [{}]
        while pending:
            setting = pending.pop()
            interp = Interpreter(scope, member, setting)
            value = evaluate(interp)
            if value is None:
                free = [n for n in interp.seen_narrowings if n not in setting]
                if not free:  # pragma: no cover - None implies an unset narrowing
                    raise Unproven("undecidable predicate")
                pending.append({**setting, free[0]: False})
                pending.append({**setting, free[0]: True})
                continue
            results[tuple(sorted(setting.items()))] = value
        table[member] = results
    return table
