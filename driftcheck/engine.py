"""One checking run: root, configuration, universe, files, scans (cached, parallel), findings.

This is the library entry point the CLI, the fixer and the verifier share::

    result = check([Path("python/sglang")])
    for finding in result.findings: ...
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .baseline import Baseline
from .cache import ScanCache
from .config import SGLANG_CANONICAL, Config, ConfigError, find_config
from .gates import latent_members
from .judge import Judge, selected_codes
from .model import Finding, Problem, Universe
from .prefilter import Prefilter, build_prefilter
from .project import find_root, iter_python_files, relpath
from .scan import FileScan, scan_path
from .universe import LoadedUniverse, UniverseError, load_universe

PARALLEL_THRESHOLD = 256


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
    files = list(iter_python_files(root, targets, config, result.problems))
    result.files_checked = len(files)
    requested = {relpath(root, p) for p in files}
    if not result.expanded and not any(t.resolve() == root for t in targets):
        # sibling consensus and per-model gates judge a file against the rest of the tree:
        # scan all of it (cached) so a partial run (pre-commit's changed files) agrees with a
        # full one; only the requested files are reported
        context = iter_python_files(root, [root], config, [])
        files += [p for p in context if relpath(root, p) not in requested]
    register_calls = tuple(g.register_call for g in config.gates)
    prefilter = build_prefilter(universe)
    cache = None
    if use_cache:
        cache = ScanCache(ScanCache.location(root), universe.fingerprint() + "|" + config.digest())
        cache.load()
    pending: list[tuple[str, str]] = []
    stats: dict[str, os.stat_result] = {}
    prefix = str(root).rstrip(os.sep) + os.sep
    for path in files:
        text = str(path)
        rel = (
            text[len(prefix) :].replace(os.sep, "/")
            if text.startswith(prefix)
            else relpath(root, path)
        )
        try:
            stat = path.stat()
        except OSError as exc:
            if rel in requested:
                result.problems.append(
                    Problem(rel, None, f"cannot read file: {exc.strerror or exc}")
                )
            continue
        stats[rel] = stat
        cached = cache.get(rel, stat) if cache else None
        if cached is not None:
            result.scans[rel] = cached
        else:
            pending.append((str(path), rel))
    for scan in _scan_all(pending, universe, prefilter, register_calls, jobs):
        result.scans[scan.path] = scan
        if scan.path in requested:
            result.problems.extend(scan.problems)
        if cache is not None:
            cache.put(scan.path, stats[scan.path], scan)
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


def _scan_all(
    pending: list[tuple[str, str]],
    universe: Universe,
    prefilter: Prefilter,
    register_calls: tuple[str, ...],
    jobs: int | None,
) -> list[FileScan]:
    workers = min(jobs or default_jobs(), max(1, len(pending) // 64))
    if workers <= 1 or len(pending) < PARALLEL_THRESHOLD:
        return [scan_path((p, r, universe, prefilter, register_calls)) for p, r in pending]
    context = multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    )
    # large files first so workers finish together
    ordered = sorted(pending, key=lambda item: -_size(item[0]))
    with context.Pool(
        workers, initializer=_init_worker, initargs=(universe, prefilter, register_calls)
    ) as pool:
        return list(pool.imap_unordered(_scan_worker, ordered, chunksize=32))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
