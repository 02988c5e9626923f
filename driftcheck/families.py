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
