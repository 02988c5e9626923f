"""Which files a run covers: the Python files under the paths given, as canonical paths.

Directory walks follow no symlinked directories (so no loops); a symlinked file pointing
outside the project (the repository, else the root) is reported and skipped, and so is a broken
link named like a Python file (a broken link to any other file is never checked, so it is no
error). A file reached through a link (a symlinked file, a path named through a symlinked
directory) is the file it points to: it is read and reported once, under its real path. A file
named explicitly that is not Python is reported, not checked. ``include`` and ``exclude``
patterns match canonical paths; excluded files stay excluded when named explicitly (pre-commit
passes changed files one by one).

Ignore files (``.gitignore``, ``.ignore``: :mod:`driftcheck.ignores`) are honoured unless the
configuration's ``respect-gitignore`` is false: what they ignore is not walked. As in ruff (its
walker never filters the paths a walk starts from), a path named on the command line is
checked even when ignored; what lies below a named directory is filtered. A configuration file
the walk passes (``pyproject.toml`` with ``[tool.driftcheck]``, ``driftcheck.toml``) below the
project's top is an error (:func:`driftcheck.project.misplaced`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from .config import has_driftcheck_table
from .ignores import IGNORE_NAMES, Ignores, ignores_above
from .model import Problem
from .project import CONFIG_NAMES, Project, misplaced
from .replay import stamp_of, stamp_or_none

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
        configs: list[Problem] | None = None,
        within: tuple[str, ...] | None = None,
    ) -> None:
        self.configs = problems if configs is None else configs
        self.stamps = stamps
        self.skip = skip
        self.within = within
        self.project = project
        self.config = project.config
        self.problems = problems
        self.seen: set[str] = set()
        top = project.repository or project.root
        self.top_real = os.path.realpath(top)
        self.prefix = str(project.root).rstrip(os.sep) + os.sep
        self.respect = project.config.respect_gitignore
        repository = project.repository
        in_git = repository is not None and (repository / ".git").exists()
        self.git_root = str(repository) if in_git else None
        self.ignore_top = str(top)

    def rel(self, text: str) -> str:
        if text.startswith(self.prefix):
            return text[len(self.prefix) :].replace(os.sep, "/")
        return self.project.rel(text)

    def accept(self, text: str, is_link: bool) -> tuple[str, str] | None:
        """``(path, canonical path)`` of the file at ``text`` the first time the walk meets
        it; a link is the file it points to, under that file's path when it is in the root."""
        if is_link:
            real = os.path.realpath(text)
            if not (real == self.top_real or real.startswith(self.top_real + os.sep)):
                self.problems.append(
                    Problem(
                        self.rel(text), None, f"symlink points outside the root ({real}); skipped"
                    )
                )
                return None
            if real.startswith(self.prefix):
                text = real
        rel = self.rel(text)
        if rel in self.seen or not self.config.is_included(rel) or self.config.is_excluded(rel):
            return None
        self.seen.add(rel)
        return text, rel

    def ignores_at(self, directory: str) -> Ignores | None:
        """The ignore rules in force in ``directory`` from the files above it (None when the
        run does not respect them)."""
        if not self.respect:
            return None
        read: list[str] = []
        found = ignores_above(directory, self.ignore_top, self.git_root, read)
        if self.stamps is not None:
            self.stamps.update((path, stamp_or_none(path)) for path in read)
        return found

    def entered(self, ignores: Ignores | None, directory: str, names: list[str]) -> Ignores | None:
        """The rules below ``directory`` holding the ignore files ``names``."""
        if ignores is None or not names:
            return ignores
        read: list[str] = []
        found = ignores.enter(directory, names, read)
        if self.stamps is not None:
            self.stamps.update((path, stamp_or_none(path)) for path in read)
        return found

    def kept(self, directory: str, entries: list[os.DirEntry[str]]) -> list[os.DirEntry[str]]:
        """``directory``'s entries a walk kept ``within`` some directories goes through: all
        of them inside one, else the directories on the way to one (no file, no
        configuration: they lie outside what the run reads)."""
        assert self.within is not None
        if any(directory == top or directory.startswith(top + os.sep) for top in self.within):
            return entries
        return [
            entry
            for entry in entries
            if entry.is_dir(follow_symlinks=False)
            and any(top == entry.path or top.startswith(entry.path + os.sep) for top in self.within)
        ]

    def configuration(self, path: str) -> None:
        """A configuration file met below the root: an error unless it is at the project's
        top (below it, its stamp is recorded: a table added to it changes the run; one at the
        top is recorded with the places the project was looked for)."""
        if self.project.may_configure(Path(os.path.dirname(path))):
            return
        if self.stamps is not None:
            self.stamps[path] = stamp_or_none(path)
        name = os.path.basename(path)
        if name == "pyproject.toml" and not has_driftcheck_table(Path(path)):
            return
        error = misplaced(self.project, Path(path))
        self.configs.append(Problem(error.path, error.line, error.message))


def iter_python_files(
    project: Project,
    targets: Iterable[Path],
    problems: list[Problem],
    stamps: dict[str, tuple[int, int, int, int] | None] | None = None,
    skip: Iterable[Path] = (),
    configs: list[Problem] | None = None,
    within: Iterable[Path] | None = None,
) -> Iterator[tuple[str, str]]:
    """``(absolute path, canonical path)`` of each Python file under ``targets``, once each;
    ``stamps`` (when given) receives each directory walked and its stamp. The directories
    ``skip`` names are not entered (a walk of the whole root around the directories already
    walked for a partial run); with ``within``, only the directories on the way to those it
    names and below them are (a partial run's context: :func:`driftcheck.project.scope_of`),
    and ignore files are read as a walk of the whole root reads them. A misplaced
    configuration goes to ``configs`` (default: ``problems``)."""
    skipped = frozenset(os.path.normpath(os.path.join(project.cwd, d)) for d in skip)
    kept = None
    if within is not None:
        kept = tuple(os.path.normpath(os.path.join(project.cwd, d)) for d in within)
    walk = _Walk(project, problems, stamps, skipped, configs, kept)
    for target in targets:
        text = os.path.normpath(os.path.join(project.cwd, target))
        if os.path.islink(text) and not os.path.exists(text):
            problems.append(Problem(walk.rel(text), None, "broken symlink or symlink loop"))
        elif os.path.isdir(text):
            real = os.path.realpath(text)
            yield from _walk_directory(walk, real if real.startswith(walk.prefix) else text)
        elif os.path.isfile(text):
            if text.endswith(PYTHON_SUFFIXES):
                accepted = walk.accept(text, os.path.realpath(text) != text)
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
    stack = [(top, walk.ignores_at(top))]
    while stack:
        directory, above = stack.pop()
        try:
            if walk.stamps is not None:
                walk.stamps[directory] = stamp_of(os.stat(directory))
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            walk.problems.append(
                Problem(walk.rel(directory), None, f"cannot list directory: {exc.strerror}")
            )
            continue
        ignores = walk.entered(
            above, directory, [e.name for e in entries if e.name in IGNORE_NAMES]
        )
        if ignores is not None and ignores.levels:
            entries = [e for e in entries if not _ignored(ignores, e)]
        if walk.within is not None:
            entries = walk.kept(directory, entries)
        subdirs: list[str] = []
        yield from _entries(walk, entries, subdirs)
        stack.extend((subdir, ignores) for subdir in reversed(subdirs))


def _entries(
    walk: _Walk, entries: list[os.DirEntry[str]], subdirs: list[str]
) -> Iterator[tuple[str, str]]:
    """The Python files among one directory's ``entries``; ``subdirs`` receives the
    directories to walk next."""
    config = walk.config
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
        elif entry.name in CONFIG_NAMES and entry.is_file(follow_symlinks=False):
            walk.configuration(entry.path)


def _ignored(ignores: Ignores, entry: os.DirEntry[str]) -> bool:
    """Whether the ignore files exclude ``entry`` (a link counts as a file, as in git)."""
    return ignores.ignored(entry.path, entry.name, entry.is_dir(follow_symlinks=False))
