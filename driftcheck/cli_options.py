"""Command-line options shared by ``check``, ``verify`` and ``gen-test``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .selection import SelectionError, parse_codes

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="A pyproject.toml or driftcheck.toml to use instead of the root's.",
)
no_cache_option = click.option(
    "--no-cache", is_flag=True, help="Neither read nor write the scan cache."
)


def codes_option_value(option: str, value: str | None) -> list[str] | None:
    """The codes a ``--select``-style option names (exits 2 when it names none)."""
    if value is None:
        return None
    try:
        return parse_codes(option, value)
    except SelectionError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
