"""A text prefilter derived from the universes: skip files that cannot hold an enumeration.

Sound with respect to the site finder: every site needs a receiver or a holder (so one of
the getter names, value attributes, holder names, the enum or holder class names, a property
of the vocabulary or a helper name appears in the text) and a member token or a helper name
(a single check and a helper call are sites too: what they control is the evidence sibling
and role consensus read). Checking bytes is ~100x cheaper than parsing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .linesearch import line_numbers
from .model import Universe


@dataclass(frozen=True)
class Prefilter:
    """Byte-level anchors and the member-token pattern for a run's universes."""

    anchors: tuple[bytes, ...]
    # the anchors grouped under a piece they share, searched for first: where it is absent,
    # so is every anchor of its group (most files hold none: one search instead of several)
    groups: tuple[tuple[bytes, tuple[bytes, ...]], ...]
    helpers: tuple[bytes, ...]
    # the receivers (every anchor but the helpers) split: those naming a holder of the setting (a class, or a name bound to
    # one), whose lines are hot but define nothing another definition reads, and the others
    holders: tuple[bytes, ...]
    defining_receivers: tuple[bytes, ...]
    # the member tokens, one pattern per literal they start with (``\.is_``, ``Enum\.``): a
    # pattern that starts with a literal is searched for as a string, ten times faster than
    # one alternation of them all; then the quoted values, which start with no literal
    member_patterns: tuple[re.Pattern[bytes], ...]
    value_pattern: re.Pattern[bytes] | None
    always: tuple[bytes, ...] = (b"driftcheck:",)

    @staticmethod
    def _member_constants(data: bytes, offsets: list[int]) -> list[bytes]:
        """Names of the collections of member tokens the text assigns (``_A2A = (E.X,
        E.Y)``): each token right after an opening bracket is looked back from."""
        names: set[bytes] = set()
        for offset in offsets:
            index = offset - 1
            while index >= 0 and data[index] in BLANK:
                index -= 1
            if index < 0 or data[index] not in OPENING:
                continue
            match = COLLECTION_HEAD.search(data, max(0, index - 160), index + 1)
            if match is not None:
                names.add(match.group(1))
        return sorted(names)

    def may_match(self, data: bytes) -> bool:
        """Whether ``data`` might contain an enumeration site or a suppression comment."""
        if any(marker in data for marker in self.always):
            return True
        if not any(
            shared in data and any(anchor in data for anchor in group)
            for shared, group in self.groups
        ):
            return False
        if any(helper in data for helper in self.helpers):
            return True
        if any(pattern.search(data) for pattern in self.member_patterns):
            return True
        return self.value_pattern is not None and self.value_pattern.search(data) is not None

    def quoted_values(self, data: bytes) -> list[re.Match[bytes]]:
        """Each member's value written between quotes in ``data`` (``"deepep"``): the single
        check filter reads them too (:mod:`driftcheck.singles`), so they are found once."""
        return list(self.value_pattern.finditer(data)) if self.value_pattern is not None else []

    def hot_lines(self, data: bytes) -> list[int]:
        """1-based line numbers holding a member token, a helper name, a receiver name, or
        the name of a constant of members (``b in _A2A``, where ``_A2A = (E.X, E.Y)``)."""
        return self.hot_and_defining_lines(data)[0]

    def hot_and_defining_lines(
        self, data: bytes, quoted: list[re.Match[bytes]] | None = None
    ) -> tuple[list[int], list[int]]:
        """The hot lines (:meth:`hot_lines`) and, of them, the *defining* ones: those that
        hold more than a holder's name. A definition whose hot lines all name holders alone
        (``current_platform.fp8_dtype()``) holds no site and binds nothing another definition
        reads (a holder is bound to a local name only, and read in that same function).
        ``quoted``: :meth:`quoted_values` of ``data``, when already found."""
        if b"\r" in data:  # count lines as Python does: \r\n, \r and \n each end one
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            quoted = None  # found in the text before its line ends were rewritten
        if quoted is None:
            quoted = self.quoted_values(data)
        defining = [m.start() for pattern in self.member_patterns for m in pattern.finditer(data)]
        defining += [m.start() for m in quoted]
        named = (*self.helpers, *self.defining_receivers, *self._member_constants(data, defining))
        holding: list[int] = []
        for needles, offsets in ((named, defining), (self.holders, holding)):
            for needle in needles:
                start = data.find(needle)
                while start != -1:
                    offsets.append(start)
                    start = data.find(needle, start + 1)
        defining_lines = set(line_numbers(data, sorted(defining)))
        holding_lines = set(line_numbers(data, sorted(holding)))
        return sorted(defining_lines | holding_lines), sorted(defining_lines)


# what precedes the opening bracket of a collection of members: ``NAME = (``,
# ``NAME: tuple[...] = [``, ``NAME = frozenset({``
COLLECTION_HEAD = re.compile(
    rb"([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*(?:(?:frozenset|set|tuple|list)[ \t]*\()?[ \t]*[\(\[\{]\Z"
)
OPENING = frozenset(b"([{")
BLANK = frozenset(b" \t\r\n")


SHARED_LENGTHS = range(8, 5, -1)  # a shorter shared piece is found in too many files


def group_anchors(anchors: tuple[bytes, ...]) -> tuple[tuple[bytes, tuple[bytes, ...]], ...]:
    """``anchors`` grouped under the longest piece (of 6 to 8 bytes) that the most of them
    share, greedily; an anchor that shares none with another is a group of its own, under
    itself."""
    left = list(anchors)
    groups: list[tuple[bytes, tuple[bytes, ...]]] = []
    while left:
        counts: dict[bytes, int] = {}
        for anchor in left:
            pieces = {
                anchor[start : start + length]
                for length in SHARED_LENGTHS
                for start in range(len(anchor) - length + 1)
            }
            for piece in pieces:
                counts[piece] = counts.get(piece, 0) + 1
        best = max(counts.items(), key=lambda item: (item[1], len(item[0]), item[0]), default=None)
        if best is None or best[1] < 2:
            groups.extend((anchor, (anchor,)) for anchor in left)
            break
        shared = best[0]
        group = tuple(anchor for anchor in left if shared in anchor)
        groups.append((shared, group))
        left = [anchor for anchor in left if shared not in anchor]
    return tuple(groups)


def _alternation(words: Iterable[str]) -> str:
    return "|".join(sorted({re.escape(w) for w in words}, key=len, reverse=True))


# names are grouped by their first bytes; a group's common prefix leads its pattern
PREFIX_BYTES = 3


def _common_prefix(words: set[str]) -> str:
    """The longest prefix every one of ``words`` starts with (that of the first and the last
    in sorted order)."""
    first, last = min(words), max(words)
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    return first[:size]


def prefixed_patterns(lead: str, names: Iterable[str], tail: str) -> list[str]:
    r"""``lead`` + one of ``names`` + ``tail``, as one pattern per group of names sharing their
    first :data:`PREFIX_BYTES` bytes, each written as its group's common prefix followed by an
    alternation of the rests (``\.is_(?:cuda|rocm)\(\s*\)``): a pattern that starts with a
    literal is searched for as that literal."""
    groups: dict[str, set[str]] = {}
    for name in names:
        groups.setdefault(name[:PREFIX_BYTES], set()).add(name)
    patterns = []
    for _, group in sorted(groups.items()):
        common = _common_prefix(group)
        rests = _alternation(name[len(common) :] for name in group)
        patterns.append(rf"{lead}{re.escape(common)}(?:{rests}){tail}")
    return patterns


def build_prefilter(universes: Universe | Iterable[Universe]) -> Prefilter:
    """The prefilter for ``universes``."""
    if isinstance(universes, Universe):
        universes = [universes]
    universes = list(universes)
    helpers: list[bytes] = []
    anchors: list[bytes] = []
    holders: set[bytes] = set()
    methods: list[str] = []
    properties: list[str] = []
    values: list[str] = []
    attrs: dict[str, list[str]] = {}
    for universe in universes:
        helpers += [f.name.encode() for f in universe.families]
        anchors += [g.encode() for g in sorted(universe.getters)]
        anchors += [a.encode() for a in universe.value_attributes]
        named_holders = sorted(universe.holder_names | universe.holders)
        anchors += [n.encode() for n in named_holders]
        holders |= {n.encode() for n in named_holders}
        if universe.enum_name:
            anchors.append(universe.enum_name.encode())
        for name, pred in universe.predicates.items():
            if len(pred.members) == 1:
                (properties if pred.access == "property" else methods).append(name)
                if pred.access == "property":
                    anchors.append(name.encode())
        for member in universe.members:
            values.append(member.value)
            if universe.enum_name:
                attrs.setdefault(universe.enum_name, []).append(member.attr)
    anchors += helpers
    parts = [
        *prefixed_patterns(r"\.", methods, r"\(\s*\)"),
        *prefixed_patterns(r"\.", properties, r"\b(?!\s*\()"),
        *(rf"{re.escape(enum)}\.(?:{_alternation(names)})\b" for enum, names in attrs.items()),
    ]
    quoted = rf"[\"'](?:{_alternation(values)})[\"']".encode() if values else None
    # an anchor that contains another is found whenever that one is: test the shorter only
    distinct = list(dict.fromkeys(a for a in anchors if a))
    unique_anchors = tuple(
        a for a in distinct if not any(other != a and other in a for other in distinct)
    )
    unique_helpers = tuple(dict.fromkeys(helpers))
    return Prefilter(
        anchors=unique_anchors,
        groups=group_anchors(unique_anchors),
        helpers=unique_helpers,
        holders=tuple(a for a in distinct if a in holders),
        defining_receivers=tuple(a for a in distinct if a not in holders and a not in helpers),
        member_patterns=tuple(re.compile(part.encode()) for part in parts),
        value_pattern=re.compile(quoted) if quoted is not None else None,
    )
