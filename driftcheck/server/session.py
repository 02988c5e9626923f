"""The server's engine side: its projects, and each open document's latest judgement.

Everything here runs on one thread (the server's engine thread), so nothing is shared with
the protocol's thread but the values it hands back. A document belongs to the project
``driftcheck check FILE`` would find for it, run from the workspace folder holding it (the
folder is the working directory: the settings' relative paths start there). Each project is
loaded once (:class:`~driftcheck.server.live.LiveProject`) and kept until a file that defines
it changes. A document whose buffer no longer parses keeps the diagnostics of its last good
judgement on the lines it still holds, under the error; one whose syntax error lies outside
the statements the check parses, beside a suppression, is judged as it is (as ``check`` judges
the file: the error, its findings, its DC004s). A configuration that stops a project loading
is shown on its file (:mod:`driftcheck.server.broken`) as well as in an error message.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types

from driftcheck.config import ConfigError
from driftcheck.engine import CheckResult
from driftcheck.model import Finding, Problem
from driftcheck.project import discover_project

from . import actions
from .broken import BrokenFiles, Publish
from .diagnostics import carried_over, finding_diagnostic, problem_diagnostic
from .early import EarlyLoad
from .hover import hover_text
from .live import LiveProject, ProjectError, buffer_bytes
from .positions import LineMap
from .settings import Settings

Notify = Callable[[types.MessageType, str], None]


@dataclass
class Judged:
    """One document's judgement at one version of its text."""

    path: Path
    version: int | None
    text: str
    lines: LineMap
    project: LiveProject | None = None
    result: CheckResult | None = None
    diagnostics: list[types.Diagnostic] = field(default_factory=list)
    # each finding and its diagnostic
    located: list[tuple[Finding, types.Diagnostic]] = field(default_factory=list)

    @property
    def good(self) -> bool:
        """Whether the engine read the buffer (no syntax error or other problem)."""
        return self.result is not None and not self.result.problems

    def findings_in(self, where: types.Range) -> list[Finding]:
        """The findings whose range touches ``where``."""
        return [f for f, d in self.located if _touches(d.range, where)]


def _touches(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return p.line, p.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


class Session:
    """The projects and documents of one client (see the module docstring)."""

    def __init__(
        self,
        folders: list[Path],
        settings: Settings,
        encoding: str,
        notify: Notify,
        preloaded: EarlyLoad | None = None,
        publish: Publish | None = None,
    ):
        self.folders = sorted(folders, key=lambda f: len(f.parts), reverse=True)
        self.preloaded = preloaded  # projects loading since the server started (early.py)
        self.settings = settings
        self.encoding = encoding
        self.notify = notify
        self.projects: dict[tuple[Path, Path | None], LiveProject | ProjectError] = {}
        self._keys: dict[Path, tuple[Path, Path | None] | None] = {}  # by directory
        self.judged: dict[str, Judged] = {}  # by URI
        self.good: dict[str, Judged] = {}  # each document's last judgement that parsed
        self._told: set[str] = set()
        # what stops a project loading, as diagnostics on the file that says it
        self.broken = BrokenFiles(encoding, publish)

    # -- projects ------------------------------------------------------------------------
    def cwd_for(self, path: Path) -> Path:
        """The workspace folder holding ``path`` (its directory when none does)."""
        for folder in self.folders:
            if path.is_relative_to(folder):
                return folder
        return path.parent

    def project_for(self, path: Path) -> LiveProject | None:
        """The loaded project ``path`` belongs to (None when it cannot be checked: the
        reason was told to the client)."""
        directory = path.parent
        if directory not in self._keys:
            cwd = self.cwd_for(path)
            try:
                found = discover_project([path], cwd=cwd, config_path=self.settings.configuration)
            except ConfigError as exc:
                problem = Problem(exc.path, exc.line, exc.message)  # as the CLI words it
                self._tell(types.MessageType.Error, f"driftcheck: {problem}")
                self.broken.show(exc.path, exc.line, exc.message, cwd)
                self._keys[directory] = None
                return None
            key = (found.root, found.config_file)
            if key not in self.projects:
                early = self.preloaded.take(key, cwd, self.settings) if self.preloaded else None
                if early is not None:
                    self.projects[key] = self._adopt(found.root, *early)
                else:
                    self.projects[key] = self._load(found.root, cwd)
            self._keys[directory] = key
        chosen = self._keys[directory]
        project = self.projects.get(chosen) if chosen is not None else None
        return project if isinstance(project, LiveProject) else None

    def preload(self, folder: Path) -> None:
        """Load the project of workspace folder ``folder`` before any document asks."""
        self.project_for(folder / "__init__.py")

    def _load(self, root: Path, cwd: Path) -> LiveProject | ProjectError:
        start = time.perf_counter()
        try:
            project: LiveProject | ProjectError = LiveProject.load(root, cwd, self.settings)
        except ProjectError as exc:
            project = exc
        return self._adopt(root, project, time.perf_counter() - start)

    def _adopt(
        self, root: Path, project: LiveProject | ProjectError, seconds: float
    ) -> LiveProject | ProjectError:
        """Keep a project loaded in ``seconds`` (here, or before the server started), and say
        what its load said."""
        if isinstance(project, ProjectError):
            for warning in project.warnings:
                self._tell(types.MessageType.Warning, f"driftcheck: warning: {warning}")
            for problem in project.problems:
                self._tell(types.MessageType.Error, f"driftcheck: {problem}")
                self.broken.show(problem.path, problem.line, problem.message, root)
            return project
        project.load_seconds = seconds
        # what a project holds lives until it is loaded again: keep the collector from
        # walking it after every few thousand allocations of a judgement
        gc.collect()
        gc.freeze()
        for warning in project.warnings:
            self._tell(types.MessageType.Warning, f"driftcheck: warning: {warning}")
        self.notify(
            types.MessageType.Info,
            f"driftcheck: loaded {root} ({len(project.scans)} contributing files, "
            f"{project.load_seconds:.2f} s)",
        )
        return project

    def _tell(self, kind: types.MessageType, message: str) -> None:
        """Say ``message`` once (a problem of the project would otherwise come back with
        every keystroke)."""
        if message not in self._told:
            self._told.add(message)
            self.notify(kind, message)

    def forget_projects(self) -> None:
        """Drop every loaded project: the next judgement loads it again."""
        self.projects.clear()
        gc.unfreeze()
        self._keys.clear()
        self._told.clear()
        self.broken.clear()

    def reconfigure(self, settings: Settings) -> None:
        """New settings: every project is loaded again under them."""
        self.settings = settings
        self.forget_projects()

    def files_changed(self, paths: list[Path]) -> None:
        """Files saved, created, changed or deleted on disk: read them again, or load the
        projects again when one of them defines what a project is."""
        loaded = [p for p in self.projects.values() if isinstance(p, LiveProject)]
        if (
            any(project.reloads_for(path) for path in paths for project in loaded)
            or any(isinstance(p, ProjectError) for p in self.projects.values())
            or None in self._keys.values()  # a configuration that could not be read
        ):
            self.forget_projects()
            for folder in self.folders:  # a configuration still broken is shown again
                self.preload(folder)
            return
        for project in loaded:
            for path in paths:
                if path.suffix in (".py", ".pyi"):
                    project.refresh(path)

    # -- documents -----------------------------------------------------------------------
    def judge(self, uri: str, path: Path | None, text: str, version: int | None) -> Judged:
        """Judge a document's text, as ``driftcheck check`` judges the saved file."""
        judged = Judged(path or Path(), version, text, LineMap(text, self.encoding))
        project = self.project_for(path) if path is not None else None
        if path is not None and project is not None and project.covers(path):
            rel = project.rel(path)
            result = project.judge(rel, buffer_bytes(text))
            judged.project, judged.result = project, result
            other_lines = _FileLines(self.encoding)
            for finding in result.findings:
                diagnostic = finding_diagnostic(finding, judged.lines, project.project, other_lines)
                judged.diagnostics.append(diagnostic)
                judged.located.append((finding, diagnostic))
            problems = [p for p in result.problems if p.path == rel]
            judged.diagnostics[:0] = [problem_diagnostic(p, judged.lines) for p in problems]
            last = self.good.get(uri)
            # a buffer the engine could not read keeps its last good judgement's diagnostics;
            # one read past a syntax error (beside a suppression) was judged whole
            if result.files_unreadable and last is not None:
                judged.diagnostics += carried_over(last.text, last.diagnostics, text)
        self.judged[uri] = judged
        if judged.good:
            self.good[uri] = judged
        return judged

    def close(self, uri: str) -> None:
        """The document was closed: forget its judgements."""
        judged = self.judged.pop(uri, None)
        self.good.pop(uri, None)
        if judged is not None and judged.project is not None:
            judged.project.forget(judged.project.rel(judged.path))

    def current(self, uri: str, path: Path | None, text: str, version: int | None) -> Judged:
        """The judgement of exactly this text (judged now when the latest is of another)."""
        judged = self.judged.get(uri)
        if judged is not None and judged.text == text:
            return judged
        return self.judge(uri, path, text, version)

    def code_actions(
        self, judged: Judged, where: types.Range, only: list[str] | None
    ) -> list[actions.Proposal]:
        """The actions for the findings touching ``where`` (kinds ``only`` when given)."""
        result, project = judged.result, judged.project
        if result is None or project is None or not judged.good:
            return []
        wanted = only or [actions.QUICKFIX, actions.FIX_ALL]

        def asked(kind: str) -> bool:
            return any(kind == w or kind.startswith(w + ".") for w in wanted)

        style = self.settings.fix_style or project.config.fix_style
        proposals: list[actions.Proposal] = []
        if asked(actions.QUICKFIX):
            for finding in judged.findings_in(where):
                proposals += actions.quick_fixes(result, finding, style)
                suppression = actions.suppression(judged.text, finding)
                if suppression is not None:
                    proposals.append(suppression)
        if asked(actions.FIX_ALL) and any(actions.fixable(f) for f in result.findings):
            proposals.append(actions.fix_all(result, style, self.settings.unsafe_fixes))
        return proposals

    def hover(self, judged: Judged, position: types.Position) -> str | None:
        """Markdown for the findings under ``position`` (None: no finding there)."""
        if judged.result is None:
            return None
        point = types.Range(position, position)
        texts = [hover_text(judged.result, f) for f in judged.findings_in(point)]
        return "\n---\n\n".join(texts) or None


class _FileLines:
    """Other files' lines, read on first use (a related place's column needs its line)."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.seen: dict[Path, LineMap | None] = {}

    def __call__(self, path: Path) -> LineMap | None:
        if path not in self.seen:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                self.seen[path] = None
            else:
                self.seen[path] = LineMap(text, self.encoding)
        return self.seen[path]
