"""Checking, diffing and writing a rewritten file.

A rewritten file must byte-compile before it is written. It is written atomically: a
temporary file in the same directory, flushed and fsynced, given the original's mode bits,
then ``os.replace``d over the original, and only if the original still has the content the
fixes were planned against.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import stat
import tempfile
from pathlib import Path

from driftcheck.scan import content_digest


class WriteError(Exception):
    """The file was not written; the message says why."""


def compiles(text: str, rel: str) -> str | None:
    """None when ``text`` parses and byte-compiles, else the error (``line N: message``)."""
    try:
        compile(text, rel, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return str(exc) or type(exc).__name__
    return None


def unified_diff(rel: str, old: str, new: str) -> str:
    """A unified diff of one file with ``a/``/``b/`` prefixes (git-apply compatible)."""
    lines = difflib.unified_diff(
        _lines(old),
        _lines(new),
        fromfile=f"a/{rel}",
        tofile=f"b/{rel}",
    )
    out = []
    for line in lines:
        out.append(line)
        if not line.endswith(("\n", "\r")):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def _lines(text: str) -> list[str]:
    """Lines with their endings; only ``\n``, ``\r\n`` and ``\r`` end a line (as for Python)."""
    return [line for line in re.split(r"(?<=\n)|(?<=\r)(?!\n)", text) if line]


def write_atomically(path: Path, data: bytes, expected_digest: str) -> None:
    """Replace ``path`` with ``data`` unless its content changed from ``expected_digest``."""
    try:
        current = path.read_bytes()
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise WriteError(f"cannot read the file again: {exc.strerror or exc}") from exc
    if content_digest(current) != expected_digest:
        raise WriteError("the file changed on disk while fixing; not overwritten")
    # os.replace only needs the directory writable: without this check a read-only file (or
    # one root may write but whose mode says nobody should) would be silently replaced
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise WriteError("the file is read-only; not overwritten")
    handle, temp = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".driftcheck-tmp"
    )
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise WriteError(f"cannot write the file: {exc.strerror or exc}") from exc
