"""Parse only the parts of a module that can hold a site.

A module is cut at its top-level definitions (lines starting, at column 0, with ``def``,
``async def``, ``class`` or a decorator ``@``). The code between definitions (imports,
constants, ``EntryClass = ...``) is always parsed; a definition only when one of the
prefilter's hot lines falls in it, or when a later question needs it (a read of an
attribute, a call of a function: :meth:`PartialModule.parse_lines`). Each piece is parsed
on its own, preceded by as many line breaks as lines come before it, so line numbers and
columns are those of the whole file.

Whenever the cut is unsafe — a line ending other than ``\\n``, a piece that does not parse
on its own (a definition inside a multi-line string at column 0) — the whole file is parsed
instead, so the result never depends on the shortcut. A syntax error is therefore reported
when it is in a piece the check reads; ``--fix`` compiles the whole file before changing it
(:mod:`driftcheck.fix.apply`), so nothing is written into a file that does not compile.
"""

from __future__ import annotations

import ast
import bisect
import re

DEFINITION = re.compile(r"^(?:@|def\b|async\s+def\b|class\b)", re.MULTILINE)


class PartialModule:
    """A module of which only some top-level pieces are parsed (``tree.body`` grows)."""

    def __init__(self, source: str, path: str, hot_lines: list[int] | None) -> None:
        self.source = source
        self.path = path
        self.tree = ast.Module(body=[], type_ignores=[])
        self._pieces: list[tuple[int, int, bool]] = []  # (first line, last line, definition)
        self._parsed: set[int] = set()
        self._bodies: dict[int, list[ast.stmt]] = {}
        if hot_lines is None or "\r" in source or not self._cut():
            self._whole()
            return
        hot = sorted(hot_lines)
        for index, (first, last, definition) in enumerate(self._pieces):
            position = bisect.bisect_left(hot, first)
            needed = not definition or (position < len(hot) and hot[position] <= last)
            if needed and not self._parse(index):
                self._whole()
                return
        self._assemble()

    @property
    def whole(self) -> bool:
        """Whether every piece is parsed (the whole file was)."""
        return len(self._parsed) == len(self._pieces)

    def _whole(self) -> None:
        self.tree = ast.parse(self.source, filename=self.path)
        self._pieces = [(1, max(1, self.source.count("\n") + 1), False)]
        self._parsed = {0}
        self._bodies = {0: self.tree.body}

    def _cut(self) -> bool:
        """Split into pieces; False when the text gives no safe cut."""
        line_starts = [0, *(m.end() for m in re.finditer("\n", self.source))]
        self._line_starts = line_starts
        starts: list[int] = []
        decorated = False  # a decorator was seen and its definition not yet
        for match in DEFINITION.finditer(self.source):
            line = bisect.bisect_right(line_starts, match.start())
            if not decorated:
                starts.append(line)
            decorated = match.group() == "@"
        if not starts:
            return False
        total = len(line_starts)
        pieces: list[tuple[int, int, bool]] = []
        if starts[0] > 1:
            pieces.append((1, starts[0] - 1, False))
        for index, start in enumerate(starts):
            end = (starts[index + 1] - 1) if index + 1 < len(starts) else total
            pieces.extend(self._split_tail(start, end))
        self._pieces = pieces
        return True

    def _split_tail(self, first: int, last: int) -> list[tuple[int, int, bool]]:
        """A definition ends where the next top-level statement that is not part of it begins
        (``EntryClass = ...`` after the last class); that tail is scaffold."""
        for line in range(first + 1, last + 1):
            text = self._line(line, self._line_starts)
            if text and not text[0].isspace() and text[0] not in "#)]}'\"" and text[:1] != "@":
                return [(first, line - 1, True), (line, last, False)]
        return [(first, last, True)]

    def _line(self, line: int, line_starts: list[int]) -> str:
        start = line_starts[line - 1]
        end = line_starts[line] if line < len(line_starts) else len(self.source)
        return self.source[start:end]

    def _parse(self, index: int) -> bool:
        if index in self._parsed:
            return True
        first, last, _ = self._pieces[index]
        start = self._line_starts[first - 1]
        end = self._line_starts[last] if last < len(self._line_starts) else len(self.source)
        try:
            piece = ast.parse("\n" * (first - 1) + self.source[start:end], filename=self.path)
        except SyntaxError:
            return False
        self._parsed.add(index)
        self._bodies[index] = piece.body
        return True

    def _assemble(self) -> None:
        self.tree.body = [stmt for index in sorted(self._bodies) for stmt in self._bodies[index]]

    def parse_lines(self, lines: set[int] | list[int]) -> bool:
        """Parse the pieces holding ``lines``; True when the tree grew."""
        grown = False
        for index, (first, last, _) in enumerate(self._pieces):
            if index in self._parsed:
                continue
            if any(first <= line <= last for line in lines):
                if not self._parse(index):
                    self._whole()
                    return True
                grown = True
        if grown:
            self._assemble()
        return grown


def parse_for_sites(source: str, path: str, hot_lines: list[int] | None) -> PartialModule:
    """The module with the pieces that can hold a site parsed (see the module docstring);
    raises ``SyntaxError`` as :func:`ast.parse` would for a file that does not parse."""
    return PartialModule(source, path, hot_lines)
