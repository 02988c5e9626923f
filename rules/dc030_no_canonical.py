"""DC030: a family the configuration (or pack) names has no canonical predicate in the tree.

DC00x judge one site against a family, DC01x an allowlist or a dispatch, DC02x a site against
its siblings or its own text; DC03x judge the canonicals themselves against the tree. This is
the first: the family a pack names, followed through renames, moves and splits
(:mod:`driftcheck.universe.follow`), is still not there, or is there but outside what the
interpreter reads. Every copy of that family then goes unchecked, so the run says so as an
error rather than a warning nobody reads in CI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from driftcheck.keys import finding_key
from driftcheck.model import Finding, Span

from .base import Example, Rule

if TYPE_CHECKING:
    from driftcheck.config import Config
    from driftcheck.model import Universe
    from driftcheck.universe.load import Unresolved

# the examples' tree: a mesh runtime whose configuration names a canonical the tree lost
FIXTURE = "orphan_like"


class FamilyWithoutCanonical(Rule):
    """A configured family whose canonical predicate the tree no longer has (or that cannot
    be read): its copies go unchecked."""

    code = "DC030"
    name = "family-without-canonical"
    severity = "error"
    findings_read_every_site = False
    # judged from the configuration and the canonicals' modules, not from sites: a rule
    # example's finding is at the canonical's module, not in the example file
    about: ClassVar[str] = "canonicals"
    summary = "A configured family has no canonical predicate in the tree: its copies go unchecked"
    explanation = """\
## What it does
Reports each family the configuration or pack names (`canonical = [...]`) for which the tree
holds no canonical predicate driftcheck can read. Before reporting, driftcheck follows a
canonical that is gone: the same name in another class of its module (a moved property),
the entry's `seeds` (other names it has gone by), and the predicates of its class whose names
hold every distinctive word of the old name (a split: `use_mori_kernels` into
`use_mori_epv1_kernels | use_mori_epv2_kernels`, checked as their union). What it chose is
said on stderr as `note: use_mori_kernels is gone; following ... (path:line)`. The finding
lists the predicates it considered. A canonical that is found but falls outside the
interpreter is reported too, with its file, line and the construct it could not read; the
other families are still checked.

A family inferred from the tree's hand-written copies in the canonical's place (a fork
without the helper) is checked against that inferred family, and not reported here.

With a selection that leaves DC030 out, the run still prints one warning line per family
that was not checked.

## Why it matters
A pack names exact symbols; the next release renames one, and every copy of that family
goes unchecked. A warning on stderr does not fail CI: the check goes quiet without anyone
noticing.

## Fix
Point the entry at the predicate that replaced it (`predicate = "module:Class.name"`), or add
the new name to its `seeds`; for an unreadable canonical, rewrite its body in the shapes the
interpreter reads (or name another predicate of the same family).
"""
    VALID: ClassVar[list[Example]] = [
        Example(
            "def packed(cfg: MeshConfig) -> bool:\n    return cfg.uses_packed_layout\n",
            fixture="config_like",
        )
    ]
    INVALID: ClassVar[list[Example]] = [
        Example(
            "def packed(cfg: MeshConfig) -> bool:\n"
            '    return cfg.transport in ("mesh_ll", "relay")\n',
            fixture=FIXTURE,
            note="MeshConfig.uses_packed_layout is gone and nothing follows it",
        )
    ]

    def reads_single_checks(self, universes: Sequence[Universe], config: Config) -> bool:
        """Never: the rule reads the configuration and the canonicals' modules."""
        return False

    def canonical_findings(self, unresolved: Sequence[Unresolved]) -> list[Finding]:
        """One error per family that has no canonical the run could read."""
        findings = []
        for entry in unresolved:
            canonical, error = entry.canonical, entry.error
            family = canonical.label or canonical.predicate.rpartition(":")[2]
            why = "cannot be read" if entry.unreadable else "has no canonical in this tree"
            line = error.line or 1
            finding = Finding(
                code=self.code,
                severity=self.severity,
                path=error.path,
                span=Span(line, 0, line, 0),
                symbol=canonical.predicate.rpartition(":")[2],
                canonical=canonical.predicate.rpartition(":")[2],
                members=(),
                missing=(),
                extra=entry.considered,
                message=f"the {family} family {why}, so its copies are not checked: "
                f"{error.message}",
                kind="canonical",
            )
            findings.append(replace(finding, key=finding_key(finding, canonical.predicate)))
        return findings
