"""``--create-helper``: write the helper an inferred family lacks, so the copies can call it.

On a tree without a canonical helper (a fork), families are inferred from the hand-written
copies (:mod:`driftcheck.infer`). With ``--fix --fix-style helper --create-helper`` each
inferred family that has findings gets a function appended to the enum's module::

    def is_deepep_family_backend() -> bool:
        \"\"\"Whether the backend is one of deepep, mooncake, mori. ...\"\"\"
        backend = get_moe_a2a_backend()
        return backend.is_deepep() or backend.is_mooncake() or backend.is_mori()

and the family becomes that function's, so the helper-style fixes call it (importing it
where needed) and the truth tables evaluate it like any canonical helper.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from driftcheck.engine import CheckResult
from driftcheck.model import Family, Finding, Universe

from .text import read_source


@dataclass
class CreatedHelpers:
    """What ``--create-helper`` adds: text appended per file, and a note per helper."""

    additions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)


def helper_source(family: Family, universe: Universe) -> str:
    """The helper's definition (raises ``ValueError`` naming what is missing to write it)."""
    if not universe.getters:
        raise ValueError(f"no zero-argument getter returns {universe.enum_name or universe.name}")
    getter = sorted(universe.getters)[0]
    calls = []
    for member in family.members:
        method = universe.predicate_for(member)
        if method is None:
            raise ValueError(f"no method of {universe.enum_name} tests {member} alone")
        calls.append(f"backend.{method}()")
    listed = ", ".join(family.members)
    return (
        f"\n\ndef {family.name}() -> bool:\n"
        f'    """Whether the {universe.noun[:-1] if universe.noun.endswith("s") else universe.noun} '
        f"is one of {listed}.\n\n"
        f"    Written by driftcheck --create-helper: {family.provenance()};\n"
        "    call it instead of listing them by hand.\n"
        '    """\n'
        f"    backend = {getter}()\n"
        f"    return {' or '.join(calls)}\n"
    )


def create_helpers(result: CheckResult, findings: list[Finding]) -> CreatedHelpers:
    """Plan a helper for every inferred family some finding drifts from, and make each such
    family the helper's (in ``result``'s universes and interpreter scopes)."""
    created = CreatedHelpers()
    if result.every is None:
        return created
    wanted = {f.canonical for f in findings}
    for loaded in result.every.universes:
        universe = loaded.universe
        families = list(universe.families)
        for index, family in enumerate(families):
            if not family.inferred or family.name not in wanted:
                continue
            try:
                text = read_source(result.root / universe.enum_path).text
                text += created.additions.get(universe.enum_path, "")
                source = helper_source(family, universe)
            except (OSError, ValueError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
                created.refusals.append(f"{universe.enum_path}: not created {family.name}(): {exc}")
                continue
            tree = ast.parse(text)
            if any(
                isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == family.name
                for n in tree.body
            ):
                created.refusals.append(
                    f"{universe.enum_path}: not created {family.name}(): the module already "
                    "defines that name"
                )
                continue
            line = text.count("\n") + source.count("\n", 0, source.index("def ")) + 1
            function = ast.parse(source).body[0]
            assert isinstance(function, ast.FunctionDef)
            loaded.scope.functions = {**loaded.scope.functions, family.name: function}
            families[index] = replace(family, access="function", line=line)
            created.additions[universe.enum_path] = (
                created.additions.get(universe.enum_path, "") + source
            )
            created.notes.append(
                f"{universe.enum_path}:{line}: created {family.name}() for "
                f"{family.label} ({family.provenance()}); make it the "
                f'canonical: [tool.driftcheck] canonical = ["{universe.enum_module}:{family.name}"]'
            )
        loaded.universe = replace(universe, families=tuple(families))
    if result.loaded is not None:
        result.universe = result.loaded.universe
    return created
