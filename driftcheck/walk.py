"""The files a run reads, walked and stamped: here, or ahead in a forked process.

A check loads the universes (parsing the canonicals' modules, interpreting their predicates)
before it can scan a file, and walks the tree (listing directories, stamping every file) before
it can share the scan between processes. Neither needs the other, so on a large tree the walk
runs in a forked process while this one loads the universes (:class:`WalkAhead`): the two
cores of a small machine both work from the start. The forked walk sends back exactly what
:func:`walk` returns here; if it fails in any way, the run walks the tree itself.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .files import iter_python_files
from .model import Problem
from .project import Project, misplaced, scope_of
from .replay import stamp_of
from .workshare import collect_report, fork_reporting, stop

Stamped = tuple[int, int, int, int]


@dataclass
class Walked:
    """Every file a run reads, each ``(path, canonical path, stamp)`` (the stamp is the error
    text when the file could not be stamped), in the order it reads them; the files it reports
    on (None: all of them); the problems the walk met; and, when asked, every file and directory
    walked with its stamp (None for a file that could not be stamped)."""

    files: list[tuple[str, str, Stamped | str]] = field(default_factory=list)
    named: set[str] | None = None
    problems: list[Problem] = field(default_factory=list)
    stamps: dict[str, Stamped | None] | None = None


def walk(project: Project, targets: list[Path], whole: bool, record: bool) -> Walked:
    """The files under ``targets``, stamped. Unless the run is ``whole`` (a target is the
    root, or the root replaced the targets), the rest of their scope follows them,
    unreported: sibling consensus and per-model gates judge a file against the whole tree,
    so a partial run (pre-commit's changed files) agrees with a full one. The scope is the
    package trees holding the targets (:func:`~driftcheck.project.scope_of`: ``sglang/``,
    not the ``vllm/`` beside it), else the whole root."""
    walked = Walked(stamps={} if record else None)
    found: Iterable[tuple[str, str]] = iter_python_files(
        project, targets, walked.problems, walked.stamps
    )
    if not whole:
        requested = dict(found)
        walked.named = set(requested.values())
        # the directories given were walked whole: the context is the rest of the root
        done = [t for t in targets if t.is_dir() and not t.is_symlink()]
        context = iter_python_files(
            project,
            [project.root],
            [],
            walked.stamps,
            skip=done,
            configs=walked.problems,
            within=scope_of(project, targets),
        )
        found = [
            *sorted(requested.items(), key=lambda item: item[1]),
            *(item for item in context if item[1] not in walked.named),
        ]
    for path, rel in found:
        try:
            stamp: Stamped | str = stamp_of(os.stat(path))
        except OSError as exc:
            stamp = f"cannot read file: {exc.strerror or exc}"
        walked.files.append((path, rel, stamp))
        if walked.stamps is not None:
            walked.stamps[path] = stamp if isinstance(stamp, tuple) else None
    _misplaced_above(project, walked)
    return walked


def _misplaced_above(project: Project, walked: Walked) -> None:
    """The misplaced configurations the project's discovery passed over on the way up from
    the paths (those below the root the walk itself met), each reported once."""
    reported = {problem.path for problem in walked.problems}
    for path in project.misplaced:
        error = misplaced(project, path)
        if error.path not in reported:
            walked.problems.append(Problem(error.path, error.line, error.message))


class WalkAhead:
    """:func:`walk` in a forked process, started now and collected with :meth:`result`."""

    def __init__(self, pid: int, read: int) -> None:
        self.pid = pid
        self.read = read
        self.collected = False  # the child was reaped (its pid may be another's since)

    @staticmethod
    def start(project: Project, targets: list[Path], whole: bool, record: bool) -> WalkAhead | None:
        """Fork :func:`walk` (None where this platform cannot fork, or the system refuses a
        process or a pipe: the run then walks itself)."""
        if not hasattr(os, "fork") or os.name != "posix":
            return None
        forked = fork_reporting(lambda: walk(project, targets, whole, record))
        return WalkAhead(*forked) if forked is not None else None

    def result(self) -> Walked | None:
        """What the forked walk found (None when it did not finish: walk here instead)."""
        self.collected = True
        walked = collect_report(self.pid, self.read)
        return walked if isinstance(walked, Walked) else None

    def cancel(self) -> None:
        """Stop the walk (the run ends before it needs it) and reap it; nothing once
        :meth:`result` collected it."""
        if self.collected:
            return
        self.collected = True
        with contextlib.suppress(OSError):
            os.close(self.read)
        stop(self.pid)
