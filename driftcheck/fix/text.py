"""Source text addressed the way ``ast`` addresses it, and files read and written byte-exactly.

``ast`` gives 1-based lines and 0-based UTF-8 byte columns; rewrites splice Python strings, so
:class:`LineIndex` converts between the two. :class:`SourceFile` keeps what is needed to write
a file back exactly as it was except for the rewritten ranges: its encoding, its byte-order
mark, its line endings and its content digest (to refuse overwriting a file that changed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from driftcheck.model import Span
from driftcheck.scan import content_digest, source_encoding

NEWLINE = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """Converts ``(line, byte column)`` positions of one text to string offsets and back."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in NEWLINE.finditer(text))]

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based) including its line ending."""
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[start:end]

    def offset(self, line: int, col: int) -> int:
        """The string offset of ``ast`` position ``(line, col)``."""
        if line > len(self.starts):
            return len(self.text)
        start = self.starts[line - 1]
        text = self.line_text(line)
        if text.isascii():
            return start + min(col, len(text))
        return start + len(text.encode("utf-8")[:col].decode("utf-8", errors="ignore"))

    def position(self, offset: int) -> tuple[int, int]:
        """The ``ast`` position ``(line, byte col)`` of string offset ``offset``."""
        low, high = 0, len(self.starts) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        start = self.starts[low]
        return low + 1, len(self.text[start:offset].encode("utf-8"))

    def range_of(self, span: Span) -> tuple[int, int]:
        """The string range ``[start, end)`` of ``span``."""
        return self.offset(span.line, span.col), self.offset(span.end_line, span.end_col)

    def span_of(self, start: int, end: int) -> Span:
        """The :class:`Span` of string range ``[start, end)``."""
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        return Span(line, col, end_line, end_col)

    def line_end(self, offset: int) -> int:
        """The offset of the line ending (or end of text) of the line holding ``offset``."""
        match = NEWLINE.search(self.text, offset)
        return match.start() if match else len(self.text)

    def newline(self) -> str:
        """The text's line ending (the first one found; ``\\n`` when it has none)."""
        match = NEWLINE.search(self.text)
        return match.group() if match else "\n"


@dataclass
class SourceFile:
    """One file's decoded text and what it takes to write it back byte-exactly."""

    path: Path
    data: bytes
    text: str
    encoding: str
    bom: bool

    @property
    def digest(self) -> str:
        """The content digest the scan cache uses, of the bytes as read."""
        return content_digest(self.data)

    @property
    def newline(self) -> str:
        """The file's line ending (``\n`` when it has none yet)."""
        for ending in ("\r\n", "\r", "\n"):
            if ending in self.text:
                return ending
        return "\n"

    def encode(self, text: str) -> bytes:
        """``text`` in this file's encoding, with its byte-order mark when it had one."""
        body = text.encode(self.encoding)
        return (b"\xef\xbb\xbf" if self.bom else b"") + body


def read_source(path: Path) -> SourceFile:
    """Read and decode ``path`` as Python source (PEP 263 coding line, UTF-8 BOM)."""
    return source_of(path, path.read_bytes())


def source_of(path: Path, data: bytes) -> SourceFile:
    """Decode ``data``, the content of ``path``, as Python source (as :func:`read_source`)."""
    encoding = source_encoding(data)  # honours \r line endings, as Python does
    bom = data.startswith(b"\xef\xbb\xbf")
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    text = data[3:].decode(encoding) if bom else data.decode(encoding)
    return SourceFile(path, data, text, encoding, bom)
