"""Files that can hold only single checks: analysed when something reads them.

A *single check* tests one member (``current_platform.is_cuda()``, ``backend == "nixl_ep"``).
Where a universe's families have two members (vLLM's are all pairs), most files that name a
member hold only such checks, and a run that analysed them all spent most of its time there.
Yet a single check is read in few places:

- as a finding of its own, by DC020 when sibling files of its directory use a family whole in
  the same role (its *package evidence*; the rule names those directories once the other files
  are scanned), or by rules that read single checks anywhere (sibling or use evidence, a
  ``min-overlap`` of 1: a rule says so, and then nothing is deferred);
- by DC021, when the refusal it guards names a family (a phrase of it, or each of its
  members): a file whose text holds the words of such a naming is not deferred unread;
- as evidence for another site's finding: the same-role sites of a fix's applicability and the
  attribute reads of liveness. Those are read only once something is reported, and then every
  deferred file is analysed and the run judged again (:meth:`driftcheck.engine.CheckResult.complete`).

So the scan classifies a file before analysing it. The file is analysed when it names a
helper, a predicate of several members, a ``case`` of a ``match`` or a suppression comment.
Otherwise its member tokens are read: when they name at most one member of each universe and
its text holds no words that may name a family (in any case), every site it holds is a
single check no refusal names a family for, and its analysis is deferred. Otherwise the
pieces the analysis would read are parsed (the parse it needs anyway), and the file is
deferred still when no statement holds tokens of two members of one universe on its own lines
(a simple statement's, a compound statement's header up to its first inner statement), and
no ``if`` whose header holds a token has such words in the text of the refusal a
branch makes (the text DC021 reads: :func:`driftcheck.sites.controls.refusal_text`).

This is sound for sites as the finder builds them: a site of two members or more is one
expression (an ``or`` chain, a comparison, a collection assigned to a constant it names), so
it lies within one statement's own lines and names each member there (a predicate, a quoted
value, ``Enum.ATTR``), or it calls a helper or a predicate of several members, or it is a
``case`` pattern. Tokens are matched loosely (a predicate's name as a word anywhere, comments
included; ``Enum . ATTR`` with any spaces), and a line holding two statements counts as one:
more matches only analyse more files. A member's value is taken to be written as itself
between quotes (not assembled from escapes or implicit concatenation).

Whether a run defers at all, and which deferred files it reads after the others, is asked of
the selected rules (:meth:`driftcheck.rules.base.Rule.reads_single_checks`,
:meth:`~driftcheck.rules.base.Rule.single_check_directories`); the answer, with or without
deferral, is the same.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from .families import family_phrases
from .linesearch import at_line_starts, line_numbers
from .model import Universe
from .prefilter import prefixed_patterns
from .sites.controls import refusal_text
from .sites.receivers import child_statements

WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
CASE_LINE = re.compile(rb"[ \t]*case\b")
SUPPRESSION = b"driftcheck:"

# what a matched token names: (universe key, the members it names) for each universe it names
Named = tuple[tuple[str, frozenset[str]], ...]


@dataclass(frozen=True, order=True)
class Naming:
    """How a text may name a family (:func:`driftcheck.families.family_naming`), as words a
    lower-case text must hold: every slot, each by one of its alternatives (a phrase is one
    slot of one alternative; its members, a slot each, by value or by attribute). A naming by
    the members (``members`` set) matters only to a check of a member outside them: DC021
    leaves alone a refusal whose text names the member the check tests."""

    slots: tuple[tuple[tuple[str, ...], ...], ...]
    universe: str = ""
    members: frozenset[str] | None = None

    def held_by(self, text: str) -> bool:
        """Whether the lower-case ``text`` holds the words this naming needs."""
        return all(any(all(w in text for w in words) for words in slot) for slot in self.slots)

    def matters(self, named: Iterable[tuple[int, str, str]]) -> bool:
        """Whether it can name the family for a check of the tokens ``named`` (offset,
        universe, member): a phrase always; the members, when a token names another member of
        their universe."""
        if self.members is None:
            return True
        return any(u == self.universe and m not in self.members for _, u, m in named)


@dataclass(frozen=True)
class SingleCheckFilter:
    """The byte-level test of :mod:`driftcheck.singles` for one run's universes."""

    # names of helpers and of predicates of several members: a file naming one is analysed
    several: tuple[bytes, ...]
    # predicate names as words: the name -> what it names (one pattern per literal prefix)
    predicates: tuple[re.Pattern[bytes], ...]
    predicate_named: dict[bytes, Named]
    # ``Enum . ATTR`` per enum, and quoted values: the matched name -> what it names
    attributes: tuple[tuple[re.Pattern[bytes], dict[bytes, Named]], ...]
    value_named: dict[bytes, Named]
    # each way a text may name a family: a text holding its words may name it
    namings: tuple[Naming, ...]

    def read(self, data: bytes, source: str, quoted: list[re.Match[bytes]]) -> Tokens | None:
        """The member tokens of the file ``data`` (decoded: ``source``; its quoted values
        ``quoted``, as :meth:`driftcheck.prefilter.Prefilter.quoted_values` finds them), or
        None when the file must be analysed whatever they are (it names a helper, a predicate
        of several members, a ``case`` or a suppression: see the module docstring)."""
        if SUPPRESSION in data or any(name in data for name in self.several):
            return None
        if any(True for _ in at_line_starts(data, b"case", CASE_LINE)):
            return None
        lowered = source.lower()
        named = list(self._named(data, quoted))
        namings = tuple(n for n in self.namings if n.held_by(lowered) and n.matters(named))
        return Tokens(data, named, namings)

    def _named(self, data: bytes, quoted: list[re.Match[bytes]]) -> Iterator[tuple[int, str, str]]:
        """``(offset, universe, member)`` for each member a token of ``data`` names."""
        for pattern in self.predicates:
            for match in pattern.finditer(data):
                start = match.start()
                if start and data[start - 1] in WORD_BYTES:
                    continue  # inside a longer name
                for universe, members in self.predicate_named[match.group()]:
                    yield from ((start, universe, m) for m in members)
        for pattern, named in self.attributes:
            for match in pattern.finditer(data):
                for universe, members in named[match.group(1)]:
                    yield from ((match.start(), universe, m) for m in members)
        for match in quoted:
            for universe, members in self.value_named[match.group()[1:-1]]:
                yield from ((match.start(), universe, m) for m in members)


class Tokens:
    """Where a file names members (each token's offset, universe and member), and the family
    namings of a family its text holds the words of."""

    def __init__(
        self,
        data: bytes,
        named: list[tuple[int, str, str]],
        namings: tuple[Naming, ...],
    ) -> None:
        self.data = data
        self.named = named
        self.namings = namings

    def single_checks_anywhere(self) -> bool:
        """Whether every site of the file is a single check that no refusal's text can name
        a family for, wherever its tokens are: they name at most one member of each
        universe, and the text holds no words that may name a family."""
        if self.namings:
            return False
        seen: dict[str, str] = {}
        for _, universe, member in self.named:
            if seen.setdefault(universe, member) != member:
                return False
        return True

    def apart(self, tree: ast.Module) -> bool:
        """Whether, in ``tree`` (the pieces the analysis parsed), no statement holds on its own
        lines tokens of two members of one universe, and no ``if`` whose test holds a token
        has, in the refusal a branch makes, the words that may name a family."""
        if b"\r" in self.data:  # lines that end otherwise than in \n: not worth counting
            return False
        by_line = self._members_by_line()
        lines = sorted(by_line)
        for stmt, first, last in _own_lines(tree.body):
            low, high = bisect.bisect_left(lines, first), bisect.bisect_right(lines, last)
            if low == high:
                continue
            seen: dict[str, str] = {}
            for index in range(low, high):
                for universe, member in by_line[lines[index]]:
                    if seen.setdefault(universe, member) != member:
                        return False
            if self.namings and isinstance(stmt, ast.If) and self._may_name(stmt):
                return False
        return True

    def _members_by_line(self) -> dict[int, set[tuple[str, str]]]:
        named = sorted(self.named)
        by_line: dict[int, set[tuple[str, str]]] = {}
        lines = line_numbers(self.data, [offset for offset, _, _ in named])
        for line, (_, universe, member) in zip(lines, named, strict=True):
            by_line.setdefault(line, set()).add((universe, member))
        return by_line

    def _may_name(self, stmt: ast.If) -> bool:
        """Whether the refusal ``stmt`` runs (the text DC021 reads: its branch's raise, logged
        warning or returned reason) holds the words that may name a family."""
        for branch in (stmt.body, stmt.orelse):
            lowered = refusal_text(branch)[0].lower()
            if any(naming.held_by(lowered) for naming in self.namings):
                return True
        return False


def _own_lines(body: list[ast.stmt]) -> Iterator[tuple[ast.stmt, int, int]]:
    """Each statement with its own lines, nested ones included: a simple statement's span; a
    compound statement's from its first decorator to the line before its first inner
    statement (its header; the header line itself when the body shares it)."""
    stack = list(body)
    while stack:
        stmt = stack.pop()
        decorators = getattr(stmt, "decorator_list", ())
        first = min([stmt.lineno, *(d.lineno for d in decorators)])
        children = child_statements(stmt)
        if children:
            last = max(first, min(c.lineno for c in children) - 1)
        else:
            last = stmt.end_lineno or stmt.lineno
        yield stmt, first, last
        stack.extend(children)


def _spellings(universe: Universe, value: str) -> tuple[tuple[str, ...], ...]:
    """How prose spells member ``value``: its value and its attribute, each as words."""
    spelled = {
        tuple(name.lower().replace("-", " ").replace("_", " ").split())
        for member in universe.members
        if member.value == value
        for name in (member.value, member.attr)
    }
    return tuple(sorted(spelled))


def _add(table: dict[bytes, Named], name: bytes, universe: str, members: frozenset[str]) -> None:
    table[name] = (*table.get(name, ()), (universe, members))


def build_single_filter(universes: Sequence[Universe]) -> SingleCheckFilter:
    """The single-check filter for ``universes``."""
    several: set[bytes] = set()
    predicate_named: dict[bytes, Named] = {}
    value_named: dict[bytes, Named] = {}
    attributes = []
    namings: set[Naming] = set()
    for universe in universes:
        several |= {family.name.encode() for family in universe.families}
        for family in universe.families:
            namings |= {Naming(((tuple(p.split()),),)) for p in family_phrases(family, universe)}
            if len(family.members) >= 2:
                spelled = tuple(_spellings(universe, m) for m in family.members)
                namings.add(Naming(spelled, universe.key, family.member_set))
        for name, predicate in universe.predicates.items():
            if len(predicate.members) > 1:
                several.add(name.encode())
            else:
                _add(predicate_named, name.encode(), universe.key, predicate.members)
        attribute_named: dict[bytes, Named] = {}
        for member in universe.members:
            _add(value_named, member.value.encode(), universe.key, frozenset({member.value}))
            _add(attribute_named, member.attr.encode(), universe.key, frozenset({member.value}))
        if universe.enum_name and attribute_named:
            names = "|".join(
                re.escape(n.decode()) for n in sorted(attribute_named, key=len, reverse=True)
            )
            pattern = re.compile(rf"{re.escape(universe.enum_name)}\s*\.\s*({names})\b".encode())
            attributes.append((pattern, attribute_named))
    words = [name.decode() for name in predicate_named]
    return SingleCheckFilter(
        several=tuple(sorted(several)),
        predicates=tuple(re.compile(p.encode()) for p in prefixed_patterns("", words, r"\b")),
        predicate_named=predicate_named,
        attributes=tuple(attributes),
        value_named=value_named,
        namings=tuple(sorted(namings)),
    )
