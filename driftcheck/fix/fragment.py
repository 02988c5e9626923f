"""Parse one expression's text on its own, and map its nodes back to offsets in the file.

Only the rewritten expression is ever parsed by the fixer's planning step, never the whole
file: the text is wrapped as ``(\\n...\\n)`` so that multi-line expressions, comments and
backslash continuations parse exactly as they do in place. This is the locating side (operands,
their members, what they name); :mod:`driftcheck.fix.cstfragment` parses the same text with
libcst for the rewrite.
"""

from __future__ import annotations

import ast

from .text import LineIndex

PREFIX = "(\n"
SUFFIX = "\n)"


class FragmentError(Exception):
    """The text is not one Python expression."""


class Fragment:
    """One expression's text, parsed, with node positions as offsets into the enclosing text."""

    def __init__(self, text: str, base: int = 0) -> None:
        self.text = text
        self.base = base
        wrapped = PREFIX + text + SUFFIX
        try:
            self.node: ast.expr = ast.parse(wrapped, mode="eval").body
        except (SyntaxError, ValueError, RecursionError) as exc:
            raise FragmentError(f"not an expression: {exc}") from exc
        self._index = LineIndex(wrapped)

    def start(self, node: ast.AST) -> int:
        """Offset (in the enclosing text) where ``node`` starts."""
        return self._index.offset(node.lineno, node.col_offset) - len(PREFIX) + self.base  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        """Offset (in the enclosing text) just after ``node``."""
        return self._index.offset(node.end_lineno, node.end_col_offset) - len(PREFIX) + self.base  # type: ignore[attr-defined]

    def segment(self, node: ast.AST) -> str:
        """The exact source text of ``node``."""
        return self.text[self.start(node) - self.base : self.end(node) - self.base]


def parse_expression(text: str) -> ast.expr:
    """Parse ``text`` as one expression (raises :class:`FragmentError`)."""
    return Fragment(text).node
