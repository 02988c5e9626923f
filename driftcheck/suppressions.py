"""Inline suppressions: ``# driftcheck: allow-missing[pplx] -- not validated on K3``.

Forms: ``allow-missing[m, ...]`` accepts exactly those missing members, ``allow-extra[m, ...]``
accepts those extras, ``ignore[DC001, ...]`` silences codes. A reason after ``--`` is
required. The syntax is driftcheck's own (not ``# noqa``) so ruff's RUF100/RUF102 never touch it.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

PATTERN = re.compile(
    r"#\s*driftcheck:\s*(?P<verb>allow-missing|allow-extra|ignore)"
    r"(?:\[(?P<items>[^\]]*)\])?\s*(?:--\s*(?P<reason>.*\S))?\s*$"
)
LOOSE = re.compile(r"#\s*driftcheck:")


@dataclass(frozen=True)
class Suppression:
    """One suppression comment and what it accepts."""

    line: int
    col: int
    verb: str
    items: tuple[str, ...]
    reason: str
    text: str
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        """Plain data for the cache."""
        return {
            "line": self.line, "col": self.col, "verb": self.verb, "items": list(self.items),
            "reason": self.reason, "text": self.text, "error": self.error,
        }  # fmt: skip

    @staticmethod
    def from_dict(data: dict) -> Suppression:
        """Inverse of :meth:`to_dict`."""
        return Suppression(**{**data, "items": tuple(data["items"])})


def parse_suppressions(source: str) -> list[Suppression]:
    """Every ``# driftcheck:`` comment in ``source`` (real comments only, not strings)."""
    if "driftcheck:" not in source:
        return []
    found: list[Suppression] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return found
    for token in tokens:
        if token.type != tokenize.COMMENT or not LOOSE.search(token.string):
            continue
        line, col = token.start
        match = PATTERN.search(token.string)
        if match is None:
            found.append(
                Suppression(
                    line,
                    col,
                    "invalid",
                    (),
                    "",
                    token.string,
                    "unrecognised driftcheck comment; expected 'allow-missing[...] -- reason', 'allow-extra[...] -- reason' or 'ignore[CODE] -- reason'",
                )
            )
            continue
        items = tuple(i.strip() for i in (match.group("items") or "").split(",") if i.strip())
        reason = match.group("reason") or ""
        error = None
        if not reason:
            error = "suppression needs a reason after '--'"
        elif match.group("verb") != "ignore" and not items:
            error = f"{match.group('verb')} needs the members it accepts in brackets"
        found.append(
            Suppression(line, col, match.group("verb"), items, reason, token.string, error)
        )
    return found
