"""What ``driftcheck server`` does before pygls is imported (driftcheck.server.early): it reads
the client's ``initialize`` itself, loads the workspace it names while pygls imports, and gives
pygls the message again; the session adopts the project it would have loaded."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from driftcheck.project import discover_project
from driftcheck.server.early import (
    EarlyLoad,
    ReplayedInput,
    folder_of,
    initialize_params,
    preload,
    read_message,
)
from driftcheck.server.live import LiveProject
from driftcheck.server.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def framed(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def initialize(root: Path, options: dict | None = None) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "initializationOptions": options,
        },
    }


def test_the_first_message_is_read_whole_and_given_again() -> None:
    first = framed({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    second = framed({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    stream = io.BytesIO(first + second)
    head, message = read_message(stream)
    assert head == first
    assert message is not None and message["method"] == "initialize"
    replayed = ReplayedInput(head, stream)
    lines = [replayed.readline(), replayed.readline()]
    assert lines == [first.split(b"\r\n")[0] + b"\r\n", b"\r\n"]
    assert replayed.read(len(first) - sum(map(len, lines))) + replayed.read(-1) == (
        first[sum(map(len, lines)) :] + second
    )


def test_a_stream_that_ends_early_gives_no_message() -> None:
    head, message = read_message(io.BytesIO(b"Content-Length: 10\r\n"))
    assert (head, message) == (b"Content-Length: 10\r\n", None)


def test_only_an_initialize_request_names_a_workspace() -> None:
    assert initialize_params({"method": "shutdown", "id": 2}) is None
    assert initialize_params({"method": "initialize", "params": {"a": 1}}) == {"a": 1}


def test_a_file_uri_names_its_directory() -> None:
    assert folder_of("file:///work/a%20tree") == Path("/work/a tree")
    assert folder_of("untitled:Untitled-1") is None


def test_the_workspace_is_loaded_as_the_session_would_load_it(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    params = initialize_params(initialize(root, {"select": ["DC001"]}))
    assert params is not None
    preloaded = preload(params)
    assert preloaded is not None
    assert preloaded.settings == Settings(select=("DC001",))
    [(key, project)] = preloaded.projects.items()
    assert key[0] == root
    assert isinstance(project, LiveProject)
    assert preloaded.take(key, root, Settings()) is None  # other settings: loaded again
    assert preloaded.take(key, root, Settings(select=("DC001",))) is project
    assert preloaded.take(key, root, Settings(select=("DC001",))) is None  # taken once


def test_settings_that_are_not_valid_load_nothing(tmp_path: Path) -> None:
    params = initialize_params(initialize(tmp_path, {"fixStyle": "sideways"}))
    assert params is not None
    assert preload(params) is None


def test_the_load_runs_in_a_thread_and_is_taken_once_it_ends(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    params = initialize_params(initialize(root))
    assert params is not None
    loading = EarlyLoad.start(params)
    found = discover_project([root / "__init__.py"], cwd=root)
    key = (found.root, found.config_file)
    taken = loading.take(key, root, Settings())
    assert taken is not None
    project, seconds = taken
    assert isinstance(project, LiveProject) and seconds > 0
    assert loading.take(key, root, Settings()) is None
