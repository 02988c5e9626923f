"""A content-addressed cache of per-file scan results.

Entries are keyed by path and trusted while the file's stamp (size, mtime, ctime, inode) is
unchanged; the whole cache is keyed by driftcheck's version, the scanner's own code, the
universe fingerprint (so a change to the
canonical helper or the enum invalidates every entry) and the configuration digest. Each
entry carries a checksum: a corrupted or tampered entry is detected and ignored, never
trusted. The directory holds its own ``.gitignore`` (ruff's habit).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

from . import __version__
from .replay import stamp_of
from .scan import FileScan

CACHE_DIR_NAME = ".driftcheck_cache"
FORMAT = 4
# the modules and packages whose code decides what a cached scan holds
SCANNER_CODE = (
    "model.py",
    "scan.py",
    "partial.py",
    "prefilter.py",
    "liveness.py",  # what a site sets that its file never reads is cached with it
    "linesearch.py",
    "suppressions.py",
    "interpret.py",
    "sites",
    "universe",
)


def scanner_digest() -> str:
    """A hash of the code that produces cached scans, so an upgraded scanner never reuses them."""
    digest = hashlib.blake2b(digest_size=8)
    here = Path(__file__).parent
    for name in SCANNER_CODE:
        path = here / name
        files = sorted(path.glob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(file.name.encode())
            with contextlib.suppress(OSError):
                digest.update(file.read_bytes())
    return digest.hexdigest()


def _checksum(payload: str, salt: str) -> str:
    return hashlib.blake2b((salt + payload).encode(), digest_size=16).hexdigest()


class Stamp(NamedTuple):
    """What identifies a file version without reading it: size, mtime, ctime and inode.

    ctime cannot be set from user space, so a same-size rewrite that restores the mtime
    (``cp -p``, ``rsync -t``, ``tar``) still changes the stamp.
    """

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @staticmethod
    def of(stat: os.stat_result) -> Stamp:
        """The stamp of ``stat`` (the same fields, in order, as a run record's)."""
        return Stamp(*stamp_of(stat))


def _stamp_text(stamp: Stamp) -> str:
    size, mtime, ctime, inode = stamp
    return f"{size}:{mtime}:{ctime}:{inode}"


class _Empty:
    """The cached scan of a file that contributes nothing (most files): nothing to keep."""


EMPTY = _Empty()


class ScanCache:
    """Load, query and save the per-file cache for one root and one universe.

    A file that contributes something (sites, suppressions, model facts) has an entry
    ``[size, mtime_ns, ctime_ns, inode, data, checksum]`` with its scan as JSON. Files that
    contribute nothing (most of a tree) are kept per directory as one text block of
    ``name<TAB>stamp`` lines with one checksum, parsed only while the walk is in that
    directory, so a tree of 47,000 files costs little more memory than one of 4,700.
    """

    def __init__(self, directory: Path, key: str) -> None:
        self.directory = directory
        self.key = hashlib.blake2b(
            f"{FORMAT}|{__version__}|{scanner_digest()}|{key}".encode(), digest_size=12
        ).hexdigest()
        self.file = directory / f"scan-{self.key}.json"
        self.entries: dict[str, list[Any]] = {}
        self.empty: dict[str, str] = {}
        self.changed: dict[str, dict[str, str | None]] = {}
        self.rejected = 0
        self.dirty = False
        self._view_dir: str | None = None
        self._view: dict[str, str] = {}

    @staticmethod
    def location(root: Path) -> Path:
        """``$DRIFTCHECK_CACHE_DIR`` if set, else ``<root>/.driftcheck_cache``."""
        env = os.environ.get("DRIFTCHECK_CACHE_DIR")
        return Path(env) if env else root / CACHE_DIR_NAME

    @staticmethod
    def prepare(root: Path) -> None:
        """Make the cache directory of ``root`` now, before the tree is walked (a walk may
        start ahead of the cache's load): making it changes the stamp of the directory holding
        it, which the walk records (:mod:`driftcheck.replay`)."""
        with contextlib.suppress(OSError):
            ScanCache.location(root).mkdir(parents=True, exist_ok=True)

    def _signed(self, stamp: Stamp | list[Any], data: str) -> str:
        return _checksum(f"{list(stamp)[:4]}|{data}", self.key)

    def _signed_block(self, directory: str, block: str) -> str:
        return _checksum(f"{directory}\n{block}", self.key)

    def load(self) -> None:
        """Read the cache file; unreadable or tampered entries are dropped. The directory is
        made now, before the tree is walked, so that making it does not change the stamp of
        the directory holding it between a run and the next (:mod:`driftcheck.replay`)."""
        with contextlib.suppress(OSError):
            self.directory.mkdir(parents=True, exist_ok=True)
        try:
            raw = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(raw, dict) or raw.get("key") != self.key:
            return
        entries, empty = raw.get("entries"), raw.get("empty", {})
        if not isinstance(entries, dict) or not isinstance(empty, dict):
            return
        for directory, signed in empty.items():
            if (
                isinstance(signed, list)
                and len(signed) == 2
                and all(isinstance(part, str) for part in signed)
                and signed[0] == self._signed_block(directory, signed[1])
            ):
                self.empty[directory] = signed[1]
            else:  # every entry of the directory's block is dropped
                block = signed[1] if isinstance(signed, list) and len(signed) == 2 else ""
                self.rejected += max(1, str(block).count("\n"))
        for path, entry in entries.items():
            if (
                not isinstance(entry, list)
                or len(entry) != 6
                or not isinstance(entry[4], str)
                or entry[5] != self._signed(entry, entry[4])
            ):
                self.rejected += 1
                continue
            self.entries[path] = entry

    def _empty_stamps(self, directory: str) -> dict[str, str]:
        """``{name: stamp}`` of the files of ``directory`` cached as contributing nothing."""
        if directory != self._view_dir:
            self._view_dir, self._view = directory, {}
            for line in self.empty.get(directory, "").splitlines():
                name, _, stamp = line.partition("\t")
                self._view[name] = stamp
        return self._view

    def get(self, rel: str, stamp: Stamp) -> FileScan | _Empty | None:
        """The cached scan of ``rel`` (``EMPTY`` for a file with nothing in it), or None when
        the file changed since it was cached."""
        entry = self.entries.get(rel)
        if entry is None:
            directory, _, name = rel.rpartition("/")
            cached = self._empty_stamps(directory).get(name)
            return EMPTY if cached is not None and cached == _stamp_text(stamp) else None
        if tuple(entry[:4]) != stamp:
            return None
        try:
            return FileScan.from_dict(json.loads(entry[4]))
        except (ValueError, KeyError, TypeError):
            self.rejected += 1
            return None

    def put(self, rel: str, stamp: Stamp, scan: FileScan) -> None:
        """Remember a successful scan (scans with problems or a syntax error are never
        cached: the next run reads the file again and reports them again)."""
        self.dirty = True
        directory, _, name = rel.rpartition("/")
        changes = self.changed.setdefault(directory, {})
        if scan.problems or not scan.is_empty():
            changes[name] = None
            self.entries.pop(rel, None)
            if not (scan.problems or scan.syntax_errors):
                data = json.dumps(scan.to_dict(), separators=(",", ":"))
                self.entries[rel] = [*stamp, data, self._signed(stamp, data)]
            return
        self.put_empty(rel, stamp)

    def put_empty(self, rel: str, stamp: Stamp) -> None:
        """Remember that ``rel`` contributes nothing."""
        self.dirty = True
        directory, _, name = rel.rpartition("/")
        self.entries.pop(rel, None)
        text = _stamp_text(stamp)
        self.changed.setdefault(directory, {})[name] = text

    def _merged_empty(self) -> dict[str, str]:
        merged = dict(self.empty)
        for directory, changes in self.changed.items():
            lines: dict[str, str] = {}
            for line in self.empty.get(directory, "").splitlines():
                name, _, rest = line.partition("\t")
                lines[name] = rest
            for name, change in changes.items():
                if change is None:
                    lines.pop(name, None)
                else:
                    lines[name] = change
            merged[directory] = "".join(f"{n}\t{lines[n]}\n" for n in sorted(lines))
        return {d: block for d, block in merged.items() if block}

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
            empty = {d: [self._signed_block(d, b), b] for d, b in self._merged_empty().items()}
            document = {"key": self.key, "entries": self.entries, "empty": empty}
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".scan-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(document, handle, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            return
