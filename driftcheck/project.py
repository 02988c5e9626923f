"""Where the linted tree is: its root, its module files, and which files a run covers."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from .config import Config
from .model import Problem

SOURCE_PREFIXES = ("", "python", "src")
SKIP_DIRS = {
    ".git",
    "__pycache__",
    ".driftcheck_cache",
    ".tox",
    ".venv",
    "venv",
    "node_modules",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
}


def module_candidates(root: Path, module: str) -> list[Path]:
    """Files that could define ``module`` (dotted) under ``root``, repo or wheel layout."""
    parts = module.split(".")
    found = []
    for prefix in SOURCE_PREFIXES:
        base = root / prefix if prefix else root
        found.append(base.joinpath(*parts).with_suffix(".py"))
        found.append(base.joinpath(*parts, "__init__.py"))
    return found


def resolve_module(root: Path, module: str) -> Path | None:
    """The first existing file defining ``module`` under ``root``."""
    for candidate in module_candidates(root, module):
        if candidate.is_file():
            return candidate
    return None


def module_name_of(root: Path, path: Path) -> str:
    """The dotted module name of ``path`` relative to ``root`` (wheel or repo layout)."""
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts and parts[0] in ("python", "src") and len(parts) > 1:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def find_root(paths: Iterable[Path], canonical: tuple[str, ...]) -> Path:
    """The repository root: the nearest ancestor of the given paths that defines a canonical
    module, else the nearest one with a pyproject.toml or .git, else the first path's directory.
    """
    starts = [p.resolve() for p in paths] or [Path.cwd().resolve()]
    modules = [spec.split(":", 1)[0] for spec in canonical]
    for start in starts:
        here = start if start.is_dir() else start.parent
        for ancestor in (here, *here.parents):
            if any(resolve_module(ancestor, m) for m in modules):
                return ancestor
    for start in starts:
        here = start if start.is_dir() else start.parent
        for ancestor in (here, *here.parents):
            if (ancestor / "pyproject.toml").is_file() or (ancestor / ".git").exists():
                return ancestor
    first = starts[0]
    return first if first.is_dir() else first.parent


def relpath(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators (paths outside stay absolute)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def iter_python_files(
    root: Path, targets: Iterable[Path], config: Config, problems: list[Problem]
) -> Iterator[Path]:
    """Python files under ``targets`` that the configuration includes, each once.

    Directory walks follow no symlinked directories (so no loops); a symlinked file pointing
    outside ``root`` is reported and skipped. Excluded files stay excluded when named
    explicitly (pre-commit passes changed files one by one).
    """
    seen: set[str] = set()
    root_real = os.path.realpath(root)
    for target in targets:
        target = target if target.is_absolute() else (Path.cwd() / target)
        if target.is_symlink() and not target.exists():
            problems.append(Problem(str(target), None, "broken symlink or symlink loop"))
            continue
        if target.is_dir():
            yield from _walk(root, Path(os.path.abspath(target)), config, problems, seen, root_real)
        elif target.is_file():
            if target.suffix == ".py" or target.suffix == ".pyi":
                path = _accept(root, target, config, problems, seen, root_real)
                if path is not None:
                    yield path
        else:
            problems.append(Problem(str(target), None, "no such file or directory"))


def _accept(
    root: Path,
    path: Path,
    config: Config,
    problems: list[Problem],
    seen: set[str],
    root_real: str,
    is_link: bool | None = None,
) -> Path | None:
    if is_link if is_link is not None else path.is_symlink():
        real = os.path.realpath(path)
        if not (real == root_real or real.startswith(root_real + os.sep)):
            problems.append(
                Problem(
                    relpath(root, path), None, f"symlink points outside the root ({real}); skipped"
                )
            )
            return None
    rel = _fast_rel(root, path)
    if rel in seen or config.is_excluded(rel):
        return None
    seen.add(rel)
    return path


def _fast_rel(root: Path, path: Path) -> str:
    prefix = str(root).rstrip(os.sep) + os.sep
    text = str(path)
    return (
        text[len(prefix) :].replace(os.sep, "/") if text.startswith(prefix) else relpath(root, path)
    )


def _walk(
    root: Path, top: Path, config: Config, problems: list[Problem], seen: set[str], root_real: str
) -> Iterator[Path]:
    stack = [str(top)]
    while stack:
        directory = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            problems.append(
                Problem(
                    relpath(root, Path(directory)), None, f"cannot list directory: {exc.strerror}"
                )
            )
            continue
        subdirs = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS and not (
                    config.exclude and config.is_excluded(_fast_rel(root, Path(entry.path)))
                ):
                    subdirs.append(entry.path)
            elif entry.is_symlink():
                if not os.path.exists(entry.path):
                    problems.append(
                        Problem(
                            relpath(root, Path(entry.path)), None, "broken symlink or symlink loop"
                        )
                    )
                elif entry.name.endswith(".py") and os.path.isfile(entry.path):
                    path = _accept(root, Path(entry.path), config, problems, seen, root_real, True)
                    if path is not None:
                        yield path
            elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                path = _accept(root, Path(entry.path), config, problems, seen, root_real, False)
                if path is not None:
                    yield path
        stack.extend(reversed(subdirs))
