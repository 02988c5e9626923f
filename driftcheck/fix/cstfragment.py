"""Parse one expression's text with libcst, and render rewritten trees of it back to text.

Every rewrite the fixer plans is a libcst transformation of the rewritten expression alone:
its text is cut out of the file (located with ``ast``), wrapped as ``(<nl>...<nl>)`` with the
text's own line ending, exactly as :mod:`driftcheck.fix.fragment` does for ``ast``, so that
multi-line expressions, comments and backslash continuations parse as they do in place, and
given to ``libcst.parse_expression``. The wrapper's parentheses are the root node's outermost
``lpar``/``rpar``; :meth:`CstFragment.code` renders a tree and strips them again.

An expression nested deeper than the running thread's stack can hold for libcst's parser is
refused before libcst sees it (:mod:`driftcheck.fix.deepstack`). libcst is imported here on first use, never at module level: a checking run plans no fix and
never pays for it (``tests/test_fix_substrate.py`` pins that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .deepstack import check_room
from .fragment import FragmentError
from .text import NEWLINE

if TYPE_CHECKING:
    import libcst as cst


class CstFragment:
    """One expression's text as a libcst tree, and the renderer that gives the text back."""

    def __init__(self, text: str) -> None:
        import libcst as cst

        match = NEWLINE.search(text)
        self.text = text
        self.newline = match.group() if match else "\n"
        self._prefix = "(" + self.newline
        self._suffix = self.newline + ")"
        check_room(text)
        try:
            self.root: cst.BaseExpression = cst.parse_expression(self._prefix + text + self._suffix)
        except Exception as exc:  # ParserSyntaxError, and whatever else odd input raises
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise FragmentError(f"libcst cannot parse it: {reason}") from exc
        self._module = cst.Module(body=[], default_newline=self.newline)
        if self.code(self.root) != text:
            raise FragmentError("libcst does not reproduce its text")

    def render(self, node: cst.CSTNode) -> str:
        """The source text of any node of the tree (a separator, a parenthesis, an operand)."""
        return self._module.code_for_node(node)

    def code(self, root: cst.BaseExpression) -> str:
        """The text of a (rewritten) root, without the wrapper's parentheses."""
        rendered = self.render(root)
        if not (rendered.startswith(self._prefix) and rendered.endswith(self._suffix)):
            raise FragmentError("the rewrite moved the expression's own brackets")
        return rendered[len(self._prefix) : len(rendered) - len(self._suffix)]

    def newline_node(self, value: str) -> cst.Newline:
        """A line ending that renders as ``value`` (None stands for the text's own)."""
        import libcst as cst

        return cst.Newline(value=None if value == self.newline else value)


def replace_nodes(root: cst.BaseExpression, mapping: dict[int, cst.CSTNode]) -> cst.BaseExpression:
    """``root`` with each node whose ``id`` is a key of ``mapping`` replaced by its value, in one
    pass (the replaced nodes must not contain one another)."""
    import libcst as cst

    class Replace(cst.CSTTransformer):
        def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
            return mapping.get(id(original_node), updated_node)

    if not mapping:
        return root
    return root.visit(Replace())  # type: ignore[return-value]
