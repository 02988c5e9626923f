"""The operands of a boolean chain or a collection literal, the gaps between them, and where
new operands go so that the chain keeps its own layout.

A *gap* is the text between two operands: ``" or "``, ``"\\n        or "``, ``",\\n    "``,
possibly with comments. A new operand copies a *template*: a gap with its comments removed.
Comments stay with the operand whose line they are on: when the anchor's line ends in a
comment, the new operand goes after that comment, never between an operand and its comment.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .fragment import Fragment
from .text import NEWLINE

COLLECTION_CALLS = ("frozenset", "set", "tuple", "list")


class LayoutError(Exception):
    """The chain's layout gives no clean separator to copy."""


@dataclass(frozen=True)
class Item:
    """One operand (or collection element) and its range in the file text."""

    start: int
    end: int
    node: ast.expr


@dataclass(frozen=True)
class Edit:
    """Insert ``text`` at ``offset`` (a pure insertion in the file text)."""

    offset: int
    text: str


def strip_comment(line: str) -> str:
    """``line`` without its comment (gaps hold no strings, so ``#`` always starts one)."""
    index = line.find("#")
    return line if index < 0 else line[:index]


def has_comment(text: str) -> bool:
    """Whether a gap holds a comment."""
    return "#" in text


class Chain:
    """Operands joined by one separator: ``or``, ``and`` or ``,`` (a collection literal)."""

    def __init__(
        self, text: str, items: list[Item], separator: str, closing: int | None = None
    ) -> None:
        self.text = text
        self.items = items
        self.separator = separator
        self.closing = closing  # offset of a collection's closing bracket

    # -- construction ---------------------------------------------------------------------
    @staticmethod
    def of_boolop(text: str, fragment: Fragment, node: ast.BoolOp) -> Chain:
        """The flattened operands of ``a or b or (c or d)`` (same-operator nesting only)."""
        values: list[ast.expr] = []
        pending = list(reversed(node.values))
        while pending:
            value = pending.pop()
            if isinstance(value, ast.BoolOp) and type(value.op) is type(node.op):
                pending.extend(reversed(value.values))
            else:
                values.append(value)
        items = [Item(fragment.start(v), fragment.end(v), v) for v in values]
        separator = "or" if isinstance(node.op, ast.Or) else "and"
        return Chain(text, items, separator)

    @staticmethod
    def of_collection(text: str, fragment: Fragment, node: ast.expr) -> Chain | None:
        """The elements of ``("a", "b")``, ``["a"]``, ``{"a"}`` or ``frozenset({...})``."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in COLLECTION_CALLS
            and len(node.args) == 1
            and not node.keywords
        ):
            node = node.args[0]
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or not node.elts:
            return None
        items = [Item(fragment.start(e), fragment.end(e), e) for e in node.elts]
        closing = fragment.end(node) - 1
        if text[closing] not in ")]}":
            return None  # an unparenthesised tuple: no bracket to insert before
        return Chain(text, items, ",", closing)

    # -- layout ---------------------------------------------------------------------------
    def gap(self, index: int) -> str:
        """The text between item ``index`` and item ``index + 1``."""
        return self.text[self.items[index].end : self.items[index + 1].start]

    def trailing_comma(self) -> int | None:
        """Offset just after a collection's trailing comma, if it has one."""
        if self.closing is None:
            return None
        offset = self.items[-1].end
        for line in re.split(r"(?<=\n)|(?<=\r)(?!\n)", self.text[offset : self.closing]):
            code = strip_comment(line)
            if "," in code:
                return offset + code.index(",") + 1
            offset += len(line)
        return None

    def template(self, preferred: list[int]) -> str:
        """A clean separator to copy: the preferred gaps first, then any other gap."""
        order = [i for i in preferred if 0 <= i < len(self.items) - 1]
        order += [i for i in range(len(self.items) - 1) if i not in order]
        for index in order:
            clean = normalise_gap(self.gap(index), self.separator)
            if clean is not None:
                return clean
        if len(self.items) == 1:
            return f"{self.separator} " if self.separator == "," else f" {self.separator} "
        raise LayoutError(
            f"no separator between the operands is a plain '{self.separator}' to copy "
            "(parentheses or line continuations around every one)"
        )

    # -- insertion ------------------------------------------------------------------------
    def insert_after(self, index: int, texts: list[str]) -> list[Edit]:
        """Edits that put ``texts`` (in order) right after item ``index``."""
        if index < len(self.items) - 1:
            gap = self.gap(index)
            template = self.template([index, index - 1, index + 1])
            head = NEWLINE.split(gap)[0]
            if has_comment(head):
                # the anchor's line ends in a comment: keep it there, start on the next line
                return [Edit(self.items[index + 1].start, "".join(t + template for t in texts))]
            return [Edit(self.items[index].end, "".join(template + t for t in texts))]
        return self._append(texts)

    def insert_before(self, index: int, texts: list[str]) -> list[Edit]:
        """Edits that put ``texts`` (in order) right before item ``index``."""
        if index > 0:
            return self.insert_after(index - 1, texts)
        template = self.template([0])
        return [Edit(self.items[0].start, "".join(t + template for t in texts))]

    def _append(self, texts: list[str]) -> list[Edit]:
        last = self.items[-1]
        template = self.template([len(self.items) - 2])
        comma = self.trailing_comma()
        if comma is not None:
            after_comma = template.split(",", 1)[1]
            rest = self.text[comma : self.text_line_end(comma)]
            at = comma
            if NEWLINE.search(after_comma) and not strip_comment(rest).strip():
                at = self.text_line_end(comma)
            return [Edit(at, "".join(after_comma + t + "," for t in texts))]
        rest = self.text[last.end : self.text_line_end(last.end)]
        match = NEWLINE.search(template)
        if match and rest.strip().startswith("#"):
            head, tail = template[: match.start()], template[match.start() :]
            body = tail + texts[0] + "".join(template + t for t in texts[1:])
            edits = [Edit(self.text_line_end(last.end), body)]
            return [Edit(last.end, head), *edits] if head else edits
        return [Edit(last.end, "".join(template + t for t in texts))]

    def text_line_end(self, offset: int) -> int:
        """The offset of the end of the line holding ``offset``."""
        match = NEWLINE.search(self.text, offset)
        return match.start() if match else len(self.text)


def normalise_gap(gap: str, separator: str) -> str | None:
    """``gap`` without comments and comment-only lines, or None when it is not a plain
    separator (it holds a parenthesis, or lacks spaces around a keyword)."""
    parts = NEWLINE.split(gap)
    if len(parts) == 1:
        clean = gap
    else:
        newline = NEWLINE.search(gap).group()  # type: ignore[union-attr]
        head = strip_comment(parts[0]).rstrip(" \t")
        middle = [strip_comment(p).rstrip() for p in parts[1:-1]]
        clean = newline.join([head, *[m for m in middle if m.strip()], parts[-1]])
    keyword = r"\s" + separator + r"\s"
    pattern = r"[\s\\]*" + ("," if separator == "," else keyword) + r"[\s\\]*"
    if not re.fullmatch(pattern, clean):
        return None
    if re.search(r"\\(?!\r?\n|\r)", clean):
        return None
    return clean
