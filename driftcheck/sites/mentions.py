"""Where a name is mentioned in one module's text: the lines the role analysis
(:mod:`.controls`) parses and walks to follow a value (its callers, its reads, a function's
definition).

Each question names a kind of mention and a name (``call``: ``name(``; ``def``: ``def
_name(``; ``name``: the word ``name``; ``attr``: ``.name``) and a range of lines. A file
with a few sites asks a few questions, each answered by a search of its range; a file with
thousands of sites asks thousands, and a search of the whole file for each made its check
quadratic (69,250 functions returning a chain, one file: 1,371 s). So once the searches of
one kind have read the text :data:`SEARCHES` times over, every mention of that kind is
indexed in one pass (name -> offsets), and the questions after are answered from the index
in time proportional to their answers. An index answers exactly as the search would: a
name's mention is the whole run of word bytes at a word start (ASCII word bytes, as a
``bytes`` pattern's ``\\b`` reads them); a name spelled with other than ASCII is always
searched for.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator

from ..linesearch import at_word_starts

# whole-text reads of one kind's searches before that kind is indexed (an index costs about
# as much as that many searches)
SEARCHES = 16

RUN = rb"[A-Za-z0-9_]+"
WORD_START = rb"(?<![A-Za-z0-9_])"
# kind -> (the search for one name: before and after it; whether it must start a word;
# whether a mention can span lines; the pattern indexing every mention, its name as group 1)
KINDS: dict[str, tuple[bytes, bytes, bool, bool, re.Pattern[bytes]]] = {
    "call": (b"", rb"\s*\(", True, True, re.compile(WORD_START + rb"(" + RUN + rb")\s*\(")),
    "def": (
        rb"def\s+_*",
        rb"\s*\(",
        True,
        True,
        re.compile(WORD_START + rb"def\s+_*(" + RUN + rb")\s*\("),
    ),
    "name": (b"", rb"\b", True, False, re.compile(WORD_START + rb"(" + RUN + rb")")),
    "attr": (rb"\.", rb"\b", False, False, re.compile(rb"\.(" + RUN + rb")")),
}


class Mentions:
    """Answers :meth:`lines` for one module's ``lines`` (searched, or indexed once a kind's
    searches have read the text :data:`SEARCHES` times)."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self._text: bytes | None = None  # the lines joined, and where each starts
        self._starts: list[int] = []
        self._read: dict[str, int] = dict.fromkeys(KINDS, 0)  # bytes searched, per kind
        self._indexes: dict[str, dict[bytes, list[int]]] = {}

    @property
    def starts(self) -> list[int]:
        """Where each line starts in the joined text (and where the text ends)."""
        self._join()
        return self._starts

    def _join(self) -> bytes:
        if self._text is None:
            self._text = b"".join(self.lines)
            self._starts = list(itertools.accumulate(map(len, self.lines), initial=0))
        return self._text

    def lines_of(self, kind: str, name: str, first: int, last: int) -> set[int]:
        """The lines in ``[first, last]`` on which a mention of ``kind`` of ``name`` starts."""
        text, starts = self._join(), self._starts
        start, end = starts[first - 1], starts[min(last, len(self.lines))]
        before, after, word, spans, indexing = KINDS[kind]
        # a mention that can span lines is taken from the index only for the whole text: a
        # search of a range stops at its end
        # (the index keys a definition by its name less its leading underscores)
        indexable = (
            name.isascii()
            and (not spans or end == len(text))
            and not (kind == "def" and name.startswith("_"))
        )
        index = self._indexes.get(kind)
        if index is None and indexable and self._read[kind] >= SEARCHES * max(len(text), 1):
            index = self._indexes[kind] = _index(text, indexing)
        if index is not None and indexable:
            offsets = index.get(name.encode(), [])
            low, high = bisect.bisect_left(offsets, start), bisect.bisect_left(offsets, end)
            return {bisect.bisect_right(starts, offset) for offset in offsets[low:high]}
        self._read[kind] += end - start
        return self.search(re.compile(before + re.escape(name.encode()) + after), first, last, word)

    def search(
        self, pattern: re.Pattern[bytes], first: int, last: int, word: bool = False
    ) -> set[int]:
        """The lines in ``[first, last]`` on which a match of ``pattern`` starts (with
        ``word``, only a match starting a word: :func:`at_word_starts`), searched."""
        text, starts = self._join(), self._starts
        start, end = starts[first - 1], starts[min(last, len(self.lines))]
        matches = _search(text, pattern, word, start, end)
        return {bisect.bisect_right(starts, match.start()) for match in matches}


def _search(
    text: bytes, pattern: re.Pattern[bytes], word: bool, start: int, end: int
) -> Iterator[re.Match[bytes]]:
    if word:
        return at_word_starts(text, pattern, start, end)
    return pattern.finditer(text, start, end)


def _index(text: bytes, pattern: re.Pattern[bytes]) -> dict[bytes, list[int]]:
    """Every match of ``pattern`` in ``text``: its group 1 -> where its matches start."""
    found: dict[bytes, list[int]] = {}
    for match in pattern.finditer(text):
        found.setdefault(match.group(1), []).append(match.start())
    return found
