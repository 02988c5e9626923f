"""A boolean chain or a collection literal in the libcst tree of one expression: its operands
in order, the gaps between them, and the separator a new operand copies.

A *gap* is what lies between two neighbouring operands: the separator (an ``or``/``and``
operator or a comma, carrying the whitespace, line breaks and comments libcst keeps on its
``whitespace_before``/``whitespace_after``) and any parenthesis that closes after the left
operand or opens before the right one. A new operand copies a *template*: the separator of a
gap without parentheses, with its comments and comment-only lines removed (the whitespace
before a removed comment goes with it; every line ending becomes the gap's first one), that
still reads as a plain separator (a keyword needs whitespace on both sides).

The operands come in the order ``ast`` gives them (:mod:`driftcheck.fix.operands`), so the
two are matched by position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .cstfragment import CstFragment
from .operands import COLLECTION_CALLS
from .text import NEWLINE

if TYPE_CHECKING:
    import libcst as cst

    Separator = cst.BaseBooleanOp | cst.Comma
    Closing = cst.RightParen | cst.RightSquareBracket | cst.RightCurlyBrace


class LayoutError(Exception):
    """The chain's layout gives no clean separator to copy."""


@dataclass(frozen=True)
class Gap:
    """The separator between two operands, whether a parenthesis sits there too, and the text."""

    separator: Separator
    parens: bool
    text: str

    @property
    def head_comment(self) -> bool:
        """Whether the gap's first line (the left operand's line) ends in a comment."""
        return "#" in NEWLINE.split(self.text)[0]


@dataclass(frozen=True)
class Chain:
    """Operands joined by one separator: ``or``, ``and`` or ``,`` (a collection literal).

    ``top`` is the outermost ``BooleanOperation``, or the ``Tuple``/``List``/``Set``;
    ``bracket`` is the bracket that ends the chain (the collection's own, or the wrapper's
    parenthesis when the chain is the whole fragment): its ``whitespace_before`` holds what
    follows the last operand (or the trailing comma) up to it.
    """

    fragment: CstFragment
    keyword: str
    top: cst.BaseExpression
    items: list[cst.CSTNode]
    gaps: list[Gap]
    bracket: Closing | None
    parens_after_last: bool
    trailing_comma: cst.Comma | None = None

    # -- templates -------------------------------------------------------------------------
    def clean_separator(self, index: int) -> Separator | None:
        """Gap ``index``'s separator without comments, or None when it is not a plain one."""
        gap = self.gaps[index]
        if gap.parens:
            return None
        separator = strip_comments(gap.separator, self.fragment)
        if self.keyword != "," and not (
            self.fragment.render(separator.whitespace_before)
            and self.fragment.render(separator.whitespace_after)
        ):
            return None
        return separator

    def plain(self, index: int) -> bool:
        """Whether gap ``index`` is a plain separator already (no comment, no parenthesis)."""
        clean = self.clean_separator(index)
        return clean is not None and self.fragment.render(clean) == self.gaps[index].text

    def template(self, preferred: list[int]) -> Separator:
        """A clean separator to copy: the preferred gaps' first, then any other gap's."""
        import libcst as cst

        order = [i for i in preferred if 0 <= i < len(self.gaps)]
        order += [i for i in range(len(self.gaps)) if i not in order]
        for index in order:
            clean = self.clean_separator(index)
            if clean is not None:
                return clean
        if len(self.items) == 1:
            if self.keyword == ",":
                return cst.Comma(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(" "),
                )
            return cst.Or() if self.keyword == "or" else cst.And()
        raise LayoutError(
            f"no separator between the operands is a plain '{self.keyword}' to copy "
            "(parentheses or line continuations around every one)"
        )

    def tail_line(self) -> cst.TrailingWhitespace | None:
        """The rest of the last operand's line when it is a comment (``  # last one``)."""
        import libcst as cst

        if self.bracket is None or self.parens_after_last or self.trailing_comma is not None:
            return None
        space = self.bracket.whitespace_before
        if isinstance(space, cst.ParenthesizedWhitespace) and space.first_line.comment:
            return space.first_line
        return None

    def with_closing_space(
        self, top: cst.BaseExpression, space: cst.BaseParenthesizableWhitespace
    ) -> cst.BaseExpression:
        """``top`` (this chain's collection, rebuilt) with new whitespace before its bracket."""
        import libcst as cst

        if isinstance(top, cst.List):
            return top.with_changes(rbracket=top.rbracket.with_changes(whitespace_before=space))
        if isinstance(top, cst.Set):
            return top.with_changes(rbrace=top.rbrace.with_changes(whitespace_before=space))
        closing = top.rpar[0].with_changes(whitespace_before=space)
        return top.with_changes(rpar=[closing, *top.rpar[1:]])


# -- construction ---------------------------------------------------------------------------
def site_chain(fragment: CstFragment, membership: bool) -> Chain | None:
    """The chain of a site: the collection of ``x in (...)``, else the boolean chain (under a
    ``not``). None when the tree does not have that shape."""
    import libcst as cst

    root = fragment.root
    if membership:
        if not isinstance(root, cst.Comparison) or len(root.comparisons) != 1:
            return None
        return collection_chain(fragment, root.comparisons[0].comparator)
    node = root.expression if isinstance(root, cst.UnaryOperation) else root
    return boolean_chain(fragment, node)


def boolean_chain(fragment: CstFragment, top: cst.BaseExpression) -> Chain | None:
    """The flattened operands of ``a or b or (c or d)`` (same-operator nesting only)."""
    import libcst as cst

    if not isinstance(top, cst.BooleanOperation):
        return None
    kind = type(top.operator)
    tokens: list[tuple[str, cst.CSTNode]] = []

    def walk(node: cst.BaseExpression, outermost: bool) -> None:
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, kind):
            if not outermost:
                tokens.extend(("paren", p) for p in node.lpar)
            walk(node.left, False)
            tokens.append(("separator", node.operator))
            walk(node.right, False)
            if not outermost:
                tokens.extend(("paren", p) for p in node.rpar)
            return
        tokens.extend(("paren", p) for p in node.lpar)
        tokens.append(("item", node))
        tokens.extend(("paren", p) for p in node.rpar)

    walk(top, True)
    items, gaps, after_last = _split(fragment, tokens)
    wrapper = top.rpar[-1] if top is fragment.root and len(top.rpar) == 1 else None
    keyword = "or" if isinstance(top.operator, cst.Or) else "and"
    return Chain(fragment, keyword, top, items, gaps, wrapper, after_last)


def collection_chain(fragment: CstFragment, node: cst.BaseExpression) -> Chain | None:
    """The elements of ``("a", "b")``, ``["a"]``, ``{"a"}`` or ``frozenset({...})``."""
    import libcst as cst

    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in COLLECTION_CALLS
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
    ):
        node = node.args[0].value
    if not isinstance(node, (cst.Tuple, cst.List, cst.Set)) or not node.elements:
        return None
    if isinstance(node, cst.Tuple):
        own = node.lpar[1:] if node is fragment.root else node.lpar
        if not own:
            return None  # an unparenthesised tuple: no bracket to insert before
        bracket: Closing = node.rpar[0]
    else:
        bracket = node.rbracket if isinstance(node, cst.List) else node.rbrace
    tokens: list[tuple[str, cst.CSTNode]] = []
    for element in node.elements:
        item = element.value if isinstance(element, cst.Element) else element
        assert isinstance(item, (cst.BaseExpression, cst.StarredElement))
        tokens.extend(("paren", p) for p in item.lpar)
        tokens.append(("item", item))
        tokens.extend(("paren", p) for p in item.rpar)
        if isinstance(element.comma, cst.Comma):
            tokens.append(("separator", element.comma))
    items, gaps, after_last = _split(fragment, tokens)
    last = node.elements[-1].comma
    trailing = last if isinstance(last, cst.Comma) else None
    return Chain(fragment, ",", node, items, gaps, bracket, after_last, trailing)


def _split(
    fragment: CstFragment, tokens: list[tuple[str, cst.CSTNode]]
) -> tuple[list[cst.CSTNode], list[Gap], bool]:
    """Items, the gaps between them, and whether a parenthesis follows the last item."""
    items: list[cst.CSTNode] = []
    gaps: list[Gap] = []
    pending: list[tuple[str, cst.CSTNode]] = []
    for kind, node in tokens:
        if kind != "item":
            pending.append((kind, node))
            continue
        if items:
            separators = [n for k, n in pending if k == "separator"]
            gaps.append(
                Gap(
                    separator=separators[0],  # type: ignore[arg-type]
                    parens=any(k == "paren" for k, _ in pending),
                    text="".join(fragment.render(n) for _, n in pending),
                )
            )
        items.append(node)
        pending = []
    return items, gaps, any(k == "paren" for k, _ in pending)


# -- separators -----------------------------------------------------------------------------
def strip_comments(separator: Separator, fragment: CstFragment) -> Separator:
    """``separator`` without comments and comment-only lines, with every line ending the
    first one it has; the whitespace before a removed comment goes too (on the first line
    only spaces and tabs, as a formatter would)."""
    import libcst as cst

    first = NEWLINE.search(fragment.render(separator))
    if first is None:
        return separator
    newline = first.group()
    seen = False

    def clean(space: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
        nonlocal seen
        if isinstance(space, cst.SimpleWhitespace):
            if NEWLINE.search(space.value):  # a backslash continuation
                seen = True
                return space.with_changes(value=NEWLINE.sub(newline, space.value))
            return space
        assert isinstance(space, cst.ParenthesizedWhitespace)
        kept = "" if seen else space.first_line.whitespace.value.rstrip(" \t")
        seen = True
        line = cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace(kept),
            comment=None,
            newline=fragment.newline_node(newline),
        )
        return space.with_changes(first_line=line, empty_lines=[])

    before = clean(separator.whitespace_before)
    return separator.with_changes(
        whitespace_before=before, whitespace_after=clean(separator.whitespace_after)
    )


def has_newline(fragment: CstFragment, node: cst.CSTNode) -> bool:
    """Whether ``node``'s text breaks a line."""
    return NEWLINE.search(fragment.render(node)) is not None
