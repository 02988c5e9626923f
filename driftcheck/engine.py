"""One checking run: root, configuration, universe, files, scans (cached, parallel), findings.

This is the library entry point the CLI, the fixer and the verifier share::

    result = check([Path("python/sglang")])
    for finding in result.findings: ...
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from driftcheck.rules import CATALOGUE

from .baseline import Baseline
from .cache import EMPTY, ScanCache, Stamp
from .config import Config, ConfigError
from .files import iter_python_files
from .gates import latent_members
from .judge import Judge
from .model import Finding, Problem, Universe
from .prefilter import Prefilter, build_prefilter
from .project import Project, discover_project
from .scan import FileScan, scan_path
from .selection import SelectionError, selected_codes
from .universe import LoadedUniverse, UniverseError, load_universe

PARALLEL_THRESHOLD = 256


@dataclass
class CheckResult:
    """Everything a run found, ready for a reporter, the fixer or the verifier."""

    project: Project
    universe: Universe | None
    loaded: LoadedUniverse | None
    findings: list[Finding] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scans: dict[str, FileScan] = field(default_factory=dict)
    files_checked: int = 0
    files_unreadable: int = 0
    baselined: int = 0
    expanded: bool = False

    @property
    def fatal(self) -> bool:
        """Whether the run could not do its job (no universe)."""
        return self.universe is None

    @property
    def root(self) -> Path:
        """The project root every canonical path is relative to."""
        return self.project.root

    @property
    def config(self) -> Config:
        """The configuration that applied."""
        return self.project.config


_WORKER: dict[str, object] = {}


def _init_worker(universe: Universe, prefilter: Prefilter, register_calls: tuple[str, ...]) -> None:
    _WORKER["args"] = (universe, prefilter, register_calls)


def _scan_worker(item: tuple[str, str]) -> FileScan:
    universe, prefilter, register_calls = _WORKER["args"]  # type: ignore[misc]
    return scan_path((item[0], item[1], universe, prefilter, register_calls))  # type: ignore[arg-type]


def default_jobs() -> int:
    """Worker count: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def check(
    paths: Sequence[Path],
    *,
    cwd: Path | None = None,
    config_path: Path | None = None,
    config: Config | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    extend_select: Iterable[str] = (),
    jobs: int | None = None,
    use_cache: bool = True,
    baseline: Baseline | None = None,
) -> CheckResult:
    """Run the linter over ``paths`` and return findings and problems (never raises for input).

    ``select``/``ignore``/``extend_select`` are command-line selections (reported as
    ``--select`` etc. when they name no rule); the configuration's own apply beneath them.
    """
    paths = list(paths) or [Path(".")]
    cwd = (cwd or Path.cwd()).resolve()
    try:
        project = discover_project(paths, cwd=cwd, config_path=config_path)
        if config is not None:
            project = replace(project, config=config)
        codes = _selection(project.config, select, ignore, extend_select)
    except ConfigError as exc:
        result = CheckResult(Project(cwd, cwd, Config()), None, None)
        result.problems.append(Problem(exc.path, exc.line, exc.message))
        return result
    except SelectionError as exc:
        result = CheckResult(Project(cwd, cwd, Config()), None, None)
        result.problems.append(Problem(exc.where, None, exc.message))
        return result
    result = CheckResult(
        project, None, None, warnings=[*project.warnings, *project.config.warnings]
    )
    missing = [p for p in paths if not (cwd / p).exists() and not os.path.islink(cwd / p)]
    if len(missing) == len(paths):
        result.problems.extend(
            Problem(os.path.normpath(cwd / p), None, "no such file or directory") for p in missing
        )
        return result
    try:
        loaded = load_universe(project.root, project.config)
    except UniverseError as exc:
        result.problems.append(Problem(exc.path, exc.line, exc.message))
        return result
    result.universe, result.loaded = loaded.universe, loaded
    universe = loaded.universe
    targets = [cwd / p for p in paths]
    defining = {str(p.resolve()) for p in loaded.files}
    if any(str(t.resolve()) in defining for t in targets if t.is_file()):
        targets, result.expanded = [project.root], True
    register_calls = tuple(g.register_call for g in project.config.gates)
    prefilter = build_prefilter(universe)
    cache = None
    if use_cache:
        cache = ScanCache(
            ScanCache.location(project.root),
            universe.fingerprint() + "|" + project.config.digest(),
        )
    with Scanner(
        universe, prefilter, register_calls, jobs, cold=cache is None or not cache.file.exists()
    ) as scanner:
        return _check_files(result, targets, scanner, cache, codes, baseline)


def _selection(
    config: Config,
    select: Iterable[str] | None,
    ignore: Iterable[str],
    extend_select: Iterable[str],
) -> set[str]:
    """The rule codes of a run: the command line's selection wins over the configuration's."""

    def where(key: str) -> str:
        line = config.lines.get(key)
        return f"{config.source}:{line} {key}" if line else f"{config.source} {key}"

    defaults = {code: rule.default_enabled for code, rule in CATALOGUE.items()}
    if select is not None:
        chosen: tuple[str, Iterable[str]] | None = ("--select", list(select))
    elif config.select is not None:
        chosen = (where("select"), config.select)
    else:
        chosen = None
    return selected_codes(
        defaults,
        select=chosen,
        ignore=[(where("ignore"), config.ignore), ("--ignore", list(ignore))],
        extend=[
            (where("extend-select"), config.extend_select),
            ("--extend-select", list(extend_select)),
        ],
    )


def _check_files(
    result: CheckResult,
    targets: list[Path],
    scanner: Scanner,
    cache: ScanCache | None,
    codes: set[str],
    baseline: Baseline | None,
) -> CheckResult:
    project, universe = result.project, result.universe
    root, config = project.root, project.config
    assert universe is not None
    # Files stream from the walk as plain strings: per-file state is what grows with the tree
    # (47,000 files), so nothing per file is kept unless the file contributes something.
    walked: Iterable[tuple[str, str]] = iter_python_files(project, targets, result.problems)
    # None: every walked file is requested (a whole-tree run keeps no per-file set)
    named: set[str] | None = None
    if not result.expanded and not any(t.resolve() == root for t in targets):
        # sibling consensus and per-model gates judge a file against the rest of the tree:
        # scan all of it (cached) so a partial run (pre-commit's changed files) agrees with a
        # full one; only the requested files are reported
        requested_files = dict(walked)
        named = set(requested_files.values())
        context = (item for item in iter_python_files(project, [root], []) if item[1] not in named)
        walked = itertools.chain(sorted(requested_files.items(), key=lambda i: i[1]), context)
    if cache is not None:
        cache.load()
    pending: list[tuple[str, str]] = []
    stats: dict[str, Stamp] = {}
    walked_count = 0
    unreadable: set[str] = set()
    for text, rel in walked:
        wanted = named is None or rel in named
        walked_count += wanted
        try:
            stat = Stamp.of(os.stat(text))
        except OSError as exc:
            if wanted:
                unreadable.add(rel)
                result.problems.append(
                    Problem(rel, None, f"cannot read file: {exc.strerror or exc}")
                )
            continue
        cached = cache.get(rel, stat) if cache is not None else None
        if cached is EMPTY:
            continue
        if cached is not None:
            result.scans[rel] = cached  # type: ignore[assignment]
        else:
            pending.append((text, rel))
            if len(pending) == PARALLEL_THRESHOLD:
                scanner.start_early()
            if cache is not None:
                stats[rel] = stat
    del walked
    for scan in scanner.scan(pending):
        if cache is not None:
            cache.put(scan.path, stats.pop(scan.path), scan)
        if scan.is_empty():
            continue
        result.scans[scan.path] = scan
        if (named is None or scan.path in named) and scan.problems:
            unreadable.add(scan.path)
            result.problems.extend(scan.problems)
    if cache is not None:
        if cache.rejected:
            result.warnings.append(
                f"ignored {cache.rejected} corrupted or tampered cache entr{'y' if cache.rejected == 1 else 'ies'} in {cache.file}"
            )
        cache.save()
    result.files_checked = walked_count - len(unreadable)
    result.files_unreadable = len(unreadable)
    latent = latent_members(root, config, universe, result.scans)
    judge = Judge(universe, config, codes, latent)
    judge.index_siblings(result.scans)
    findings: list[Finding] = []
    if named is not None:
        result.scans = {rel: scan for rel, scan in result.scans.items() if rel in named}
    for rel in sorted(result.scans):
        findings.extend(judge.judge_file(result.scans[rel]))
    if baseline is not None:
        kept = [f for f in findings if not baseline.contains(f)]
        result.baselined = len(findings) - len(kept)
        findings = kept
    result.findings = sorted(findings, key=lambda f: (f.path, f.span.line, f.span.col, f.code))
    result.problems.sort(key=lambda p: (p.path, p.line or 0))
    return result


class Scanner:
    """Scans files serially or in a process pool. On a cold run the pool starts as soon as enough
    files are pending (:meth:`start_early`), before per-file state grows, so forked workers
    inherit little."""

    def __init__(
        self,
        universe: Universe,
        prefilter: Prefilter,
        register_calls: tuple[str, ...],
        jobs: int | None,
        *,
        cold: bool,
    ) -> None:
        self.args = (universe, prefilter, register_calls)
        self.workers = jobs or default_jobs()
        self.cold = cold
        self.pool: Any = None

    def start_early(self) -> None:
        """Start the pool now, while little per-file state exists, when this run will need it."""
        if self.cold and self.workers > 1 and self.pool is None:
            self.pool = self._start(self.workers)

    def _start(self, workers: int) -> Any:
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        return context.Pool(workers, initializer=_init_worker, initargs=self.args)

    def scan(self, pending: list[tuple[str, str]]) -> Iterator[FileScan]:
        """Scan results as they come (in no particular order)."""
        workers = min(self.workers, max(1, len(pending) // 64))
        if workers <= 1 or len(pending) < PARALLEL_THRESHOLD:
            universe, prefilter, register_calls = self.args
            for path, rel in pending:
                yield scan_path((path, rel, universe, prefilter, register_calls))
            return
        if self.pool is None:
            self.pool = self._start(workers)
        # large files first so workers finish together
        ordered = sorted(pending, key=lambda item: -_size(item[0]))
        yield from self.pool.imap_unordered(_scan_worker, ordered, chunksize=32)

    def __enter__(self) -> Scanner:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool.join()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
