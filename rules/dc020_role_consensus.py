"""DC020: a site that controls what the family controls elsewhere, with a strict subset of it.

The evidence, in order, each stated in the message: a sibling model file's site with the
same role name (attribute, function, guarded operation) that calls the helper or enumerates
the family; for a single check, sibling files of its own package that use the whole family
in the same role (:attr:`~driftcheck.model.Role.package_keys`), for a family of any size;
the sites across the whole tree that control the same operations (the calls its
value guards, the keywords it feeds, what it is assigned to and where that is read:
:mod:`driftcheck.sites.controls`) and call the helper or enumerate the family; an identical
list elsewhere in the same file that has such evidence.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from driftcheck.families import covered_members, enumerates, named_by, names_family
from driftcheck.model import Family, Finding, Related, Site, Universe

from .applicability import FIX_SAFETY, assess, marked
from .base import (
    Example,
    Judgement,
    Rule,
    RunIndex,
    drift,
    noun,
    provenance_note,
    site_finding,
    subject,
    unread_note,
)
from .dc021_named_refusal import judged as refusal_judged

if TYPE_CHECKING:
    from driftcheck.config import Config
    from driftcheck.fix.plan import FileContext, Rewrite, SiteJob


# a block that calls the helper, and a file holding it (the siblings of the examples below)
HELPER_BLOCK = (
    "class Block:\n"
    "    def forward(self, x):\n"
    "        if is_deepep_class_backend():\n"
    "            return self.forward_deepep(x)\n"
    "        return self.forward_normal(x)\n"
)
HELPER_USER = "from sglang.srt.layers.moe.utils import is_deepep_class_backend\n\n\n" + HELPER_BLOCK


# files of the config_like fixture's package that compute the activation layout with the
# helper, with one member, or answer a capability with it (the package examples' siblings)
PACKED_LAYOUT_USER = (
    "from meshcfg.parallel import LayerConfig\n\n\n"
    "def pick(layer: LayerConfig) -> str:\n"
    '    activation_layout = "packed" if layer.mesh.uses_packed_layout else "flat"\n'
    "    return activation_layout\n"
)
RELAY_LAYOUT_USER = PACKED_LAYOUT_USER.replace("uses_packed_layout", "use_relay")
# the package examples' site: the activation layout chosen from one member's check (VALID
# beside a per-transport package, INVALID beside siblings that call the helper)
ONE_MEMBER_LAYOUT = (
    "def layout_of(layer: LayerConfig) -> str:\n"
    "    if layer.mesh.use_mesh_ll:\n"
    '        activation_layout = "packed"\n'
    "    else:\n"
    '        activation_layout = "flat"\n'
    "    return activation_layout\n"
)
PACKED_CAPABILITY = (
    "from meshcfg.parallel import LayerConfig\n\n\n"
    "def supports_device(layer: LayerConfig) -> bool:\n"
    "    return layer.mesh.uses_packed_layout\n"
)


class RoleConsensus(Rule):
    """Model files copy each other; a fix lands in one copy and not the others."""

    code = "DC020"
    honours_allow_missing = True
    name = "role-consensus"
    severity = "error"
    summary = "Site controls what the family controls elsewhere, but tests only part of it"
    explanation = """\
## What it does
Judges a site by what its value controls. It reports a site that tests fewer members of a
canonical family than the code around the tree says it should — a single check
(`if b.is_deepep():`), or a chain sharing one member with the family plus other backends
(`is_megamoe() or is_deepep()`) — when one of these holds, and names the evidence:

- a *sibling*: a site in another model file playing the same role (the same assigned
  attribute such as `_enable_a2a_moe`, the same function, the same guarded operation such as
  `forward` choosing `forward_normal`) calls the helper or enumerates the family;
- its *package* (a single check only, against a family of **any size**, two members
  included): sibling files of its own directory — any files, not only model files — use the
  whole family (call the helper, or list exactly its members) **in the same role**: they give
  the value the same name (the attribute or local variable it is assigned to, a local an `if`
  it tests assigns in both branches, or the keyword it feeds: `activation_format = Batched if
  cfg.use_batched_activation_format else Standard` and `make(activation_format=...)` compute
  the same thing) or guard the same call. It needs at least 2 such files besides its own, and more of them
  than the directory's files that test part of the family in that role (a package whose
  files each test their own member is a per-backend package, not a drifted copy). A value
  that is only returned, validated (`raise`, `assert`) or tested as a capability
  (`_supports_current_device` returning `p.is_cuda()`) has no such role, so kernel gates stay
  silent;
- its *use*: sites in at least three files that control the same operations — the calls
  the value's branches make (`forward_deepep`), the keywords it feeds (`tp_size` of a shared
  expert), the attributes they set, what it is assigned to and where that is read — call the
  helper or enumerate the family (for a single check, only against a family of three or more
  members: a single check of a two-member family is as likely a choice between the two);
- a *copy*: the same list elsewhere in the file has such evidence.

The site's comment is quoted when it names the family.

A single check whose refusal's text names the family (`if not p.is_cuda(): raise
ValueError("... CUDA-alike ...")`) is DC021's.

## Why it matters
SGLang model files are copied from each other (GLM-4 MoE lite from GLM-4 MoE, Step3p5 from
GLM-4); a drift fix lands in one copy and not the others. A third of historical fixes were in
single-backend checks (`if b.is_deepep():` where the family was meant), which no list-based
rule can see: the sibling is the evidence. A family of two members drifts the same way: vLLM's
MoE oracles each pick the batched activation format with
`use_batched_activation_format` (deepep_low_latency or nixl_ep); a new oracle that tests
`use_deepep_ll_kernels` alone runs nixl_ep with the wrong format. No list of the family exists
to compare with, and a lone `is_cuda()` is as often a choice between the two; the package's
files computing the same value with the helper are what it copies.

## Fix
`--fix` does what the sibling does, whatever `--fix-style` says: the site's family member
becomes a call to the canonical helper, its extras are kept (`not b.is_deepep() and not
b.is_ascend_fuseep()` becomes `not is_deepep_class_backend() and not b.is_ascend_fuseep()`), and
the import is added where missing; a value comparison (`all2all_backend ==
"deepep_low_latency"`), which may run before the runtime value the helper reads is set, gets
the members the helper accepts instead. The fix states the backends it flips.
"""
    fix_safety = FIX_SAFETY
    VALID = [
        Example(
            "def forward(x):\n"
            "    if get_moe_a2a_backend().is_deepep():\n"
            "        return x\n"
            "    return -x\n",
            note="no sibling with the same role",
        ),
        Example(
            "class Dispatcher:\n"
            "    def buffer(self):\n"
            "        if get_moe_a2a_backend().is_deepep():\n"
            "            return self.deepep_buffer()\n"
            "        return None\n",
            note="what it controls (deepep_buffer) no site of the family controls",
            siblings={f"user_{name}.py": HELPER_USER for name in ("one", "two")},
        ),
    ]
    VALID += [
        Example(
            "class Block:\n"
            "    def __init__(self):\n"
            "        if get_moe_a2a_backend().is_deepep():\n"
            "            self.ep_size = 8\n"
            "            self.dispatcher = DeepEPDispatcher(self.ep_size)\n\n"
            "    def shard(self, n):\n"
            "        return n // self.ep_size\n\n\n"
            "class ExampleForCausalLM:\n"
            "    pass\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
            note="the branch builds DeepEP's own dispatcher: code for that member alone",
            siblings={
                f"sibling_{name}.py": "from sglang.srt.layers.moe.utils import is_deepep_class_backend\n\n\n"
                "class SiblingBlock:\n"
                "    def __init__(self):\n"
                "        if is_deepep_class_backend():\n"
                "            self.ep_size = 8\n\n\n"
                f"class {name.title()}ForCausalLM:\n"
                "    pass\n\n\n"
                f"EntryClass = {name.title()}ForCausalLM\n"
                for name in ("one", "two")
            },
        ),
        Example(
            "class ExampleForCausalLM:\n"
            "    def fusion_disable_reason(self):\n"
            "        if get_parallel().moe_ep_size > 1:\n"
            "            return 'not with expert parallelism'\n"
            "        if get_moe_a2a_backend().is_deepep():\n"
            "            return 'not with DeepEP'\n"
            "        return None\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
            note="every a2a backend runs with expert parallelism (the pack's family-implies): "
            "the deepep test is reached for no member of the family",
            siblings={
                "sibling_moe.py": "from sglang.srt.layers.moe.utils import is_deepep_class_backend\n\n\n"
                "class SiblingForCausalLM:\n"
                "    def fusion_disable_reason(self):\n"
                "        if is_deepep_class_backend():\n"
                "            return 'not with DeepEP'\n"
                "        return None\n\n\n"
                "EntryClass = SiblingForCausalLM\n",
            },
        ),
    ]
    INVALID = [
        Example(
            "class SparseBlock:\n"
            "    def forward(self, x):\n"
            "        if (\n"
            "            not get_moe_a2a_backend().is_deepep()\n"
            "            and not get_moe_a2a_backend().is_ascend_fuseep()\n"
            "        ):\n"
            "            return self.forward_normal(x)\n"
            "        return self.forward_a2a(x)\n\n\n"
            "class ExampleForCausalLM:\n"
            "    pass\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
            missing=("deepep_v2", "mooncake", "mori", "pplx"),
            expected_fix="class SparseBlock:\n"
            "    def forward(self, x):\n"
            "        if (\n"
            "            not is_deepep_class_backend()\n"
            "            and not get_moe_a2a_backend().is_ascend_fuseep()\n"
            "        ):\n"
            "            return self.forward_normal(x)\n"
            "        return self.forward_a2a(x)\n\n\n"
            "class ExampleForCausalLM:\n"
            "    pass\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
            siblings={
                "sibling_moe.py": "from sglang.srt.layers.moe.utils import get_moe_a2a_backend, is_deepep_class_backend\n\n\n"
                "class SiblingBlock:\n"
                "    def forward(self, x):\n"
                "        if not is_deepep_class_backend() and not get_moe_a2a_backend().is_ascend_fuseep():\n"
                "            return self.forward_normal(x)\n"
                "        return self.forward_a2a(x)\n\n\n"
                "class SiblingForCausalLM:\n"
                "    pass\n\n\n"
                "EntryClass = SiblingForCausalLM\n",
            },
        ),
        Example(
            "class Block:\n"
            "    def __init__(self):\n"
            "        if get_moe_a2a_backend().is_deepep():\n"
            "            self.ep_size = 8\n\n"
            "    def shard(self, n):\n"
            "        return n // self.ep_size\n\n\n"
            "class ExampleForCausalLM:\n"
            "    pass\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
            missing=("deepep_v2", "mooncake", "mori", "pplx"),
            expected_fix="class Block:\n"
            "    def __init__(self):\n"
            "        if (\n"
            "            get_moe_a2a_backend().is_deepep()\n"
            "            or get_moe_a2a_backend().is_deepep_v2()\n"
            "            or get_moe_a2a_backend().is_mooncake()\n"
            "            or get_moe_a2a_backend().is_mori()\n"
            "            or get_moe_a2a_backend().is_pplx()\n"
            "        ):\n"
            "            self.ep_size = 8\n\n"
            "    def shard(self, n):\n"
            "        return n // self.ep_size\n\n\n"
            "class ExampleForCausalLM:\n"
            "    pass\n\n\n"
            "EntryClass = ExampleForCausalLM\n",
            note="majority: most sibling files enumerate the family for the same operation; the "
            "fix enumerates it too (minimal style), as they do",
            siblings={
                f"sibling_{name}.py": "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
                "class SiblingBlock:\n"
                "    def __init__(self):\n"
                "        b = get_moe_a2a_backend()\n"
                "        if b.is_deepep() or b.is_mooncake() or b.is_mori():\n"
                "            self.ep_size = 8\n\n\n"
                f"class {name.title()}ForCausalLM:\n"
                "    pass\n\n\n"
                f"EntryClass = {name.title()}ForCausalLM\n"
                for name in ("one", "two")
            },
        ),
    ]

    INVALID += [
        Example(
            "class Block:\n"
            "    def forward(self, x):\n"
            "        if get_moe_a2a_backend().is_deepep():\n"
            "            return self.forward_deepep(x)\n"
            "        return self.forward_normal(x)\n",
            missing=("deepep_v2", "mooncake", "mori", "pplx"),
            expected_fix=HELPER_BLOCK,
            note="its use: sites in three files of another package choose forward_deepep with "
            "the helper (no model files: the evidence is what the value controls, not a role "
            "name)",
            siblings={f"../layers/user_{name}.py": HELPER_USER for name in ("one", "two", "three")},
        ),
        Example(
            "class Layer:\n"
            "    def __init__(self):\n"
            "        # EP a2a backends (megamoe / DeepEP) replicate the shared experts\n"
            "        b = get_moe_a2a_backend()\n"
            "        self.replicated = b.is_megamoe() or b.is_deepep()\n"
            "        self.shared = Mlp(**(dict(tp_size=1) if self.replicated else {}))\n",
            missing=("deepep_v2", "mooncake", "mori", "pplx"),
            expected_fix="class Layer:\n"
            "    def __init__(self):\n"
            "        # EP a2a backends (megamoe / DeepEP) replicate the shared experts\n"
            "        b = get_moe_a2a_backend()\n"
            "        self.replicated = (\n"
            "            b.is_megamoe()\n"
            "            or b.is_deepep()\n"
            "            or b.is_deepep_v2()\n"
            "            or b.is_mooncake()\n"
            "            or b.is_mori()\n"
            "            or b.is_pplx()\n"
            "        )\n"
            "        self.shared = Mlp(**(dict(tp_size=1) if self.replicated else {}))\n",
            note="a chain sharing one member with the family: the attribute it sets feeds tp_size "
            "as the family's lists elsewhere do (minimal fix: they enumerate it)",
            siblings={
                f"shared_{name}.py": "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
                "class Block:\n"
                "    def __init__(self):\n"
                "        b = get_moe_a2a_backend()\n"
                "        self.shared = Mlp(\n"
                "            **(dict(tp_size=1) if b.is_deepep() or b.is_mooncake() or b.is_mori() else {})\n"
                "        )\n"
                for name in ("one", "two", "three")
            },
        ),
    ]

    VALID += [
        Example(
            ONE_MEMBER_LAYOUT,
            note="a per-transport package: as many sibling files compute the value from one "
            "member as from the family",
            siblings={
                **{f"layout_{name}.py": PACKED_LAYOUT_USER for name in ("one", "two")},
                **{f"relay_{name}.py": RELAY_LAYOUT_USER for name in ("one", "two")},
            },
            fixture="config_like",
        ),
        Example(
            "def supports_device(layer: LayerConfig) -> bool:\n    return layer.mesh.use_mesh_ll\n",
            note="a capability answer: returned, it controls nothing its siblings control",
            siblings={f"caps_{name}.py": PACKED_CAPABILITY for name in ("one", "two")},
            fixture="config_like",
        ),
    ]
    INVALID += [
        Example(
            ONE_MEMBER_LAYOUT,
            missing=("relay", "relay_v2"),
            expected_fix=ONE_MEMBER_LAYOUT.replace("use_mesh_ll", "uses_packed_layout"),
            note="its package: two sibling files of its directory compute activation_layout "
            "with the helper (a local the if chooses the value of: compared within the package "
            "only)",
            siblings={f"layout_{name}.py": PACKED_LAYOUT_USER for name in ("one", "two")},
            fixture="config_like",
        ),
    ]

    def __init__(self) -> None:
        self.siblings: dict[str, list[Sibling]] = {}
        # (universe, family, key) -> the (path, line, calls the helper) of the sites that
        # call the family's helper or enumerate it and control that key
        self.users: dict[tuple[str, str, str], set[tuple[str, int, bool]]] = {}
        self.by_path: dict[str, list[Site]] = {}
        # (universe, family, directory, package key) -> the sites of that directory that use
        # the whole family for it, and the files whose sites test part of the family for it
        self.package_users: dict[tuple[str, str, str, str], list[Site]] = {}
        self.package_partial: dict[tuple[str, str, str, str], set[str]] = {}
        self.run: RunIndex | None = None

    def prepare(self, run: RunIndex) -> None:
        """Group the sites of model files (files with the model marker) by role.

        In path order: the first sibling is the one a message cites, and the scans come in
        the order files came back (cache hits first, then the workers' completion order), so
        a warm run would otherwise cite another sibling than a cold one."""
        self.siblings = {}
        self.users = {}
        self.by_path = {}
        self.package_users = {}
        self.package_partial = {}
        self.run = run
        for path, scan in sorted(run.scans.items()):
            self.by_path[path] = list(scan.sites)
            self._index_users(run, path, scan.sites)
            self._index_package(run, path, scan.sites)
            if not scan.entry_classes:
                continue
            for site in scan.sites:
                key = sibling_key(site)
                if key is None:
                    continue
                universe = run.universe_of(site)
                self.siblings.setdefault(key, []).append(
                    Sibling(
                        path,
                        site.symbol,
                        site.span.line,
                        covered_members(site, universe),
                        site.helpers,
                        universe.key,
                    )
                )

    def _index_users(self, run: RunIndex, path: str, sites: list[Site]) -> None:
        """Record, per family and key, the sites that call its helper or enumerate it."""
        min_overlap = run.config.min_overlap
        for site in sites:
            if site.kind != "property" or not site.role.keys:
                continue
            universe = run.universe_of(site)
            for family in universe.families:
                if not (
                    family.name in site.helpers
                    or (site.form != "single" and enumerates(site, family, universe, min_overlap))
                ):
                    continue
                calls = family.name in site.helpers
                for key in site.role.keys:
                    if key not in WEAK_KEYS:
                        self.users.setdefault((universe.key, family.name, key), set()).add(
                            (path, site.span.line, calls)
                        )

    def _index_package(self, run: RunIndex, path: str, sites: list[Site]) -> None:
        """Record, per family, directory and package key (:attr:`Role.package_keys`), the
        sites that use the whole family (call its helper or list exactly its members) and
        the files whose sites test part of it."""
        directory = posixpath.dirname(path)
        for site in sites:
            keys = site.role.package_keys
            if not keys:
                continue
            universe = run.universe_of(site)
            covered = covered_members(site, universe)
            for family in universe.families:
                shared = covered & family.member_set
                if not shared:
                    continue
                for key in keys:
                    where = (universe.key, family.name, directory, key)
                    if covered == family.member_set and site.kind == "property":
                        self.package_users.setdefault(where, []).append(site)
                    elif shared != family.member_set:
                        self.package_partial.setdefault(where, set()).add(path)

    def reads_single_checks(self, universes: Sequence[Universe], config: Config) -> bool:
        """A single check is judged anywhere by sibling evidence (model files: a pack with a
        model marker) and by use evidence (a family of :data:`SINGLE_USE_MEMBERS` members or
        more); otherwise only by its package (:meth:`single_check_directories`). A universe
        whose families are still to be inferred asks nothing yet: no family is inferred from
        a single check, and the engine asks again once they are (``engine.read_deferred``)."""
        if config.model_marker:
            return True
        return any(
            any(not 2 <= len(f.members) < SINGLE_USE_MEMBERS for f in universe.families)
            for universe in universes
        )

    def single_check_directories(self, run: RunIndex) -> set[str]:
        """The directories where at least :data:`PACKAGE_QUORUM` files use a family whole in
        one package role: the only places package evidence can judge a single check."""
        self.package_users, self.package_partial = {}, {}
        for path, scan in sorted(run.scans.items()):
            self._index_package(run, path, scan.sites)
        return {
            directory
            for (_, _, directory, _), users in self.package_users.items()
            if len({user.path for user in users}) >= PACKAGE_QUORUM
        }

    def package_evidence(self, site: Site, family: Family, universe: Universe) -> Evidence | None:
        """Sibling files of ``site``'s own directory (its package) that use the whole family
        in the same role: they give its value the same name (an attribute or local set, a
        keyword fed) or guard the same call with the helper or the family's full list, in
        at least :data:`PACKAGE_QUORUM` files, and more files than those of the directory that
        test part of the family in that role (a package whose files each test their own
        member is a per-backend package, not a drifted copy). Judges a single check against
        a family of any size: two files of one package computing the same thing with the
        family are what the site copies."""
        if site.form != "single":
            return None
        directory = posixpath.dirname(site.path)
        best: tuple[int, str, list[Site]] | None = None
        for key in site.role.package_keys:
            where = (universe.key, family.name, directory, key)
            users = [u for u in self.package_users.get(where, ()) if u.path != site.path]
            user_files = {u.path for u in users}
            partial = self.package_partial.get(where, set()) - {site.path}
            if len(user_files) < PACKAGE_QUORUM or len(user_files) <= len(partial):
                continue
            if best is None or (len(user_files), key) > (best[0], best[1]):
                best = (len(user_files), key, users)
        if best is None:
            return None
        count, key, users = best
        first = min(users, key=lambda u: (u.path, u.span.line))
        others = (
            f" and {count - 1} more sibling file{'s' if count > 2 else ''}" if count > 1 else ""
        )
        helper = sum(family.name in u.helpers for u in users)
        listing = f"all {len(family.members)} {noun(family, universe)}"
        if family.inferred:
            how = f"listing {listing}"
        elif helper == len(users):
            how = f"with {family.call_text()}"
        else:
            how = f"with {family.call_text()} or {listing}"
        text = (
            f"its sibling {_site_where(first)}{others} in {directory}/ "
            f"{_describe_package(key)} {how}"
        )
        places = tuple(
            Related(
                u.path,
                u.span.line,
                u.span.col,
                f"a sibling site that {_describe_package(key, one=True)}",
            )
            for u in sorted(users, key=lambda u: (u.path, u.span.line))
        )
        return Evidence(text, helper * 2 > len(users), places, tuple(users))

    def use_evidence(self, site: Site, family: Family, universe: Universe) -> Evidence | None:
        """The operations ``site`` controls that the family's users agree on, described, and
        whether most of those users call the helper. A single check of a two-member family
        is as likely a choice between the two (``is_cuda()`` vs ``is_rocm()``) as a drifted
        copy: use is evidence only against families of three or more."""
        if site.form == "single" and len(family.members) < SINGLE_USE_MEMBERS:
            return None
        agreeing: list[tuple[int, str, set[tuple[str, int, bool]]]] = []
        for key in site.role.keys:
            found = self.users.get((universe.key, family.name, key), set())
            found = {u for u in found if u[0] != site.path or u[1] != site.span.line}
            files = len({u[0] for u in found})
            if files >= USE_QUORUM:
                agreeing.append((files, key, found))
        if not agreeing:
            return None
        # the evidence is the operations most files agree on: a key that only the quorum
        # shares is not quoted beside one that many share
        floor = STRONG_QUORUM if any(n >= STRONG_QUORUM for n, _, _ in agreeing) else USE_QUORUM
        strong = []
        users: set[tuple[str, int, bool]] = set()
        for files, key, found in agreeing:
            if files >= floor:
                strong.append((len(found), key))
                users |= found
        strong.sort(key=lambda item: (-item[0], item[1]))
        described = ", ".join(_describe(key) for _, key in strong[:3])
        files = len({u[0] for u in users})
        helpers = sum(u[2] for u in users)
        calls = "" if family.inferred else f"call {family.call_text()} or "
        text = (
            f"its use ({described}) matches {len(users)} sites in {files} files that "
            f"{calls}enumerate {noun(family, universe)}"
        )
        places = tuple(
            Related(path, line, 0, "a site whose use is the same")
            for path, line, _ in sorted(users)
        )
        same_use = self._sites_at((path, line) for path, line, _ in sorted(users))
        return Evidence(text, helpers * 2 > len(users), places, same_use)

    def _sites_at(self, places: Iterable[tuple[str, int]]) -> tuple[Site, ...]:
        """The property sites at ``places`` (path, line): the sites a finding's evidence
        cites, which the fix's applicability then counts as playing the site's role (one
        reading of the evidence for the message and the fix)."""
        found: list[Site] = []
        for path, line in places:
            found.extend(
                s
                for s in self.by_path.get(path, ())
                if s.span.line == line and s.kind == "property"
            )
        return tuple(found)

    def copy_evidence(self, site: Site, family: Family, universe: Universe) -> Evidence | None:
        """An identical list (two or more members) elsewhere in the file that has sibling or
        use evidence: copies of one list drift together."""
        if len(site.members) < 2:
            return None
        for other in self.by_path.get(site.path, ()):
            if other is site or other.span == site.span or other.members != site.members:
                continue
            if other.universe != site.universe or other.kind != "property":
                continue
            if other.form == "single" and site.form != "single":
                continue
            if self.use_evidence(other, family, universe) or _sibling_evidence(
                family, universe, self.siblings_of(other), 2
            ):
                text = f"the same list at line {other.span.line} controls what the family controls"
                place = Related(other.path, other.span.line, other.span.col, "the same list")
                return Evidence(text, False, (place,))
        return None

    def evidence(
        self, site: Site, family: Family, universe: Universe, min_overlap: int
    ) -> Evidence | None:
        """Why ``site`` should cover ``family`` (sibling, package, use, copy, in that order)."""
        return (
            _sibling_evidence(family, universe, self.siblings_of(site), min_overlap)
            or self.package_evidence(site, family, universe)
            or self.use_evidence(site, family, universe)
            or self.copy_evidence(site, family, universe)
        )

    def siblings_of(self, site: Site) -> tuple[Sibling, ...]:
        """The sites of other model files playing the same role as ``site``."""
        key = sibling_key(site)
        if key is None:
            return ()
        return tuple(
            s
            for s in self.siblings.get(key, ())
            if s.path != site.path and s.universe == site.universe
        )

    def check(self, site: Site, judgement: Judgement) -> list[Finding]:
        """Report a site that covers less of a family than its siblings say it should."""
        findings: list[Finding] = []
        universe = judgement.universe
        if site.kind != "property" or site.form == "helper":
            return []
        # a site that enumerates a family is judged against that one only (by DC001/DC003)
        families = [judgement.family] if judgement.family is not None else universe.families
        for family in families:
            if site.form != "single" and enumerates(site, family, universe, judgement.min_overlap):
                continue  # DC001/DC003 already judge this site against the family
            if _covers_a_smaller_family(site, family, universe):
                continue
            if refusal_judged(site) and names_family(site.role.refusal, family, universe):
                continue  # its refusal's text says what it is: DC021 judges it
            present, missing, extra = drift(site, family, universe)
            missing = tuple(m for m in missing if m not in judgement.allowed_missing)
            if not missing or not set(present) & family.member_set:
                continue
            if builds_own_object(site, present):
                continue
            found = self.evidence(site, family, universe, judgement.min_overlap)
            if found is None:
                continue
            if not found.same_role and found.places:
                # sibling evidence: the sibling sites it cites play the site's role
                cited = self._sites_at((p.path, p.line) for p in found.places)
                found = replace(found, same_role=cited)
            evidence = found.text + _comment_evidence(site, family)
            # a copy nothing reads is deleted, not widened: no member's applicability
            verdicts = () if judgement.unread else assess(site, missing, judgement, found.same_role)
            finding = site_finding(
                self,
                site,
                family,
                members=present,
                missing=missing,
                extra=extra,
                message=f"{subject(site)} tests {', '.join(present)} where {evidence}; missing {marked(missing, verdicts)}{provenance_note(family)}{unread_note(judgement)}",
                severity="warning" if judgement.unread else None,
                applicability=verdicts,
            )
            findings.append(
                replace(
                    finding,
                    evidence="helper" if found.calls_helper else "enumeration",
                    related=(*finding.related, *found.places),
                )
            )
            break  # one finding per site: the first family the siblings speak for
        return findings

    def plan_fix(self, ctx: FileContext, job: SiteJob, style: str) -> Rewrite:
        """Do what the evidence does, whatever ``--fix-style`` says: call the helper when the
        evidence calls it, else add the missing members (minimal style). A value comparison
        (``all2all_backend == "deepep_low_latency"``), which the helper style does not rewrite
        (it may run before the runtime value the helper reads is set), gets the members the
        helper accepts instead."""
        from driftcheck.fix.plan import HeldBack, Refusal

        from .dc001_missing_members import plan_in_style

        chosen = "helper" if job.finding.evidence == "helper" else "minimal"
        try:
            return plan_in_style(ctx, job, chosen)
        except HeldBack:
            raise
        except Refusal:
            values = all(op.kind in ("string", "enum") for op in job.site.operands)
            if chosen != "helper" or not values:
                raise
            return plan_in_style(ctx, job, "minimal")


@dataclass(frozen=True)
class Evidence:
    """Why a site should cover a family: the text the message quotes, whether the evidence
    calls the helper (then the fix does too), the places it rests on, and those of its sites
    that play the site's role by the evidence's own reading (for the fix's applicability)."""

    text: str
    calls_helper: bool
    places: tuple[Related, ...]
    # the evidence's sites that play the site's role (package siblings): fix applicability
    same_role: tuple[Site, ...] = ()


@dataclass(frozen=True)
class Sibling:
    """A site in another model file that plays the same role (same attribute, same method)."""

    path: str
    symbol: str
    line: int
    members: frozenset[str]
    helpers: tuple[str, ...]
    universe: str = ""

    def place(self) -> Related:
        """Where it is, for the finding's related places."""
        return Related(self.path, self.line, 0, f"sibling site in {self.symbol}")


GENERIC_ROLES = {"", "__init__", "forward", "__call__", "main", "run", "apply"}


def sibling_key(site: Site) -> str | None:
    """The role a site plays, comparable across model files (None when too generic)."""
    if site.kind != "property" or site.role.name in GENERIC_ROLES:
        return None
    return f"{site.context if site.context == 'return' else 'value'}:{site.role.name}"


def _where(sibling: Sibling) -> str:
    return f"{sibling.path.rsplit('/', 1)[-1]}:{sibling.line} ({sibling.symbol})"


WEAK_KEYS = {"call:assert", "raise"}  # validation guards nothing a family decides
USE_QUORUM = 2  # files whose sites call the helper or enumerate the family for the same use
# the smallest family whose use judges a single check (of two, one is as likely a choice)
SINGLE_USE_MEMBERS = 3
STRONG_QUORUM = 3  # with a key this many files share, keys fewer files share are not evidence


PACKAGE_QUORUM = 2  # sibling files of one directory using the whole family in the same role


def _describe_package(key: str, one: bool = False) -> str:
    """``name:activation_format`` -> ``compute activation_format``; ``call:x`` -> ``guard x``
    (``computes``, ``guards`` for ``one`` site)."""
    kind, _, name = key.partition(":")
    verb = "compute" if kind == "name" else "guard"
    return f"{verb}{'s' if one else ''} {name}"


def _site_where(site: Site) -> str:
    return f"{site.path.rsplit('/', 1)[-1]}:{site.span.line} ({site.symbol})"


def _describe(key: str) -> str:
    """``call:forward_deepep`` -> ``guards forward_deepep``; ``kw:tp_size`` -> ``feeds
    tp_size``; ``set:shared_experts`` -> ``sets shared_experts``."""
    kind, _, name = key.partition(":")
    return {"call": "guards", "kw": "feeds", "set": "sets"}.get(kind, kind) + " " + name


def _covers_a_smaller_family(site: Site, family: Family, universe: Universe) -> bool:
    """Whether ``site`` already covers a family ``family`` contains: the superset (the DeepEP
    family plus megamoe) takes it only when the site names the superset."""
    return not named_by(site, family) and any(
        other.member_set < family.member_set and not drift(site, other, universe)[1]
        for other in universe.families
    )


def builds_own_object(site: Site, present: tuple[str, ...]) -> bool:
    """Whether the site's branch constructs a class named for a member it tests
    (``if b.is_deepep(): self.dispatcher = DeepEPDispatcher(...)``): code written for that
    member alone, whatever else the branch sets up."""
    names = {"".join(c for c in m.lower() if c.isalnum()) for m in present}
    for key in site.role.keys:
        kind, _, callee = key.partition(":")
        if kind != "call" or not callee[:1].isupper():
            continue
        flat = callee.lower()
        if any(name and name in flat for name in names):
            return True
    return False


def _comment_evidence(site: Site, family: Family) -> str:
    """``; its comment names DeepEP`` when the site's comment names the family."""
    stem = (family.label or family.name).split("-")[0].split()[0]
    if len(stem) >= 3 and stem.lower() in site.role.comment.lower() and not family.inferred:
        return f"; its comment names {stem}"
    return ""


def _sibling_evidence(
    family: Family, universe: Universe, siblings: tuple[Sibling, ...], min_overlap: int
) -> Evidence | None:
    """Why the siblings say this site should cover the family, or None when they do not.

    A sibling that calls the helper, lists the whole family, or enumerates the family (names
    ``min_overlap`` or more of its members, so DC001/DC003 hold it to the whole family) is the
    evidence: once the siblings follow the helper, this site is the one copy that does not.
    Judging against what the siblings will be after their own fixes keeps ``--fix`` convergent.
    """
    for sibling in siblings:
        if family.name in sibling.helpers:
            text = f"its sibling {_where(sibling)} calls {family.call_text()}"
            return Evidence(text, True, (sibling.place(),))
    for sibling in siblings:
        if family.member_set <= sibling.members:
            text = f"its sibling {_where(sibling)} lists all {len(family.members)} {noun(family, universe)}"
            return Evidence(text, False, (sibling.place(),))
    enumerating = [s for s in siblings if len(s.members & family.member_set) >= min_overlap]
    if enumerating:
        best = max(enumerating, key=lambda s: (len(s.members & family.member_set), s.path))
        files = len({s.path for s in enumerating})
        others = (
            f" and {files - 1} more sibling file{'s' if files > 2 else ''}" if files > 1 else ""
        )
        text = (
            f"its sibling {_where(best)}{others} enumerate{'s' if files == 1 else ''} "
            f"{noun(family, universe)}"
        )
        places = (best.place(), *(s.place() for s in enumerating if s is not best))
        return Evidence(text, False, places)
    return None
