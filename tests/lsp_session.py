"""Drive ``driftcheck server`` over stdio with pytest-lsp's client, as an editor would.

:func:`start` launches the installed ``driftcheck`` console script (``driftcheck server``)
and initializes it on a workspace folder with VS Code's capabilities; :class:`Editor` opens,
changes and saves documents and collects every ``publishDiagnostics`` it is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

DRIFTCHECK = Path(sys.executable).parent / "driftcheck"
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
TIMEOUT = 120  # seconds: a cold load of a whole release on a busy machine


def uri_of(path: Path) -> str:
    """The file URI of ``path``."""
    return path.resolve().as_uri()


class Editor:
    """A client with open documents (see the module docstring)."""

    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()
        self.latest: dict[str, types.PublishDiagnosticsParams] = {}
        self.registrations: list[types.Registration] = []
        self._arm()

    def _arm(self) -> None:
        self.client.protocol.wait_for_notification(PUBLISH, callback=self._got)

    def _got(self, params: types.PublishDiagnosticsParams) -> None:
        self.published.put_nowait(params)
        self._arm()

    async def diagnostics(self, path: Path) -> list[types.Diagnostic]:
        """The next diagnostics published for ``path``'s current version."""
        uri = uri_of(path)
        while True:
            params = await asyncio.wait_for(self.published.get(), TIMEOUT)
            self.latest[params.uri] = params
            if params.uri == uri and params.version in (None, self.versions.get(uri)):
                return list(params.diagnostics)

    async def open(self, path: Path, text: str | None = None) -> list[types.Diagnostic]:
        """Open ``path`` (with ``text`` in place of what it holds) and return its diagnostics."""
        uri = uri_of(path)
        self.texts[uri] = path.read_text() if text is None else text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri, "python", 1, self.texts[uri])
            )
        )
        return await self.diagnostics(path)

    def change(self, path: Path, text: str) -> None:
        """Replace the buffer's whole text (unsaved)."""
        uri = uri_of(path)
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def save(self, path: Path) -> None:
        """Write the buffer to disk and tell the server."""
        uri = uri_of(path)
        path.write_text(self.texts[uri])
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
        )

    async def code_actions(
        self, path: Path, where: types.Range, only: list[str] | None = None
    ) -> list[types.CodeAction]:
        """The code actions offered for ``where``."""
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri_of(path)),
                range=where,
                context=types.CodeActionContext(diagnostics=[], only=only),
            )
        )
        return [a for a in result or [] if isinstance(a, types.CodeAction)]

    def applied(self, path: Path, action: types.CodeAction) -> str:
        """The buffer's text with ``action``'s edit applied."""
        uri = uri_of(path)
        assert action.edit is not None and action.edit.document_changes is not None
        document = TextDocument(uri, self.texts[uri])
        (change,) = action.edit.document_changes
        assert isinstance(change, types.TextDocumentEdit)
        for edit in sorted(
            change.edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
        ):
            document.apply_change(
                types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text)
            )
        return document.source


async def start(
    root: Path,
    options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    command: list[str] | None = None,
) -> Editor:
    """``driftcheck server`` initialized on workspace folder ``root``."""
    config = ClientServerConfig(
        server_command=command or [str(DRIFTCHECK), "server"],
        server_env={**os.environ, **(env or {})},
    )
    client = await config.start()
    assert isinstance(client, LanguageClient)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        editor.registrations.extend(params.registrations)

    editor = Editor(client, root)
    editor.initialize_result = await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=uri_of(root),
            workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name=root.name)],
            initialization_options=options,
        )
    )
    return editor


@contextlib.asynccontextmanager
async def serving(root: Path, *args: Any, **kwargs: Any) -> AsyncIterator[Editor]:
    """:func:`start`, and :func:`stop` on the way out."""
    editor = await start(root, *args, **kwargs)
    try:
        yield editor
    finally:
        await stop(editor)


async def stop(editor: Editor) -> int | None:
    """Shut the server down as an editor does (``shutdown``, ``exit``); its exit code."""
    editor.client.protocol._notification_futures.pop(PUBLISH, None)
    await editor.client.shutdown_session()
    server = editor.client._server
    code = server.returncode if server is not None else None
    await editor.client.stop()
    return code
