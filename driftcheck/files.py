"""Which files a run covers: the Python files under the paths given, as canonical paths.

Directory walks follow no symlinked directories (so no loops); a symlinked file pointing
outside the project (the repository, else the root) is reported and skipped, and so is a broken
link named like a Python file (a broken link to any other file is never checked, so it is no
error). A file named explicitly that is not Python is reported, not checked. ``include`` and
``exclude`` patterns match canonical paths; excluded files stay excluded when named
explicitly (pre-commit passes changed files one by one).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from .model import Problem
from .project import Project
from .replay import stamp_of

PYTHON_SUFFIXES = (".py", ".pyi")
NOT_PYTHON = "not a Python file (.py or .pyi); not checked"
NO_PYTHON_UNDER = "no Python files under this directory"
SKIP_DIRS = {
    ".git",
    ".hg",
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


class _Walk:
    """State shared by one walk: what was yielded, where problems go."""

    def __init__(
        self,
        project: Project,
        problems: list[Problem],
        stamps: dict[str, tuple[int, int, int, int] | None] | None,
        skip: frozenset[str] = frozenset(),
    ) -> None:
        self.stamps = stamps
        self.skip = skip
        self.project = project
        self.config = project.config
        self.problems = problems
        self.seen: set[str] = set()
        top = project.repository or project.root
        self.top_real = os.path.realpath(top)
        self.prefix = str(project.root).rstrip(os.sep) + os.sep

    def rel(self, text: str) -> str:
        if text.startswith(self.prefix):
            return text[len(self.prefix) :].replace(os.sep, "/")
        return self.project.rel(text)

    def accept(self, text: str, is_link: bool) -> tuple[str, str] | None:
        rel = self.rel(text)
        if is_link:
            real = os.path.realpath(text)
            if not (real == self.top_real or real.startswith(self.top_real + os.sep)):
                self.problems.append(
                    Problem(rel, None, f"symlink points outside the root ({real}); skipped")
                )
                return None
        if rel in self.seen or not self.config.is_included(rel) or self.config.is_excluded(rel):
            return None
        self.seen.add(rel)
        return text, rel


def iter_python_files(
    project: Project,
    targets: Iterable[Path],
    problems: list[Problem],
    stamps: dict[str, tuple[int, int, int, int] | None] | None = None,
    skip: Iterable[Path] = (),
) -> Iterator[tuple[str, str]]:
    """``(absolute path, canonical path)`` of each Python file under ``targets``, once each;
    ``stamps`` (when given) receives each directory walked and its stamp. The directories
    ``skip`` names are not entered (a walk of the whole root around the directories already
    walked for a partial run)."""
    skipped = frozenset(os.path.normpath(os.path.join(project.cwd, d)) for d in skip)
    walk = _Walk(project, problems, stamps, skipped)
    for target in targets:
        text = os.path.normpath(os.path.join(project.cwd, target))
        if os.path.islink(text) and not os.path.exists(text):
            problems.append(Problem(walk.rel(text), None, "broken symlink or symlink loop"))
        elif os.path.isdir(text):
            yield from _walk_directory(walk, text)
        elif os.path.isfile(text):
            if text.endswith(PYTHON_SUFFIXES):
                accepted = walk.accept(text, os.path.islink(text))
                if accepted is not None:
                    yield accepted
            else:
                problems.append(Problem(walk.rel(text), None, NOT_PYTHON))
        else:
            problems.append(Problem(text, None, "no such file or directory"))


def holds_python(path: Path) -> bool:
    """Whether ``path`` is a Python file, or a directory with one somewhere under it (the
    directories a walk skips aside; the first one found ends the search)."""
    if not path.is_dir():
        return path.name.endswith(PYTHON_SUFFIXES)
    for _, directories, names in os.walk(path):
        if any(name.endswith(PYTHON_SUFFIXES) for name in names):
            return True
        directories[:] = [d for d in directories if d not in SKIP_DIRS]
    return False


def _walk_directory(walk: _Walk, top: str) -> Iterator[tuple[str, str]]:
    config = walk.config
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            if walk.stamps is not None:
                walk.stamps[directory] = stamp_of(os.stat(directory))
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            walk.problems.append(
                Problem(walk.rel(directory), None, f"cannot list directory: {exc.strerror}")
            )
            continue
        subdirs = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if (
                    entry.name not in SKIP_DIRS
                    and entry.path not in walk.skip
                    and not (config.exclude and config.is_excluded(walk.rel(entry.path)))
                ):
                    subdirs.append(entry.path)
            elif entry.is_symlink():
                if not entry.name.endswith(".py"):
                    continue  # a file that is never checked cannot fail the check (ruff's habit)
                if not os.path.exists(entry.path):
                    rel = walk.rel(entry.path)
                    if config.is_included(rel) and not config.is_excluded(rel):
                        walk.problems.append(Problem(rel, None, "broken symlink or symlink loop"))
                elif os.path.isfile(entry.path):
                    accepted = walk.accept(entry.path, True)
                    if accepted is not None:
                        yield accepted
            elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                accepted = walk.accept(entry.path, False)
                if accepted is not None:
                    yield accepted
        stack.extend(reversed(subdirs))
