"""``driftcheck discover``: list functions that look like canonical family predicates.

A candidate is a zero-argument module-level function whose return value is a boolean
combination (``or``/``and``/``not``) of at least two ``is_*()`` calls on one receiver, where
the receiver is a zero-argument getter call or a local bound to one. Such functions are what
``canonical = ["module:function"]`` in ``[tool.driftcheck]`` points at.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .files import iter_python_files
from .model import Problem
from .project import Project, module_name_of


@dataclass(frozen=True)
class Candidate:
    """One function that could serve as a canonical predicate."""

    qualified: str
    path: str
    line: int
    getter: str
    methods: tuple[str, ...]


def _getter_of(node: ast.expr, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        func = node.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    return None


def _leaves(node: ast.expr) -> list[ast.expr] | None:
    if isinstance(node, ast.BoolOp):
        out: list[ast.expr] = []
        for value in node.values:
            inner = _leaves(value)
            if inner is None:
                return None
            out.extend(inner)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _leaves(node.operand)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr.startswith("is_")
    ):
        return [node]
    return None


def candidate_of(func: ast.FunctionDef) -> tuple[str, tuple[str, ...]] | None:
    """``(getter, methods)`` when ``func`` is a family-predicate candidate."""
    if func.args.args or func.args.vararg or func.args.kwonlyargs or func.args.kwarg:
        return None
    aliases: dict[str, str] = {}
    body = list(func.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for stmt in body[:-1]:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            return None
        getter = _getter_of(stmt.value, aliases)
        if getter is None:
            return None
        aliases[stmt.targets[0].id] = getter
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    leaves = _leaves(body[-1].value)
    if not leaves or len(leaves) < 2:
        return None
    getters = {_getter_of(leaf.func.value, aliases) for leaf in leaves}  # type: ignore[attr-defined]
    if len(getters) != 1 or None in getters:
        return None
    methods = tuple(dict.fromkeys(leaf.func.attr for leaf in leaves))  # type: ignore[attr-defined]
    if len(methods) < 2:
        return None
    return getters.pop(), methods  # type: ignore[return-value]


def discover(project: Project, targets: list[Path], problems: list[Problem]) -> list[Candidate]:
    """All candidates under ``targets``, sorted by module and line."""
    found: list[Candidate] = []
    root = project.root
    for text, rel in iter_python_files(project, targets, problems):
        path = Path(text)
        try:
            data = path.read_bytes()
        except OSError as exc:
            problems.append(Problem(rel, None, f"cannot read file: {exc.strerror}"))
            continue
        if b".is_" not in data or b"return" not in data:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError) as exc:
            problems.append(Problem(rel, getattr(exc, "lineno", None), f"syntax error: {exc}"))
            continue
        module = module_name_of(root, path)
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef):
                result = candidate_of(stmt)
                if result is not None:
                    getter, methods = result
                    found.append(
                        Candidate(
                            f"{module}:{stmt.name}",
                            rel,
                            stmt.lineno,
                            getter,
                            methods,
                        )
                    )
    return sorted(found, key=lambda c: (c.path, c.line))
