"""Inline suppressions: ``# driftcheck: allow-missing[pplx] -- not validated on K3``.

Forms: ``allow-missing[m, ...]`` accepts exactly those missing members, ``allow-extra[m, ...]``
accepts those extras, ``ignore[DC001, ...]`` silences codes. A reason after ``--`` is
required. The syntax is driftcheck's own (not ``# noqa``) so ruff's RUF100/RUF102 never touch it.

The comments are read with the tokenizer, which needs no parse: a syntax error elsewhere in the
file leaves them readable (as ruff reads ``# noqa`` beside a syntax error). Where the tokenizer
itself stops (an unterminated string, an unclosed bracket at the end of the file, an unindent
that matches no outer level), the comments it read before the error are kept and it starts
again on the line after the error (on the error's own line for an unindent: that line is
well formed).
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
# how many times the tokenizer starts again past an error (each start reads to the next error;
# a file of unterminated strings would otherwise be read again for each of them)
RESTARTS = 64


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
    return [
        _suppression(line, col, text) for line, col, text in comments(source) if LOOSE.search(text)
    ]


def comments(source: str) -> list[tuple[int, int, str]]:
    """``(line, column, text)`` of every comment the tokenizer reads in ``source``, past a
    tokenizer error too (see the module docstring)."""
    lines = io.StringIO(source).readlines()
    found: list[tuple[int, int, str]] = []
    start = 0  # index of the first line the tokenizer reads this time
    for _ in range(RESTARTS + 1):
        if start >= len(lines):
            break
        readline = iter(lines[start:]).__next__
        try:
            for token in tokenize.generate_tokens(readline):
                if token.type == tokenize.COMMENT:
                    found.append((token.start[0] + start, token.start[1], token.string))
            break
        except (tokenize.TokenError, SyntaxError) as exc:
            line = _error_line(exc)
            resume = start + line - (1 if isinstance(exc, IndentationError) else 0)
            start = max(resume, start + 1)
    return found


def _error_line(exc: Exception) -> int:
    """The line (counted from the tokenizer's first line) a tokenizer error names."""
    if isinstance(exc, SyntaxError):
        return exc.lineno or 1
    where = exc.args[1] if len(exc.args) > 1 else None
    return where[0] if isinstance(where, tuple) and where else 1


def _suppression(line: int, col: int, text: str) -> Suppression:
    """The suppression one ``# driftcheck:`` comment states (with its error when malformed)."""
    match = PATTERN.search(text)
    if match is None:
        return Suppression(
            line,
            col,
            "invalid",
            (),
            "",
            text,
            "unrecognised driftcheck comment; expected 'allow-missing[...] -- reason', 'allow-extra[...] -- reason' or 'ignore[CODE] -- reason'",
        )
    items = tuple(i.strip() for i in (match.group("items") or "").split(",") if i.strip())
    reason = match.group("reason") or ""
    error = None
    if not reason:
        error = "suppression needs a reason after '--'"
    elif match.group("verb") != "ignore" and not items:
        error = f"{match.group('verb')} needs the members it accepts in brackets"
    return Suppression(line, col, match.group("verb"), items, reason, text, error)
