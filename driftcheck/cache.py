"""A content-addressed cache of per-file scan results.

Entries are keyed by path and checked by (size, mtime) first and content digest second; the
whole cache is keyed by driftcheck's version, the universe fingerprint (so a change to the
canonical helper or the enum invalidates every entry) and the configuration digest. Each
entry carries a checksum: a corrupted or tampered entry is detected and ignored, never
trusted. The directory holds its own ``.gitignore`` (ruff's habit).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from . import __version__
from .scan import FileScan

CACHE_DIR_NAME = ".driftcheck_cache"
FORMAT = 1
SCANNER_MODULES = (
    "model",
    "scan",
    "sites",
    "receivers",
    "classify",
    "prefilter",
    "suppressions",
    "universe",
)


def scanner_digest() -> str:
    """A hash of the code that produces cached scans, so an upgraded scanner never reuses them."""
    digest = hashlib.blake2b(digest_size=8)
    here = Path(__file__).parent
    for name in SCANNER_MODULES:
        try:
            digest.update((here / f"{name}.py").read_bytes())
        except OSError:
            digest.update(name.encode())
    return digest.hexdigest()


def _checksum(payload: str, salt: str) -> str:
    return hashlib.blake2b((salt + payload).encode(), digest_size=16).hexdigest()


class ScanCache:
    """Load, query and save the per-file cache for one root and one universe."""

    def __init__(self, directory: Path, key: str) -> None:
        self.directory = directory
        self.key = hashlib.blake2b(
            f"{FORMAT}|{__version__}|{scanner_digest()}|{key}".encode(), digest_size=12
        ).hexdigest()
        self.file = directory / f"scan-{self.key}.json"
        self.entries: dict[str, dict[str, Any]] = {}
        self.rejected = 0
        self.dirty = False

    @staticmethod
    def location(root: Path) -> Path:
        """``$DRIFTCHECK_CACHE_DIR`` if set, else ``<root>/.driftcheck_cache``."""
        env = os.environ.get("DRIFTCHECK_CACHE_DIR")
        return Path(env) if env else root / CACHE_DIR_NAME

    def load(self) -> None:
        """Read the cache file; unreadable or tampered entries are dropped."""
        try:
            raw = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(raw, dict) or raw.get("key") != self.key:
            return
        entries = raw.get("entries")
        if not isinstance(entries, dict):
            return
        for path, entry in entries.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("data"), str):
                self.rejected += 1
                continue
            if entry.get("sum") != _checksum(entry["data"], self.key):
                self.rejected += 1
                continue
            self.entries[path] = entry

    def get(self, rel: str, stat: os.stat_result) -> FileScan | None:
        """The cached scan of ``rel`` if the file is unchanged since it was cached."""
        entry = self.entries.get(rel)
        if (
            entry is None
            or entry.get("size") != stat.st_size
            or entry.get("mtime") != stat.st_mtime_ns
        ):
            return None
        try:
            return FileScan.from_dict(json.loads(entry["data"]))
        except (ValueError, KeyError, TypeError):
            self.rejected += 1
            return None

    def put(self, rel: str, stat: os.stat_result, scan: FileScan) -> None:
        """Remember a successful scan (scans with problems are never cached)."""
        if scan.problems:
            self.entries.pop(rel, None)
            self.dirty = True
            return
        data = json.dumps(scan.to_dict(), separators=(",", ":"))
        self.entries[rel] = {
            "size": stat.st_size,
            "mtime": stat.st_mtime_ns,
            "data": data,
            "sum": _checksum(data, self.key),
        }
        self.dirty = True

    def save(self) -> None:
        """Write the cache atomically; failures (read-only trees) are silently skipped."""
        if not self.dirty:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            gitignore = self.directory / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# Automatically created by driftcheck.\n*\n")
            for stale in self.directory.glob("scan-*.json"):
                if stale != self.file:
                    stale.unlink(missing_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".scan-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"key": self.key, "entries": self.entries}, handle, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            return
