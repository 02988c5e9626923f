"""Parse only the parts of a module that can hold a site.

A module is cut at its top-level definitions (lines starting, at column 0, with ``def``,
``async def``, ``class`` or a decorator ``@``). The code between definitions (imports,
constants, ``EntryClass = ...``) is always parsed; a definition only when one of the
prefilter's hot lines falls in it, or when a later question needs it (a read of an
attribute, a call of a function: :meth:`PartialModule.parse_lines`). Each piece is parsed
on its own at its place (:func:`parse_at`), so line numbers and columns are those of the
whole file, and a piece costs the same wherever it lies: parsing a file's hot pieces takes time
linear in their size.

Whenever the cut is unsafe — a line ending other than ``\\n``, a piece that does not parse
on its own (a definition inside a multi-line string at column 0) — the whole file is parsed
instead, so the result never depends on the shortcut. A syntax error is therefore reported
when it is in a piece the check reads; ``--fix`` compiles the whole file before changing it
(:mod:`driftcheck.fix.apply`), so nothing is written into a file that does not compile.
"""

from __future__ import annotations

import ast
import bisect
import functools
import itertools
import re
from collections.abc import Callable

from .linesearch import LinePattern

DEFINITION = LinePattern(r"@|def\b|async\s+def\b|class\b")
# statements that joined a module's tree, each with the class it joined (None: the module)
Added = list[tuple[ast.stmt, ast.ClassDef | None]]
# a line of code at column 0 that continues no definition (not a comment, a closing bracket, a
# string's continuation or a decorator)
TOP_LEVEL_CODE = LinePattern(r"[^\s#)\]}'\"@]")


class _Module(ast.Module):
    """The module's tree, whose ``body`` is put together again from its parsed pieces when it
    is next read after a piece joined (:meth:`PartialModule.parse_lines`): rebuilt on each
    join, a file of 69,250 sites (each reached through a function of its own, parsed when a
    question needs it) rebuilt a list of 140,000 statements 69,250 times. A reader holding
    the list read before keeps it, as it kept the list a join replaced."""

    _pending: Callable[[], list[ast.stmt]] | None = None

    @property
    def body(self) -> list[ast.stmt]:
        """The module's statements, those of every piece parsed so far."""
        if self._pending is not None:
            assemble, self._pending = self._pending, None
            self.__dict__["body"] = assemble()
        statements: list[ast.stmt] = self.__dict__["body"]
        return statements

    @body.setter
    def body(self, statements: list[ast.stmt]) -> None:
        self._pending = None
        self.__dict__["body"] = statements


def _position(stmt: ast.stmt) -> tuple[int, int]:
    return (stmt.lineno, stmt.col_offset)


class _PartialClass:
    """A class parsed without some of its methods: the line ranges of those (sorted, apart),
    which of them are not parsed yet, and where the statements of its body start. A class of
    thousands of methods, a few parsed per question, costs a bisection per line asked, not a
    pass over its methods."""

    def __init__(self, cls: ast.ClassDef, skipped: list[tuple[int, int]]) -> None:
        self.cls = cls
        self.ranges = skipped
        self._firsts = [low for low, _ in skipped]
        self._left = set(range(len(skipped)))  # the ranges not parsed yet
        self.known = {_position(s) for s in cls.body}

    def holding(self, lines: list[int]) -> list[tuple[int, int]]:
        """The ranges not parsed yet that hold ``lines``, in order."""
        found = set()
        for line in lines:
            index = bisect.bisect_right(self._firsts, line) - 1
            if index in self._left and line <= self.ranges[index][1]:
                found.add(index)
        return [self.ranges[index] for index in sorted(found)]

    def others(self, wanted: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The ranges not parsed yet, less ``wanted``."""
        return [r for i, r in enumerate(self.ranges) if i in self._left and r not in wanted]

    def join(self, added: list[ast.stmt], wanted: list[tuple[int, int]]) -> None:
        """``added`` (the statements of the ``wanted`` ranges) join the class body, in order:
        a new list, as a reader walking the body holds the one it read."""
        body = list(self.cls.body)
        for stmt in added:
            body.insert(bisect.bisect_right(body, _position(stmt), key=_position), stmt)
        self.cls.body = body
        self.known.update(_position(s) for s in added)
        self._left.difference_update(bisect.bisect_left(self._firsts, low) for low, _ in wanted)


class PartialModule:
    """A module of which only some top-level pieces are parsed (``tree.body`` grows)."""

    def __init__(
        self, source: str, path: str, hot_lines: list[int] | None, defining: list[int] | None = None
    ) -> None:
        self.source = source
        self.path = path
        self.tree = _Module(body=[], type_ignores=[])
        self._pieces: list[tuple[int, int, bool]] = []  # (first line, last line, definition)
        self._firsts: list[int] = []  # each piece's first line, to find a line's piece
        self._parsed: set[int] = set()
        self._bodies: dict[int, list[ast.stmt]] = {}
        # a class piece parsed without some of its methods, by piece
        self._partial_classes: dict[int, _PartialClass] = {}
        if hot_lines is None or "\r" in source or not self._cut():
            self._whole()
            return
        # a definition (or a method) is parsed for its defining hot lines: one whose hot lines
        # only name a holder holds no site and binds nothing read elsewhere (Prefilter)
        hot = sorted(defining if defining is not None else hot_lines)
        for index, (first, last, definition) in enumerate(self._pieces):
            position = bisect.bisect_left(hot, first)
            needed = not definition or (position < len(hot) and hot[position] <= last)
            if needed and not self._parse(index, hot if definition else None):
                self._whole()
                return
        self._assemble()

    @property
    def whole(self) -> bool:
        """Whether every piece is parsed (the whole file was)."""
        return len(self._parsed) == len(self._pieces)

    def _whole(self) -> None:
        self._partial_classes = {}
        # the same module object: the site finder and its questions hold it
        self.tree.body = ast.parse(self.source, filename=self.path).body
        self._pieces = [(1, max(1, self.source.count("\n") + 1), False)]
        self._firsts = [1]
        self._parsed = {0}
        self._bodies = {0: self.tree.body}

    def _cut(self) -> bool:
        """Split into pieces; False when the text gives no safe cut."""
        line_starts = [0, *(m.end() for m in re.finditer("\n", self.source))]
        self._line_starts = line_starts
        # (first line, line of its ``def`` or ``class``): a decorated definition starts at
        # its first decorator, and its own header line is code at column 0 too
        starts: list[tuple[int, int]] = []
        decorated = False  # a decorator was seen and its definition not yet
        for start, match in DEFINITION.finditer(self.source):
            line = bisect.bisect_right(line_starts, start)
            if decorated:
                starts[-1] = (starts[-1][0], line)
            else:
                starts.append((line, line))
            decorated = match.group().endswith("@")
        if not starts:
            return False
        total = len(line_starts)
        pieces: list[tuple[int, int, bool]] = []
        if starts[0][0] > 1:
            pieces.append((1, starts[0][0] - 1, False))
        for index, (start, header) in enumerate(starts):
            end = (starts[index + 1][0] - 1) if index + 1 < len(starts) else total
            pieces.extend(self._split_tail(start, header, end))
        self._pieces = pieces
        self._firsts = [first for first, _, _ in pieces]
        return True

    def _split_tail(self, first: int, header: int, last: int) -> list[tuple[int, int, bool]]:
        """A definition (its decorators from line ``first``, its ``def`` or ``class`` at line
        ``header``) ends where the next top-level statement that is not part of it begins
        (``EntryClass = ...`` after the last class); that tail is scaffold."""
        starts = self._line_starts
        if header >= len(starts):
            return [(first, last, True)]
        end = starts[last] if last < len(starts) else len(self.source)
        found = TOP_LEVEL_CODE.search(self.source, starts[header], end)
        if found is None:
            return [(first, last, True)]
        line = bisect.bisect_right(starts, found)
        return [(first, line - 1, True), (line, last, False)]

    def _parse(self, index: int, hot: list[int] | None = None) -> bool:
        """Parse piece ``index``; of a class, only the methods holding a ``hot`` line (the
        others stay blank lines until :meth:`parse_lines` asks for them)."""
        if index in self._parsed:
            return True
        first, last, _ = self._pieces[index]
        skipped = self._cold_methods(first, last, hot) if hot is not None else []
        piece = self._parsed_text(first, last, skipped)
        while piece is not None and skipped:
            # a "method" inside a statement the parse kept (``def`` at the method indent in
            # a multi-line string) is no method: parse its lines as they are
            inside = _within_statements(piece.body[-1] if piece.body else None, skipped)
            if not inside:
                break
            skipped = [span for span in skipped if span not in inside]
            piece = self._parsed_text(first, last, skipped)
        if piece is None and skipped:
            skipped = []
            piece = self._parsed_text(first, last, [])
        if piece is None:
            return False
        self._parsed.add(index)
        self._bodies[index] = piece.body
        cls = piece.body[-1] if piece.body else None
        if skipped and isinstance(cls, ast.ClassDef):
            # the class spans its unparsed methods too (its readers search that whole text)
            cls.end_lineno, cls.end_col_offset = self._last_code_line(first, last)
            self._partial_classes[index] = _PartialClass(cls, skipped)
        return True

    def _parsed_text(
        self, first: int, last: int, blank: list[tuple[int, int]]
    ) -> ast.Module | None:
        """Lines ``first``..``last`` parsed at their place, ``blank`` emptied (None: they do
        not parse so)."""
        try:
            return parse_at(self._text(first, last, blank), first, self.path)
        except SyntaxError:
            return None

    def _text(self, first: int, last: int, blank: list[tuple[int, int]]) -> str:
        """Lines ``first``..``last``, the ``blank`` line ranges emptied."""
        starts = self._line_starts
        end = starts[last] if last < len(starts) else len(self.source)
        if not blank:
            return self.source[starts[first - 1] : end]
        parts, position = [], starts[first - 1]
        for low, high in blank:
            parts.append(self.source[position : starts[low - 1]])
            parts.append("\n" * (high - low + 1))
            position = starts[high] if high < len(starts) else end
        parts.append(self.source[position:end])
        return "".join(parts)

    def _cold_methods(self, first: int, last: int, hot: list[int]) -> list[tuple[int, int]]:
        """The line ranges of a class piece's methods that hold no hot line ([] when the
        piece is no class, or its body is indented with tabs)."""
        starts = self._line_starts
        text = self._text(first, last, [])
        if not CLASS_LINE.search(text) or "\t" in text:
            return []
        offset = starts[first - 1]
        members = [
            (bisect.bisect_right(starts, offset + start), len(m.group(1)), m.group(2))
            for start, m in MEMBER.finditer(text)
        ]
        if not members:
            return []
        indent = min(width for _, width, _ in members)
        ranges: list[tuple[int, int]] = []
        decorated = False
        for line, width, head in members:
            if width != indent:
                continue
            if not decorated:  # a method starts at its first decorator, else at its def
                ranges.append((line, last))
            decorated = head == "@"
        ends = [
            bisect.bisect_right(starts, offset + start)
            for start, _ in _body_statement(indent).finditer(text)
        ]
        bounded = []
        for index, (low, _) in enumerate(ranges):
            high = ranges[index + 1][0] - 1 if index + 1 < len(ranges) else last
            later = bisect.bisect_right(ends, low)  # the first statement after the method
            stop = ends[later] if later < len(ends) else high + 1
            bounded.append((low, stop - 1 if stop <= high else high))
        cold = []
        for low, high in bounded:
            position = bisect.bisect_left(hot, low)
            if not (position < len(hot) and hot[position] <= high):
                cold.append((low, high))
        return cold if len(cold) < len(bounded) else []

    def _last_code_line(self, first: int, last: int) -> tuple[int, int]:
        """The last line of ``first``..``last`` holding code, and its length."""
        for line in range(last, first - 1, -1):
            text = self._text(line, line, []).rstrip()
            if text and not text.lstrip().startswith("#"):
                return line, len(text.encode("utf-8"))
        return last, 0

    def _assemble(self) -> None:
        self.tree.body = self._statements()

    def _statements(self) -> list[ast.stmt]:
        return [stmt for index in sorted(self._bodies) for stmt in self._bodies[index]]

    def _holding(self, lines: set[int] | list[int]) -> dict[int, list[int]]:
        """The pieces holding ``lines``, in file order, each with its lines."""
        found: dict[int, list[int]] = {}
        for line in lines:
            index = bisect.bisect_right(self._firsts, line) - 1
            if index >= 0 and line <= self._pieces[index][1]:
                found.setdefault(index, []).append(line)
        return {index: found[index] for index in sorted(found)}

    def parse_lines(self, lines: set[int] | list[int]) -> Added:
        """Parse the pieces (and the methods of partly parsed classes) holding ``lines``; the
        statements that joined the tree, each with the class it joined (None: the module;
        every statement when the file had to be parsed whole). Empty when nothing grew.
        Pieces are found by bisection, and ``tree.body`` is put together when next read: a
        call costs time in its lines, not in the file's pieces."""
        holding = self._holding(lines)
        added = self._grow_classes(holding)
        for index in holding:
            if index in self._parsed:
                continue
            if not self._parse(index):
                self._whole()
                return [(stmt, None) for stmt in self.tree.body]
            added.extend((stmt, None) for stmt in self._bodies[index])
        if added:
            self.tree._pending = self._statements
        return added

    def _grow_classes(self, holding: dict[int, list[int]]) -> Added:
        """Parse the skipped methods holding lines into their (already parsed) class
        (``holding``: the pieces holding the lines, each with its lines)."""
        grown: Added = []
        for index, lines in holding.items():
            partial = self._partial_classes.get(index)
            wanted = partial.holding(lines) if partial is not None else []
            if partial is None or not wanted:
                continue
            fresh = self._methods(wanted) or self._reparsed_class(index, partial.others(wanted))
            added = [
                s
                for s in fresh
                if _position(s) not in partial.known
                and any(low <= s.lineno <= high for low, high in wanted)
            ]
            partial.join(added, wanted)
            grown.extend((stmt, partial.cls) for stmt in added)
        return grown

    def _methods(self, ranges: list[tuple[int, int]]) -> list[ast.stmt] | None:
        """The statements of the method line ``ranges`` (sorted, of one class), parsed on
        their own in a stand-in class on the line before the first: the rest of the class
        is not parsed again. None when they do not parse so."""
        first, last = ranges[0][0], ranges[-1][1]
        gaps = [(a[1] + 1, b[0] - 1) for a, b in itertools.pairwise(ranges) if a[1] + 1 < b[0]]
        text = "class _:\n" + self._text(first, last, gaps)
        try:
            piece = parse_at(text, first - 1, self.path)
        except SyntaxError:
            return None
        stand_in = piece.body[-1] if piece.body else None
        return stand_in.body if isinstance(stand_in, ast.ClassDef) else None

    def _reparsed_class(self, index: int, skipped: list[tuple[int, int]]) -> list[ast.stmt]:
        """The body of class piece ``index`` parsed again, the ``skipped`` ranges blank."""
        first, last, _ = self._pieces[index]
        piece = parse_at(self._text(first, last, skipped), first, self.path)
        fresh = piece.body[-1]
        assert isinstance(fresh, ast.ClassDef)
        return fresh.body


# line breaks put before a piece per character of it: parsed after line breaks, a piece keeps
# its line numbers at the cost of the tokenizer skipping them; further down a file, moving
# its nodes' line numbers afterwards is cheaper (a piece's cost then never grows with the
# lines above it, so a file's parse time is linear in its size)
BREAKS_PER_CHARACTER = 4


def parse_at(text: str, first: int, path: str) -> ast.Module:
    """``text`` parsed as lines ``first``.. of the file ``path`` (line numbers, of the nodes
    and of a ``SyntaxError``, are the file's)."""
    if first - 1 <= BREAKS_PER_CHARACTER * len(text):
        return ast.parse("\n" * (first - 1) + text, filename=path)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        if exc.lineno is not None:
            exc.lineno += first - 1
        if getattr(exc, "end_lineno", None) is not None:
            exc.end_lineno += first - 1  # type: ignore[operator]
        raise
    _shift_lines(tree, first - 1)
    return tree


# fields that never hold a node with a line (names, flags, and the operator and context
# singletons): skipped when line numbers are moved
NO_LINES = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "name", "kind", "type_comment", "asname"}
    | {"module", "level", "conversion", "is_async", "simple", "lineno"}
)
_CHILD_FIELDS: dict[type, tuple[tuple[str, ...], bool]] = {}


def _shift_lines(tree: ast.AST, lines: int) -> None:
    """``ast.increment_lineno``, in a third of the time (no generator per node, and each node
    type's fields that can hold a node found once)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        kind = node.__class__
        known = _CHILD_FIELDS.get(kind)
        if known is None:
            fields = tuple(f for f in kind._fields if f not in NO_LINES)
            known = _CHILD_FIELDS[kind] = (fields, "lineno" in kind._attributes)
        fields, has_lines = known
        if has_lines:
            node.lineno += lines  # type: ignore[attr-defined]
            end = getattr(node, "end_lineno", None)
            if end is not None:
                node.end_lineno = end + lines  # type: ignore[attr-defined]
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                stack.extend([item for item in value if isinstance(item, ast.AST)])
            elif isinstance(value, ast.AST):
                stack.append(value)


def _within_statements(cls: ast.stmt | None, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The line ``spans`` that start inside a statement of class ``cls``'s body."""
    if not isinstance(cls, ast.ClassDef):
        return []
    # the body's statements follow one another: a line is inside one only if it is inside
    # the last one starting above it (found by bisection, not by trying each)
    body = cls.body
    inside = []
    for span in spans:
        above = bisect.bisect_left(body, span[0], key=lambda s: s.lineno) - 1
        if above >= 0 and span[0] <= (body[above].end_lineno or body[above].lineno):
            inside.append(span)
    return inside


CLASS_LINE = re.compile(r"^class\b", re.MULTILINE)
MEMBER = LinePattern(r"( +)(@|def\b|async\s+def\b)")


@functools.lru_cache(maxsize=16)
def _body_statement(indent: int) -> LinePattern:
    """A statement of a class body at ``indent`` spaces that starts no method."""
    return LinePattern(rf" {{{indent}}}(?!def\b|async\s+def\b|@)[^\s#)\]}}'\"]")


def parse_for_sites(
    source: str, path: str, hot_lines: list[int] | None, defining: list[int] | None = None
) -> PartialModule:
    """The module with the pieces that can hold a site parsed (see the module docstring):
    those holding a ``defining`` line (all the hot lines when not given); raises
    ``SyntaxError`` as :func:`ast.parse` would for a file that does not parse."""
    return PartialModule(source, path, hot_lines, defining)
