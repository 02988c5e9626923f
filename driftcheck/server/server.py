"""``driftcheck server``: the Language Server Protocol over stdio, on pygls.

The protocol runs on the event loop; the engine on one thread of its own
(:class:`~driftcheck.server.session.Session` holds its state), so a long judgement never
stops the server from reading the client's messages. A document is judged when it opens,
when it changes and when any file is saved: a change starts a judgement at once (after
``debounceMs`` without further changes, when set), and changes made while it runs are judged
together once it ends, the newest text only; diagnostics for a text that was already
replaced are not published. Saving, or a change on disk the client reports, reads the file
again (loads the project again when it defines the universe, a gate's registry, the baseline
or the configuration) and judges every open document again.

Every handler runs guarded: an error is logged to the client (``window/logMessage``, with its
traceback) and the request answered with nothing; the server goes on.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from driftcheck import __version__
from driftcheck.engine import GC_YOUNG_THRESHOLD

from . import actions
from .early import EarlyLoad
from .positions import text_edits
from .session import Judged, Session
from .settings import Settings, SettingsError

T = TypeVar("T")
logger = logging.getLogger(__name__)
WATCHED = ("**/*.py", "**/*.pyi", "**/{pyproject,driftcheck,.driftcheck}.toml")


def _path_of(uri: str) -> Path | None:
    path = to_fs_path(uri)
    return Path(path) if path and uri.startswith("file:") else None


class DriftcheckServer(LanguageServer):
    """The language server (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__("driftcheck", __version__)
        # a judgement allocates many short-lived objects and few cycles, as a scan does
        gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        self.engine = ThreadPoolExecutor(max_workers=1, thread_name_prefix="driftcheck-engine")
        self.session: Session | None = None
        self.settings = Settings()
        self.running: dict[str, asyncio.Task[None]] = {}
        self.dirty: set[str] = set()
        self.changed_at: dict[str, float] = {}
        self.loop: asyncio.AbstractEventLoop | None = None  # the protocol's, once it runs

    # -- plumbing ------------------------------------------------------------------------
    def log(self, kind: types.MessageType, message: str) -> None:
        """Send ``message`` to the client's log (and show an error to the user)."""
        self.window_log_message(types.LogMessageParams(type=kind, message=message))
        if kind == types.MessageType.Error:
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log_error(self, where: str) -> None:
        """Log the exception being handled, with its traceback."""
        text = traceback.format_exc()
        logger.error("driftcheck server: %s failed\n%s", where, text)
        self.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Error, message=f"driftcheck: {where} failed:\n{text}"
            )
        )

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors pygls meets outside the handlers (a message it cannot read) go to the log."""
        self.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Error, message=f"driftcheck: server error: {error}"
            )
        )

    async def run_engine(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` on the engine thread."""
        return await asyncio.get_running_loop().run_in_executor(self.engine, work, *args)

    def notify_from_engine(self, kind: types.MessageType, message: str) -> None:
        """:meth:`log` from the engine thread."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.log, kind, message)

    def publish_from_engine(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        """Publish ``diagnostics`` for ``uri`` (a file that need not be open) from the engine
        thread."""
        if self.loop is not None:
            params = types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
            self.loop.call_soon_threadsafe(self.text_document_publish_diagnostics, params)

    def shutdown(self) -> None:
        """Stop the engine thread too."""
        self.engine.shutdown(wait=False, cancel_futures=True)
        super().shutdown()

    def supports(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (a dotted path, snake_case)."""
        return bool(get_capability(self.client_capabilities, capability, False))

    # -- judging -------------------------------------------------------------------------
    def schedule(self, uri: str, delay: float = 0.0) -> None:
        """Judge ``uri`` soon (see the module docstring)."""
        self.dirty.add(uri)
        self.changed_at[uri] = asyncio.get_running_loop().time()
        if uri not in self.running:
            self.running[uri] = asyncio.ensure_future(self._judge_until_current(uri, delay))

    def rejudge_open_documents(self) -> None:
        """Judge every open document again (what they rest on changed)."""
        for uri in list(self.workspace.text_documents):
            self.schedule(uri)

    async def _judge_until_current(self, uri: str, delay: float) -> None:
        try:
            loop = asyncio.get_running_loop()
            while delay and (wait := self.changed_at[uri] + delay - loop.time()) > 0:
                await asyncio.sleep(wait)
            while uri in self.dirty:
                self.dirty.discard(uri)
                document = self.workspace.text_documents.get(uri)
                if document is None or self.session is None:
                    return
                text, version = document.source, document.version
                judged = await self.run_engine(
                    self.session.judge, uri, _path_of(uri), text, version
                )
                if uri in self.dirty or uri not in self.workspace.text_documents:
                    continue
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(
                        uri=uri, diagnostics=judged.diagnostics, version=version
                    )
                )
        except Exception:
            self.log_error(f"judging {uri}")
        finally:
            self.running.pop(uri, None)

    async def files_changed(self, paths: list[Path]) -> None:
        """Files changed on disk: the engine reads them again, then every open document is
        judged again."""
        if self.session is None or not paths:
            return
        await self.run_engine(self.session.files_changed, paths)
        self.rejudge_open_documents()

    async def judged_now(self, uri: str) -> Judged | None:
        """The judgement of the document's current text."""
        document = self.workspace.text_documents.get(uri)
        if document is None or self.session is None:
            return None
        return await self.run_engine(
            self.session.current, uri, _path_of(uri), document.source, document.version
        )

    # -- code actions --------------------------------------------------------------------
    def code_action(self, uri: str, judged: Judged, proposal: actions.Proposal) -> types.CodeAction:
        """A proposal as the protocol's code action."""
        diagnostics = [d for f, d in judged.located if f is proposal.finding]
        action = types.CodeAction(
            title=proposal.title,
            kind=proposal.kind,
            diagnostics=diagnostics or None,
            is_preferred=proposal.preferred or None,
        )
        if proposal.new_text is None:
            reason = proposal.reason or "not available"
            if self.supports("text_document.code_action.disabled_support"):
                action.disabled = types.CodeActionDisabled(reason=reason)
            else:
                action.title = f"{proposal.title} (not available: {reason})"
            return action
        edits = text_edits(judged.text, proposal.new_text, self.workspace.position_encoding or "")
        if self.supports("workspace.workspace_edit.document_changes"):
            identifier = types.OptionalVersionedTextDocumentIdentifier(
                uri=uri, version=judged.version
            )
            action.edit = types.WorkspaceEdit(
                document_changes=[types.TextDocumentEdit(text_document=identifier, edits=edits)]
            )
        else:
            action.edit = types.WorkspaceEdit(changes={uri: edits})
        return action


def guarded(server: DriftcheckServer, where: str) -> Callable[[Callable[..., Any]], Any]:
    """A handler whose errors are logged to the client, never raised."""

    def wrap(handler: Callable[..., Any]) -> Callable[..., Any]:
        if asyncio.iscoroutinefunction(handler):

            @functools.wraps(handler)
            async def run_async(params: Any) -> Any:
                try:
                    return await handler(params)
                except Exception:
                    server.log_error(where)
                    return None

            return run_async

        @functools.wraps(handler)
        def run(params: Any) -> Any:
            try:
                return handler(params)
            except Exception:
                server.log_error(where)
                return None

        return run

    return wrap


def build_server(  # noqa: C901 - the handlers are registered here as nested functions, one per LSP method
    preloaded: EarlyLoad | None = None,
) -> DriftcheckServer:
    """The server with its handlers registered (``preloaded``: the projects the command started
    loading before the server started, :mod:`.early`)."""
    server = DriftcheckServer()

    def feature(method: str, options: Any = None) -> Callable[[Callable[..., Any]], Any]:
        def register(handler: Callable[..., Any]) -> Any:
            return server.feature(method, options)(guarded(server, method)(handler))

        return register

    def read_settings(options: Any) -> Settings | None:
        try:
            return Settings.read(options)
        except SettingsError as exc:
            server.log(types.MessageType.Error, f"driftcheck: {exc}; keeping the settings")
            return None

    @feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        server.loop = asyncio.get_running_loop()
        server.settings = read_settings(params.initialization_options) or Settings()
        folders = [_path_of(f.uri) for f in params.workspace_folders or []]
        if not folders and params.root_uri:
            folders = [_path_of(params.root_uri)]
        server.session = Session(
            [f for f in folders if f is not None],
            server.settings,
            server.workspace.position_encoding or types.PositionEncodingKind.Utf16,
            server.notify_from_engine,
            preloaded,
            server.publish_from_engine,
        )

    @feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        if server.supports("workspace.did_change_watched_files.dynamic_registration"):
            baseline = server.settings.baseline
            globs = [*WATCHED, *([f"**/{baseline.name}"] if baseline is not None else [])]
            watchers = [types.FileSystemWatcher(glob_pattern=g) for g in globs]
            options = types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers)
            registration = types.Registration(
                id="driftcheck-watched-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=options,
            )
            try:
                await server.client_register_capability_async(
                    types.RegistrationParams([registration])
                )
            except Exception as exc:  # the client offered it but refused it: saves still count
                server.log(types.MessageType.Info, f"driftcheck: no file watching ({exc})")
        session = server.session
        if session is not None:
            for folder in session.folders:
                await server.run_engine(session.preload, folder)

    @feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        server.schedule(params.text_document.uri)

    @feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        server.schedule(params.text_document.uri, server.settings.debounce_ms / 1000)

    @feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(params: types.DidSaveTextDocumentParams) -> None:
        path = _path_of(params.text_document.uri)
        await server.files_changed([path] if path is not None else [])

    @feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        server.dirty.discard(uri)
        if server.session is not None:
            await server.run_engine(server.session.close, uri)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    @feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        paths = [p for change in params.changes if (p := _path_of(change.uri)) is not None]
        await server.files_changed(paths)

    @feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        settings = read_settings(params.settings) if params.settings else None
        if settings is None or server.session is None or settings == server.settings:
            return
        server.settings = settings
        await server.run_engine(server.session.reconfigure, settings)
        server.rejudge_open_documents()

    @feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL]),
    )
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        judged = await server.judged_now(uri)
        session = server.session
        if judged is None or session is None:
            return None
        proposals = await server.run_engine(
            session.code_actions, judged, params.range, params.context.only
        )
        return [server.code_action(uri, judged, p) for p in proposals] or None

    @feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(params: types.HoverParams) -> types.Hover | None:
        judged = await server.judged_now(params.text_document.uri)
        session = server.session
        if judged is None or session is None:
            return None
        text = await server.run_engine(session.hover, judged, params.position)
        if text is None:
            return None
        formats = get_capability(
            server.client_capabilities, "text_document.hover.content_format", []
        )
        kind = (
            types.MarkupKind.Markdown
            if not formats or types.MarkupKind.Markdown in formats
            else types.MarkupKind.PlainText
        )
        return types.Hover(contents=types.MarkupContent(kind=kind, value=text))

    return server
