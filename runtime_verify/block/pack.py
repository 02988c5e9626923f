"""The ``[verify]`` table of a pack: every name of the linted codebase the layer run needs.

The harness knows its own substitutes (:mod:`.substitutes`); which of the codebase's names
become which, what its runtime objects answer, which modules run from the tree as written, the
constructor arguments of its blocks, the names its classes' parameters have, the dispatcher each
member runs behind, the configuration fields and the configurations to try are data here, read from the pack (``[verify]`` in
``driftcheck/packs/<pack>.toml``, or ``[tool.driftcheck.verify]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GROUPS = ("tp", "moe_ep", "moe_tp", "attn_tp", "attn_dp")
SPANS = ("world", "self")
ROWS = ("own", "all")


class PackError(ValueError):
    """A ``[verify]`` table that cannot be used; says which key."""


@dataclass(frozen=True)
class Configuration:
    """One way of running a block: which rows each rank holds, how wide each group is, and the
    model configuration fields it sets beyond the pack's ``[verify.config]``."""

    name: str
    what: str
    rows: str
    groups: Mapping[str, str]
    config: Mapping[str, Any]
    flags: Mapping[str, bool] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "name": self.name,
            "what": self.what,
            "rows": self.rows,
            "groups": dict(self.groups),
            "config": dict(self.config),
            "flags": dict(self.flags),
        }


@dataclass(frozen=True)
class VerifyPack:
    """The validated ``[verify]`` table."""

    arms: tuple[str, str] | None = None
    controls: tuple[str, ...] = ()
    stand_in_packages: tuple[str, ...] = ()
    executed_modules: tuple[str, ...] = ()
    # packages holding the model configuration classes a block's module imports: executed,
    # and their ``__init__`` defaults give the fields the shape does not size
    config_modules: tuple[str, ...] = ()
    block_arguments: Mapping[str, str] = field(default_factory=dict)
    forward_arguments: Mapping[str, str] = field(default_factory=dict)
    substitutes: Mapping[str, str] = field(default_factory=dict)
    objects: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    linear_groups: Mapping[str, str] = field(default_factory=dict)
    dispatchers: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    configurations: tuple[Configuration, ...] = ()
    # substitute -> the harness's parameter -> the codebase's name for it (a keyword argument
    # its classes are built with, or a field of the configuration object they read)
    parameters: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def parameter(self, substitute: str, name: str) -> str:
        """The codebase's name for parameter ``name`` of ``substitute`` (``[verify.parameters]``;
        ``""`` when the pack names none: the harness's default applies)."""
        return self.parameters.get(substitute, {}).get(name, "")

    def configuration(self, name: str) -> Configuration:
        """The configuration called ``name``; :class:`PackError` names the known ones."""
        for configuration in self.configurations:
            if configuration.name == name:
                return configuration
        known = ", ".join(c.name for c in self.configurations) or "none"
        raise PackError(f"no configuration {name!r} in [verify.configurations]; known: {known}")


def _strings(table: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PackError(f"[verify] {key} must be a list of strings, got {value!r}")
    return tuple(value)


def _string_table(table: Mapping[str, Any], key: str) -> dict[str, str]:
    value = table.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise PackError(f"[verify.{key}] must be a table of strings, got {value!r}")
    return dict(value)


def _configurations(raw: Any) -> tuple[Configuration, ...]:
    if not isinstance(raw, list):
        raise PackError(f"[[verify.configurations]] must be an array of tables, got {raw!r}")
    found = []
    for index, entry in enumerate(raw):
        where = f"[[verify.configurations]] #{index + 1}"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise PackError(f"{where} needs a name")
        rows = entry.get("rows", "own")
        if rows not in ROWS:
            raise PackError(f"{where} rows must be one of {', '.join(ROWS)}, got {rows!r}")
        groups = entry.get("groups", {})
        bad = {k: v for k, v in groups.items() if k not in GROUPS or v not in SPANS}
        if not isinstance(groups, dict) or bad:
            raise PackError(
                f"{where} groups must map {', '.join(GROUPS)} to {' or '.join(SPANS)}, got {bad or groups!r}"
            )
        config = entry.get("config", {})
        if not isinstance(config, dict):
            raise PackError(f"{where} config must be a table")
        flags = entry.get("flags", {})
        if not isinstance(flags, dict) or not all(isinstance(v, bool) for v in flags.values()):
            raise PackError(f"{where} flags must map names to true or false, got {flags!r}")
        spans = {group: groups.get(group, "world") for group in GROUPS}
        found.append(
            Configuration(
                entry["name"], str(entry.get("what", "")), rows, spans, dict(config), dict(flags)
            )
        )
    return tuple(found)


def read_verify_pack(table: Mapping[str, Any]) -> VerifyPack:
    """Validate a ``[verify]`` table (``{}``: an empty pack, with which no block can run)."""
    arms = _strings(table, "arms")
    if arms and len(arms) != 2:
        raise PackError(f"[verify] arms must name two members, got {list(arms)!r}")
    objects = table.get("objects", {})
    if not isinstance(objects, dict) or not all(isinstance(v, dict) for v in objects.values()):
        raise PackError("[verify.objects] must be a table of tables")
    config = table.get("config", {})
    if not isinstance(config, dict):
        raise PackError("[verify.config] must be a table")
    parameters = table.get("parameters", {})
    if not isinstance(parameters, dict) or not all(
        isinstance(names, dict) and all(isinstance(v, str) for v in names.values())
        for names in parameters.values()
    ):
        raise PackError(
            f"[verify.parameters] must be a table of tables of strings, got {parameters!r}"
        )
    return VerifyPack(
        arms=(arms[0], arms[1]) if arms else None,
        controls=_strings(table, "controls"),
        stand_in_packages=_strings(table, "stand-in-packages"),
        executed_modules=_strings(table, "executed-modules"),
        config_modules=_strings(table, "config-modules"),
        block_arguments=_string_table(table, "block-arguments"),
        forward_arguments=_string_table(table, "forward-arguments"),
        substitutes=_string_table(table, "substitutes"),
        objects={name: dict(fields) for name, fields in objects.items()},
        linear_groups=_string_table(table, "linear-groups"),
        dispatchers=_string_table(table, "dispatchers"),
        config=dict(config),
        configurations=_configurations(table.get("configurations", [])),
        parameters={name: dict(names) for name, names in parameters.items()},
    )
