"""Infer a universe's families from the tree itself, when no helper defines one.

A fork without ``is_deepep_class_backend()`` still holds hand-written copies of the family:
``is_deepep() or is_mooncake()`` in many files, ``is_deepep() or is_mooncake() or is_mori()``
in the files that were updated when ``mori`` joined the enum. The copies are the evidence:

1. every positive enumeration of two or more members that decides a property or picks a
   dispatch arm is a copy of some set (validation allowlists are not: they list what is
   supported; negated chains are not either: ``not is_deepep() and not is_ascend_fuseep()``
   lists the family together with the backends that take the same path; nor is a chain that
   calls a predicate of the tree true for several members: ``is_cuda_alike() or is_xpu()``
   uses that predicate's set and adds to it, it copies nothing);
2. a set written out in at least two files is a *candidate* (a consensus of copies);
3. a candidate no other candidate contains is a family — the copies that kept up with the
   enum hold the whole set, the ones that did not hold part of it — unless it shares a
   member with a family more copies support (``not is_deepep() and not is_ascend_fuseep()``
   is a drifted copy of the a2a family plus an extra, not a family of its own).

Each inferred family is named for the helper that would define it, and says how many copies
it was read from (how many of them complete), so messages can say so. The name is the one the
configuration asked for when a configured canonical function is missing from the enum's module
and the family is the one its label names (a fork of SGLang gets ``is_deepep_class_backend``,
upstream's name, so a rebase meets the same helper); else ``is_<first member>_family_backend``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from .model import Family, Site, Universe

CHAIN_FORMS = ("or-chain", "not-or", "and-not", "in", "not-in", "eq-chain", "ne-chain", "match")


def helper_name(members: tuple[str, ...], universe: Universe) -> str:
    """The name a helper for ``members`` would get: ``is_<first member>_family[_backend]``."""
    first = "".join(c if c.isalnum() else "_" for c in members[0].lower())
    return f"is_{first}_family" + ("_backend" if universe.noun == "backends" else "")


def _wanted_names(
    accepted: list[frozenset[str]], universe: Universe, wanted: Sequence[tuple[str, str]]
) -> dict[frozenset[str], str]:
    """The configured name each accepted family takes: a missing canonical function of the
    enum's module, for the family holding the member its label names (or the only family)."""
    names: dict[frozenset[str], str] = {}
    for predicate, label in wanted:
        module, _, qualname = predicate.partition(":")
        if module != universe.enum_module or not qualname.isidentifier():
            continue
        stem = "".join(c for c in label.split("-")[0].split(" ")[0].lower() if c.isalnum())
        named = [f for f in accepted if stem and stem in {m.lower() for m in f}]
        if not named and len(accepted) == 1:
            named = accepted
        if len(named) == 1 and named[0] not in names:
            names[named[0]] = qualname
    return names


def infer_families(
    universe: Universe, sites: Iterable[Site], wanted: Sequence[tuple[str, str]] = ()
) -> tuple[Family, ...]:
    """The families the copies in ``sites`` agree on (none when no set recurs in two files);
    ``wanted`` the (predicate, label) of configured canonicals that were not found."""
    files: dict[frozenset[str], set[str]] = defaultdict(set)
    counts: dict[frozenset[str], int] = defaultdict(int)
    for site in sites:
        if site.kind == "allowlist" or site.form not in CHAIN_FORMS or site.helpers:
            continue
        if any(op.predicate and len(op.members) >= 2 for op in site.operands):
            continue  # it calls the tree's own predicate of a set: a use of it, plus extras
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
    names = _wanted_names(accepted, universe, wanted)
    for members in accepted:
        # the copies it was read from: those listing all of it (some with extras) or part
        complete = sum(counts[m] for m in counts if members <= m)
        partial = sum(counts[m] for m in counts if m < members)
        where = set().union(*(files[m] for m in counts if m <= members or members <= m))
        copies = complete + partial
        ordered = universe.order(members)
        name = names.get(members) or helper_name(ordered, universe)
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
                inferred_complete=complete,
            )
        )
    return tuple(families)
