"""Which expressions hold a universe's value: the enum itself, or an object holding the setting.

An *enum receiver* evaluates to the enum member (``get_moe_a2a_backend()``, ``_a2a_backend``
after ``_a2a_backend = get_moe_a2a_backend()``, ``self._a2a`` assigned in the class, a
parameter annotated with the enum or named like ``a2a_backend``, ``MoeA2ABackend(value)``).
A *holder receiver* evaluates to an instance of a class holding the setting (``self`` in a
class deriving from ``Platform``, ``current_platform``, ``config.moe_parallel_config``, a
parameter annotated ``FusedMoEConfig``). A *value expression* is one whose value is the
member's string (``server_args.moe_a2a_backend``, ``self.all2all_backend``) or the member
itself, fit for ``==``/``in`` tests.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..model import Universe
from .names import call_name


def local_getters(body: list[ast.stmt], universe: Universe) -> frozenset[str]:
    """Top-level functions of a module that take no argument and are annotated to return the
    universe's enum: getters like those of the universe's own modules."""
    if not universe.enum_name:
        return frozenset()
    return frozenset(
        stmt.name
        for stmt in body
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not (stmt.args.args or stmt.args.posonlyargs or stmt.args.kwonlyargs)
        and universe.enum_name in _annotation_names(stmt.returns)
    )


def _annotation_names(annotation: ast.expr | None) -> set[str]:
    """Class names an annotation mentions (``"Platform"``, ``Optional[FusedMoEConfig]``)."""
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return {
            part.strip().split(".")[-1] for part in annotation.value.replace("|", ",").split(",")
        }
    return {
        node.id if isinstance(node, ast.Name) else node.attr
        for node in ast.walk(annotation)
        if isinstance(node, (ast.Name, ast.Attribute))
    }


@dataclass
class ReceiverScope:
    """Names visible in one function (locals), its class (``self.x``) and module, for one
    universe. ``holder_self`` is true inside a class that derives from a holder class."""

    universe: Universe
    local_names: set[str] = field(default_factory=set)
    self_attrs: set[str] = field(default_factory=set)
    module_names: set[str] = field(default_factory=set)
    holder_locals: set[str] = field(default_factory=set)
    holder_self: bool = False
    # getters the module itself defines (``def get_kind() -> DeviceKind``)
    local_getters: frozenset[str] = frozenset()

    def child(self) -> ReceiverScope:
        """A scope for a nested function: inherits the class's and module's names."""
        return ReceiverScope(
            self.universe,
            set(),
            set(self.self_attrs),
            set(self.module_names),
            set(),
            self.holder_self,
            self.local_getters,
        )

    def is_getter_call(self, node: ast.expr) -> bool:
        """``get_moe_a2a_backend()`` or ``utils.get_moe_a2a_backend()``, or a getter the
        module defines."""
        name = call_name(node)
        return name in self.universe.getters or name in self.local_getters

    def is_enum_construction(self, node: ast.expr) -> bool:
        """``MoeA2ABackend(server_args.moe_a2a_backend)``: the enum built from its value."""
        enum = self.universe.enum_name
        if not enum or not isinstance(node, ast.Call) or len(node.args) != 1:
            return False
        func = node.func
        return (isinstance(func, ast.Name) and func.id == enum) or (
            isinstance(func, ast.Attribute) and func.attr == enum
        )

    def is_receiver(self, node: ast.expr) -> bool:
        """Whether ``node`` evaluates to the enum member."""
        if self.is_getter_call(node) or self.is_enum_construction(node):
            return True
        values = self.universe.value_attributes
        if isinstance(node, ast.Name):
            return node.id in self.local_names or node.id in self.module_names or node.id in values
        if isinstance(node, ast.Attribute):
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr in self.self_attrs
            ):
                return True
            return node.attr in values
        return False

    def is_holder(self, node: ast.expr) -> bool:
        """Whether ``node`` evaluates to an instance of a class holding the setting."""
        if isinstance(node, ast.Name):
            if node.id == "self":
                return self.holder_self
            return node.id in self.holder_locals or node.id in self.universe.holder_names
        if isinstance(node, ast.Attribute):
            return node.attr in self.universe.holder_names
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            return False
        return False

    def is_value_expr(self, node: ast.expr) -> bool:
        """Whether ``node`` is the member as a string or enum, fit for ``==``/``in`` tests."""
        if self.is_receiver(node):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "value":
            return self.is_receiver(node.value)
        return False


# statements that hold no block (most of them: nothing to look for in them)
SIMPLE_STATEMENTS = (
    ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Expr, ast.Pass, ast.Raise,
    ast.Import, ast.ImportFrom, ast.Assert, ast.Delete, ast.Global, ast.Nonlocal, ast.Break,
    ast.Continue,
)  # fmt: skip


def child_statements(stmt: ast.stmt) -> list[ast.stmt]:
    """The statements of ``stmt``'s own blocks (body, else, finally, handlers, cases)."""
    if isinstance(stmt, SIMPLE_STATEMENTS):
        return []
    children: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        children.extend(c for c in getattr(stmt, name, []) if isinstance(c, ast.stmt))
    for handler in getattr(stmt, "handlers", []):
        children.extend(handler.body)
    for case in getattr(stmt, "cases", []):
        children.extend(case.body)
    return children


def statements(body: list[ast.stmt], nested: bool = False) -> Iterator[ast.stmt]:
    """Every statement of ``body`` and of the blocks in it (``if``/``for``/``try``/...), in
    order; functions and classes defined in it too when ``nested``. Assignments are always
    statements, so walking statements alone finds them without visiting every expression."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not nested:
            continue
        stack.extend(reversed(child_statements(stmt)))


Assignment = ast.Assign | ast.AnnAssign


def assignments_in(body: list[ast.stmt]) -> list[Assignment]:
    """The assignments of ``body`` and of the blocks in it, not of functions or classes
    defined in it (what the collectors below read: walked once, read per universe)."""
    return [node for node in statements(body) if isinstance(node, (ast.Assign, ast.AnnAssign))]


def collect_aliases(assignments: list[Assignment], scope: ReceiverScope) -> set[str]:
    """Local names bound to the getter (or to another alias) by ``assignments``."""
    bindings = [
        (node.value, node.targets if isinstance(node, ast.Assign) else [node.target])
        for node in assignments
        if node.value is not None
    ]
    names: set[str] = set()
    changed = bool(bindings)
    while changed:
        changed = False
        probe = ReceiverScope(
            scope.universe, scope.local_names | names, scope.self_attrs, scope.module_names
        )
        for value, targets in bindings:
            if probe.is_receiver(value):
                for target in targets:
                    if isinstance(target, ast.Name) and target.id not in names:
                        names.add(target.id)
                        changed = True
    return names


def collect_holder_aliases(assignments: list[Assignment], scope: ReceiverScope) -> set[str]:
    """Local names bound to a holder (``pc = self.moe_parallel_config``) by ``assignments``."""
    names: set[str] = set()
    for node in assignments:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and scope.is_holder(node.value):
                names.add(target.id)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and _annotation_names(node.annotation) & scope.universe.holders
        ):
            names.add(node.target.id)
    return names


def collect_self_attrs(cls: ast.ClassDef, scope: ReceiverScope) -> set[str]:
    """``self.x`` attributes assigned the backend in any method of ``cls``."""
    attrs: set[str] = set()
    for node in statements(cls.body, nested=True):
        if isinstance(node, ast.Assign) and scope.is_receiver(node.value):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    attrs.add(target.attr)
    return attrs


def derives_from_holder(cls: ast.ClassDef, universe: Universe) -> bool:
    """Whether ``cls`` is, or names as a base, a class holding the setting."""
    if cls.name in universe.holders:
        return True
    return bool(
        {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases}
        & universe.holders
    )


def annotated_params(func: ast.FunctionDef | ast.AsyncFunctionDef, universe: Universe) -> set[str]:
    """Parameters annotated with the enum class (``backend: MoeA2ABackend``) or defaulting to
    the getter (``b=get_moe_a2a_backend()``)."""
    names = set()
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [*([None] * (len(positional) - len(args.defaults))), *args.defaults]
    for arg, default in [
        *zip(positional, defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]:
        if default is not None and call_name(default) in universe.getters:
            names.add(arg.arg)
    if not universe.enum_name:
        return names
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if universe.enum_name in _annotation_names(arg.annotation):
            names.add(arg.arg)
    return names


def holder_params(func: ast.FunctionDef | ast.AsyncFunctionDef, universe: Universe) -> set[str]:
    """Parameters annotated with a holder class (``moe: FusedMoEConfig``)."""
    if not universe.holders:
        return set()
    args = func.args
    return {
        arg.arg
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if _annotation_names(arg.annotation) & universe.holders
    }
