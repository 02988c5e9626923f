"""Execute modules of the linted tree with its runtime substituted: the import side of a run.

Inside a :class:`Sandbox`:

- the site's module is executed from the tree, with the text given for it (the file as
  written, or as the fix writes it), under its own dotted name and its real path (so
  tracebacks and the line tracer name the tree's lines);
- the pack's ``executed-modules`` are executed from the tree as written;
- every other module of the tree's packages, of the pack's ``stand-in-packages``, and any
  module no import can find, is a :class:`~.standins.StandInModule`: a name imported from it is
  the harness's substitute when the pack declares one for that name, the executed module's
  object when the package re-exports it from one (``from .utils import x`` in its
  ``__init__.py``), else a stand-in;
- after a module of the tree is executed, each name the pack declares a substitute for is
  replaced in its namespace (the tree's own ``get_moe_a2a_backend()`` answers the arm).

On exit ``sys.modules`` is as it was: the next run executes everything afresh.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .standins import StandIn, StandInModule, ledger

Substitute = Callable[[str], Any]  # a name -> what the harness provides (KeyError: nothing)


def module_path(root: Path, name: str) -> Path | None:
    """Where the tree holds module ``name`` (``a/b.py`` or ``a/b/__init__.py``), if anywhere."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def re_exports(source: str, package: str) -> dict[str, str]:
    """``name -> module`` for the ``from X import name`` statements of a package's
    ``__init__.py`` (relative imports resolved against ``package``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or (node.module is None and not node.level):
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        for alias in node.names:
            found[alias.asname or alias.name] = module if alias.name != "*" else ""
    return found


class _TreeLoader(importlib.abc.Loader):
    def __init__(self, sandbox: Sandbox, path: Path, source: str) -> None:
        self.sandbox, self.path, self.source = sandbox, path, source

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__file__ = str(self.path)
        code = compile(self.source, str(self.path), "exec", dont_inherit=True)
        exec(code, module.__dict__)
        self.sandbox.substitute_in(module)


class _StandInLoader(importlib.abc.Loader):
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        ledger().modules.add(spec.name)
        return StandInModule(spec.name, self.sandbox.resolve)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _Finder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: the tree's modules and the stand-in packages."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        return self.sandbox.spec_for(fullname)


class _Fallback(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: a module no other finder found is a stand-in too."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not self.sandbox.imported_by_tree():
            return None  # an optional import of a library the harness runs on: left alone
        loader = _StandInLoader(self.sandbox)
        return importlib.machinery.ModuleSpec(fullname, loader, is_package=True)


class Sandbox:
    """The import side of one run (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        texts: dict[str, str],
        executed: Sequence[str],
        stand_in_packages: Sequence[str],
        substitutes: Substitute,
    ) -> None:
        self.root = root
        self.texts = dict(texts)  # module name -> the text to execute (the site's module)
        self.executed = set(executed) | set(texts)
        self.tree_packages = {name.split(".")[0] for name in self.executed}
        self.stand_in_packages = set(stand_in_packages) | self.tree_packages
        self.substitutes = substitutes
        self.loaded: set[str] = set()
        self._saved: dict[str, types.ModuleType] = {}
        self._finders: list[importlib.abc.MetaPathFinder] = []
        self._files = self.tree_files

    @property
    def tree_files(self) -> frozenset[str]:
        """The files of the tree this sandbox executes."""
        paths = (module_path(self.root, name) for name in self.executed)
        return frozenset(str(p) for p in paths if p is not None)

    def imported_by_tree(self) -> bool:
        """Whether the import in progress comes from the tree's own code."""
        files = self._files
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename in files:
                return True
            frame = frame.f_back  # type: ignore[assignment]
        return False

    def spec_for(self, fullname: str) -> importlib.machinery.ModuleSpec | None:
        """The spec of a module the sandbox answers (None: an ordinary import)."""
        top = fullname.split(".")[0]
        if top not in self.stand_in_packages:
            return None
        self.loaded.add(fullname)
        if fullname in self.executed:
            path = module_path(self.root, fullname)
            if path is not None:
                source = self.texts.get(fullname)
                if source is None:
                    source = path.read_text(encoding="utf-8")
                loader = _TreeLoader(self, path, source)
                is_package = path.name == "__init__.py"
                spec = importlib.machinery.ModuleSpec(
                    fullname, loader, origin=str(path), is_package=is_package
                )
                if is_package:
                    spec.submodule_search_locations = [str(path.parent)]
                spec.has_location = True
                return spec
        return importlib.machinery.ModuleSpec(fullname, _StandInLoader(self), is_package=True)

    def resolve(self, module: str, name: str) -> Any:
        """What ``from <module> import <name>`` gives for a stand-in ``module``."""
        try:
            return self.substitutes(name)
        except KeyError:
            pass
        init = self.root.joinpath(*module.split(".")) / "__init__.py"
        if init.is_file():
            source_module = re_exports(init.read_text(encoding="utf-8"), module).get(name)
            if source_module and source_module in self.executed:
                return getattr(sys.modules.get(source_module) or _import(source_module), name)
        return StandIn(f"{module}.{name}")

    def substitute_in(self, module: types.ModuleType) -> None:
        """Replace the names the pack declares a substitute for in ``module``'s namespace."""
        for name in list(vars(module)):
            try:
                module.__dict__[name] = self.substitutes(name)
            except KeyError:
                continue

    def __enter__(self) -> Sandbox:
        for name in list(sys.modules):
            if name.split(".")[0] in self.stand_in_packages:
                self._saved[name] = sys.modules.pop(name)
        self._finders = [_Finder(self), _Fallback(self)]
        sys.meta_path.insert(0, self._finders[0])
        sys.meta_path.append(self._finders[1])
        importlib.invalidate_caches()
        return self

    def __exit__(self, *exc: object) -> None:
        for finder in self._finders:
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
        for name in list(sys.modules):
            module = sys.modules[name]
            if name.split(".")[0] in self.stand_in_packages or isinstance(module, StandInModule):
                del sys.modules[name]
        sys.modules.update(self._saved)

    def import_module(self, name: str) -> types.ModuleType:
        """Import ``name`` inside the sandbox."""
        return _import(name)


def _import(name: str) -> types.ModuleType:
    import importlib

    return importlib.import_module(name)
