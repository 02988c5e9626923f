"""The ``driftcheck server`` command (imported only when named: a check never loads pygls)."""

from __future__ import annotations

import sys

import click


@click.command("server")
@click.option(
    "--stdio",
    is_flag=True,
    help="Talk over stdin/stdout (the only transport; accepted for clients that pass it).",
)
def server_command(stdio: bool) -> None:
    """Run the language server over stdio: drift in the editor as you type, fixes as code
    actions (needs the server extra: pip install 'driftcheck[server]')."""
    try:
        from .server import build_server
    except ImportError as exc:  # pygls or lsprotocol missing
        click.echo(
            f"error: driftcheck server needs the server extra ({exc.name} is missing): "
            "pip install 'driftcheck[server]'",
            err=True,
        )
        sys.exit(2)
    build_server().start_io()
