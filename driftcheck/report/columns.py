"""Columns as a reader counts them: the engine's 0-based UTF-8 byte offsets made 1-based
characters (text, JSON, GitHub: what ruff prints and editors show) or UTF-16 code units
(SARIF's default ``columnKind``).

Each file is read once per report; a file that cannot be read or decoded keeps byte
offsets + 1 (exact for ASCII lines, which is what nearly all source is).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from ..scan import decode_source

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
Unit = Literal["characters", "utf16"]


class ColumnMap:
    """Converts 0-based UTF-8 byte columns of files under ``root`` to 1-based ``unit``s."""

    def __init__(self, root: Path, unit: Unit = "utf16") -> None:
        self.root = root
        self.unit = unit
        self._lines: dict[str, list[bytes] | None] = {}

    def column(self, path: str, line: int, byte_col: int) -> int:
        """The 1-based column of byte offset ``byte_col`` on 1-based ``line`` of ``path``
        (a path relative to the root)."""
        lines = self._file_lines(path)
        if lines is None or not 1 <= line <= len(lines):
            return byte_col + 1
        prefix = lines[line - 1][:byte_col]
        if prefix.isascii():
            return byte_col + 1
        text = prefix.decode("utf-8", errors="replace")
        if self.unit == "characters":
            return len(text) + 1
        return len(text.encode("utf-16-le")) // 2 + 1

    def _file_lines(self, path: str) -> list[bytes] | None:
        if path not in self._lines:
            try:
                source = decode_source((self.root / path).read_bytes())
                self._lines[path] = [part.encode("utf-8") for part in _LINE_BREAK.split(source)]
            except (OSError, UnicodeDecodeError, LookupError, SyntaxError):
                self._lines[path] = None
        return self._lines[path]
