"""Infer a universe's families from the tree itself, when no helper defines one.

A fork without ``is_deepep_class_backend()`` still holds hand-written copies of the family:
``is_deepep() or is_mooncake()`` in many files, ``is_deepep() or is_mooncake() or is_mori()``
in the files that were updated when ``mori`` joined the enum. The copies are the evidence:

1. every positive enumeration of two or more members that decides a property or picks a
   dispatch arm is a copy of some set (validation allowlists are not: they list what is
   supported; negated chains are not either: ``not is_deepep() and not is_ascend_fuseep()``
   lists the family together with the backends that take the same path);
2. a set written out in at least two files is a *candidate* (a consensus of copies);
3. a candidate no other candidate contains is a family — the copies that kept up with the
   enum hold the whole set, the ones that did not hold part of it — unless it shares a
   member with a family more copies support (``not is_deepep() and not is_ascend_fuseep()``
   is a drifted copy of the a2a family plus an extra, not a family of its own).

Each inferred family is named for the helper that would define it (``is_deepep_family_backend``)
and says how many copies it was read from, so messages can say so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .model import Family, Site, Universe

CHAIN_FORMS = ("or-chain", "not-or", "and-not", "in", "not-in", "eq-chain", "ne-chain", "match")


def helper_name(members: tuple[str, ...], universe: Universe) -> str:
    """The name a helper for ``members`` would get: ``is_<first member>_family[_backend]``."""
    first = "".join(c if c.isalnum() else "_" for c in members[0].lower())
    return f"is_{first}_family" + ("_backend" if universe.noun == "backends" else "")


def infer_families(universe: Universe, sites: Iterable[Site]) -> tuple[Family, ...]:
    """The families the copies in ``sites`` agree on (none when no set recurs in two files)."""
    files: dict[frozenset[str], set[str]] = defaultdict(set)
    counts: dict[frozenset[str], int] = defaultdict(int)
    for site in sites:
        if site.kind == "allowlist" or site.form not in CHAIN_FORMS or site.helpers:
            continue
        if site.polarity != "positive":
            continue
        if len(site.members) < 2:
            continue
        files[site.members].add(site.path)
        counts[site.members] += 1
    candidates = [members for members, paths in files.items() if len(paths) >= 2]
    maximal = [c for c in candidates if not any(c < other for other in candidates)]

    def support(family: frozenset[str]) -> tuple[int, set[str]]:
        agreeing = [members for members in counts if members <= family]
        return sum(counts[m] for m in agreeing), set().union(*(files[m] for m in agreeing))

    accepted: list[frozenset[str]] = []
    for members in sorted(maximal, key=lambda m: (-support(m)[0], universe.order(m))):
        if not any(members & other for other in accepted):
            accepted.append(members)
    families = []
    for members in accepted:
        copies, where = support(members)
        ordered = universe.order(members)
        name = helper_name(ordered, universe)
        families.append(
            Family(
                name=name,
                qualified=f"{universe.enum_module}:{name}",
                path=universe.enum_path,
                line=0,
                members=ordered,
                label="{" + ", ".join(ordered) + "}",
                access="inferred",
                universe=universe.key,
                inferred_from=copies,
                inferred_files=len(where),
            )
        )
    return tuple(families)
