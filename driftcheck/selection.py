"""Which rules a run reports: ``--select``/``--ignore``/``--extend-select`` and their config
counterparts, by code or prefix (ruff's habit), validated so that a typo is an error.

``DC00`` selects DC001..DC009, ``ALL`` every rule (upper case, as ruff has them: ``dc001``
is an error naming ``DC001``); without a selection each rule's ``default_enabled`` decides. An unknown code or prefix, or an empty selection, raises
:class:`SelectionError` naming the bad value and the valid ones (exit code 2): a typo in
``--select`` must never turn CI green.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class SelectionError(Exception):
    """A rule selection that names no rule. ``source`` is where it was given: an option
    (``--select``) or a configuration key (``/repo/pyproject.toml:3 select``)."""

    def __init__(self, source: str, message: str) -> None:
        where, _, key = source.partition(" ")
        super().__init__(message)
        self.where = where
        self.message = f"[tool.driftcheck] {key}: {message}" if key else message

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def _known(codes: Iterable[str]) -> str:
    return f"known codes: {', '.join(sorted(codes))}; prefixes such as DC0 and DC00, and ALL"


def parse_codes(source: str, value: str) -> list[str]:
    """``"DC001, DC0"`` -> ``["DC001", "DC0"]``; an empty value is an error."""
    codes = [part.strip() for part in value.split(",") if part.strip()]
    if not codes:
        raise SelectionError(
            source, "empty rule selection; give codes or prefixes (DC001, DC0, ALL)"
        )
    return codes


def matching(source: str, prefixes: Iterable[str], catalogue: Iterable[str]) -> set[str]:
    """The codes of ``catalogue`` that ``prefixes`` select; each prefix must select one."""
    codes = sorted(catalogue)
    chosen: set[str] = set()
    for raw in prefixes:
        prefix = raw.strip()
        if not prefix:
            raise SelectionError(
                source, "empty rule code in the selection; give codes or prefixes (DC001, DC0, ALL)"
            )
        hits = set(codes) if prefix == "ALL" else {c for c in codes if c.startswith(prefix)}
        if not hits:
            upper = prefix.upper()
            cased = upper != prefix and (upper == "ALL" or any(c.startswith(upper) for c in codes))
            hint = f"; did you mean '{upper}'?" if cased else ""
            raise SelectionError(
                source, f"unknown rule code or prefix '{prefix}'{hint} ({_known(codes)})"
            )
        chosen |= hits
    return chosen


def selected_codes(
    catalogue: Mapping[str, bool],
    *,
    select: tuple[str, Iterable[str]] | None,
    ignore: Iterable[tuple[str, Iterable[str]]] = (),
    extend: Iterable[tuple[str, Iterable[str]]] = (),
) -> set[str]:
    """The codes a run reports. ``catalogue`` maps each code to whether it is on by default;
    each selection is ``(source, codes)`` so that errors can name where the bad code was."""
    if select is None:
        chosen = {code for code, default in catalogue.items() if default}
    else:
        source, codes = select
        codes = list(codes)
        if not codes:
            raise SelectionError(
                source, "empty rule selection; give codes or prefixes (DC001, DC0, ALL)"
            )
        chosen = matching(source, codes, catalogue)
    for source, codes in extend:
        chosen |= matching(source, codes, catalogue)
    for source, codes in ignore:
        chosen -= matching(source, codes, catalogue)
    return chosen
