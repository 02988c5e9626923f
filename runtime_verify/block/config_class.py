"""The model configuration's own defaults, read from the config classes the block's module
imports from the tree (the pack's ``[verify] config-modules``: SGLang's ``sglang.srt.configs``).

A model whose configuration class lives in the tree (``KimiLinearConfig``) declares the
default of every field in its ``__init__``; a field the harness's shape does not size takes
that default, as a checkpoint that omits the field would. A model whose configuration comes
from outside the tree (a Hub config read through ``transformers``) has only the pack's fields.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Sequence
from typing import Any


def config_imports(text: str, prefixes: Sequence[str]) -> dict[str, list[str]]:
    """``module -> names`` of the ``from M import N`` statements of ``text`` whose module is
    under one of ``prefixes``."""
    if not prefixes:
        return {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            module = node.module
            if any(module == p or module.startswith(p + ".") for p in prefixes):
                names = [a.asname or a.name for a in node.names if a.name != "*"]
                found.setdefault(module, []).extend(names)
    return found


def class_defaults(classes: Sequence[object]) -> dict[str, Any]:
    """The defaults each configuration class's ``__init__`` declares (the first class
    declaring a field wins; ``*args``/``**kwargs`` and required parameters give none)."""
    defaults: dict[str, Any] = {}
    for cls in classes:
        if not isinstance(cls, type):
            continue
        try:
            parameters = inspect.signature(cls.__init__).parameters.values()  # type: ignore[misc]
        except (TypeError, ValueError):
            continue
        for parameter in parameters:
            if parameter.default is inspect.Parameter.empty or parameter.name == "self":
                continue
            if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                continue
            defaults.setdefault(parameter.name, parameter.default)
    return defaults
