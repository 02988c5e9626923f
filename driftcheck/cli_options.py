"""Command-line options shared by ``check``, ``verify`` and ``gen-test``."""

from __future__ import annotations

from pathlib import Path

import click

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="A pyproject.toml or driftcheck.toml to use instead of the root's.",
)
no_cache_option = click.option(
    "--no-cache", is_flag=True, help="Neither read nor write the scan cache."
)
