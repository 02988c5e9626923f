"""``[tool.driftcheck]`` configuration, on top of *packs* of defaults chosen by the tree.

Configuration is data: which predicates are canonical (each with its label), the enum to
infer families over when none is found, which names hold the backend's value or a holder of
it, which paths to include or exclude, per-site policies and per-model gates. A pack
(``driftcheck/packs/NAME.toml``, the same keys) supplies the defaults; a key set in
``[tool.driftcheck]`` replaces the pack's. Without a ``pack`` key, the packs are the ones
whose ``[detect]`` modules the tree holds (:func:`driftcheck.project.detect_packs`), none
when it holds none; ``pack = "NAME"`` chooses one, ``pack = "none"`` starts from nothing.
Unknown keys produce a warning naming the key; a malformed file is a :class:`ConfigError`
(exit code 2).
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PACKS_DIR = Path(__file__).parent / "packs"
NO_PACK = "none"

KNOWN_KEYS = {
    "pack",
    "canonical",
    "label",
    "enum",
    "receivers",
    "model-marker",
    "value-attributes",
    "include",
    "exclude",
    "select",
    "ignore",
    "extend-select",
    "min-overlap",
    "fix-style",
    "policies",
    "gates",
    "family-implies",
    "roles",
    "verify",
    "implementation-words",
    "respect-gitignore",
}

FIX_STYLES = ("minimal", "helper")
SITE_KINDS = ("property", "allowlist", "dispatch")
POLICY_TABLE = "tool.driftcheck.policies"
POLICY_KEYS = {"path", "symbol", "allow-missing", "allow-extra", "fix-style", "reason", "kind"}
GATE_KEYS = {"member", "registry", "register-call"}
CANONICAL_KEYS = {"predicate", "label", "universe", "seeds"}


class ConfigError(Exception):
    """A configuration that cannot be used; carries the file and, where known, the line."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.message = message


@dataclass(frozen=True)
class SitePolicy:
    """A per-site decision from configuration: accepted divergences and fix style."""

    path: str
    symbol: str | None = None
    allow_missing: frozenset[str] = frozenset()
    allow_extra: frozenset[str] = frozenset()
    fix_style: str | None = None
    reason: str = ""
    kind: str | None = None
    # where it is written: ``policies[N]`` and its table's line in the configuration file
    where: str = field(default="", compare=False, repr=False)
    line: int | None = field(default=None, compare=False, repr=False)

    def matches(self, path: str, symbol: str) -> bool:
        """Whether this policy applies to a site at ``path`` in ``symbol``."""
        if not fnmatch.fnmatch(path, self.path):
            return False
        return self.symbol is None or self.symbol == symbol or symbol.endswith("." + self.symbol)


@dataclass(frozen=True)
class Gate:
    """A member enabled per model through a registry (``deepep_v2`` via ``_DEEPEP_V2_MODELS``)."""

    member: str
    registry: str
    register_call: str


@dataclass(frozen=True)
class Canonical:
    """One canonical predicate, ``module:qualname``, and how messages name its family.

    A pack names a family by what it is, so that the next release that renames, moves or
    splits the predicate is still checked: ``universe`` is the setting it ranges over
    (``module:Class.attribute``, or ``module:Enum``), ``seeds`` other names its predicates
    have gone by (``use_mori_epv1_kernels``; ``activation_format == Format.Batched`` for a
    property returning a member of another enum). :mod:`driftcheck.universe.follow` reads them.
    """

    predicate: str
    label: str = ""
    universe: str = ""
    seeds: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    """Resolved settings for one run (the dataclass defaults are an empty pack)."""

    canonicals: tuple[Canonical, ...] = ()
    label: str = ""
    enum: str | None = None
    receivers: tuple[str, ...] = ()
    model_marker: str = ""
    pack: str = NO_PACK  # the packs beneath the configuration, ``+``-joined (``none``: no pack)
    canonicals_from_pack: bool = False
    value_attributes: tuple[str, ...] = ()
    # words naming one implementation of the members (a kernel library: a conjunct naming one
    # makes the site a dispatch)
    implementation_words: tuple[str, ...] = ()
    include: tuple[str, ...] = ("*.py", "*.pyi")
    exclude: tuple[str, ...] = ()
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    min_overlap: int = 2
    fix_style: str = "minimal"
    policies: tuple[SitePolicy, ...] = ()
    gates: tuple[Gate, ...] = ()
    # canonical -> conditions every member of its family implies (``moe_ep_size > 1``): an
    # earlier ``if <condition>: return`` (or ``elif`` arm) has already taken the whole family
    family_implies: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # role operation -> the reach keys that are it (``tp-reduce``: the calls completing a TP
    # sum): what a site's value can decide, by the codebase's own names
    roles: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the verifier's table for this codebase (stand-ins, substitutes, arms), validated by
    # :mod:`driftcheck.runtime_verify.pack` when a layer run reads it
    verify: dict[str, Any] = field(default_factory=dict, compare=False)
    # whether a walk honours .gitignore and .ignore files (ruff's setting and default)
    respect_gitignore: bool = True
    source: str | None = None
    lines: dict[str, int] = field(default_factory=dict, compare=False)  # key -> line in source
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def operations(self) -> dict[str, str]:
        """Each reach key the pack names, mapped to its role operation."""
        return {key: operation for operation, keys in self.roles for key in keys}

    @property
    def canonical(self) -> tuple[str, ...]:
        """The canonical predicates' ``module:qualname`` specs."""
        return tuple(c.predicate for c in self.canonicals)

    def policy_for(self, path: str, symbol: str) -> SitePolicy | None:
        """The first policy matching a site, if any."""
        for policy in self.policies:
            if policy.matches(path, symbol):
                return policy
        return None

    def is_included(self, relpath: str) -> bool:
        """Whether ``relpath`` (a canonical path) matches an ``include`` pattern."""
        name = relpath.rsplit("/", 1)[-1]
        return any(
            fnmatch.fnmatch(relpath, pattern) or fnmatch.fnmatch(name, pattern)
            for pattern in self.include
        )

    def is_excluded(self, relpath: str) -> bool:
        """Whether ``relpath`` (relative to the root, ``/``-separated) is excluded."""
        if not self.exclude:
            return False
        parts = relpath.split("/")
        for pattern in self.exclude:
            if fnmatch.fnmatch(relpath, pattern) or any(
                fnmatch.fnmatch(part, pattern) for part in parts
            ):
                return True
            if relpath.startswith(pattern.rstrip("/") + "/"):
                return True
        return False

    def digest(self) -> str:
        """A hash of every setting that changes which sites are found (a cache key part)."""
        payload = json.dumps(
            [
                self.canonical,
                [c.label for c in self.canonicals],
                self.label,
                self.enum,
                self.receivers,
                self.model_marker,
                self.value_attributes,
                self.implementation_words,
                self.min_overlap,
                self.family_implies,
                self.roles,
            ],
            sort_keys=True,
        )
        return hashlib.blake2b(payload.encode(), digest_size=8).hexdigest()


def _family_implies(read: _Reader, raw: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{"module:qualname" = ["condition", ...]}``: what every member of a family implies."""
    where = "[tool.driftcheck]"
    if not isinstance(raw, dict):
        raise read.error(
            "family-implies",
            f"{where} family-implies must be a table of canonical = [conditions], got {_shown(raw)}",
        )
    entries = []
    for predicate, texts in sorted(raw.items()):
        entries.append((predicate, read.strings(where, f"family-implies.{predicate}", texts)))
    return tuple(entries)


def _roles(read: _Reader, raw: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{operation = ["call:name", "kw:name", "set:name", ...]}``: the role operations."""
    where = "[tool.driftcheck]"
    if not isinstance(raw, dict):
        raise read.error(
            "roles", f"{where} roles must be a table of operation = [keys], got {_shown(raw)}"
        )
    entries = []
    for operation, keys in sorted(raw.items()):
        found = read.strings(where, f"roles.{operation}", keys)
        for key in found:
            kind, _, name = key.partition(":")
            if kind not in ("call", "kw", "set") or not name or name != name.lstrip("_"):
                raise read.error(
                    f"roles.{operation}",
                    f"{where} roles.{operation}: {_shown(key)} must be 'call:NAME', 'kw:NAME' "
                    "or 'set:NAME' (NAME without leading underscores)",
                )
        entries.append((operation, found))
    return tuple(entries)


def _shown(value: Any) -> str:
    """A TOML value as an error message quotes it (``"two"``, ``3``, ``true``)."""
    return json.dumps(value)


class _Reader:
    """Reads one ``[tool.driftcheck]`` table; errors name the file and the key's line."""

    def __init__(self, label: str, source: str, warnings: list[str]) -> None:
        self.label = label
        self.lines = source.splitlines()
        self.warnings = warnings

    def line_of(self, key: str) -> int | None:
        """The first line assigning ``key`` (``key =`` or ``"key" =``), if any."""
        pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
        for number, text in enumerate(self.lines, 1):
            if pattern.match(text):
                return number
        return None

    def table_line(self, header: str, index: int) -> int | None:
        """The line of the ``index``-th (0-based) ``[[header]]`` table, if written so."""
        pattern = re.compile(rf"^\s*\[\[\s*{re.escape(header)}\s*\]\]")
        found = [number for number, text in enumerate(self.lines, 1) if pattern.match(text)]
        return found[index] if index < len(found) else None

    def error(self, key: str, message: str) -> ConfigError:
        """A :class:`ConfigError` for ``key`` located at its line."""
        return ConfigError(self.label, message, self.line_of(key.rsplit(".", 1)[-1]))

    def strings(self, where: str, key: str, value: Any) -> tuple[str, ...]:
        """A list of strings (one string is an error: ``select = "DC001"``)."""
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, f"{where} {key} must be a list of strings, got {_shown(value)}")
        return tuple(value)

    def boolean(self, where: str, key: str, value: Any) -> bool:
        """``true`` or ``false``."""
        if not isinstance(value, bool):
            raise self.error(key, f"{where} {key} must be true or false, got {_shown(value)}")
        return value

    def choice(self, where: str, key: str, value: Any, choices: tuple[str, ...]) -> str:
        """One of ``choices``."""
        if value not in choices:
            valid = ", ".join(f"'{c}'" for c in choices)
            raise self.error(key, f"{where} {key} must be one of {valid}, got {_shown(value)}")
        return value

    def unknown(self, where: str, table: dict[str, Any], known: set[str]) -> None:
        """A warning for each key of ``table`` that is not in ``known``."""
        self.warnings.extend(
            f"{self.label}: unknown key '{key}' in {where} (ignored)"
            for key in table
            if key not in known
        )


def _toml_error_line(exc: tomllib.TOMLDecodeError, source: str) -> int | None:
    lineno = getattr(exc, "lineno", None)
    if lineno:
        return int(lineno)
    text = str(exc)
    if "(at end of document)" in text:
        return source.count("\n") + 1
    marker = "(at line "
    if marker in text:
        try:
            return int(text.split(marker, 1)[1].split(",", 1)[0])
        except ValueError:
            return None
    return None


def load_config(path: Path, detected: tuple[str, ...] = ()) -> Config:
    """Read ``[tool.driftcheck]`` from a pyproject.toml (or a standalone driftcheck.toml);
    ``detected`` are the packs the tree selects, for a table that sets no ``pack``."""
    label = str(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(label, f"cannot read configuration: {exc}") from exc
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(label, f"invalid TOML: {exc}", _toml_error_line(exc, source)) from exc
    section = data.get("tool", {}).get("driftcheck") if path.name == "pyproject.toml" else data
    if path.name != "pyproject.toml" and "tool" in data:
        section = data["tool"].get("driftcheck", section)
    if section is None:
        return default_config(detected)
    if not isinstance(section, dict):
        raise ConfigError(label, "[tool.driftcheck] must be a table")
    return config_from_table(section, label, source, detected)


def pack_names() -> tuple[str, ...]:
    """The shipped packs, by name (``sglang`` for ``packs/sglang.toml``)."""
    return tuple(sorted(p.stem for p in PACKS_DIR.glob("*.toml")))


def pack_table(name: str, label: str = "pack", line: int | None = None) -> dict[str, Any]:
    """The keys of pack ``name`` (``{}`` for ``none``), its ``detect`` table left out."""
    if name == NO_PACK:
        return {}
    path = PACKS_DIR / f"{name}.toml"
    if not path.is_file():
        known = ", ".join([*pack_names(), NO_PACK])
        raise ConfigError(
            label, f"[tool.driftcheck] pack must be one of {known}, got {_shown(name)}", line
        )
    table = tomllib.loads(path.read_text(encoding="utf-8"))
    table.pop("detect", None)
    return table


@functools.lru_cache(maxsize=1)
def pack_detections() -> dict[str, tuple[str, ...]]:
    """Each shipped pack's ``[detect] modules``: the dotted modules whose presence under a
    tree's root (or its ``python/`` or ``src/``) makes the tree that pack's (read once: the
    shipped packs do not change while driftcheck runs; do not mutate the answer)."""
    found: dict[str, tuple[str, ...]] = {}
    for name in pack_names():
        table = tomllib.loads((PACKS_DIR / f"{name}.toml").read_text(encoding="utf-8"))
        modules = table.get("detect", {}).get("modules", [])
        if modules:
            found[name] = tuple(str(m) for m in modules)
    return found


def merged_packs(names: tuple[str, ...], label: str, line: int | None = None) -> dict[str, Any]:
    """The keys of several packs as one table: lists and tables joined (the first pack's entry
    wins a key both set), any other value the first pack's."""
    merged: dict[str, Any] = {}
    for name in names:
        for key, value in pack_table(name, label, line).items():
            if key not in merged:
                merged[key] = value
            elif isinstance(value, list) and isinstance(merged[key], list):
                merged[key] = [*merged[key], *(v for v in value if v not in merged[key])]
            elif isinstance(value, dict) and isinstance(merged[key], dict):
                merged[key] = {**value, **merged[key]}
    return merged


def default_config(packs: tuple[str, ...] = ()) -> Config:
    """The configuration of a tree with no ``[tool.driftcheck]`` table: the ``packs`` its
    modules select (none: nothing configured, the universe is inferred)."""
    return config_from_table({}, "<default pack>", detected=packs)


def config_from_table(  # noqa: C901 - one branch per configuration key, each with its own type check
    section: dict[str, Any], label: str, source: str = "", detected: tuple[str, ...] = ()
) -> Config:
    """Validate one ``[tool.driftcheck]`` table into a :class:`Config` (``detected``: the packs
    the tree's modules select, used when the table sets no ``pack``)."""
    warnings: list[str] = []
    read = _Reader(label, source, warnings)
    where = "[tool.driftcheck]"
    read.unknown(where, section, KNOWN_KEYS)
    if "pack" in section:
        pack = section["pack"]
        if not isinstance(pack, str):
            raise read.error("pack", f"{where} pack must be a string, got {_shown(pack)}")
        packs: tuple[str, ...] = (pack,)
    else:
        packs = detected or (NO_PACK,)
    from_pack = "canonical" not in section
    section = {**merged_packs(packs, label, read.line_of("pack")), **section}
    kwargs: dict[str, Any] = {"pack": "+".join(packs), "canonicals_from_pack": from_pack}
    kwargs["canonicals"] = _canonicals(read, section.get("canonical", []))
    for key in ("enum", "model-marker"):
        if key in section:
            if not isinstance(section[key], str):
                raise read.error(key, f"{where} {key} must be a string, got {_shown(section[key])}")
            kwargs[key.replace("-", "_")] = section[key]
    for key, attr in (
        ("receivers", "receivers"),
        ("value-attributes", "value_attributes"),
        ("implementation-words", "implementation_words"),
        ("include", "include"),
        ("exclude", "exclude"),
        ("select", "select"),
        ("ignore", "ignore"),
        ("extend-select", "extend_select"),
    ):
        if key in section:
            kwargs[attr] = read.strings(where, key, section[key])
    if "label" in section:
        if not isinstance(section["label"], str):
            raise read.error(
                "label", f"{where} label must be a string, got {_shown(section['label'])}"
            )
        kwargs["label"] = section["label"]
    if "min-overlap" in section:
        value = section["min-overlap"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise read.error(
                "min-overlap",
                f"{where} min-overlap must be a positive integer, got {_shown(value)}",
            )
        kwargs["min_overlap"] = value
    if "fix-style" in section:
        kwargs["fix_style"] = read.choice(where, "fix-style", section["fix-style"], FIX_STYLES)
    if "respect-gitignore" in section:
        kwargs["respect_gitignore"] = read.boolean(
            where, "respect-gitignore", section["respect-gitignore"]
        )
    if "family-implies" in section:
        kwargs["family_implies"] = _family_implies(read, section["family-implies"])
    if "roles" in section:
        kwargs["roles"] = _roles(read, section["roles"])
    if "verify" in section:
        if not isinstance(section["verify"], dict):
            raise read.error(
                "verify", f"{where} verify must be a table, got {_shown(section['verify'])}"
            )
        kwargs["verify"] = section["verify"]
    kwargs["policies"] = tuple(_policies(read, section.get("policies", [])))
    if "gates" in section:
        kwargs["gates"] = tuple(_gates(read, section["gates"]))
    lines = {key: line for key in section if (line := read.line_of(key)) is not None}
    return Config(**kwargs, source=label, lines=lines, warnings=tuple(warnings))


def _canonicals(read: _Reader, raw: Any) -> tuple[Canonical, ...]:
    """``canonical``: a list of ``"module:qualname"`` strings or ``{predicate, label}`` tables."""
    where = "[tool.driftcheck]"
    if not isinstance(raw, list):
        raise read.error(
            "canonical", f"{where} canonical must be a list of strings, got {_shown(raw)}"
        )
    entries = raw
    found = []
    for entry in entries:
        if isinstance(entry, dict):
            read.unknown(f"{where} canonical entry", entry, CANONICAL_KEYS)
            spec, label = entry.get("predicate"), entry.get("label", "")
            universe = entry.get("universe", "")
            for key, text in (("label", label), ("universe", universe)):
                if not isinstance(text, str):
                    raise read.error(
                        "canonical", f"{where} canonical {key} must be a string, got {_shown(text)}"
                    )
            seeds = read.strings(f"{where} canonical entry", "seeds", entry.get("seeds", []))
        else:
            spec, label, universe, seeds = entry, "", "", ()
        if not isinstance(spec, str):
            raise read.error(
                "canonical", f"{where} canonical must be a list of strings, got {_shown(raw)}"
            )
        if ":" not in spec:
            raise read.error(
                "canonical",
                f"{where} canonical entry {_shown(spec)} must look like 'package.module:qualname'",
            )
        found.append(Canonical(spec, label, universe, tuple(seeds)))
    return tuple(found)


def _policies(read: _Reader, raw: Any) -> list[SitePolicy]:
    if not isinstance(raw, list):
        raise read.error(
            "policies",
            f"[[tool.driftcheck.policies]] must be an array of tables, got {_shown(raw)}",
        )
    result = []
    for index, entry in enumerate(raw):
        where = f"policies[{index}]"
        line = read.table_line(POLICY_TABLE, index) or read.line_of("policies")
        if not isinstance(entry, dict) or "path" not in entry:
            raise read.error("policies", f"{where} must be a table with a 'path' key")
        read.unknown(where, entry, POLICY_KEYS)
        accepts = [key for key in ("allow-missing", "allow-extra") if key in entry]
        reason = entry.get("reason", "")
        if accepts and not (isinstance(reason, str) and reason.strip()):
            raise ConfigError(
                read.label,
                f"{where} ({entry['path']}) sets {' and '.join(accepts)} without a reason: "
                'say why the divergence is accepted (reason = "...")',
                line,
            )
        fix_style = entry.get("fix-style")
        if fix_style is not None:
            read.choice(where, "fix-style", fix_style, FIX_STYLES)
        kind = entry.get("kind")
        if kind is not None:
            read.choice(where, "kind", kind, SITE_KINDS)
        result.append(
            SitePolicy(
                path=str(entry["path"]),
                symbol=entry.get("symbol"),
                allow_missing=frozenset(
                    read.strings(where, "allow-missing", entry.get("allow-missing", []))
                ),
                allow_extra=frozenset(
                    read.strings(where, "allow-extra", entry.get("allow-extra", []))
                ),
                fix_style=fix_style,
                reason=str(reason),
                kind=kind,
                where=where,
                line=line,
            )
        )
    return result


def _gates(read: _Reader, raw: Any) -> list[Gate]:
    if not isinstance(raw, list):
        raise read.error(
            "gates", f"[[tool.driftcheck.gates]] must be an array of tables, got {_shown(raw)}"
        )
    gates = []
    for index, entry in enumerate(raw):
        where = f"gates[{index}]"
        if not isinstance(entry, dict) or not {"member", "registry", "register-call"} <= set(entry):
            raise read.error("gates", f"{where} needs 'member', 'registry' and 'register-call'")
        read.unknown(where, entry, GATE_KEYS)
        gates.append(Gate(entry["member"], entry["registry"], entry["register-call"]))
    return gates


def has_driftcheck_table(path: Path) -> bool:
    """Whether the pyproject.toml at ``path`` has a ``[tool.driftcheck]`` table (an unreadable
    or malformed file counts as having one, so that its error is reported, not skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True
    if "driftcheck" not in text:
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return True
    tool = data.get("tool")
    return isinstance(tool, dict) and "driftcheck" in tool
