"""The ``driftcheck server`` command (imported only when named: a check never loads pygls)."""

from __future__ import annotations

import importlib.util
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
    actions (needs the server extra: from a driftcheck checkout, pip install -e '.[server]')."""
    missing = [name for name in ("pygls", "lsprotocol") if importlib.util.find_spec(name) is None]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        click.echo(
            f"error: driftcheck server needs the server extra ({' and '.join(missing)} {verb} "
            "missing); from a driftcheck checkout: pip install -e '.[server]'",
            err=True,
        )
        sys.exit(2)
    from .early import EarlyLoad, ReplayedInput, initialize_params, read_message

    # the client's initialize names the workspace: start loading it while pygls is imported
    stdin = sys.stdin.buffer
    head, message = read_message(stdin)
    params = initialize_params(message)
    loading = EarlyLoad.start(params) if params is not None else None
    from .server import build_server

    build_server(loading).start_io(stdin=ReplayedInput(head, stdin))  # type: ignore[arg-type]
