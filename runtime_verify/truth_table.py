"""Truth tables: a site's value for every backend, before and after its fix, beside the helper's.

Each backend member is evaluated by :mod:`driftcheck.interpret` from the linted tree's own
source (the site's code and the enum's ``is_*`` bodies); the linted code is never executed.
A condition the interpreter meets but cannot decide by the member alone, a *narrowing*
(``envs.SGLANG_MORI_EP_V2.get()`` inside ``is_mori_epv2``) or a *free input* (an unrelated
operand in the site's chain), is evaluated under both settings, so each member has one row per
setting of the conditions it met, and a member whose row does not depend on them has one row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from driftcheck.interpret import Interpreter, Scope, Unproven

from .site_code import SiteCode

# A hostile tree could chain many unreadable operands; 2**8 settings per member is plenty.
MAX_SETTINGS = 256

Setting = tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class Row:
    """The three values for one member under one setting of narrowings and free inputs."""

    member: str
    setting: Setting
    before: bool
    after: bool
    canonical: bool

    def label(self) -> str:
        """``""`` or the setting as text: ``envs.X.get()=True, self._flag=False``."""
        return ", ".join(f"{text}={value}" for text, value in self.setting)


@dataclass(frozen=True)
class TruthTable:
    """Rows for every member of the enum, in declaration order, settings in a stable order."""

    rows: tuple[Row, ...]
    members: tuple[str, ...]

    def rows_of(self, member: str) -> tuple[Row, ...]:
        """The rows of one member."""
        return tuple(row for row in self.rows if row.member == member)

    def flips(self) -> tuple[str, ...]:
        """Members whose value the fix changes under at least one setting."""
        return tuple(m for m in self.members if any(r.before != r.after for r in self.rows_of(m)))

    def conditions(self) -> tuple[str, ...]:
        """Every narrowing and free input some row depends on, in first-seen order."""
        seen: list[str] = []
        for row in self.rows:
            for text, _ in row.setting:
                if text not in seen:
                    seen.append(text)
        return tuple(seen)


def evaluate_member(
    member: str,
    evaluations: tuple[tuple[Scope, Callable[[Interpreter], bool | None]], ...],
) -> list[tuple[Setting, tuple[bool, ...]]]:
    """Every setting of the conditions ``member`` meets and the values under it.

    All evaluations of one setting share its narrowing values, so a condition that appears in
    the site and in the helper takes the same value in both.
    """
    results: list[tuple[Setting, tuple[bool, ...]]] = []
    pending: list[dict[str, bool]] = [{}]
    while pending:
        if len(results) + len(pending) > MAX_SETTINGS:
            raise Unproven(f"more than {MAX_SETTINGS} settings of narrowings and free inputs")
        setting = pending.pop()
        values: list[bool] = []
        undecided: str | None = None
        for scope, evaluate in evaluations:
            interpreter = Interpreter(scope, member, setting)
            value = evaluate(interpreter)
            if value is None:
                free = [text for text in interpreter.seen_narrowings if text not in setting]
                if not free:  # pragma: no cover - None means an unset condition was met
                    raise Unproven("undecidable predicate")
                undecided = free[0]
                break
            values.append(value)
        if undecided is not None:
            pending.append({**setting, undecided: True})
            pending.append({**setting, undecided: False})
            continue
        results.append((tuple(sorted(setting.items())), tuple(values)))
    return sorted(results)


def build_table(
    before: SiteCode, after: SiteCode, canonical_scope: Scope, helper: str, members: tuple[str, ...]
) -> TruthTable:
    """The table of ``before``, ``after`` and the canonical ``helper`` over ``members``.

    Raises :class:`Unproven` naming the first construct outside the interpreter's grammar.
    """
    evaluations = (
        (before.scope, before.evaluate),
        (after.scope, after.evaluate),
        (canonical_scope, lambda interpreter: interpreter.call_function(helper)),
    )
    rows: list[Row] = []
    try:
        for member in members:
            for setting, (was, now, canonical) in evaluate_member(member, evaluations):
                rows.append(Row(member, setting, was, now, canonical))
    except RecursionError as exc:
        raise Unproven("expression nested too deeply to interpret") from exc
    return TruthTable(tuple(rows), members)
