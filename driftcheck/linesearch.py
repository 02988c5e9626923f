"""Regular expressions anchored at line starts or word starts, found by a plain search first.

``pattern.finditer`` with ``^`` in multiline mode tries every position of a file; searching for
a word the match must contain (``import``, ``EntryClass``, ``class``) and matching only at the
start of the lines holding it gives the same matches several times cheaper, and so does a
:class:`LinePattern` (a newline, then the pattern: the engine skips from newline to newline).
Likewise a
pattern that starts with ``\b`` is tried at every position, while one that starts with a
literal is searched for as a string: :func:`at_word_starts` matches the literal and checks
the boundary itself, about ten times faster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import AnyStr


def at_line_starts(
    text: AnyStr, needle: AnyStr, pattern: re.Pattern[AnyStr], column_zero: bool = False
) -> Iterator[re.Match[AnyStr]]:
    """``pattern`` matched at the start of each line of ``text`` holding ``needle`` (when
    ``column_zero``, only lines that start with it), each line once, in order."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    seen = -1
    position = text.find(needle)
    while position != -1:
        start = text.rfind(newline, 0, position) + 1
        if start != seen and (not column_zero or start == position):
            seen = start
            match = pattern.match(text, start)
            if match is not None:
                yield match
        position = text.find(needle, position + 1)


WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def at_word_starts(
    text: AnyStr, pattern: re.Pattern[AnyStr], start: int = 0, end: int | None = None
) -> Iterator[re.Match[AnyStr]]:
    """The matches ``finditer`` gives for ``\\b`` followed by ``pattern`` in
    ``text[start:end]``, in order (``\\b`` as the pattern's kind reads it: ASCII word bytes
    for ``bytes``, Unicode word characters for ``str``)."""
    end = len(text) if end is None else end
    word = _is_word_byte if isinstance(text, bytes) else _is_word_char
    position = start
    while (match := pattern.search(text, position, end)) is not None:
        at = match.start()
        ahead = at < len(text) and word(text[at])
        if (at > 0 and word(text[at - 1])) == ahead:
            position = at + 1  # no boundary here: what \b would try next
            continue
        yield match
        position = max(match.end(), at + 1)


def line_numbers(data: bytes, offsets: list[int]) -> list[int]:
    """The 1-based line of each of ``offsets`` (sorted ascending) in ``data``, whose lines end
    in ``\n``: one pass from offset to offset (counting from the start for each is quadratic
    on a generated file with many tokens: 10 MB took minutes)."""
    lines = []
    line, position = 1, 0
    for offset in offsets:
        line += data.count(b"\n", position, offset)
        position = offset
        lines.append(line)
    return lines


def _is_word_byte(value: int) -> bool:
    return value in WORD_BYTES


def _is_word_char(value: str) -> bool:
    return value.isalnum() or value == "_"


class LinePattern:
    """``^`` + ``body`` in multiline mode, searched for as a newline followed by ``body``.
    Matches are reported as ``(line start, match)``; the match's groups are ``body``'s.
    ``body`` must not match a newline at its end (no pattern here does): the newline before
    the next line would be taken by that match."""

    def __init__(self, body: str) -> None:
        self.first = re.compile(body)
        self.after_newline = re.compile(f"\n(?:{body})")

    def finditer(
        self, text: str, pos: int = 0, endpos: int | None = None
    ) -> Iterator[tuple[int, re.Match[str]]]:
        """What ``re.compile("^" + body, re.M).finditer(text, pos, endpos)`` finds, in order."""
        # positions out of range are read as re reads them
        endpos = len(text) if endpos is None else min(max(endpos, 0), len(text))
        pos = min(max(pos, 0), len(text))
        if pos > endpos:
            return
        if pos == 0 or text[pos - 1 : pos] == "\n":
            match = self.first.match(text, pos, endpos)
            if match is not None:
                yield pos, match
                pos = match.end()
        for match in self.after_newline.finditer(text, pos, endpos):
            yield match.start() + 1, match

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> int | None:
        """Where the first match starts (None when there is none)."""
        return next((start for start, _ in self.finditer(text, pos, endpos)), None)
