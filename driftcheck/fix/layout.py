"""A rewrite laid out as the linted project's formatter lays out code (ruff format, black).

A fix that lengthens a one-line enumeration past the project's line length is wrapped the way
ruff format and black wrap it, so that a file the formatter accepted before the fix still
passes ``ruff format --check`` after it:

- a boolean chain that is a whole ``if``/``elif``/``while`` test, a returned or an assigned
  value is parenthesised, one operand per line, each operator starting its line::

      if (
          backend.is_deepep()
          or backend.is_mooncake()
      ):

- a chain that is the body of the line's last bracket pair (its own parentheses, those of a
  ``not (...)``, or the brackets it sits in) moves into that bracket the same way;
- a chain alone on its line (inside an enclosing bracket) is split in place;
- a collection literal that is the line's last bracket pair (``x in (...)``, a constant's
  literal) gets one element per line and a trailing comma; one that is the only argument of
  the call ending the line (``frozenset({...})``) goes on a line of its own inside the call's
  parentheses when it fits there.

Any other shape is left on one line. The line length and indent width are read from the
formatter configuration that governs the file (:func:`formatter_settings`), 88 and 4 by
default, as ruff and black assume.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_LINE_LENGTH = 88
DEFAULT_INDENT_WIDTH = 4
HEADS = re.compile(r"^\s*(if|elif|while|return)\s+$")
ASSIGNMENT = re.compile(r"^\s*[\w.]+(\[[^\]=]*\])?\s*(:[^=]+)?\s*([-+*/%|&^@]|//|<<|>>|\*\*)?=\s*$")
CLOSERS = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Settings:
    """The formatter's line length and indent width for one file."""

    line_length: int = DEFAULT_LINE_LENGTH
    indent_width: int = DEFAULT_INDENT_WIDTH


def formatter_settings(path: Path) -> Settings:
    """The settings of the formatter configuration nearest above ``path``: ``.ruff.toml``,
    ``ruff.toml`` or a ``pyproject.toml`` with ``[tool.ruff]`` (ruff's choice of file), else a
    ``pyproject.toml`` with ``[tool.black]``; the defaults when none is found."""
    directory = path.resolve().parent
    black: Settings | None = None
    for folder in (directory, *directory.parents):
        for name in (".ruff.toml", "ruff.toml"):
            table = _toml(folder / name)
            if table is not None:
                return _from_table(table)
        project = _toml(folder / "pyproject.toml")
        tool = project.get("tool", {}) if project is not None else {}
        if isinstance(tool.get("ruff"), dict):
            return _from_table(tool["ruff"])
        if black is None and isinstance(tool.get("black"), dict):
            black = _from_table(tool["black"])
    return black or Settings()


def _toml(path: Path) -> dict | None:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _from_table(table: dict) -> Settings:
    length = table.get("line-length", table.get("line_length"))
    indent = table.get("indent-width")
    return Settings(
        length if isinstance(length, int) and length > 0 else DEFAULT_LINE_LENGTH,
        indent if isinstance(indent, int) and indent > 0 else DEFAULT_INDENT_WIDTH,
    )


# -- laying one replacement out ------------------------------------------------------------
def lay_out(text: str, start: int, end: int, replacement: str, settings: Settings) -> str:
    """``replacement`` for ``text[start:end]``, wrapped when its line would be too long."""
    if "\n" in replacement or "\r" in replacement or "#" in replacement:
        return replacement
    line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    line_end = len(text)
    for ending in ("\n", "\r"):
        found = text.find(ending, end)
        if found != -1:
            line_end = min(line_end, found)
    prefix, suffix = text[line_start:start], text[end:line_end]
    if len(prefix) + len(replacement) + len(suffix) <= settings.line_length:
        return replacement
    if "\n" in text[start:end] or "\r" in text[start:end]:
        return replacement
    try:
        node = ast.parse(replacement, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return replacement
    indent = prefix[: len(prefix) - len(prefix.lstrip(" \t"))]
    shape = _Shape(replacement, node, prefix, _code(suffix), indent, settings)
    wrapped = shape.wrapped()
    if wrapped is None:
        return replacement
    newline = "\r\n" if text[line_end : line_end + 2] == "\r\n" else text[line_end : line_end + 1]
    return wrapped.replace("\n", newline) if newline in ("\r\n", "\r") else wrapped


def _code(suffix: str) -> str:
    """The code of the rest of a line, without its comment."""
    return suffix.split("#", 1)[0].strip()


@dataclass(frozen=True)
class _Shape:
    replacement: str
    node: ast.expr
    prefix: str
    after: str  # the code after the replacement on its line
    indent: str
    settings: Settings

    @property
    def inner(self) -> str:
        return self.indent + " " * self.settings.indent_width

    def wrapped(self) -> str | None:
        """The wrapped replacement, or None when the shape is not one laid out here."""
        node, head = self.node, self.prefix.strip()
        last = self.after in ("", ":", ",")
        if isinstance(node, ast.BoolOp):
            if not head:  # alone on its line, inside an enclosing bracket
                return self._chain(node, self.indent)
            parenthesised = self.replacement.startswith("(") and self.replacement.endswith(")")
            if parenthesised and last and _parenthesised_whole(self.replacement):
                return f"(\n{self.inner}{self._chain(node, self.inner)}\n{self.indent})"
            opener = head[-1:]
            if opener in CLOSERS and self.after[:1] == CLOSERS[opener]:
                if self.after[1:].strip() in ("", ":", ","):
                    return f"\n{self.inner}{self._chain(node, self.inner)}\n{self.indent}"
                return None
            if last and (HEADS.match(self.prefix) or ASSIGNMENT.match(self.prefix)):
                return f"(\n{self.inner}{self._chain(node, self.inner)}\n{self.indent})"
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and last:
            return self._negated(node)
        if last:
            return self._collection()
        return None

    def _negated(self, node: ast.UnaryOp) -> str | None:
        """``not (a or b)`` ending the line: the chain inside the parentheses."""
        chain = node.operand
        body = self.replacement[3:].lstrip()
        if not (
            isinstance(chain, ast.BoolOp)
            and self.replacement.startswith("not")
            and body.startswith("(")
            and _parenthesised_whole(body)
        ):
            return None
        return f"not (\n{self.inner}{self._chain(chain, self.inner)}\n{self.indent})"

    def _chain(self, node: ast.BoolOp, indent: str) -> str:
        """The chain's operands one per line, each but the first led by its operator."""
        keyword = "or" if isinstance(node.op, ast.Or) else "and"
        operands = [self._segment(v) for v in node.values]
        if any(o is None for o in operands):
            return self.replacement
        return f"\n{indent}{keyword} ".join(o for o in operands if o is not None)

    def _collection(self) -> str | None:
        """A collection literal ending the replacement, one element per line."""
        node = self.node
        literal: ast.expr | None = node
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            literal = node.comparators[0]
        if isinstance(literal, ast.Call) and len(literal.args) == 1 and not literal.keywords:
            return self._call_body(literal)
        if not isinstance(literal, (ast.Tuple, ast.List, ast.Set)) or len(literal.elts) < 2:
            return None
        closing = self.replacement.rstrip()
        elements = [self._segment(e) for e in literal.elts]
        if not closing or closing[-1] not in ")]}" or any(e is None for e in elements):
            return None
        opener = {")": "(", "]": "[", "}": "{"}[closing[-1]]
        first = self._offset(literal.elts[0])
        if first is None:
            return None
        head = self.replacement[:first].rstrip()
        if not head.endswith(opener):
            return None
        body = "".join(f"\n{self.inner}{e}," for e in elements)
        return f"{head}{body}\n{self.indent}{closing[-1]}"

    def _call_body(self, call: ast.Call) -> str | None:
        """``frozenset({...})`` ending the replacement: its argument on a line of its own
        inside the call's parentheses, when it fits there."""
        argument = self._segment(call.args[0])
        start = self._offset(call.args[0])
        if argument is None or start is None or not self.replacement.endswith(")"):
            return None
        head = self.replacement[:start].rstrip()
        if not head.endswith("(") or self.replacement[start + len(argument) :] != ")":
            return None
        if len(self.inner) + len(argument) > self.settings.line_length:
            return None
        return f"{head}\n{self.inner}{argument}\n{self.indent})"

    @cached_property
    def _encoded(self) -> bytes:
        # the replacement is one line (lay_out returns earlier otherwise), so a node's source is
        # its byte columns: ast.get_source_segment would split the whole text once per operand
        return self.replacement.encode("utf-8")

    def _segment(self, node: ast.expr) -> str | None:
        if node.end_col_offset is None or node.lineno != 1 or node.end_lineno != 1:
            return None
        return self._encoded[node.col_offset : node.end_col_offset].decode("utf-8")

    def _offset(self, node: ast.expr) -> int | None:
        if self._segment(node) is None:
            return None
        return len(self._encoded[: node.col_offset].decode("utf-8", "ignore"))


def _parenthesised_whole(text: str) -> bool:
    """Whether ``text``'s first parenthesis closes at its very end (``(a) or (b)`` does not)."""
    depth = 0
    for position, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return position == len(text) - 1
    return False
