"""Which of a site's missing members its fix may add without asking: Ruff's safe and unsafe
fixes, decided per member from the tree (the family rules' fix applicability).

Every addition makes the predicate true for one more backend. It is **safe** when:

- the member is *latent* for the site's file: the tree's own gate (the registry a model must
  be in to select the member, :mod:`driftcheck.gates`) rejects it for every architecture
  the file serves, so the addition changes nothing that can run today. Latent wins;
- a *same-role site* lists it: another property site of the run, in the same universe,
  plays the same role (its role name, ``Site.role.name`` as :mod:`driftcheck.sites.controls`
  records it, and the context it is used in are the same: DC020's ``sibling_key``; generic
  names such as ``forward`` play no role) and accepts the member where it is live (the
  helper's members count for a site that calls it; a member latent in that site's file
  does not). One such site is enough: the role already runs with the member somewhere.
  A rule whose evidence is same-role sites of its own reading adds them (DC020's package
  siblings: files of the site's directory that compute the same value with the family).

Otherwise the member is **held back**: adding it changes what a live backend runs in a role
no other site runs it in. ``--fix`` adds safe members only; ``--unsafe-fixes`` adds the held-back
ones too. The finding names every missing member either way, the held-back ones marked.

A same-role site of the same file counts as well as one of a sibling file, so that a safe fix
never creates the evidence that would make another member safe on the next run: ``--fix``
converges in one pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from driftcheck.families import covered_members
from driftcheck.model import Applicability, Site

if TYPE_CHECKING:
    from .base import Judgement, RunIndex

HELD_BACK = "no same-role site lists it"
MIN_SAME_ROLE_SITES = 1  # same-role sites that must list a live member for it to be safe

FIX_SAFETY = f"""\
Decided per missing member, as Ruff separates safe and unsafe fixes. Adding a member is **safe**
when:

- it is **latent** for the site's file: the tree's own gate (the registry a model must be in to
  select it, which the pack's `[[gates]]` name) rejects it for every architecture the file
  serves, so nothing that runs today changes. Latent wins over everything else;
- or at least {MIN_SAME_ROLE_SITES} **same-role site** lists it: another property site of the
  tree (in a sibling file or the same file) with the same role name (`Site.role.name`: the
  attribute it sets, the function returning it, the function and operation an `if` guards;
  generic names such as `forward` play no role) used the same way (returned, or stored and
  tested), which accepts the member where it is live (a site calling the helper accepts the
  helper's members; a member latent in that site's file does not count). DC020's package
  siblings count too: files of the site's own directory that compute the same value (or
  guard the same call) with the helper or the whole family.

Any other member is **held back** ("{HELD_BACK}"): it is live, and no other
site of the role runs with it. `--fix` (and the `driftcheck-fix` pre-commit hook) adds the safe members only;
`--unsafe-fixes` adds the held-back ones too; `--diff` and the fix notes say which is which. The
finding names every missing member, the held-back ones marked, until it is fixed or suppressed
(`allow-missing[...]` with a reason). The helper style adds every member at once: with a member
held back it applies only with `--unsafe-fixes`. Every fix states the backends it flips: review
those flips."""


Where = tuple[str, int]  # a site's path and line


@dataclass(frozen=True)
class RoleSite:
    """A site as same-role evidence: where it is and the members it accepts where live."""

    path: str
    line: int
    symbol: str
    universe: str
    members: frozenset[str]

    @property
    def at(self) -> Where:
        """Its path and line."""
        return (self.path, self.line)

    def where(self) -> str:
        """``glm4_moe.py:515 (Glm4MoeSparseMoeBlock.__init__)``."""
        name = self.path.rsplit("/", 1)[-1]
        return f"{name}:{self.line} ({self.symbol})" if self.symbol else f"{name}:{self.line}"


def role_key(site: Site) -> str | None:
    """The role ``site`` plays, comparable across files: DC020's ``sibling_key`` (None for a
    generic or empty role name)."""
    from .dc020_role_consensus import sibling_key  # DC020 imports this module

    return sibling_key(site)


class SameRoleSites:
    """Every property site of a run by the role it plays, built once per run by the judge.

    Also indexed by role, universe and member, with where they are: what a site's
    :func:`assess` needs (how many others list a member, and the first) is then read in time
    independent of how many sites play its role (8,000 generated sites feeding one keyword
    each compared themselves with the 7,999 others)."""

    def __init__(self, run: RunIndex, latent: Mapping[str, Mapping[str, str]]) -> None:
        self.by_role: dict[str, list[RoleSite]] = {}
        self.run = run
        self.latent = latent
        # (role, universe, member) -> the sites listing it, in path order, and how many at
        # each (path, line); (role, universe) -> every (path, line)
        self._listing: dict[tuple[str, str, str], tuple[list[RoleSite], Counter[Where]]] = {}
        self._where: dict[tuple[str, str], set[Where]] = {}
        for site in (site for _, scan in sorted(run.scans.items()) for site in scan.sites):
            key = role_key(site)
            if key is not None:
                evidence = self.as_evidence(site)
                self.by_role.setdefault(key, []).append(evidence)
                self._where.setdefault((key, site.universe), set()).add(evidence.at)
                for member in evidence.members:
                    listed = (key, site.universe, member)
                    found, counts = self._listing.setdefault(listed, ([], Counter()))
                    found.append(evidence)
                    counts[evidence.at] += 1

    def as_evidence(self, site: Site) -> RoleSite:
        """``site`` as same-role evidence: the members it accepts where they are live (a rule
        whose evidence names same-role sites of its own, DC020's package siblings, adds them
        to :func:`assess` through this)."""
        gated = set(self.latent.get(site.path, {}))
        members = covered_members(site, self.run.universe_of(site)) - gated
        return RoleSite(site.path, site.span.line, site.symbol, site.universe, members)

    def more(self, site: Site, also: tuple[Site, ...]) -> list[RoleSite]:
        """``also`` as evidence, less those where a site playing ``site``'s role is
        already (other than at ``site``'s own line)."""
        key = role_key(site)
        where = self._where.get((key, site.universe), set()) if key is not None else set()
        own = (site.path, site.span.line)
        extra = [self.as_evidence(s) for s in also]
        return [s for s in extra if s.at == own or s.at not in where]

    def listing(
        self, site: Site, member: str, extra: list[RoleSite]
    ) -> tuple[int, RoleSite | None]:
        """How many other sites playing ``site``'s role list ``member`` (those of
        :meth:`of`, then ``extra``), and the first of them."""
        key = role_key(site)
        own = (site.path, site.span.line)
        found, counts = (
            self._listing.get((key, site.universe, member), ([], Counter()))
            if key is not None
            else ([], Counter())
        )
        count = len(found) - counts[own]
        first = next((s for s in found if s.at != own), None) if count else None
        more = [s for s in extra if member in s.members]
        if first is None and more:
            first = more[0]
        return count + len(more), first

    def of(self, site: Site) -> tuple[RoleSite, ...]:
        """The other sites playing ``site``'s role, in path order."""
        key = role_key(site)
        if key is None:
            return ()
        return tuple(
            s
            for s in self.by_role.get(key, ())
            if s.universe == site.universe and (s.path, s.line) != (site.path, site.span.line)
        )


def assess(
    site: Site,
    missing: tuple[str, ...],
    judgement: Judgement,
    also: tuple[Site, ...] = (),
) -> tuple[Applicability, ...]:
    """Each of ``missing``'s applicability, with the evidence it rests on; ``also`` are more
    sites playing ``site``'s role, by the rule's own evidence (sibling files of its package
    that compute the same value)."""
    same_role = judgement.same_role
    extra = same_role.more(site, also) if also and same_role is not None else []
    verdicts: list[Applicability] = []
    for member in missing:
        if member in judgement.latent:
            verdicts.append(Applicability(member, True, judgement.latent[member]))
            continue
        count, first = (
            same_role.listing(site, member, extra) if same_role is not None else (0, None)
        )
        if count >= MIN_SAME_ROLE_SITES and first is not None:
            more = f" and {count - 1} more" if count > 1 else ""
            reason = f"same-role site {first.where()}{more} lists it"
            verdicts.append(Applicability(member, True, reason))
        else:
            verdicts.append(Applicability(member, False, HELD_BACK))
    return tuple(verdicts)


def marked(
    missing: tuple[str, ...],
    verdicts: tuple[Applicability, ...],
    latent: Collection[str] = (),
) -> str:
    """``deepep_v2 (latent), pplx (held back: no same-role site lists it)``: the missing
    members as a message names them. Several held-back members are each marked, and the
    reason is given once, on the last: ``mori (held back), pplx (held back: ... lists them)``."""
    held = [v.member for v in verdicts if not v.safe]
    shown: list[str] = []
    for member in missing:
        if member in held:
            last = member == held[-1]
            reason = HELD_BACK if len(held) == 1 else HELD_BACK.removesuffix(" it") + " them"
            shown.append(f"{member} (held back: {reason})" if last else f"{member} (held back)")
        elif member in latent:
            shown.append(f"{member} (latent)")
        else:
            shown.append(member)
    return ", ".join(shown)
