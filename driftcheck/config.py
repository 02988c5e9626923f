"""``[tool.driftcheck]`` configuration, with the built-in SGLang rule pack as its default.

Configuration is data: which predicates are canonical, which names hold the backend's string
value, which paths to include or exclude, and per-site policies. Unknown keys produce a
warning naming the key; a malformed file is a :class:`ConfigError` (exit code 2).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SGLANG_CANONICAL = ("sglang.srt.layers.moe.utils:is_deepep_class_backend",)

KNOWN_KEYS = {
    "canonical",
    "label",
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
}

POLICY_KEYS = {"path", "symbol", "allow-missing", "allow-extra", "fix-style", "reason", "kind"}
GATE_KEYS = {"member", "registry", "register-call"}


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
class Config:
    """Resolved settings for one run."""

    canonical: tuple[str, ...] = SGLANG_CANONICAL
    label: str = "DeepEP-family"
    value_attributes: tuple[str, ...] = ("moe_a2a_backend", "a2a_backend")
    include: tuple[str, ...] = ("*.py",)
    exclude: tuple[str, ...] = ()
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    min_overlap: int = 2
    fix_style: str = "minimal"
    policies: tuple[SitePolicy, ...] = ()
    gates: tuple[Gate, ...] = (
        Gate(
            member="deepep_v2",
            registry="sglang.srt.configs.moe_model_registry:_DEEPEP_V2_MODELS",
            register_call="register_deepep_v2_model",
        ),
    )
    source: str | None = None
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def policy_for(self, path: str, symbol: str) -> SitePolicy | None:
        """The first policy matching a site, if any."""
        for policy in self.policies:
            if policy.matches(path, symbol):
                return policy
        return None

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
            [self.canonical, self.value_attributes, self.min_overlap], sort_keys=True
        )
        return hashlib.blake2b(payload.encode(), digest_size=8).hexdigest()


def _string_list(path: str, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(path, f"[tool.driftcheck] {key} must be a list of strings")
    return tuple(value)


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


def load_config(path: Path) -> Config:
    """Read ``[tool.driftcheck]`` from a pyproject.toml (or a standalone driftcheck.toml)."""
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
        return Config(source=None)
    if not isinstance(section, dict):
        raise ConfigError(label, "[tool.driftcheck] must be a table")
    return config_from_table(section, label)


def config_from_table(section: dict[str, Any], label: str) -> Config:
    """Validate one ``[tool.driftcheck]`` table into a :class:`Config`."""
    warnings = [
        f"{label}: unknown key '{key}' in [tool.driftcheck] (ignored)"
        for key in section
        if key not in KNOWN_KEYS
    ]
    kwargs: dict[str, Any] = {}
    for key, attr in (
        ("canonical", "canonical"),
        ("value-attributes", "value_attributes"),
        ("include", "include"),
        ("exclude", "exclude"),
        ("ignore", "ignore"),
        ("extend-select", "extend_select"),
    ):
        if key in section:
            kwargs[attr] = _string_list(label, key, section[key])
    if "select" in section:
        kwargs["select"] = _string_list(label, "select", section["select"])
    for spec in kwargs.get("canonical", ()):
        if ":" not in spec:
            raise ConfigError(
                label, f"canonical entry '{spec}' must look like 'package.module:function'"
            )
    if "label" in section:
        if not isinstance(section["label"], str):
            raise ConfigError(label, "[tool.driftcheck] label must be a string")
        kwargs["label"] = section["label"]
    if "min-overlap" in section:
        if not isinstance(section["min-overlap"], int) or section["min-overlap"] < 1:
            raise ConfigError(label, "[tool.driftcheck] min-overlap must be a positive integer")
        kwargs["min_overlap"] = section["min-overlap"]
    if "fix-style" in section:
        if section["fix-style"] not in ("minimal", "helper"):
            raise ConfigError(label, "[tool.driftcheck] fix-style must be 'minimal' or 'helper'")
        kwargs["fix_style"] = section["fix-style"]
    kwargs["policies"] = tuple(_policies(label, section.get("policies", []), warnings))
    if "gates" in section:
        kwargs["gates"] = tuple(_gates(label, section["gates"], warnings))
    return Config(**kwargs, source=label, warnings=tuple(warnings))


def _policies(label: str, raw: Any, warnings: list[str]) -> list[SitePolicy]:
    if not isinstance(raw, list):
        raise ConfigError(label, "[[tool.driftcheck.policies]] must be an array of tables")
    result = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or "path" not in entry:
            raise ConfigError(label, f"policies[{index}] must be a table with a 'path' key")
        warnings.extend(
            f"{label}: unknown key '{key}' in policies[{index}] (ignored)"
            for key in entry
            if key not in POLICY_KEYS
        )
        if entry.get("fix-style") not in (None, "minimal", "helper"):
            raise ConfigError(label, f"policies[{index}].fix-style must be 'minimal' or 'helper'")
        result.append(
            SitePolicy(
                path=str(entry["path"]),
                symbol=entry.get("symbol"),
                allow_missing=frozenset(
                    _string_list(label, "allow-missing", entry.get("allow-missing", []))
                ),
                allow_extra=frozenset(
                    _string_list(label, "allow-extra", entry.get("allow-extra", []))
                ),
                fix_style=entry.get("fix-style"),
                reason=str(entry.get("reason", "")),
                kind=entry.get("kind"),
            )
        )
    return result


def _gates(label: str, raw: Any, warnings: list[str]) -> list[Gate]:
    if not isinstance(raw, list):
        raise ConfigError(label, "[[tool.driftcheck.gates]] must be an array of tables")
    gates = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or not {"member", "registry", "register-call"} <= set(entry):
            raise ConfigError(
                label, f"gates[{index}] needs 'member', 'registry' and 'register-call'"
            )
        warnings.extend(
            f"{label}: unknown key '{key}' in gates[{index}] (ignored)"
            for key in entry
            if key not in GATE_KEYS
        )
        gates.append(Gate(entry["member"], entry["registry"], entry["register-call"]))
    return gates


def find_config(root: Path, explicit: Path | None = None) -> Config:
    """The configuration for ``root``: ``explicit`` if given, else the root's pyproject.toml."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(str(explicit), "configuration file not found")
        return load_config(explicit)
    for candidate in (root / "pyproject.toml", root / "python" / "pyproject.toml"):
        if candidate.is_file():
            config = load_config(candidate)
            if config.source is not None:
                return config
    return Config()
