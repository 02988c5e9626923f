"""Anchored searches found by a plain search first (driftcheck.linesearch) give exactly the
matches of the anchored regular expression."""

from __future__ import annotations

import re

import pytest

from driftcheck.linesearch import LinePattern, at_line_starts, at_word_starts

SOURCE = """\
import os
class Block:
    def __init__(self):
        myself.x: self.x = 1
        self.x = 2
        self.x_y = 3
    def run(self):  # self.x =
        return self.x
"""


@pytest.mark.parametrize("name", ["x", "x_y", "run", "self", "missing"])
def test_word_starts_give_the_matches_of_a_leading_word_boundary(name: str) -> None:
    pattern = rf"self\.({name})\b\s*(?::[^=\n]*)?="
    expected = [m.span() for m in re.finditer(r"\b" + pattern, SOURCE)]
    assert [m.span() for m in at_word_starts(SOURCE, re.compile(pattern))] == expected


def test_word_starts_within_bounds_and_in_bytes() -> None:
    data = SOURCE.encode()
    pattern = re.compile(rb"x\b")
    start, end = data.index(b"def __init__"), data.index(b"def run")
    expected = [m.span() for m in re.compile(rb"\bx\b").finditer(data, start, end)]
    assert [m.span() for m in at_word_starts(data, pattern, start, end)] == expected


def test_a_match_hidden_inside_a_rejected_one_is_found() -> None:
    """``myself.x: self.x =`` starts no word at ``self``; the search goes on one character
    later, as ``\\b`` would, and finds the ``self.x`` inside it."""
    pattern = re.compile(r"self\.(x)\b\s*(?::[^=\n]*)?=")
    first = next(at_word_starts(SOURCE, pattern))
    assert first.start() == SOURCE.index(": self.x") + 2


def test_line_starts_give_the_matches_of_a_multiline_caret() -> None:
    pattern = re.compile(r"[ \t]*def[ \t]+(\w+)")
    expected = [m.group(1) for m in re.finditer(r"^[ \t]*def[ \t]+(\w+)", SOURCE, re.M)]
    assert [m.group(1) for m in at_line_starts(SOURCE, "def", pattern)] == expected


BODIES = [r"@|def\b|async\s+def\b|class\b", r"( +)(@|def\b)", r"[^\s#)\]}'\"@]", r" {4}(?!def\b)\w"]


@pytest.mark.parametrize("body", BODIES)
def test_a_line_pattern_finds_what_a_multiline_caret_finds(body: str) -> None:
    anchored = re.compile("^(?:" + body + ")", re.MULTILINE)
    expected = [(m.start(), m.group()) for m in anchored.finditer(SOURCE)]
    found = [(start, m.group().lstrip("\n")) for start, m in LinePattern(body).finditer(SOURCE)]
    assert found == expected


@pytest.mark.parametrize("body", BODIES)
def test_a_line_pattern_searched_from_a_line_start_within_bounds(body: str) -> None:
    start, end = SOURCE.index("    def __init__"), SOURCE.index("        return")
    anchored = re.compile("^(?:" + body + ")", re.MULTILINE)
    first = anchored.search(SOURCE, start, end)
    assert LinePattern(body).search(SOURCE, start, end) == (first.start() if first else None)


def test_a_line_pattern_does_not_match_mid_line() -> None:
    assert LinePattern(r"self").search(SOURCE, SOURCE.index("self")) is None


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("x = ñame() + añame()", r"ñame\("),
        ("x = ñame() + añame()".encode(), "ñame\\(".encode()),
        ("a.x + (.x) + b .x", r"\.x"),
        (b"a.x + (.x) + b .x", rb"\.x"),
    ],
    ids=["unicode name in str", "utf-8 name in bytes", "non-word first in str", "in bytes"],
)
def test_word_starts_read_a_boundary_as_the_pattern_kind_does(text, pattern) -> None:
    """``\\b`` is a change between word and non-word: before ``.x`` it needs a word
    character; in bytes a UTF-8 lead byte is no word character."""
    expected = [
        m.span()
        for m in re.finditer((b"\\b" if isinstance(text, bytes) else "\\b") + pattern, text)
    ]
    assert [m.span() for m in at_word_starts(text, re.compile(pattern))] == expected
