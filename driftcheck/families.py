"""Which family a site enumerates, when its universe has several.

A site is judged against one family at most — the one it best fits — so that two canonicals
over the same universe (``is_deepep_class_backend`` and its superset
``uses_per_rank_fused_shared_slots``) never report the same site twice:

1. a site that calls a canonical helper enumerates that family;
2. a site naming exactly a family's members enumerates it (it is no drift from another);
3. otherwise, among the families it shares at least ``min_overlap`` members with — not
   counting the members a family adds over a smaller configured family (its *extras*: a
   site that overlaps a family only through those is about the extras, not the family;
   ``a not in ("megamoe", "deepep")`` is no copy of "DeepEP family plus megamoe") — the one
   with the most shared members, then the fewest missing, then the fewest extras, then the
   smaller family.
"""

from __future__ import annotations

from .model import Family, Site, Universe


def is_own_definition(site: Site, family: Family) -> bool:
    """Whether ``site`` is in the canonical's own definition, a part of it (a union's), or a
    definition it delegates to: the canonical itself, never a copy of it."""
    own = f"{family.owner}.{family.name}" if family.owner else family.name
    if site.path == family.path and site.symbol == own:
        return True
    return any(site.path == path and site.symbol == qual for path, qual, *_ in family.defines)


def covered_members(site: Site, universe: Universe) -> frozenset[str]:
    """The members a site covers, counting the families of canonical helpers it calls."""
    covered = set(site.members)
    for helper in site.helpers:
        family = universe.family(helper)
        if family is not None:
            covered |= family.member_set
    return frozenset(covered)


def extras_of(family: Family, universe: Universe) -> frozenset[str]:
    """The members ``family`` adds over the largest smaller family of its universe."""
    smaller = [
        f.member_set
        for f in universe.families
        if f is not family and f.member_set < family.member_set
    ]
    if not smaller:
        return frozenset()
    return family.member_set - max(smaller, key=len)


def enumerates(site: Site, family: Family, universe: Universe, min_overlap: int) -> bool:
    """Whether ``site`` is an enumeration of ``family`` rather than of an unrelated set."""
    if family.name in site.helpers:
        return True
    shared = site.members & family.member_set
    return len(shared - extras_of(family, universe)) >= min_overlap


def family_for(site: Site, universe: Universe, min_overlap: int) -> Family | None:
    """The family ``site`` is judged against, or None when it enumerates none."""
    for helper in site.helpers:
        family = universe.family(helper)
        if family is not None:
            return family
    exact = [f for f in universe.families if f.member_set == site.members]
    if exact:
        return exact[0]
    candidates = [f for f in universe.families if enumerates(site, f, universe, min_overlap)]
    if not candidates:
        return None

    def score(family: Family) -> tuple[int, int, int, int]:
        shared = len(site.members & family.member_set)
        missing = len(family.member_set - site.members)
        extra = len(site.members - family.member_set)
        return (shared, -missing, -extra, -len(family.members))

    best = max(candidates, key=score)
    inner = [f for f in candidates if f.member_set < best.member_set]
    if inner and not named_by(site, best):
        # a superset family (the DeepEP family plus megamoe) takes a site only on an exact
        # match or when the site names it: one extra member is not evidence of the concept
        return max(inner, key=score)
    return best


def named_by(site: Site, family: Family) -> bool:
    """Whether the site's role or comment names every word of the family's label."""
    words = [
        w
        for w in (family.label or family.name)
        .lower()
        .replace("_", "-")
        .replace(" ", "-")
        .split("-")
        if len(w) >= 4 and w not in ("family", "backend", "backends", "members")
    ]
    text = f"{site.role.name} {site.role.comment}".lower().replace("_", " ").replace("-", " ")
    return bool(words) and all(w in text for w in words)


PREDICATE_PREFIXES = ("is_", "use_", "uses_", "has_", "supports_")


def _phrase(text: str) -> str:
    """``text`` lower-cased, ``-`` and ``_`` read as spaces, runs of space as one."""
    return " ".join(text.lower().replace("-", " ").replace("_", " ").split())


def _prose(text: str) -> str:
    """``text`` as space-separated words (punctuation dropped), padded so that a phrase is
    found as whole words by ``f" {phrase} " in``."""
    return f" {_phrase(''.join(c if c.isalnum() or c in '-_' else ' ' for c in text))} "


def _member_phrases(universe: Universe, member: str | None = None) -> set[str]:
    """How prose names the members (``member`` alone when given): value and attribute."""
    return {
        _phrase(name)
        for m in universe.members
        if member is None or m.value == member
        for name in (m.value, m.attr)
    }


def family_phrases(family: Family, universe: Universe) -> tuple[str, ...]:
    """The phrases that name ``family`` in prose: its label (``CUDA-alike``) and its
    canonical's name without a predicate prefix (``is_cuda_alike`` -> ``cuda alike``,
    ``use_batched_activation_format`` -> ``batched activation format``), read as words with
    case, ``-``, ``_`` and spaces alike. A phrase that is also a member's name (a label
    ``CUDA`` names is_cuda's member, not the family) or a single word shorter than four
    letters names nothing."""
    name = family.name
    for prefix in PREDICATE_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    members = _member_phrases(universe)
    found: list[str] = []
    for candidate in (family.label, name):
        phrase = _phrase(candidate)
        if not phrase or phrase in members or phrase in found:
            continue
        if " " not in phrase and len(phrase) < 4:
            continue
        found.append(phrase)
    return tuple(found)


def names_family(text: str, family: Family, universe: Universe) -> bool:
    """Whether ``text`` (a raise's message, a warning) names ``family``
    (:func:`family_naming`)."""
    return family_naming(text, family, universe) is not None


def family_naming(text: str, family: Family, universe: Universe) -> str | None:
    """How ``text`` names ``family``, as a message quotes it, or None when it does not. By
    one of its :func:`family_phrases`, as whole words (its label is returned): a phrase inside
    a member's name names that member ("MoRI" in "MoRI low-latency" is ``mori_low_latency``),
    so members' names are read first. Or by naming each of its members, and no other member
    of the universe ("requires CUDA or ROCm": ``CUDA and ROCm (CUDA-alike)``). A family
    inferred from copies has no name a text could use."""
    if not text or family.inferred:
        return None
    prose = _prose(text)
    phrases = family_phrases(family, universe)
    bare = prose
    for member in sorted(_member_phrases(universe), key=len, reverse=True):
        if any(f" {p} " in f" {member} " for p in phrases):
            bare = bare.replace(f" {member} ", " ")
    if any(f" {p} " in bare for p in phrases):
        return family.label or family.name
    named = [
        member.value
        for member in universe.members
        if any(f" {p} " in prose for p in _member_phrases(universe, member.value))
    ]
    if len(named) >= 2 and set(named) == family.member_set:
        *first, last = universe.order(family.member_set)
        return f"{', '.join(first)} and {last} ({family.label or family.name})"
    return None


def member_named(text: str, member: str, family: Family, universe: Universe) -> bool:
    """Whether ``text`` names ``member`` by its value or attribute, as whole words, outside
    the phrases that name ``family`` ("CUDA" in "CUDA-alike" is the family, not ``cuda``)."""
    prose = _prose(text)
    for phrase in family_phrases(family, universe):
        prose = prose.replace(f" {phrase} ", " ")
    return any(f" {p} " in prose for p in _member_phrases(universe, member))
