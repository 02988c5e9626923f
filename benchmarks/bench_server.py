"""``driftcheck server`` on a whole SGLang release: its first answer, an edit's, its memory.

    python benchmarks/bench_server.py [--version 0.5.23] [--runs 5] [--edits 1000]

Printed, never asserted (the targets of issue 24 are printed beside the figures):

* **initial scan**: the server's workspace scan on its own (``LiveProject.load`` of the tree,
  the code the server runs on ``initialize``, in a process of its own, an empty scan cache),
  alternated run by run with a cold ``driftcheck .`` of the tree (``python -P -m driftcheck``,
  an empty scan cache and no run record); min/median/max of each and the median of the paired
  ratios;
* **first diagnostics**: from starting ``driftcheck server`` (initialize, initialized, didOpen
  of ``sglang/srt/models/kimi_k3.py``) to that document's first ``publishDiagnostics``, with an
  empty scan cache: the scan plus importing pygls and lsprotocol (which the server overlaps with
  the scan), alternated with the same cold check, and the scan's part as the server logs it;
* **didChange -> publishDiagnostics** on kimi_k3.py in one long-lived server (``--edits``
  edits, each inserting a new comment line just above ``def _uses_ep_a2a``, an unsaved edit
  the scan must read): min/median/max and the 90th percentile, debounce included (the
  default settings);
* **resident memory** of the server process (``VmRSS``) after 100 and after all edits.

The scan cache goes to a temporary directory (``DRIFTCHECK_CACHE_DIR``); nothing is written
into the release's tree.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from driftcheck.corpus import fetch_release

EDITED = "sglang/srt/models/kimi_k3.py"
ANCHOR = "def _uses_ep_a2a"  # edits go just above this line
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
DRIFTCHECK = [sys.executable, "-P", "-m", "driftcheck"]


def _summary(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (
        f"min {ordered[0] * 1000:.1f} ms  median {statistics.median(ordered) * 1000:.1f} ms  "
        f"p90 {p90 * 1000:.1f} ms  max {ordered[-1] * 1000:.1f} ms  (n={len(ordered)})"
    )


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Session:
    """A server and a client waiting for each document version's diagnostics."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.waiting: dict[tuple[str, int], asyncio.Future[float]] = {}
        client.protocol.wait_for_notification(PUBLISH, callback=self._got)

    def _got(self, params: types.PublishDiagnosticsParams) -> None:
        self.client.protocol.wait_for_notification(PUBLISH, callback=self._got)
        future = self.waiting.pop((params.uri, params.version or 0), None)
        if future is not None and not future.done():
            future.set_result(time.perf_counter())

    def expect(self, uri: str, version: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiting[(uri, version)] = future
        return future

    def load_seconds(self) -> float:
        """The workspace scan's own time, as the server logged it (``loaded ... (N s)``)."""
        for message in self.client.log_messages:
            found = re.search(r"^driftcheck: loaded .*, ([\d.]+) s\)$", message.message)
            if found:
                return float(found.group(1))
        return float("nan")

    @property
    def pid(self) -> int:
        assert self.client._server is not None
        return self.client._server.pid

    async def close(self) -> None:
        self.client.protocol._notification_futures.pop(PUBLISH, None)
        await self.client.shutdown_session()
        await self.client.stop()


async def _start(root: Path, cache: Path) -> tuple[Session, str, str, float]:
    """A server on ``root``, kimi_k3.py opened; its URI, text, and the seconds to its first
    diagnostics."""
    began = time.perf_counter()
    config = ClientServerConfig(
        server_command=[*DRIFTCHECK, "server"],
        server_env={**os.environ, "DRIFTCHECK_CACHE_DIR": str(cache)},
    )
    client = await config.start()
    assert isinstance(client, LanguageClient)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        """Accept the server's file watchers (as an editor does)."""

    session = Session(client)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        )
    )
    path = root / EDITED
    uri, text = path.as_uri(), path.read_text()
    first = session.expect(uri, 1)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )
    return session, uri, text, await first - began


# the load, then the exit the check command takes too (no teardown of the heap)
SCAN = (
    "import os, sys; from pathlib import Path; from driftcheck.server.live import LiveProject; "
    "from driftcheck.server.settings import Settings; "
    "root = Path(sys.argv[1]); LiveProject.load(root, root, Settings()); os._exit(0)"
)


def _scan_alone(root: Path) -> float:
    """The server's workspace scan in a process of its own (what it runs on ``initialize``),
    with an empty scan cache."""
    with tempfile.TemporaryDirectory() as cache:
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-P", "-c", SCAN, str(root)],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "DRIFTCHECK_CACHE_DIR": cache},
            check=True,
        )
        return time.perf_counter() - began


def _cold_check(root: Path) -> float:
    """``driftcheck .`` with an empty scan cache and no run record (it fills the cache, as
    the server does)."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as runs:
        began = time.perf_counter()
        subprocess.run(
            [*DRIFTCHECK, "--color", "never", "."],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "DRIFTCHECK_CACHE_DIR": cache, "DRIFTCHECK_RUNS_DIR": runs},
        )
        return time.perf_counter() - began


async def _initial(root: Path, runs: int) -> None:
    alone_times, alone_checks = [], []
    server_times, scan_times, check_times = [], [], []
    for run in range(runs + 1):
        alone = _scan_alone(root)
        alone_check = _cold_check(root)
        with tempfile.TemporaryDirectory() as cache:
            session, _, _, seconds = await _start(root, Path(cache))
            scan = session.load_seconds()
            await session.close()
        check = _cold_check(root)
        if run:  # the first pairs warm the file system and the bytecode
            alone_times.append(alone)
            alone_checks.append(alone_check)
            server_times.append(seconds)
            scan_times.append(scan)
            check_times.append(check)
    alone_ratios = [s / c for s, c in zip(alone_times, alone_checks, strict=True)]
    ratios = [s / c for s, c in zip(server_times, check_times, strict=True)]
    print(f"initial scan (the server's load alone): {_summary(alone_times)}")
    print(f"cold `driftcheck .` (empty cache):      {_summary(alone_checks)}")
    print(
        f"paired ratio scan / cold check: median {statistics.median(alone_ratios):.2f}x "
        "(target <= 1.0x)"
    )
    print(f"first diagnostics (server started):     {_summary(server_times)}")
    print(f"  of which the workspace scan (logged): {_summary(scan_times)}")
    print(f"cold `driftcheck .` (empty cache):      {_summary(check_times)}")
    print(f"paired ratio first diagnostics / cold check: median {statistics.median(ratios):.2f}x")


async def _edits(root: Path, edits: int) -> None:
    with tempfile.TemporaryDirectory() as cache:
        session, uri, text, _ = await _start(root, Path(cache))
        line = next(i for i, t in enumerate(text.splitlines()) if t.startswith(ANCHOR))
        latencies: list[float] = []
        rss = {}
        for version in range(2, edits + 2):
            done = session.expect(uri, version)
            sent = time.perf_counter()
            session.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    [
                        types.TextDocumentContentChangePartial(
                            range=types.Range(types.Position(line, 0), types.Position(line, 0)),
                            text=f"# edit {version}\n",
                        )
                    ],
                )
            )
            latencies.append(await done - sent)
            line += 1
            if version - 1 in (100, edits):
                rss[version - 1] = _rss_kib(session.pid)
        await session.close()
    print(
        f"didChange -> publishDiagnostics ({EDITED}): {_summary(latencies)} (target median <= 50 ms)"
    )
    first, last = rss.get(100, 0), rss[edits]
    change = (last - first) / first * 100 if first else 0.0
    print(
        f"resident memory: {first / 1024:.1f} MiB after 100 edits, {last / 1024:.1f} MiB after "
        f"{edits} ({change:+.1f}%, target within 10%)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--version", default="0.5.23")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--edits", type=int, default=1000)
    args = parser.parse_args()
    root = fetch_release(args.version)
    print(f"sglang {args.version}: {root}")
    asyncio.run(_initial(root, args.runs))
    asyncio.run(_edits(root, args.edits))


if __name__ == "__main__":
    main()
