"""Which expressions denote the backend: the getter, its aliases, and the value attributes.

A *receiver* is an expression whose runtime value is the enum (``get_moe_a2a_backend()``,
``_a2a_backend`` after ``_a2a_backend = get_moe_a2a_backend()``, ``self._a2a`` assigned in the
class, a parameter annotated with the enum or named like ``a2a_backend``). A *value
expression* is one whose value is the backend's string (``server_args.moe_a2a_backend``) or
the enum itself (compared with ``==`` to a member).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .model import Universe


def call_name(node: ast.expr) -> str | None:
    """``f`` for ``f()`` and ``mod.f()`` (zero-argument calls only)."""
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        if isinstance(node.func, ast.Name):
            return node.func.id
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
    return None


def terminal_name(node: ast.expr) -> str | None:
    """The last identifier of ``a.b.c`` or ``c``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


@dataclass
class ReceiverScope:
    """Aliases of the backend visible in one function (locals) and its class (``self.x``)."""

    universe: Universe
    local_names: set[str] = field(default_factory=set)
    self_attrs: set[str] = field(default_factory=set)
    module_names: set[str] = field(default_factory=set)

    def is_getter_call(self, node: ast.expr) -> bool:
        """``get_moe_a2a_backend()`` or ``utils.get_moe_a2a_backend()``."""
        return call_name(node) in self.universe.getters

    def is_receiver(self, node: ast.expr) -> bool:
        """Whether ``node`` evaluates to the backend enum."""
        if self.is_getter_call(node):
            return True
        if isinstance(node, ast.Name):
            return (
                node.id in self.local_names
                or node.id in self.module_names
                or node.id in self.universe.value_attributes
            )
        if isinstance(node, ast.Attribute):
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr in self.self_attrs
            ):
                return True
            return node.attr in self.universe.value_attributes
        return False

    def is_value_expr(self, node: ast.expr) -> bool:
        """Whether ``node`` is the backend as a string or enum, fit for ``==``/``in`` tests."""
        if self.is_receiver(node):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "value":
            return self.is_receiver(node.value)
        return False


def collect_aliases(body: list[ast.stmt], scope: ReceiverScope) -> set[str]:
    """Local names bound to the getter (or to another alias) anywhere in ``body``."""
    names: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in _walk_no_nested_defs(body):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                value = node.value
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if value is None:
                    continue
                probe = ReceiverScope(
                    scope.universe, scope.local_names | names, scope.self_attrs, scope.module_names
                )
                if probe.is_receiver(value):
                    for target in targets:
                        if isinstance(target, ast.Name) and target.id not in names:
                            names.add(target.id)
                            changed = True
    return names


def collect_self_attrs(cls: ast.ClassDef, scope: ReceiverScope) -> set[str]:
    """``self.x`` attributes assigned the backend in any method of ``cls``."""
    attrs: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and scope.is_receiver(node.value):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    attrs.add(target.attr)
    return attrs


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
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        annotation = arg.annotation
        if annotation is None:
            continue
        text = ast.unparse(annotation)
        if universe.enum_name in text.replace('"', "").replace("'", "").split(".") or text.strip(
            "'\""
        ).endswith(universe.enum_name):
            names.add(arg.arg)
    return names


def _walk_no_nested_defs(body: list[ast.stmt]):
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            stack.append(child)
