"""The project a run is about: its root, the one configuration that applies, and its paths.

Computed once per run from the paths given and the working directory, so that every way of
invoking driftcheck — a bare run from the repository root, a package directory, one file, a
subdirectory, pre-commit's list of changed files — sees the same root, the same
configuration and the same name for every file:

1. ``--config FILE`` replaces the configuration; the root is then found as rules 3 and 4 say
   (FILE's own paths are relative to it).
2. Otherwise the configuration file (``driftcheck.toml``, ``.driftcheck.toml``, or a
   ``pyproject.toml`` with a ``[tool.driftcheck]`` table, in that order) nearest to the paths,
   walking up to the repository root; when there is none, one in the repository root's
   ``python/`` or ``src/`` (SGLang keeps its package in ``python/``, so a bare run from the
   root and a run inside ``python/`` find the same file). The root is the directory holding
   it. A second configuration that a run passes over (the repository root's, when
   ``python/`` has one too) is named in a warning: keep one per project. A configuration
   anywhere else (``sglang/srt/pyproject.toml``) would govern the runs started below it and
   not the others, so it is an error naming it (:func:`misplaced`), whatever the invocation:
   found on the way up from the paths, or by the walk below the root. Outside a repository
   the outermost configuration above the paths is the project's, and one inside a package
   (its directory holds ``__init__.py``) is misplaced.
3. Without configuration: the source root of the modules a pack recognises its tree by (its
   ``[detect] modules``: the directory their dotted path starts from, ``python/`` in an
   SGLang checkout, the wheel's directory for an unpacked wheel), found walking up from the
   paths and, at the repository root, through ``python/`` and ``src/``; the packs found
   there are the run's (:func:`detect_packs`). Then the configured canonical's module.
4. Otherwise the repository root; otherwise the directory above the paths' top-level package;
   otherwise the paths' common directory.

Every file has one *canonical path*: relative to the root, ``/``-separated (``../`` for a file
outside it). Excludes, policies, suppressions, the cache and baseline keys use it. What is
printed is the *display path*: relative to the working directory when the file lies under it
(clickable from the shell), else the canonical path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .config import (
    Config,
    ConfigError,
    default_config,
    has_driftcheck_table,
    load_config,
    pack_detections,
)

SOURCE_PREFIXES = ("", "python", "src")
SOURCE_DIRS = ("python", "src")
CONFIG_NAMES = ("driftcheck.toml", ".driftcheck.toml", "pyproject.toml")
VCS_MARKERS = (".git", ".hg")


@dataclass(frozen=True)
class Project:
    """Where a run's files live and what configuration governs them."""

    root: Path
    cwd: Path
    config: Config
    config_file: Path | None = None
    repository: Path | None = None
    reason: str = "paths"  # which rule of the module docstring chose the root
    warnings: tuple[str, ...] = field(default=(), compare=False)
    # configurations passed over on the way up from the paths: each one an error (misplaced)
    misplaced: tuple[Path, ...] = field(default=(), compare=False)

    def top(self) -> Path:
        """Where a project's configuration may sit (with its ``python/`` and ``src/``): the
        repository root, else the project root."""
        return self.repository or self.root

    def may_configure(self, directory: Path) -> bool:
        """Whether a configuration in ``directory`` is at the project's top (or is the one
        this run uses), not below it."""
        if self.config_file is not None and directory == self.config_file.parent:
            return True
        top = self.top()
        return directory == top or (directory.parent == top and directory.name in SOURCE_DIRS)

    def rel(self, path: Path | str) -> str:
        """The canonical path of ``path`` (absolute, or relative to the working directory)."""
        absolute = os.path.normpath(os.path.join(self.cwd, path))
        prefix = str(self.root).rstrip(os.sep) + os.sep
        if absolute.startswith(prefix):
            return absolute[len(prefix) :].replace(os.sep, "/")
        return Path(os.path.relpath(absolute, self.root)).as_posix()

    def path_of(self, rel: str) -> Path:
        """The absolute path of canonical path ``rel``."""
        return Path(os.path.normpath(self.root / rel))

    def display(self, rel: str) -> str:
        """How output names canonical path ``rel``: relative to the working directory when the
        file is under it, else ``rel`` itself."""
        absolute = str(self.path_of(rel))
        prefix = str(self.cwd).rstrip(os.sep) + os.sep
        if absolute.startswith(prefix):
            return absolute[len(prefix) :].replace(os.sep, "/")
        return rel

    def display_root(self) -> str:
        """The root as output names it: relative to the working directory when under it."""
        if self.root == self.cwd:
            return "."
        if self.root.is_relative_to(self.cwd):
            return self.root.relative_to(self.cwd).as_posix()
        return str(self.root)

    def show(self, path: str) -> str:
        """How output names any path a message carries: a canonical path as :meth:`display`
        does, an absolute one relative to the working directory when under it, and a
        non-path source (``--select``) as it is."""
        if path.startswith("--") or not path:
            return path
        if os.path.isabs(path):
            prefix = str(self.cwd).rstrip(os.sep) + os.sep
            return path[len(prefix) :] if path.startswith(prefix) else path
        return self.display(path)


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
    rel = Path(os.path.relpath(path, root)).with_suffix("")
    parts = [part for part in rel.parts if part not in ("..", ".")]
    if parts and parts[0] in SOURCE_DIRS and len(parts) > 1:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def relpath(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators (paths outside stay absolute)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def anchor_of(paths: Sequence[Path], cwd: Path) -> Path:
    """The directory the search starts from: the common directory of the existing paths."""
    existing = [p for p in (Path(os.path.join(cwd, p)).resolve() for p in paths) if p.exists()]
    if not existing:
        return cwd
    dirs = [str(p if p.is_dir() else p.parent) for p in existing]
    return Path(os.path.commonpath(dirs))


def repository_root(start: Path) -> Path | None:
    """The nearest ancestor of ``start`` (itself included) holding ``.git`` or ``.hg``."""
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in VCS_MARKERS):
            return directory
    return None


def config_in(directory: Path) -> Path | None:
    """The driftcheck configuration file of ``directory``, if it has one."""
    for name in CONFIG_NAMES:
        candidate = directory / name
        if candidate.is_file() and (name != "pyproject.toml" or has_driftcheck_table(candidate)):
            return candidate
    return None


def _walk_up(anchor: Path, repository: Path | None) -> list[Path]:
    """``anchor`` and its ancestors, up to the repository root (or the filesystem root)."""
    chain = [anchor]
    for parent in anchor.parents:
        if repository is not None and not parent.is_relative_to(repository):
            break
        chain.append(parent)
    return chain


def _configs_for(anchor: Path, repository: Path | None) -> tuple[list[Path], list[Path]]:
    """Every configuration a run from ``anchor`` could use, nearest first, and those it
    passes over as misplaced: in a repository, any not at its root or its ``python/`` or
    ``src/``; outside one, any inside a package and any below the outermost."""
    found = [c for d in _walk_up(anchor, repository) if (c := config_in(d)) is not None]
    if repository is None:
        misplaced = [c for c in found if (c.parent / "__init__.py").is_file()]
        usable = [c for c in found if c not in misplaced]
        return usable[-1:], [*misplaced, *usable[:-1]]

    def at_top(config: Path) -> bool:
        directory = config.parent
        return directory == repository or (
            directory.parent == repository and directory.name in SOURCE_DIRS
        )

    misplaced = [c for c in found if not at_top(c)]
    found = [c for c in found if at_top(c)]
    found += [
        c for d in SOURCE_DIRS if (c := config_in(repository / d)) is not None and c not in found
    ]
    return found, misplaced


def table_line(path: Path) -> int | None:
    """The line of a configuration file's ``[tool.driftcheck]`` table (a ``driftcheck.toml``:
    its first line; None when neither is found)."""
    if path.name != "pyproject.toml":
        return 1
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for number, text in enumerate(lines, 1):
        stripped = text.strip().replace(" ", "")
        if stripped.startswith(("[tool.driftcheck", "[[tool.driftcheck", "tool.driftcheck")):
            return number
    return None


def misplaced(project: Project, path: Path) -> ConfigError:
    """The error for a configuration below the project's top: it would apply to the runs
    started below it and not to the others, so it is read by none, and said so."""
    what = "[tool.driftcheck]" if path.name == "pyproject.toml" else path.name
    if project.config_file is not None:
        home = f": {project.show(str(project.config_file))} is this project's"
        advice = "move its settings there, or delete it"
    else:
        where = "the repository root" if project.repository is not None else "the project root"
        home = f", at {where} or its python/ or src/"
        advice = "move it there, or delete it"
    return ConfigError(
        project.rel(path),
        f"{what} below the project root is not read (one configuration per project{home}): "
        f"{advice}",
        table_line(path),
    )


def _passed_over(configs: list[Path], cwd: Path) -> list[str]:
    """Warnings naming the configurations a run does not use."""

    def shown(path: Path) -> str:
        return os.path.relpath(path, cwd) if path.is_relative_to(cwd) else str(path)

    if len(configs) < 2:
        return []
    used = configs[0]
    return [
        f"{shown(other)}: [tool.driftcheck] not used: {shown(used)} is nearer to the paths "
        "(keep one configuration per project)"
        for other in configs[1:]
    ]


def source_root(anchor: Path, modules: Iterable[str], repository: Path | None) -> Path | None:
    """The directory the dotted ``modules`` are reached from, searching up from ``anchor``.

    A module found through ``python/`` or ``src/`` of an ancestor gives that subdirectory, so
    the answer is the same from the repository root and from inside the package.
    """
    modules = list(modules)
    stop = repository
    for directory in (anchor, *anchor.parents):
        for prefix in SOURCE_PREFIXES:
            base = directory / prefix if prefix else directory
            for module in modules:
                parts = module.split(".")
                if (
                    base.joinpath(*parts).with_suffix(".py").is_file()
                    or base.joinpath(*parts, "__init__.py").is_file()
                ):
                    return base
        if stop is not None and directory == stop:
            return None
    return None


def package_parent(anchor: Path) -> Path | None:
    """The directory above the top-level package holding ``anchor``, if it is in one."""
    directory = anchor
    if not (directory / "__init__.py").is_file():
        return None
    while (directory.parent / "__init__.py").is_file() and directory.parent != directory:
        directory = directory.parent
    return directory.parent


def detect_packs(
    anchor: Path,
    repository: Path | None,
    *,
    here_only: bool = False,
    asked: Path | None = None,
) -> tuple[tuple[str, ...], Path | None]:
    """The packs whose tree ``anchor`` is in, and the source root their modules are found
    from: the nearest such root searching up from ``anchor`` (then through the repository's
    ``python/`` and ``src/``); the packs recognised at that root whose package holds the
    paths asked about (``asked``, default ``anchor``: their common directory), every one
    when none holds them (a run over the root, or over files outside every pack's package).
    ``here_only``: look in ``anchor`` (and its ``python/`` and ``src/``) alone, as for a
    configuration's directory."""
    found: dict[str, Path] = {}
    detections = pack_detections()
    for name, modules in detections.items():
        stop = anchor if here_only else repository
        base = source_root(anchor, modules, stop)
        if base is None and repository is not None and not here_only:
            base = source_root(repository, modules, repository)
        if base is not None:
            found[name] = base
    if not found:
        return (), None
    nearest = max(found.values(), key=lambda base: len(base.parts))
    packs = tuple(name for name, base in found.items() if base == nearest)
    where = asked or anchor
    holding = tuple(
        name
        for name in packs
        if any(where.is_relative_to(tree) for tree in package_dirs(nearest, detections[name]))
    )
    return holding or packs, nearest


def package_dirs(base: Path, modules: Iterable[str]) -> tuple[Path, ...]:
    """The directories of the top-level packages of the dotted ``modules`` under ``base``
    (``base/sglang`` for ``sglang.srt.layers.moe.utils``), once each."""
    return tuple(dict.fromkeys(base / module.split(".", 1)[0] for module in modules))


def scope_trees(project: Project) -> tuple[Path, ...]:
    """The packages of the run's packs: the top-level package of each pack's ``[detect]``
    modules, where it is found under the root (its ``python/`` or ``src/`` included):
    ``sglang/``, the code a pack describes and its universes' sites live in. Empty without a
    pack (``pack = "none"``, an inferred universe, canonicals configured alone): no package
    is known, and a run's context is the whole root."""
    detections = pack_detections()
    trees: dict[Path, None] = {}
    for name in project.config.pack.split("+"):
        for module in detections.get(name, ()):
            parts = module.split(".")
            for prefix in SOURCE_PREFIXES:
                base = project.root / prefix if prefix else project.root
                if (
                    base.joinpath(*parts).with_suffix(".py").is_file()
                    or base.joinpath(*parts, "__init__.py").is_file()
                ):
                    trees[base / parts[0]] = None
                    break
    return tuple(trees)


def scope_of(project: Project, targets: Sequence[Path]) -> list[Path] | None:
    """The packages a run over ``targets`` reads beside them: each of :func:`scope_trees`
    that holds one of them, when every target lies in one (None: the whole root, for a run
    over the root or over files outside every pack's package). A sibling tree no target is
    in is not part of the run: its files are neither walked nor scanned. Role evidence
    (sibling model files, the sites whose value controls the same operations, a package's
    consensus) reads the sites of the site's own universe, which a pack's package holds;
    the canonicals' and the gates' modules are read by the universe loader wherever they
    are."""
    trees = scope_trees(project)
    if not trees:
        return None
    chosen: dict[Path, None] = {}
    for target in targets:
        path = Path(os.path.normpath(os.path.join(project.cwd, target)))
        holding = [tree for tree in trees if path.is_relative_to(tree)]
        if not holding:
            return None
        chosen.update(dict.fromkeys(holding))
    return list(chosen)


def discover_project(
    paths: Sequence[Path],
    *,
    cwd: Path | None = None,
    config_path: Path | None = None,
    default: Config | None = None,
) -> Project:
    """The project for ``paths`` run from ``cwd`` (raises :class:`ConfigError` for a bad or
    missing configuration file)."""
    cwd = (cwd or Path.cwd()).resolve()
    anchor = anchor_of(paths, cwd)
    repository = repository_root(anchor)
    if config_path is not None:
        explicit = Path(os.path.join(cwd, config_path))
        if not explicit.is_file():
            raise ConfigError(str(config_path), "configuration file not found")
        packs, _ = detect_packs(anchor, repository)
        config = load_config(explicit, packs)
        root, reason = _root_without_config(anchor, repository, config)
        return Project(root, cwd, config, explicit.resolve(), repository, f"--config, {reason}")
    configs, passed = _configs_for(anchor, repository)
    found = configs[0] if configs else None
    warnings = tuple(_passed_over(configs, cwd))
    misplaced = tuple(passed)
    if found is not None:
        packs, _ = detect_packs(found.parent, repository, here_only=True, asked=anchor)
        config = load_config(found, packs)
        return Project(
            found.parent, cwd, config, found, repository, "configuration", warnings, misplaced
        )
    if default is not None:
        root, reason = _root_without_config(anchor, repository, default)
        return Project(root, cwd, default, None, repository, reason, warnings, misplaced)
    packs, base = detect_packs(anchor, repository)
    config = default_config(packs)
    if base is not None:
        return Project(base, cwd, config, None, repository, "pack modules", warnings, misplaced)
    root, reason = _root_without_config(anchor, repository, config)
    return Project(root, cwd, config, None, repository, reason, warnings, misplaced)


def _root_without_config(anchor: Path, repository: Path | None, config: Config) -> tuple[Path, str]:
    """Rules 3 and 4: the canonical module's source root, the repository, the package's
    parent, the paths' directory."""
    modules = [spec.split(":", 1)[0] for spec in config.canonical]
    if config.enum:
        modules.append(config.enum.split(":", 1)[0])
    base = source_root(anchor, modules, repository)
    if base is None and repository is not None:
        base = source_root(repository, modules, repository)
    if base is not None:
        return base, "canonical module"
    if repository is not None:
        return repository, "repository"
    parent = package_parent(anchor)
    if parent is not None:
        return parent, "package"
    return anchor, "paths"
