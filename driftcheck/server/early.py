"""What ``driftcheck server`` does before pygls is imported: read the client's ``initialize``
request and start loading its workspace.

Importing pygls and lsprotocol costs a large part of a second, and until the server reads
``initialize`` it does not know which workspace to load. So the command reads that first
message itself (:func:`read_message`) and starts loading each workspace folder's project in a
thread (:class:`EarlyLoad`, as :meth:`~driftcheck.server.session.Session.project_for` would
load it) while it imports the server; it then hands pygls a stream that gives the message again
(:class:`ReplayedInput`), so ``initialize`` is answered as soon as pygls runs. The session
adopts a preloaded project when its folder, settings and project root are the ones it would
load (waiting for the load to end); anything else it loads as before. Nothing here imports
pygls or lsprotocol.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse

from driftcheck.config import ConfigError
from driftcheck.project import discover_project

from .live import LiveProject, ProjectError
from .settings import Settings, SettingsError

ProjectKey = tuple[Path, Path | None]  # (project root, configuration file)


def read_message(stream: BinaryIO) -> tuple[bytes, dict[str, Any] | None]:
    """The first message of ``stream``: its bytes as read (headers and body), and its body
    parsed (None when it is no JSON object, or the stream ended)."""
    head = b""
    length = None
    while True:
        line = stream.readline()
        head += line
        if not line:
            return head, None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            with contextlib.suppress(ValueError):
                length = int(value.strip())
    if length is None:
        return head, None
    body = stream.read(length)
    head += body
    try:
        message = json.loads(body)
    except ValueError:
        return head, None
    return head, message if isinstance(message, dict) else None


class ReplayedInput:
    """The client's stream, as pygls reads it (``readline``, ``read``), with the bytes already
    read from it given first."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head = io.BytesIO(head)
        self.rest = rest

    def readline(self) -> bytes:
        """The next line: from what was read first, then from the stream."""
        return self.head.readline() or self.rest.readline()

    def read(self, size: int = -1) -> bytes:
        """``size`` bytes: from what was read first, then from the stream."""
        data = self.head.read(size)
        if size < 0:
            return data + self.rest.read()
        if len(data) < size:
            data += self.rest.read(size - len(data))
        return data

    def close(self) -> None:
        """Close the client's stream."""
        self.rest.close()


def folder_of(uri: str) -> Path | None:
    """The directory a ``file:`` URI names (None for any other scheme)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


@dataclass
class Preloaded:
    """The projects of the client's workspace folders, loaded before the server started, under
    the settings its ``initialize`` gave; each folder's project key, and its load's seconds."""

    settings: Settings
    projects: dict[ProjectKey, LiveProject | ProjectError] = field(default_factory=dict)
    cwds: dict[ProjectKey, Path] = field(default_factory=dict)  # the folder it was run from
    seconds: dict[ProjectKey, float] = field(default_factory=dict)

    def take(
        self, key: ProjectKey, cwd: Path, settings: Settings
    ) -> LiveProject | ProjectError | None:
        """The project ``key`` loaded from ``cwd`` under ``settings``, once (None when it was
        not, or under other settings)."""
        if settings != self.settings or self.cwds.get(key) != cwd:
            return None
        return self.projects.pop(key, None)


def initialize_params(message: dict[str, Any] | None) -> dict[str, Any] | None:
    """The params of an ``initialize`` request (None for any other message)."""
    if message is None or message.get("method") != "initialize":
        return None
    params = message.get("params")
    return params if isinstance(params, dict) else None


def preload(params: dict[str, Any]) -> Preloaded | None:
    """Load the project of each workspace folder ``params`` names, under its settings (None
    when its settings are not valid: the server will say so)."""
    try:
        settings = Settings.read(params.get("initializationOptions"))
    except SettingsError:
        return None
    uris = [f.get("uri") for f in params.get("workspaceFolders") or [] if isinstance(f, dict)]
    if not uris and params.get("rootUri"):
        uris = [params["rootUri"]]
    preloaded = Preloaded(settings)
    for uri in uris:
        folder = folder_of(uri) if isinstance(uri, str) else None
        if folder is not None and folder.is_dir():
            _load_folder(preloaded, folder)
    return preloaded


def _load_folder(preloaded: Preloaded, folder: Path) -> None:
    """As the session preloads a folder: the project of ``folder/__init__.py`` run from the
    folder."""
    try:
        found = discover_project(
            [folder / "__init__.py"], cwd=folder, config_path=preloaded.settings.configuration
        )
    except ConfigError:
        return  # the session says why when it looks
    key = (found.root, found.config_file)
    if key in preloaded.projects:
        return
    start = time.perf_counter()
    try:
        preloaded.projects[key] = LiveProject.load(found.root, folder, preloaded.settings)
    except ProjectError as exc:
        preloaded.projects[key] = exc
    preloaded.cwds[key] = folder
    preloaded.seconds[key] = time.perf_counter() - start


class EarlyLoad:
    """:func:`preload` in a thread of its own, started now; :meth:`take` waits for it."""

    def __init__(self, params: dict[str, Any]) -> None:
        self._loaded: Preloaded | None = None
        self._thread = threading.Thread(
            target=self._load, args=(params,), name="driftcheck-early-load", daemon=True
        )

    @staticmethod
    def start(params: dict[str, Any]) -> EarlyLoad:
        """Start loading the workspace ``params`` (an ``initialize`` request's) names."""
        loading = EarlyLoad(params)
        loading._thread.start()
        return loading

    def _load(self, params: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):  # the session loads the workspace itself then
            self._loaded = preload(params)

    def take(
        self, key: ProjectKey, cwd: Path, settings: Settings
    ) -> tuple[LiveProject | ProjectError, float] | None:
        """The project ``key`` as loaded from ``cwd`` under ``settings`` and its load's
        seconds, once the load ended; None when it was not loaded so (or already taken)."""
        self._thread.join()
        loaded = self._loaded
        if loaded is None:
            return None
        project = loaded.take(key, cwd, settings)
        return (project, loaded.seconds.get(key, 0.0)) if project is not None else None
