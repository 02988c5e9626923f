"""One checking run: root, configuration, universe, files, scans (cached, parallel), findings.

This is the library entry point the CLI, the fixer and the verifier share::

    result = check([Path("python/sglang")])
    for finding in result.findings: ...
"""

from __future__ import annotations

import gc
import os
import posixpath
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from driftcheck.rules import CATALOGUE
from driftcheck.rules.base import RunIndex

from .baseline import Baseline
from .cache import EMPTY, ScanCache, Stamp
from .config import Config, ConfigError
from .files import NO_PYTHON_UNDER, NOT_PYTHON, holds_python
from .gates import latent_members
from .infer import infer_families
from .judge import Judge
from .liveness import AttributeReads
from .model import Family, Finding, Problem, Universe
from .prefilter import build_prefilter
from .project import Project, discover_project, scope_of
from .replay import stamp_or_none
from .scan import FileScan, ScanSpec, decode_source, scan_path
from .selection import SelectionError, selected_codes
from .singles import SingleCheckFilter, build_single_filter
from .universe import Loaded, LoadedUniverse, UniverseError, load_universes
from .walk import WalkAhead, Walked, walk
from .workshare import Shared

PARALLEL_THRESHOLD = 256
CHUNK = 32  # files a worker takes at a time
GC_YOUNG_THRESHOLD = 50_000  # allocations between collections of the young generation


@dataclass(frozen=True)
class RunOptions:
    """How a check runs, past its project: workers, the scan cache, the baseline its findings
    are filtered by, the progress callback, and whether it judges at all."""

    jobs: int | None = None
    use_cache: bool = True
    baseline: Baseline | None = None
    progress: Callable[[int, int], None] | None = None
    judge: bool = True


class DeferredFile(NamedTuple):
    """A file holding only single checks, not analysed yet (:mod:`driftcheck.singles`)."""

    path: str  # as the walk gave it
    size: int
    stamp: Stamp


@dataclass
class Analysis:
    """How a run analyses files it deferred: its scan spec (without deferral), its worker
    count, and its scan cache (None: nothing is cached)."""

    spec: ScanSpec
    jobs: int | None
    cache: ScanCache | None = None


@dataclass
class CheckResult:
    """Everything a run found, ready for a reporter, the fixer or the verifier."""

    project: Project
    universe: Universe | None
    loaded: LoadedUniverse | None
    every: Loaded | None = None
    findings: list[Finding] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scans: dict[str, FileScan] = field(default_factory=dict)
    files_checked: int = 0
    files_unreadable: int = 0
    baselined: int = 0
    expanded: bool = False
    # what the run's sites set and whether anything reads it (:mod:`driftcheck.liveness`)
    reads: AttributeReads | None = None
    # with ``record_inputs``: every file and directory read, and its stamp when read
    # (:mod:`driftcheck.replay` repeats the run while they all stay the same)
    inputs: dict[str, tuple[int, int, int, int] | None] | None = None
    # unsaved texts by canonical path (the language server's buffers): judging and fixing
    # read these instead of the files
    buffers: dict[str, bytes] = field(default_factory=dict)
    # what the run inferred, said on stderr as ``note: ...``
    notes: list[str] = field(default_factory=list)
    # nothing to check: no pack recognises the tree and no universe recurs in it (exit 0)
    inert: bool = False
    # files holding only single checks, not analysed yet (:mod:`driftcheck.singles`), by
    # canonical path; how to analyse them; and the scans of those analysed since
    deferred: dict[str, DeferredFile] = field(default_factory=dict)
    analysis: Analysis | None = None
    completed: dict[str, FileScan] = field(default_factory=dict)

    @property
    def fatal(self) -> bool:
        """Whether the run could not do its job (no universe, where one was configured)."""
        return self.universe is None and not self.inert

    @property
    def root(self) -> Path:
        """The project root every canonical path is relative to."""
        return self.project.root

    @property
    def universes(self) -> dict[str, Universe]:
        """Every universe of the run, by key (sites name theirs)."""
        if self.every is None:
            return {}
        return {u.universe.key: u.universe for u in self.every.universes}

    def loaded_for(self, key: str) -> LoadedUniverse | None:
        """The loaded universe with ``key`` (the primary one for a site from an older cache)."""
        if self.every is None:
            return self.loaded
        for loaded in self.every.universes:
            if loaded.universe.key == key:
                return loaded
        return self.loaded

    @property
    def config(self) -> Config:
        """The configuration that applied."""
        return self.project.config

    def complete(self, wanted: Callable[[str], bool] | None = None) -> dict[str, FileScan]:
        """Analyse the deferred files (those ``wanted`` accepts, by canonical path: every one
        by default) and add their scans: what reads every site needs them (``discover``,
        ``gen-test``, a judgement that reports something, whose fixes and liveness read
        every same-role site). Their scans go to the cache, when the run has one. Returns the
        scans of the files that contribute (those with problems too)."""
        chosen = {rel: f for rel, f in self.deferred.items() if wanted is None or wanted(rel)}
        if not chosen or self.analysis is None:
            return {}
        for rel in chosen:
            del self.deferred[rel]
        analysis = self.analysis
        pending = [(f.path, rel, f.size) for rel, f in sorted(chosen.items())]
        with Scanner(analysis.spec, analysis.jobs) as scanner:
            for scan in scanner.scan(pending):
                rel = scan if isinstance(scan, str) else scan.path
                if analysis.cache is not None:
                    if isinstance(scan, str):
                        analysis.cache.put_empty(rel, chosen[rel].stamp)
                    else:
                        analysis.cache.put(rel, chosen[rel].stamp, scan)
                if isinstance(scan, str) or scan.is_empty():
                    continue
                self.completed[rel] = scan
                if not scan.problems:
                    self.scans[rel] = scan
        return {rel: self.completed[rel] for rel in chosen if rel in self.completed}

    def source_text(self, rel: str) -> str | None:
        """The text of file ``rel`` as the run saw it: its buffer, else the file (None when
        it cannot be read now)."""
        if rel in self.buffers:
            return _decoded_or_none(self.buffers[rel])
        try:
            return _decoded_or_none((self.root / rel).read_bytes())
        except OSError:
            return None


_WORKER: dict[str, ScanSpec] = {}


def _init_worker(spec: ScanSpec) -> None:
    _WORKER["spec"] = spec


def _scan_worker(item: tuple[str, str]) -> FileScan | str:
    """A file's scan, or just its path when it contributes nothing (most files: sending the
    path back costs a fraction of pickling an empty scan)."""
    scan = scan_path(item[0], item[1], _WORKER["spec"])
    return scan.path if scan.is_empty() else scan


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
    record_inputs: bool = False,
    progress: Callable[[int, int], None] | None = None,
    judge: bool = True,
    respect_gitignore: bool | None = None,
) -> CheckResult:
    """Run the linter over ``paths`` and return findings and problems (never raises for input;
    with ``judge`` false, the scans without the findings: a caller that judges files itself,
    as the language server does, skips judging the whole tree).

    ``select``/``ignore``/``extend_select`` are command-line selections (reported as
    ``--select`` etc. when they name no rule); the configuration's own apply beneath them.
    ``progress(scanned, to_scan)`` is called as files are scanned. ``respect_gitignore``
    (``--[no-]respect-gitignore``) replaces the configuration's setting.
    """
    paths = list(paths) or [Path(".")]
    cwd = (cwd or Path.cwd()).resolve()
    try:
        project = discover_project(paths, cwd=cwd, config_path=config_path)
    except ConfigError as exc:
        result = CheckResult(Project(cwd, cwd, Config()), None, None)
        result.problems.append(Problem(exc.path, exc.line, exc.message))
        return result
    if config is not None:
        project = replace(project, config=config)
    if respect_gitignore is not None:
        project = replace(
            project, config=replace(project.config, respect_gitignore=respect_gitignore)
        )
    try:
        codes = rule_selection(project.config, select, ignore, extend_select)
    except SelectionError as exc:
        result = CheckResult(project, None, None)  # the configuration it came from was read
        result.problems.append(Problem(exc.where, None, exc.message))
        return result
    result = CheckResult(
        project, None, None, warnings=[*project.warnings, *project.config.warnings]
    )
    if record_inputs:
        result.inputs = {}
    missing = [p for p in paths if not (cwd / p).exists() and not os.path.islink(cwd / p)]
    if len(missing) == len(paths):
        result.problems.extend(
            Problem(os.path.normpath(cwd / p), None, "no such file or directory") for p in missing
        )
        return result
    if not any(holds_python(cwd / p) for p in paths):
        # nothing to check: say so, rather than that the canonical is not in the tree
        result.problems.extend(
            Problem(
                project.rel(cwd / p), None, NO_PYTHON_UNDER if (cwd / p).is_dir() else NOT_PYTHON
            )
            for p in paths
        )
        return result
    targets = [cwd / p for p in paths]
    if use_cache:
        ScanCache.prepare(project.root)
    ahead = _walk_ahead(project, targets, jobs, record_inputs)
    try:
        options = RunOptions(jobs, use_cache, baseline, progress, judge)
        return _check_tree(result, targets, codes, ahead, options)
    finally:
        if ahead is not None:
            ahead.cancel()  # a run that ended before it needed the files


def _check_tree(
    result: CheckResult,
    targets: list[Path],
    codes: set[str],
    ahead: WalkAhead | None,
    options: RunOptions,
) -> CheckResult:
    """The run once its project is known: the universes, the files walked (ahead, when
    ``ahead`` was started), scanned and judged."""
    project = result.project
    try:
        every = load_universes(project.root, project.config)
    except UniverseError as exc:
        result.problems.append(Problem(exc.path, exc.line, exc.message))
        return result
    result.warnings.extend(every.warnings)
    result.notes.extend(every.notes)
    if result.inputs is not None:
        result.inputs.update((str(f), stamp_or_none(f)) for f in every.files)
    loaded = every.primary
    if loaded is None:
        return _nothing_to_check(result)
    result.universe, result.loaded, result.every = loaded.universe, loaded, every
    defining = {str(p.resolve()) for p in every.files}
    if any(str(t.resolve()) in defining for t in targets if t.is_file()):
        targets, result.expanded = scope_of(project, targets) or [project.root], True
    universes = tuple(u.universe for u in every.universes)
    spec = scan_spec(universes, project.config, single_filter(universes, project.config, codes))
    cache = None
    if options.use_cache:
        fingerprint = "\n".join(u.fingerprint() for u in universes)
        cache = ScanCache(
            ScanCache.location(project.root), fingerprint + "|" + project.config.digest()
        )
    result.analysis = Analysis(replace(spec, singles=None), options.jobs, cache)
    whole = result.expanded or any(t.resolve() == project.root for t in targets)
    walked = ahead.result() if ahead is not None else None
    if walked is None:
        walked = walk(project, targets, whole, result.inputs is not None)
    with Scanner(spec, options.jobs) as scanner:
        return _check_files(result, walked, scanner, cache, codes, options)


def _walk_ahead(
    project: Project, targets: list[Path], jobs: int | None, record: bool
) -> WalkAhead | None:
    """The walk of a run over directories, forked to run while the universes load (a run of
    one worker, or over named files, walks when it needs the files)."""
    if (jobs or default_jobs()) < 2 or not targets or not all(t.is_dir() for t in targets):
        return None
    whole = any(t.resolve() == project.root for t in targets)
    return WalkAhead.start(project, targets, whole, record)


def scan_spec(
    universes: tuple[Universe, ...], config: Config, singles: SingleCheckFilter | None = None
) -> ScanSpec:
    """What every file of a run is scanned for: the universes (before any family is inferred
    from the scans), their prefilter, the gates' registry calls, the model-file marker and the
    pack's role operations; with ``singles``, files holding only single checks are deferred."""
    return ScanSpec(
        universes,
        build_prefilter(universes),
        tuple(g.register_call for g in config.gates),
        config.model_marker,
        tuple(sorted(config.operations.items())),
        singles,
        tuple(build_prefilter(u) for u in universes) if len(universes) > 1 else (),
    )


def single_filter(
    universes: tuple[Universe, ...], config: Config, codes: set[str]
) -> SingleCheckFilter | None:
    """The filter that defers files holding only single checks, or None when one of the
    selected rules reads single checks anywhere (:meth:`Rule.reads_single_checks`)."""
    rules = [CATALOGUE[code]() for code in sorted(codes) if code in CATALOGUE]
    if not universes or any(rule.reads_single_checks(universes, config) for rule in rules):
        return None
    return build_single_filter(universes)


def single_check_directories(result: CheckResult, codes: set[str]) -> set[str]:
    """The directories whose deferred files the selected rules read, from the other files'
    scans (:meth:`Rule.single_check_directories`)."""
    assert result.universe is not None
    run = RunIndex(result.scans, result.universes, result.config, result.universe)
    directories: set[str] = set()
    for code in sorted(codes):
        if code in CATALOGUE:
            directories |= CATALOGUE[code]().single_check_directories(run)
    return directories


def rule_selection(
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


def _check_files(  # noqa: C901 - the scan pipeline in one place: walk, context, cache, workshare, judge
    result: CheckResult,
    walked: Walked,
    scanner: Scanner,
    cache: ScanCache | None,
    codes: set[str],
    options: RunOptions,
) -> CheckResult:
    assert result.universe is not None
    # per-file state is what grows with the tree (47,000 files): nothing per file is kept past
    # the walk unless the file contributes something
    inputs = result.inputs
    if inputs is not None and walked.stamps is not None:
        inputs.update(walked.stamps)
    result.problems.extend(walked.problems)
    named = walked.named
    if cache is not None:
        cache.load()
    pending: list[tuple[str, str, int]] = []
    stats: dict[str, Stamp] = {}
    defers = scanner.spec.singles is not None
    walked_count = 0
    unreadable: set[str] = set()
    for text, rel, stamped in walked.files:
        wanted = named is None or rel in named
        walked_count += wanted
        if isinstance(stamped, str):
            if wanted:
                unreadable.add(rel)
                result.problems.append(Problem(rel, None, stamped))
            continue
        stat = Stamp(*stamped)
        cached = cache.get(rel, stat) if cache is not None else None
        if cached is EMPTY:
            continue
        if isinstance(cached, FileScan) and cached.deferred:
            if defers:
                result.deferred[rel] = DeferredFile(text, stat.size, stat)
                continue
            cached = None  # this run reads every single check: analyse it now
        if cached is not None:
            result.scans[rel] = cached  # type: ignore[assignment]
        else:
            pending.append((text, rel, stat.size))
            if cache is not None or defers:
                stats[rel] = stat
    del walked.files[:]
    paths = {rel: text for text, rel, _ in pending} if defers else {}
    progress = options.progress
    for scanned, scan in enumerate(scanner.scan(pending), 1):
        if progress is not None:
            progress(scanned, len(pending))
        if isinstance(scan, str):
            if cache is not None:
                cache.put_empty(scan, stats.pop(scan))
            else:
                stats.pop(scan, None)
            continue
        stamp = stats.pop(scan.path) if scan.path in stats else None
        if cache is not None and stamp is not None:
            cache.put(scan.path, stamp, scan)
        if scan.deferred and stamp is not None:
            result.deferred[scan.path] = DeferredFile(paths[scan.path], stamp.size, stamp)
            continue
        if scan.is_empty():
            continue
        result.scans[scan.path] = scan
        if (named is None or scan.path in named) and scan.problems:
            unreadable.add(scan.path)
            result.problems.extend(scan.problems)
        if named is None or scan.path in named:
            result.problems.extend(scan.syntax_errors)
    result.files_checked = walked_count - len(unreadable)
    result.files_unreadable = len(unreadable)
    if result.deferred:
        read_deferred(result, codes, named)
    judged = judge_scans(result, codes, options.baseline, named, judge=options.judge)
    if cache is not None:
        if cache.rejected:
            result.warnings.append(
                f"ignored {cache.rejected} corrupted or tampered cache entr{'y' if cache.rejected == 1 else 'ies'} in {cache.file}"
            )
        cache.save()
    return judged


def read_deferred(result: CheckResult, codes: set[str], named: set[str] | None) -> None:
    """Analyse the deferred files the selected rules read: every one when, its families
    inferred (from copies, which a deferred file never holds), a rule reads single checks
    anywhere; else those of the directories they name."""
    _infer_missing_families(result)
    if result.every is not None:
        universes = tuple(u.universe for u in result.every.universes)
        if single_filter(universes, result.config, codes) is None:
            _count_problems(result, result.complete(), named)
            return
    directories = single_check_directories(result, codes)
    _count_problems(result, result.complete(lambda r: posixpath.dirname(r) in directories), named)


def _count_problems(
    result: CheckResult, scans: dict[str, FileScan], named: set[str] | None
) -> None:
    """Report the problems of deferred files analysed since the walk (a requested file only)."""
    for rel, scan in sorted(scans.items()):
        if named is not None and rel not in named:
            continue
        result.problems.extend(scan.syntax_errors)  # the file was still checked
        if scan.problems:
            result.problems.extend(scan.problems)
            result.files_checked -= 1
            result.files_unreadable += 1


def judge_scans(
    result: CheckResult,
    codes: set[str],
    baseline: Baseline | None,
    named: set[str] | None = None,
    latent: dict[str, dict[str, str]] | None = None,
    reads: AttributeReads | None = None,
    *,
    judge: bool = True,
) -> CheckResult:
    """Judge the scans ``result`` holds (every contributing file of the tree: cross-file
    rules read them all) and keep the findings of the ``named`` files (None: every file;
    with ``judge`` false, none is judged: the families are inferred, and nothing else).

    ``latent`` (the per-model gates' answer) and ``reads`` (what other files read of the
    sites' attributes) are given when the caller already has them for these scans (the
    language server keeps them between edits); they are computed otherwise.
    """
    _infer_missing_families(result)
    if _configured_canonical_unusable(result):
        return result
    if result.every is not None and result.every.inferred and not _keep_inferred(result):
        return _nothing_to_check(result)
    findings = _judged(result, codes, named, latent, reads) if judge else []
    if result.deferred and any(CATALOGUE[f.code].findings_read_every_site for f in findings):
        # a finding whose fix or liveness reads every site of the run: read the files
        # deferred as holding only single checks, and judge again
        _count_problems(result, result.complete(), named)
        findings = _judged(result, codes, named)
    findings += _unchecked_families(result, codes)
    if named is not None:
        result.scans = {rel: scan for rel, scan in result.scans.items() if rel in named}
    if baseline is not None:
        kept = [f for f in findings if not baseline.contains(f)]
        result.baselined = len(findings) - len(kept)
        findings = kept
    result.findings = sorted(findings, key=lambda f: (f.path, f.span.line, f.span.col, f.code))
    result.problems.extend(_policy_problems(result))
    result.problems.sort(key=lambda p: (p.path, p.line or 0))
    return result


def _policy_problems(result: CheckResult) -> list[Problem]:
    """Policies that name a member, a file or a symbol the tree does not have."""
    if not result.config.policies:
        return []
    from .policies import policy_problems

    members = {value for universe in result.universes.values() for value in universe.values}
    files = [*result.scans, *result.deferred]
    return policy_problems(result.config, result.root, members, files, result.buffers)


def _judged(
    result: CheckResult,
    codes: set[str],
    named: set[str] | None,
    latent: dict[str, dict[str, str]] | None = None,
    reads: AttributeReads | None = None,
) -> list[Finding]:
    """The findings of the ``named`` files (None: every file), every scan read."""
    root, config = result.root, result.config
    universe = result.universe
    assert universe is not None
    if latent is None:
        latent = latent_members(root, config, universe, result.scans)
    if reads is None:
        reads = AttributeReads(
            {rel: scan.classes for rel, scan in result.scans.items()}, result.source_text
        )
    result.reads = reads
    judge = Judge(result.universes, universe, config, codes, latent, reads)
    judge.prepare(result.scans)
    findings: list[Finding] = []
    for rel in sorted(result.scans):
        if named is None or rel in named:
            findings.extend(judge.judge_file(result.scans[rel]))
    return findings


def _unchecked_families(result: CheckResult, codes: set[str]) -> list[Finding]:
    """The selected rules' findings about configured families left without a canonical (none
    found after following, or one outside the interpreter), where no family was inferred in
    its place; one warning per such family when no selected rule reports it."""
    every = result.every
    if every is None or not every.unresolved:
        return []
    inferred = {
        u.universe.enum_module
        for u in every.universes
        if any(f.inferred for f in u.universe.families)
    }
    unchecked = [
        u
        for u in every.unresolved
        if u.unreadable or u.canonical.predicate.partition(":")[0] not in inferred
    ]
    findings = [
        f for code in sorted(codes) for f in CATALOGUE[code]().canonical_findings(unchecked)
    ]
    reported = {f.symbol for f in findings}
    for entry in unchecked:
        result.warnings = [w for w in result.warnings if entry.error.message not in w]
        name = entry.canonical.predicate.rpartition(":")[2]
        if name not in reported:
            family = entry.canonical.label or name
            result.warnings.append(f"the {family} family was not checked: {entry.error.message}")
    return findings


def _decoded_or_none(data: bytes) -> str | None:
    """A scanned file's text for the liveness check (None when it cannot be decoded)."""
    try:
        return decode_source(data)
    except (UnicodeDecodeError, LookupError, SyntaxError):
        return None


def _configured_canonical_unusable(result: CheckResult) -> bool:
    """A canonical the user configured was not found and no family could be inferred in its
    place: exit 2 naming it, rather than a green run that checked nothing."""
    every, config = result.every, result.config
    if every is None or not every.missing or config.canonicals_from_pack:
        return False
    if any(u.universe.families for u in every.universes):
        return False
    first = every.missing[0]
    line = config.lines.get("canonical")
    where = f"{config.source}" if config.source else first.path
    result.problems.append(
        Problem(
            where,
            line,
            f"{first.message}, and no family could be inferred from the tree's copies instead",
        )
    )
    result.warnings = [w for w in result.warnings if first.message not in w]
    result.universe = None
    return True


NO_UNIVERSE = (
    "no pack recognises this tree and nothing is configured, and no enum or string setting "
    "has members that recur in enumerations across files: nothing to check (name a canonical "
    "in [tool.driftcheck] to check one)"
)


def _nothing_to_check(result: CheckResult) -> CheckResult:
    """A tree with nothing configured, recognised or inferred: say so; exit 0."""
    result.notes.append(NO_UNIVERSE)
    result.universe, result.loaded, result.inert = None, None, True
    result.scans = {}
    return result


def _keep_inferred(result: CheckResult) -> bool:
    """For a tree no pack recognises: put the inferred universes that have a family first
    (the primary one among them), say what was inferred, and whether any was."""
    every = result.every
    assert every is not None
    kept = [u for u in every.universes if u.universe.families]
    if not kept:
        return False
    every.universes = kept + [u for u in every.universes if not u.universe.families]
    result.loaded, result.universe = kept[0], kept[0].universe
    for loaded in kept:
        universe = loaded.universe
        result.notes.append(
            f"no pack recognises this tree: inferred the universe {universe.name} "
            f"({universe.enum_path}) and " + _family_origins(universe.families)
        )
    return True


def _family_origins(families: tuple[Family, ...]) -> str:
    """``its family {a, b} from the enumerations of its members across files`` for inferred
    families; ``found its family {a, b} in its helper Owner.name (path:line)`` for the
    tree's own helpers (:func:`driftcheck.universe.candidates.helper_canonicals`)."""
    inferred = [f for f in families if f.inferred]
    found = [f for f in families if not f.inferred]
    parts = []
    if inferred:
        labels = ", ".join(f.label for f in inferred)
        plural = "y" if len(inferred) == 1 else "ies"
        parts.append(
            f"its famil{plural} {labels} from the enumerations of its members across files"
        )
    if found:
        helpers = ", ".join(
            "{"
            + ", ".join(f.members)
            + "} in its helper "
            + (f"{f.owner}." if f.owner else "")
            + f"{f.name} ({f.path}:{f.line})"
            for f in found
        )
        parts.append(f"found its famil{'y' if len(found) == 1 else 'ies'} {helpers}")
    return ", and ".join(parts)


def _infer_missing_families(result: CheckResult) -> None:
    """Give every universe without a canonical family the families its copies agree on."""
    if result.every is None:
        return
    for loaded in result.every.universes:
        if loaded.universe.families:
            continue
        key = loaded.universe.key
        sites = (s for scan in result.scans.values() for s in scan.sites if s.universe == key)
        found = {f.qualified for u in result.every.universes for f in u.universe.families}
        wanted = [
            (c.predicate, c.label) for c in result.config.canonicals if c.predicate not in found
        ]
        families = infer_families(loaded.universe, sites, wanted)
        loaded.universe = replace(loaded.universe, families=families)
        for family in families:
            result.warnings.append(
                f"no helper defines {family.label}: {family.provenance()} (name a canonical "
                "in [tool.driftcheck], or let `driftcheck --fix --fix-style helper "
                f"--create-helper` write {family.name}())"
            )
    if result.loaded is not None:
        result.universe = result.loaded.universe


class Scanner:
    """Scans files serially, or shared with forked helpers (a process pool where the
    platform cannot fork)."""

    def __init__(self, spec: ScanSpec, jobs: int | None) -> None:
        self.spec = spec
        self.workers = jobs or default_jobs()
        self.pool: Any = None

    def _start(self, workers: int) -> Any:  # pragma: no cover - platforms without fork
        import multiprocessing

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        return context.Pool(workers, initializer=_init_worker, initargs=(self.spec,))

    def scan(self, pending: list[tuple[str, str, int]]) -> Iterator[FileScan | str]:
        """Scan results as they come (in no particular order): a file's scan, or just its
        path when it contributes nothing. ``pending`` holds (path, relative path, size)."""
        workers = min(self.workers, max(1, len(pending) // 64))
        if workers <= 1 or len(pending) < PARALLEL_THRESHOLD:
            for path, rel, size in pending:
                yield scan_path(path, rel, self.spec, size)
            return
        # large files first so workers finish together
        ordered = sorted(pending, key=lambda item: -item[2])
        if hasattr(os, "fork") and os.name == "posix":
            chunks = [ordered[i : i + CHUNK] for i in range(0, len(ordered), CHUNK)]
            shared = Shared(chunks, self._scan_item, _contributes, workers - 1)
            for (_, rel, _), scan in shared.results():
                yield rel if scan is None or scan.is_empty() else scan
            return
        if self.pool is None:  # pragma: no cover - platforms without fork
            self.pool = self._start(workers)
        items = [(path, rel) for path, rel, _ in ordered]
        yield from self.pool.imap_unordered(_scan_worker, items, chunksize=CHUNK)

    def _scan_item(self, item: tuple[str, str, int]) -> FileScan:
        path, rel, size = item
        return scan_path(path, rel, self.spec, size)

    def __enter__(self) -> Scanner:
        # Scanning allocates many short-lived AST objects and few cycles: collect the young
        # generation less often, and never walk what was imported (``freeze``; forked workers
        # inherit both). About 7% of a cold run.
        self._thresholds = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(GC_YOUNG_THRESHOLD, *self._thresholds[1:])
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool.join()
        gc.set_threshold(*self._thresholds)
        gc.unfreeze()


def _contributes(scan: FileScan) -> bool:
    return not scan.is_empty()
