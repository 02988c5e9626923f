"""What the client may set: the command line's options for a check, as editor settings.

Read from ``initializationOptions`` and from ``workspace/didChangeConfiguration`` (its
``settings.driftcheck`` object, or the settings object itself), in the client's camelCase::

    {"configuration": "python/pyproject.toml", "baseline": ".driftcheck-baseline.json",
     "select": ["DC0"], "ignore": ["DC005"], "extendSelect": ["DC010"],
     "fixStyle": "helper", "unsafeFixes": false, "debounceMs": 0}

Each key means what the option of the same name means to ``driftcheck check`` (``--config``,
``--baseline``, ``--select``, ``--unsafe-fixes``...); a relative path is relative to the workspace folder, as an
option's is to the working directory. ``debounceMs`` is how long a document must stay
unchanged before it is judged again (0: at once; changes made meanwhile are judged together).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIX_STYLES = ("minimal", "helper")


class SettingsError(ValueError):
    """A setting has a value of the wrong kind; the message names it."""


@dataclass(frozen=True)
class Settings:
    """The client's settings (unset: the configuration decides, as without the option)."""

    configuration: Path | None = None
    baseline: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    fix_style: str | None = None
    unsafe_fixes: bool = False
    debounce_ms: int = 0

    @staticmethod
    def read(options: Any) -> Settings:
        """Settings from the client's options object (``None`` or ``{}``: the defaults)."""
        if options is None:
            return Settings()
        if not isinstance(options, Mapping):
            raise SettingsError("driftcheck settings: expected an object")
        if isinstance(options.get("driftcheck"), Mapping):
            options = options["driftcheck"]
        select = options.get("select")
        fix_style = options.get("fixStyle")
        if fix_style is not None and fix_style not in FIX_STYLES:
            raise SettingsError(f"fixStyle: expected one of {', '.join(FIX_STYLES)}")
        unsafe = options.get("unsafeFixes", False)
        if not isinstance(unsafe, bool):
            raise SettingsError("unsafeFixes: expected true or false")
        debounce = options.get("debounceMs", 0)
        if not isinstance(debounce, int) or isinstance(debounce, bool) or debounce < 0:
            raise SettingsError("debounceMs: expected a number of milliseconds")
        return Settings(
            configuration=_path(options, "configuration"),
            baseline=_path(options, "baseline"),
            select=None if select is None else _codes(options, "select"),
            ignore=_codes(options, "ignore"),
            extend_select=_codes(options, "extendSelect"),
            fix_style=fix_style,
            unsafe_fixes=unsafe,
            debounce_ms=debounce,
        )


def _path(options: Mapping[str, Any], key: str) -> Path | None:
    value = options.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{key}: expected a path")
    return Path(value).expanduser()


def _codes(options: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = options.get(key) or []
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{key}: expected a list of rule codes")
    return tuple(v.strip().upper() for v in value)
