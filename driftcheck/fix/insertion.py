"""New operands placed in a chain so that it keeps its own layout: the minimal style's libcst
transformation.

A new operand goes right after its anchor: the anchor's node is kept and the new one joins it
through a copy of a neighbouring separator (:meth:`Chain.template`: an ``or``/``and`` operator
or a comma with its ``whitespace_before``/``whitespace_after``), so a chain written one operand
per line stays so, with its own indentation and line endings. Comments stay with the operand
whose line they are on, never between an operand and its comment: when the anchor's line ends
in a comment, the new operand starts the next line (it goes in front of the next operand);
when a comment follows the chain's last operand, the comment is moved onto the copied
separator, just before its line break, and the new operand follows on the next line. In a
collection with a trailing comma the new elements follow that comma (and the comment ending
its line), each with a comma of its own. Parentheses around the anchor stay around the anchor
and what is added beside it.

Booleans are rebuilt as nested ``BooleanOperation`` nodes in place of the anchor (rendered
without parentheses, they read as one flat chain); collections get new ``Element`` nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from .chain import Chain, has_newline
from .cstfragment import replace_nodes

if TYPE_CHECKING:
    import libcst as cst

    from .chain import Separator


class ChainEdit:
    """New operands to place in one chain; :meth:`result` is the rewritten fragment root."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self.before: dict[int, list[tuple[cst.BaseExpression, Separator]]] = {}
        self.after: dict[int, list[tuple[Separator, cst.BaseExpression]]] = {}
        self.final: dict[int, cst.Comma] = {}  # the comma ending the last element added
        self.bracket_space: cst.BaseParenthesizableWhitespace | None = None
        self.tail_used = False  # the comment after the last operand moved

    # -- placing ---------------------------------------------------------------------------
    def insert_after(self, index: int, nodes: list[cst.BaseExpression]) -> None:
        """Put ``nodes`` (in order) right after item ``index``."""
        chain = self.chain
        if index < len(chain.items) - 1:
            template = chain.template([index, index - 1, index + 1])
            if chain.gaps[index].head_comment:
                # the anchor's line ends in a comment: keep it there, start on the next line
                self.before.setdefault(index + 1, []).extend((n, template) for n in nodes)
            else:
                self.after.setdefault(index, []).extend((template, n) for n in nodes)
            return
        self._append(nodes)

    def insert_before(self, index: int, nodes: list[cst.BaseExpression]) -> None:
        """Put ``nodes`` (in order) right before item ``index``."""
        if index > 0:
            self.insert_after(index - 1, nodes)
            return
        template = self.chain.template([0])
        self.before.setdefault(0, []).extend((n, template) for n in nodes)

    def _append(self, nodes: list[cst.BaseExpression]) -> None:
        chain = self.chain
        last = len(chain.items) - 1
        template = chain.template([last - 1])
        if chain.trailing_comma is not None:
            self._append_after_comma(nodes, template)  # type: ignore[arg-type]
            return
        line = chain.tail_line()
        if line is not None and chain.bracket is not None and has_newline(chain.fragment, template):
            first = _with_line(template, line)
            if first is not None:
                self.after[last] = [(first, nodes[0]), *((template, n) for n in nodes[1:])]
                # a chain whose separators break lines: the bracket's space holds a line
                space = cast("cst.ParenthesizedWhitespace", chain.bracket.whitespace_before)
                self.bracket_space = _without_line(space)
                self.tail_used = chain.bracket is chain.fragment.root.rpar[-1]
                return
        self.after[last] = [(template, n) for n in nodes]

    def _append_after_comma(self, nodes: list[cst.BaseExpression], template: cst.Comma) -> None:
        """After a trailing comma: on the next line (after the comment ending the comma's
        line) when the separators break lines, else right after the comma."""
        import libcst as cst

        chain = self.chain
        comma = chain.trailing_comma
        assert comma is not None and chain.bracket is not None
        spacing = template.whitespace_after
        line_space, prefix = None, ""
        if isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
            line_space = comma.whitespace_after
        elif (
            isinstance(chain.bracket.whitespace_before, cst.ParenthesizedWhitespace)
            and isinstance(comma.whitespace_after, cst.SimpleWhitespace)
            and not has_newline(chain.fragment, comma.whitespace_after)
        ):  # the comma's line ends in the bracket's whitespace (libcst's usual split)
            line_space, prefix = chain.bracket.whitespace_before, comma.whitespace_after.value
        plain = cst.SimpleWhitespace("")
        if line_space is not None and isinstance(spacing, cst.ParenthesizedWhitespace):
            own = spacing.first_line
            joined = _joined_line(prefix, line_space.first_line, own.whitespace.value, own.newline)
            first = cst.Comma(
                whitespace_before=comma.whitespace_before,
                whitespace_after=spacing.with_changes(first_line=joined),
            )
            rest = _without_line(line_space)
            if line_space is comma.whitespace_after:
                final = cst.Comma(whitespace_before=plain, whitespace_after=rest)
            else:
                final = cst.Comma(whitespace_before=plain, whitespace_after=plain)
                self.bracket_space = rest
        else:
            first = cst.Comma(whitespace_before=comma.whitespace_before, whitespace_after=spacing)
            final = cst.Comma(whitespace_before=plain, whitespace_after=comma.whitespace_after)
        others = cst.Comma(whitespace_before=plain, whitespace_after=spacing)
        last = len(chain.items) - 1
        self.after[last] = [(first, nodes[0]), *((others, n) for n in nodes[1:])]
        self.final[last] = final

    # -- the rewritten tree ----------------------------------------------------------------
    def result(self) -> cst.BaseExpression:
        """The fragment's root with the new operands in place."""
        chain = self.chain
        mapping: dict[int, cst.CSTNode] = {}
        if chain.keyword == ",":
            top = chain.top.with_changes(elements=self._elements())
            if self.bracket_space is not None:
                top = chain.with_closing_space(top, self.bracket_space)
            mapping[id(chain.top)] = top
        else:
            for index, item in enumerate(chain.items):
                if index in self.before or index in self.after:
                    mapping[id(item)] = self._joined(item, index)  # type: ignore[arg-type]
            if self.bracket_space is not None and chain.bracket is not None:
                bracket = chain.bracket.with_changes(whitespace_before=self.bracket_space)
                mapping[id(chain.bracket)] = bracket
        return replace_nodes(chain.fragment.root, mapping)

    def _joined(self, item: cst.BaseExpression, index: int) -> cst.BaseExpression:
        """Item ``index`` joined with what goes before and after it, inside its parentheses."""
        import libcst as cst

        before, after = self.before.get(index, []), self.after.get(index, [])
        nodes = [n for n, _ in before] + [item.with_changes(lpar=[], rpar=[])]
        nodes += [n for _, n in after]
        separators = [s for _, s in before] + [s for s, _ in after]
        joined = nodes[0]
        for separator, node in zip(separators, nodes[1:], strict=True):
            joined = cst.BooleanOperation(left=joined, operator=separator, right=node)  # type: ignore[arg-type]
        return joined.with_changes(lpar=item.lpar, rpar=item.rpar)

    def _elements(self) -> list[cst.BaseElement]:
        """The collection's elements with the new ones among them."""
        import libcst as cst

        elements: list[cst.BaseElement] = []
        for index, element in enumerate(self.chain.top.elements):  # type: ignore[attr-defined]
            elements.extend(
                cst.Element(value=n, comma=cast(cst.Comma, s))
                for n, s in self.before.get(index, [])
            )
            added = self.after.get(index, [])
            if not added:
                elements.append(element)
                continue
            elements.append(element.with_changes(comma=added[0][0]))
            for position, (_, node) in enumerate(added):
                if position + 1 < len(added):
                    comma = added[position + 1][0]
                else:
                    comma = self.final.get(index, element.comma)
                elements.append(cst.Element(value=node, comma=cast(cst.Comma, comma)))
        return elements


def _with_line(separator: Separator, line: cst.TrailingWhitespace) -> Separator | None:
    """``separator`` with ``line``'s whitespace and comment just before its first line break;
    None when that break is a backslash continuation (a comment cannot go before one)."""
    import libcst as cst

    for name in ("whitespace_before", "whitespace_after"):
        space = getattr(separator, name)
        if isinstance(space, cst.SimpleWhitespace):
            if "\n" in space.value or "\r" in space.value:
                return None
            continue
        own = space.first_line
        joined = _joined_line(own.whitespace.value, line, "", own.newline)
        return separator.with_changes(**{name: space.with_changes(first_line=joined)})
    return None


def _joined_line(
    prefix: str, line: cst.TrailingWhitespace, suffix: str, newline: cst.Newline
) -> cst.TrailingWhitespace:
    """One line's end: ``prefix``, ``line``'s whitespace and comment, ``suffix`` (inside the
    comment when there is one), then ``newline``."""
    import libcst as cst

    if line.comment is None:
        space = cst.SimpleWhitespace(prefix + line.whitespace.value + suffix)
        return cst.TrailingWhitespace(whitespace=space, comment=None, newline=newline)
    return cst.TrailingWhitespace(
        whitespace=cst.SimpleWhitespace(prefix + line.whitespace.value),
        comment=cst.Comment(line.comment.value + suffix),
        newline=newline,
    )


def _without_line(space: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """``space`` with the whitespace and comment of its first line moved out."""
    import libcst as cst

    line = cst.TrailingWhitespace(
        whitespace=cst.SimpleWhitespace(""), comment=None, newline=space.first_line.newline
    )
    return space.with_changes(first_line=line)
