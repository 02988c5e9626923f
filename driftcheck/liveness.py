"""Whether anything reads what a site sets: a copy nobody reads decides nothing.

A site whose only effect is to set attributes (``if b.is_deepep(): self.top_k = ...``, or
``self.enable_a2a_moe = <list>``) matters only where those attributes are read. When none is
read — not in its own file, not by ``self`` in a class it inherits from or that inherits from
it — no backend takes another path because of it: widening it fixes nothing, deleting it does.

Reads are found in source text, so the answer never depends on how much of a file was parsed.
Two steps, so that a warm run reads no file:

- when a file is scanned (:func:`local_unread`, cached with the site): in the site's own file,
  ``self.attr`` or ``self.<part>.attr`` (a layer reading its block's attribute) that is not the
  target of an assignment (``config.attr`` is another object's), or ``getattr(self, "attr")``;
- when the run is judged (:class:`AttributeReads`), only for a site its file does not read:
  ``self.attr`` in the classes related to the site's class by inheritance (parents and
  children, by name, transitively) in the other scanned files, found through each scan's
  top-level class headers (:func:`class_headers`).

A read through another object in another file (``runner.model.attr``) is not looked for: such
a copy's finding is then a warning saying nothing reads it, rather than an error.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Mapping

from .linesearch import at_line_starts, at_word_starts
from .model import Site

CLASS_HEADER = re.compile(r"^class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:", re.MULTILINE)
ASSIGNED = r"(?!\s*(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=(?!=))"  # not followed by an assignment
CHAINED = r"(?:\.(?!\w*(?:config|args)\b)\w+)*"  # self.mlp.top_k, not self.config.top_k


def class_headers(source: str) -> list[tuple[str, tuple[str, ...]]]:
    """The module's top-level classes and the names of their bases (``(name, (base, ...))``)."""
    headers = []
    for match in at_line_starts(source, "class", CLASS_HEADER, column_zero=True):
        bases = tuple(
            b.strip().split(".")[-1].split("[")[0]
            for b in (match.group(2) or "").split(",")
            if b.strip() and "=" not in b
        )
        headers.append((match.group(1), bases))
    return headers


def only_sets(site: Site) -> list[str]:
    """The attribute keys a site sets, when setting attributes is all it does (else ``[]``)."""
    return list(site.role.only_sets())


def local_unread(site: Site, source: str, tree: ast.Module) -> tuple[str, ...]:
    """The attributes (as the site's class spells them) that the site sets and its own file
    never reads, when setting them is all the site does; ``()`` otherwise."""
    names = only_sets(site)
    owner = site.symbol.split(".")[0] if "." in site.symbol else ""
    cls = next(
        (s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == owner and owner), None
    )
    if not names or cls is None:
        return ()
    starts = _line_starts(source)
    start, end = starts[cls.lineno - 1], starts[min(cls.end_lineno or cls.lineno, len(starts) - 1)]
    unread: list[str] = []
    for name in names:
        assigned = re.compile(rf"self\.(_*{re.escape(name)})\b\s*(?::[^=\n]*)?=(?!=)")
        spelled = sorted({m.group(1) for m in at_word_starts(source, assigned, start, end)})
        if not spelled or any(_read_through_self(source, name) for name in spelled):
            return ()
        unread.extend(spelled)
    return tuple(sorted(set(unread)))


class AttributeReads:
    """Answers, for a run, whether the attributes a site's own file never reads are read by a
    class related to the site's class in another scanned file."""

    def __init__(
        self,
        classes: Mapping[str, list[tuple[str, tuple[str, ...]]]],
        read_text: Callable[[str], str | None],
    ) -> None:
        self._defined: dict[str, list[str]] = {}  # class name -> paths defining it
        self._bases: dict[str, set[str]] = {}
        self._children: dict[str, set[str]] = {}
        for path, headers in sorted(classes.items()):
            for name, bases in headers:
                self._defined.setdefault(name, []).append(path)
                self._bases.setdefault(name, set()).update(bases)
                for base in bases:
                    self._children.setdefault(base, set()).add(name)
        self._read_text = read_text
        self._texts: dict[str, str | None] = {}

    def unread(self, site: Site) -> tuple[str, ...]:
        """The attributes ``site`` sets that nothing reads, when that is all it does (``()``
        when it does anything else, or when one of them is read)."""
        if not site.unread:
            return ()
        owner = site.symbol.split(".")[0]
        by_self = _self_reads(site.unread, "")
        for name in self._related(owner):
            for path in self._defined.get(name, ()):
                if path != site.path and self._class_reads(path, name, by_self):
                    return ()
        return site.unread

    def _related(self, owner: str) -> list[str]:
        """The classes ``owner`` inherits from or that inherit from it, transitively."""
        seen, todo = {owner}, [owner]
        while todo:
            name = todo.pop()
            for other in (*self._bases.get(name, ()), *self._children.get(name, ())):
                if other not in seen and other in self._defined:
                    seen.add(other)
                    todo.append(other)
        seen.discard(owner)
        return sorted(seen)

    def _class_reads(self, path: str, name: str, pattern: re.Pattern[str]) -> bool:
        if path not in self._texts:
            self._texts[path] = self._read_text(path)
        text = self._texts[path]
        if text is None:
            return True  # cannot tell: alive
        for match in at_line_starts(text, "class", CLASS_HEADER, column_zero=True):
            if match.group(1) == name and pattern.search(
                text, match.end(), _class_end(text, match.end())
            ):
                return True
        return False


SELF_CHAIN_END = re.compile(rf"\bself{CHAINED}\Z")
NOT_ASSIGNED = re.compile(ASSIGNED)


def _read_through_self(source: str, name: str) -> bool:
    """Whether ``source`` reads ``self.name`` or ``self.<part>.name`` (not as an assignment
    target), or calls ``getattr(self, "name")``: a byte search for ``.name`` first, the
    regular expressions only around each hit."""
    needle = "." + name
    position = source.find(needle)
    while position != -1:
        after = position + len(needle)
        if (after == len(source) or not (source[after].isalnum() or source[after] == "_")) and (
            NOT_ASSIGNED.match(source, after)
            and SELF_CHAIN_END.search(source, max(0, position - 200), position)
        ):
            return True
        position = source.find(needle, after)
    return re.search(rf"getattr\(\s*self\s*,\s*[\"']{re.escape(name)}[\"']", source) is not None


def _self_reads(spelled: list[str] | tuple[str, ...], chained: str) -> re.Pattern[str]:
    exact = "|".join(re.escape(s) for s in spelled)
    strings = rf"getattr\(\s*self\s*,\s*[\"'](?:{exact})[\"']"
    return re.compile(rf"\bself{chained}\.(?:{exact})\b{ASSIGNED}|{strings}")


@functools.lru_cache(maxsize=2)  # asked once per site, of the same source
def _line_starts(source: str) -> list[int]:
    """Offsets where lines start, counted as Python counts them (``\r\n``, ``\r``, ``\n``)."""
    return [0, *(m.end() for m in re.finditer("\r\n|\r|\n", source)), len(source)]


def _class_end(text: str, after: int) -> int:
    """Where a top-level class's body ends: the next line that starts at column 0 with code."""
    match = re.compile(r"^[^\s#)\]}'\"]", re.MULTILINE).search(text, after + 1)
    return match.start() if match else len(text)
