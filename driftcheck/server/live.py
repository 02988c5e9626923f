"""A project kept in memory between edits: the saved tree's scans, and buffers judged against them.

The project model is the CLI's, loaded once: :func:`driftcheck.engine.check` over the project
root (root, configuration, packs, scan cache) gives the universes and every contributing
file's scan. A buffer is then judged as ``driftcheck check FILE`` judges the saved file:
scanned from its unsaved bytes, put in place of the file's saved scan, and judged with every
other file's saved scan (:func:`driftcheck.engine.judge_scans`), suppressions and baseline
applied. Only the buffer is scanned; a file saved or changed on disk is scanned again from
disk (:meth:`LiveProject.refresh`). What defines the universes (the canonical's module, the
enum's), the gates' registries, the configuration and the baseline are read when the project
loads: a change to one of them loads it again (:meth:`LiveProject.reloads_for`).
"""

from __future__ import annotations

import re
import tokenize
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from driftcheck.baseline import Baseline, BaselineError
from driftcheck.config import Config
from driftcheck.engine import (
    CheckResult,
    DeferredFile,
    check,
    judge_scans,
    rule_selection,
    scan_spec,
)
from driftcheck.gates import latent_members
from driftcheck.liveness import AttributeReads
from driftcheck.model import Problem
from driftcheck.project import CONFIG_NAMES, Project, resolve_module
from driftcheck.scan import FileScan, scan_bytes, scan_path
from driftcheck.universe import Loaded

from .settings import Settings

SOURCE_SUFFIXES = (".py", ".pyi")
FIRST_TWO_LINES = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)?[^\r\n]*(?:\r\n|\r|\n)?")


class ProjectError(Exception):
    """The project cannot be checked (the CLI would exit 2): its problems say why."""

    def __init__(self, problems: list[Problem], warnings: list[str]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems
        self.warnings = warnings


def buffer_bytes(text: str) -> bytes:
    """A buffer's text as the bytes its file would hold: in the encoding its PEP 263 coding
    line names (UTF-8 without one, or when the text cannot be written in it)."""
    data = text.encode("utf-8")
    head = FIRST_TWO_LINES.match(data)
    assert head is not None
    try:
        encoding = tokenize.detect_encoding(iter(head.group().splitlines(keepends=True)).__next__)[
            0
        ]
    except SyntaxError:
        return data
    if encoding in ("utf-8", "utf-8-sig"):
        return data
    try:
        return text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return data


def _facts(scan: FileScan | None) -> tuple[object, ...]:
    """What the per-model gates and the attribute reads take from a file's scan."""
    if scan is None:
        return (False, (), (), (), ())
    facts = (scan.entry_classes, scan.imports, scan.registrations, scan.classes)
    return (bool(scan.sites), *(tuple(f) for f in facts))


@dataclass
class LiveProject:
    """One project's saved tree in memory (see the module docstring)."""

    base: CheckResult
    codes: set[str]
    baseline: Baseline | None
    baseline_path: Path | None
    load_seconds: float = 0.0

    @staticmethod
    def load(root: Path, cwd: Path, settings: Settings) -> LiveProject:
        """Load the project rooted at ``root`` as ``driftcheck check`` run from ``cwd`` with
        the settings' options would (raises :class:`ProjectError` where it would exit 2)."""
        baseline_path = cwd / settings.baseline if settings.baseline else None
        baseline = None
        if baseline_path is not None:
            try:
                baseline = Baseline.load(baseline_path)
            except BaselineError as exc:
                raise ProjectError([Problem(str(baseline_path), None, str(exc))], []) from exc
        result = check(
            [root],
            cwd=cwd,
            config_path=settings.configuration,
            select=settings.select,
            ignore=settings.ignore,
            extend_select=settings.extend_select,
            judge=False,  # each open document is judged on its own
        )
        if result.fatal or result.inert:
            raise ProjectError(result.problems, [*result.notes, *result.warnings])
        config = result.config
        codes = rule_selection(config, settings.select, settings.ignore, settings.extend_select)
        return LiveProject(result, codes, baseline, baseline_path)

    def __post_init__(self) -> None:
        every = self.base.every
        assert every is not None
        # the universes as the scans saw them: a family inferred from the copies is inferred
        # again from each judgement's scans (the buffer's copies count)
        self._pristine = [
            replace(u.universe, families=())
            if u.universe.families and all(f.inferred for f in u.universe.families)
            else u.universe
            for u in every.universes
        ]
        self.spec = scan_spec(tuple(self._pristine), self.config)
        self.scans: dict[str, FileScan] = dict(self.base.scans)
        # files the load deferred as holding only single checks (driftcheck.singles): a
        # judgement whose findings read every site reads them, once
        self.deferred: dict[str, DeferredFile] = dict(self.base.deferred)
        self._saved: tuple[dict[str, dict[str, str]], AttributeReads] | None = None
        self._buffers: dict[str, tuple[bytes, FileScan]] = {}  # each buffer's last scan

    @property
    def project(self) -> Project:
        """The project's root and configuration."""
        return self.base.project

    @property
    def config(self) -> Config:
        """The configuration that applies."""
        return self.base.config

    @property
    def warnings(self) -> list[str]:
        """What the load warned about (the CLI prints these on stderr)."""
        return self.base.warnings

    def rel(self, path: Path) -> str:
        """The canonical path of ``path``."""
        return self.project.rel(path)

    def covers(self, path: Path) -> bool:
        """Whether ``driftcheck check`` on ``path`` would check it (a Python file the
        configuration neither leaves out nor excludes)."""
        rel = self.rel(path)
        config = self.config
        return (
            path.suffix in SOURCE_SUFFIXES
            and config.is_included(rel)
            and not config.is_excluded(rel)
        )

    def judge(self, rel: str, data: bytes) -> CheckResult:
        """The findings and problems of ``rel`` holding ``data``, judged with the saved scans
        of every other file: the result ``driftcheck check`` gives for the saved file."""
        last = self._buffers.get(rel)
        # judged again with the same text (another file changed): its scan is the same
        scan = last[1] if last is not None and last[0] == data else scan_bytes(rel, data, self.spec)
        self._buffers[rel] = (data, scan)
        scans = dict(self.scans)
        if scan.is_empty():
            scans.pop(rel, None)
        else:
            scans[rel] = scan
        every = self._every()
        primary = every.primary
        assert primary is not None
        result = CheckResult(
            self.project,
            primary.universe,
            primary,
            every,
            scans=scans,
            buffers={rel: data},
            deferred={other: f for other, f in self.deferred.items() if other != rel},
            analysis=replace(self.base.analysis, cache=None) if self.base.analysis else None,
        )
        result.problems.extend(scan.problems)
        result.problems.extend(scan.syntax_errors)  # beside a suppression: still judged
        result.files_checked = 0 if scan.problems else 1
        result.files_unreadable = 1 if scan.problems else 0
        baseline = Baseline(Counter(self.baseline.keys)) if self.baseline is not None else None
        if _facts(scan) != _facts(self.scans.get(rel)):
            judged = judge_scans(result, self.codes, baseline, {rel})
        else:
            latent, reads = self._saved_facts()
            judged = judge_scans(result, self.codes, baseline, {rel}, latent, reads)
        self._keep_completed(judged)
        return judged

    def _keep_completed(self, judged: CheckResult) -> None:
        """The deferred files a judgement read (:meth:`CheckResult.complete`) join the saved
        scans: read once, for every later judgement."""
        read = [
            other
            for other in self.deferred
            if other not in judged.deferred and other not in judged.buffers
        ]
        if not read:
            return
        for other in read:
            del self.deferred[other]
            completed = judged.completed.get(other)
            if completed is not None and not completed.problems:
                self.scans[other] = completed
        self._saved = None

    def forget(self, rel: str) -> None:
        """The buffer of ``rel`` was closed."""
        self._buffers.pop(rel, None)

    def _saved_facts(self) -> tuple[dict[str, dict[str, str]], AttributeReads]:
        """The per-model gates' answer and the attribute reads of the saved scans, which a
        buffer with the same model facts and classes shares (kept until a file changes).
        Only other files' text is read for a buffer's sites: the saved files'."""
        if self._saved is None:
            universe = self.base.universe
            assert universe is not None
            latent = latent_members(self.base.root, self.config, universe, self.scans)
            reads = AttributeReads(
                {rel: scan.classes for rel, scan in self.scans.items()}, self.base.source_text
            )
            self._saved = (latent, reads)
        return self._saved

    def _every(self) -> Loaded:
        """The universes as loaded, before any family is inferred (a judgement infers)."""
        every = self.base.every
        assert every is not None
        universes = [
            replace(u, universe=p) for u, p in zip(every.universes, self._pristine, strict=True)
        ]
        return Loaded(universes, list(every.warnings), list(every.missing))

    def refresh(self, path: Path) -> None:
        """Read ``path`` again after it was saved, created or deleted on disk."""
        rel = self.rel(path)
        self._saved = None
        self.deferred.pop(rel, None)
        if not path.is_file() or not self.covers(path):
            self.scans.pop(rel, None)
            return
        scan = scan_path(str(path), rel, self.spec)
        if scan.is_empty():
            self.scans.pop(rel, None)
        else:
            self.scans[rel] = scan

    def reloads_for(self, path: Path) -> bool:
        """Whether a change to ``path`` changes what the project is: the files defining its
        universes, a gate's registry, the baseline, or a configuration file."""
        if path.name in CONFIG_NAMES:
            return True
        every = self.base.every
        assert every is not None
        watched = {f.resolve() for f in every.files}
        for gate in self.config.gates:
            registry = resolve_module(self.base.root, gate.registry.partition(":")[0])
            if registry is not None:
                watched.add(registry.resolve())
        if self.baseline_path is not None:
            watched.add(self.baseline_path.resolve())
        return path.resolve() in watched
