"""A name's mentions in a module's text are the same lines whether searched for or read from
the index built once a file asks many questions (driftcheck.sites.mentions)."""

from __future__ import annotations

import re

import pytest

from driftcheck.sites import mentions
from driftcheck.sites.mentions import Mentions

TEXT = """\
def forward(x):
    return _forward(x) + forward (x)


def __init__(self):
    self.forward_deepep = forward_deepep(
        x)
    y = obj.forward
    z = obj.forwardx + obj. forward + ñforward(1)
    forwardñ(2)
    def\\
  forward(3)


async def _helper_v2 (a):
    helper_v2(a)
    return é.attr + attr_
def café(x): return café(x)
"""
LINES = TEXT.encode().splitlines(keepends=True)
NAMES = sorted(
    {word for word in re.findall(r"\w+", TEXT)} | {"forward", "init__", "helper_v2", "attr"}
)


def answers(searches: int, monkeypatch: pytest.MonkeyPatch, first: int, last: int) -> dict:
    """Every kind's lines for every name in ``[first, last]``, with mentions indexed after
    ``searches`` whole-text searches of a kind."""
    monkeypatch.setattr(mentions, "SEARCHES", searches)
    found = Mentions(LINES)
    return {
        (kind, name): found.lines_of(kind, name, first, last)
        for kind in mentions.KINDS
        for name in NAMES
    }


@pytest.mark.parametrize(("first", "last"), [(1, len(LINES)), (2, 9), (6, 6)])
def test_indexed_mentions_are_the_searched_ones(
    monkeypatch: pytest.MonkeyPatch, first: int, last: int
) -> None:
    searched = answers(10**9, monkeypatch, first, last)
    assert answers(0, monkeypatch, first, last) == searched


def test_the_mentions_of_each_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    found = answers(0, monkeypatch, 1, len(LINES))
    # a byte of another alphabet is no word byte: ``ñforward(`` calls ``forward``, as a bytes
    # pattern's ``\\b`` reads it; ``forwardñ(`` does not
    assert found["call", "forward"] == {1, 2, 9, 12}
    assert found["call", "forward_deepep"] == {6}
    assert found["def", "forward"] == {1}
    assert found["def", "init__"] == {5}
    assert found["def", "helper_v2"] == found["def", "_helper_v2"] == {15}
    # the word, wherever it stands (``obj.forward``, ``forwardñ``): not ``forward_deepep``
    assert found["name", "forward"] == {1, 2, 8, 9, 10, 12}
    assert found["attr", "forward"] == {8}
    assert found["attr", "attr"] == {17}
    assert found["call", "café"] == {18}  # searched: not ASCII
