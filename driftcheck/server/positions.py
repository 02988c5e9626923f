"""Positions in a document as the client counts them, and edits that turn one text into another.

The engine locates code as ``ast`` does: 1-based lines, 0-based UTF-8 byte columns. A client
counts characters in the position encoding agreed at ``initialize`` (UTF-16 unless it offers
another): :class:`LineMap` converts between the two for one text. Lines end at ``\\r\\n``,
``\\r`` or ``\\n``, as for Python and for the protocol alike.
"""

from __future__ import annotations

import difflib
import re

from lsprotocol import types

LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# what str.splitlines also ends a line at, and Python and the protocol do not
OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(text: str) -> list[str]:
    """``text``'s lines with their endings (only ``\\r\\n``, ``\\r`` and ``\\n`` end a line)."""
    if OTHER_BREAKS.search(text) is None:
        return text.splitlines(keepends=True)
    return LINE.findall(text)


def _strip_ending(line: str) -> str:
    return line.rstrip("\r\n")


class LineMap:
    """Converts positions of one text between the engine's and the client's units."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16) -> None:
        self.lines = split_lines(text)
        self.encoding = encoding

    def line_text(self, line: int) -> str:
        """Line ``line`` (0-based) without its ending (empty past the end)."""
        return _strip_ending(self.lines[line]) if 0 <= line < len(self.lines) else ""

    def units(self, text: str) -> int:
        """The length of ``text`` in the client's units."""
        if text.isascii() or self.encoding == types.PositionEncodingKind.Utf32:
            return len(text)
        if self.encoding == types.PositionEncodingKind.Utf8:
            return len(text.encode("utf-8"))
        return len(text.encode("utf-16-le")) // 2

    def position(self, line: int, byte_col: int) -> types.Position:
        """The client position of ``ast`` position (``line`` 1-based, UTF-8 ``byte_col``)."""
        text = self.line_text(line - 1)
        if text.isascii():
            return types.Position(line=line - 1, character=min(byte_col, len(text)))
        prefix = text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")
        return types.Position(line=line - 1, character=self.units(prefix))

    def line_range(self, line: int) -> types.Range:
        """The whole of line ``line`` (1-based; the first line when ``line`` is unknown)."""
        index = max(0, line - 1)
        end = self.units(self.line_text(index))
        return types.Range(types.Position(index, 0), types.Position(index, end))

    def engine_position(self, position: types.Position) -> tuple[int, int]:
        """The ``ast`` position (1-based line, UTF-8 byte column) of a client position."""
        text = self.line_text(position.line)
        if text.isascii():
            return position.line + 1, min(position.character, len(text))
        count = 0
        for index, char in enumerate(text):
            if count >= position.character:
                return position.line + 1, len(text[:index].encode("utf-8"))
            count += self.units(char)
        return position.line + 1, len(text.encode("utf-8"))

    def end(self) -> types.Position:
        """The position just past the text's last character."""
        if not self.lines:
            return types.Position(0, 0)
        last = self.lines[-1]
        if last != _strip_ending(last):
            return types.Position(len(self.lines), 0)
        return types.Position(len(self.lines) - 1, self.units(last))


def text_edits(old: str, new: str, encoding: str) -> list[types.TextEdit]:
    """Edits turning ``old`` into ``new``: one per changed block of whole lines."""
    before, after = split_lines(old), split_lines(new)
    lines = LineMap(old, encoding)
    edits = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, low, high, new_low, new_high in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = types.Position(low, 0)
        end = types.Position(high, 0) if high < len(before) else lines.end()
        edits.append(types.TextEdit(types.Range(start, end), "".join(after[new_low:new_high])))
    return edits
