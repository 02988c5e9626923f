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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .baseline import Baseline
from .cache import EMPTY, ScanCache, Stamp
from .config import SGLANG_CANONICAL, Config, ConfigError, find_config
from .gates import latent_members
from .judge import Judge, selected_codes
from .model import Finding, Problem, Universe
from .prefilter import Prefilter, build_prefilter
from .project import find_root, iter_python_files, relpath
from .scan import FileScan, scan_path
from .universe import LoadedUniverse, UniverseError, load_universe

PARALLEL_THRESHOLD = 256


def _rel(root: Path, prefix: str, text: str) -> str:
    """``text`` relative to ``root`` (``prefix`` is ``root`` with a trailing separator)."""
    if text.startswith(prefix):
        return text[len(prefix) :].replace(os.sep, "/")
    return relpath(root, Path(text))


@dataclass
class CheckResult:
    """Everything a run found, ready for a reporter, the fixer or the verifier."""

    root: Path
    config: Config
    universe: Universe | None
    loaded: LoadedUniverse | None
    findings: list[Finding] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scans: dict[str, FileScan] = field(default_factory=dict)
    files_checked: int = 0
    baselined: int = 0
    expanded: bool = False

    @property
    def fatal(self) -> bool:
        """Whether the run could not do its job (no universe)."""
        return self.universe is None


_WORKER: dict[str, object] = {}


def _init_worker(universe: Universe, prefilter: Prefilter, register_calls: tuple[str, ...]) -> None:
    _WORKER["args"] = (universe, prefilter, register_calls)


def _scan_worker(item: tuple[str, str]) -> FileScan:
    universe, prefilter, register_calls = _WORKER["args"]  # type: ignore[misc]
    return scan_path((item[0], item[1], universe, prefilter, register_calls))  # type: ignore[arg-type]


def resolve_setup(paths: Sequence[Path], config_path: Path | None) -> tuple[Path, Config]:
    """Find the root and its configuration for ``paths``."""
    if config_path is not None:
        config = find_config(Path.cwd(), config_path)
        return find_root(paths, config.canonical), config
    root = find_root(paths, SGLANG_CANONICAL)
    config = find_config(root)
    if config.canonical != SGLANG_CANONICAL:
        root = find_root(paths, config.canonical)
    return root, config


def default_jobs() -> int:
    """Worker count: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def check(
    paths: Sequence[Path],
    *,
    config_path: Path | None = None,
    config: Config | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    jobs: int | None = None,
    use_cache: bool = True,
    baseline: Baseline | None = None,
) -> CheckResult:
    """Run the linter over ``paths`` and return findings and problems (never raises for input)."""
    paths = list(paths) or [Path(".")]
    try:
        if config is None:
            root, config = resolve_setup(paths, config_path)
        else:
            root = find_root(paths, config.canonical)
    except ConfigError as exc:
        result = CheckResult(Path.cwd(), Config(), None, None)
        result.problems.append(Problem(exc.path, exc.line, exc.message))
        return result
    result = CheckResult(root, config, None, None, warnings=list(config.warnings))
    try:
        loaded = load_universe(root, config)
    except UniverseError as exc:
        result.problems.append(Problem(exc.path, exc.line, exc.message))
        return result
    result.universe, result.loaded = loaded.universe, loaded
    universe = loaded.universe
    targets = [p if p.is_absolute() else Path.cwd() / p for p in paths]
    defining = {str(p.resolve()) for p in loaded.files}
    if any(str(t.resolve()) in defining for t in targets if t.is_file()):
        targets, result.expanded = [root], True
    register_calls = tuple(g.register_call for g in config.gates)
    prefilter = build_prefilter(universe)
    cache = None
    if use_cache:
        cache = ScanCache(ScanCache.location(root), universe.fingerprint() + "|" + config.digest())
    with Scanner(
        universe, prefilter, register_calls, jobs, cold=cache is None or not cache.file.exists()
    ) as scanner:
        return _check_files(result, root, targets, scanner, cache, select, ignore, baseline)


def _check_files(
    result: CheckResult,
    root: Path,
    targets: list[Path],
    scanner: Scanner,
    cache: ScanCache | None,
    select: Iterable[str] | None,
    ignore: Iterable[str],
    baseline: Baseline | None,
) -> CheckResult:
    config, universe = result.config, result.universe
    assert universe is not None
    # Files stream from the walk as plain strings: per-file state is what grows with the tree
    # (47,000 files), so nothing per file is kept unless the file contributes something.
    prefix = str(root).rstrip(os.sep) + os.sep
    walked: Iterable[str] = map(str, iter_python_files(root, targets, config, result.problems))
    # None: every walked file is requested (a whole-tree run keeps no per-file set)
    named: set[str] | None = None
    requested: set[str] | None = None
    if not result.expanded and not any(t.resolve() == root for t in targets):
        # sibling consensus and per-model gates judge a file against the rest of the tree:
        # scan all of it (cached) so a partial run (pre-commit's changed files) agrees with a
        # full one; only the requested files are reported
        named, requested = set(walked), set()
        result.files_checked = len(named)
        context = (
            f for f in map(str, iter_python_files(root, [root], config, [])) if f not in named
        )
        walked = itertools.chain(sorted(named), context)
    if cache is not None:
        cache.load()
    pending: list[tuple[str, str]] = []
    stats: dict[str, Stamp] = {}
    for text in walked:
        rel = _rel(root, prefix, text)
        wanted = named is None or text in named
        if named is None:
            result.files_checked += 1
        elif wanted and requested is not None:
            requested.add(rel)
        try:
            stat = Stamp.of(os.stat(text))
        except OSError as exc:
            if wanted:
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
    del walked, named
    for scan in scanner.scan(pending):
        if cache is not None:
            cache.put(scan.path, stats.pop(scan.path), scan)
        if scan.is_empty():
            continue
        result.scans[scan.path] = scan
        if requested is None or scan.path in requested:
            result.problems.extend(scan.problems)
    if cache is not None:
        if cache.rejected:
            result.warnings.append(
                f"ignored {cache.rejected} corrupted or tampered cache entr{'y' if cache.rejected == 1 else 'ies'} in {cache.file}"
            )
        cache.save()
    latent = latent_members(root, config, universe, result.scans)
    judge = Judge(
        universe,
        config,
        selected_codes(
            select if select is not None else config.select,
            [*config.ignore, *ignore],
            config.extend_select,
        ),
        latent,
    )
    judge.index_siblings(result.scans)
    findings: list[Finding] = []
    if requested is not None:
        result.scans = {rel: scan for rel, scan in result.scans.items() if rel in requested}
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
