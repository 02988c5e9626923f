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
    never reads, when setting them is all the site does; ``()`` otherwise. (One site; a scan
    asks a file's :class:`LocalReads` for all of them.)"""
    return LocalReads(source, tree).unread(site)


class LocalReads:
    """What one module's text assigns and reads through ``self``, for :func:`local_unread`'s
    question asked of every site of the module: each class's assignments are indexed once, and
    each attribute's reads looked for once, so a file's sites cost time linear in its size and
    their number (not one pass over the file per site)."""

    # distinct attributes looked for by a plain search each before the file's reads are
    # indexed in one pass (the index costs a few searches; most files ask about one or two)
    SEARCHES = 16

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.source = source
        self._classes: dict[str, ast.ClassDef] = {}
        for statement in tree.body:
            if isinstance(statement, ast.ClassDef):
                self._classes.setdefault(statement.name, statement)
        # class name -> attribute without its leading underscores -> spellings assigned
        self._assigned: dict[str, dict[str, set[str]]] = {}
        self._reads: dict[str, bool] = {}
        self._dotted: dict[str, list[int]] | None = None  # ``.name`` -> where the dot is
        self._getattr: set[str] | None = None

    def unread(self, site: Site) -> tuple[str, ...]:
        """:func:`local_unread` of ``site``."""
        names = only_sets(site)
        owner = site.symbol.split(".")[0] if "." in site.symbol else ""
        if not names or not owner or owner not in self._classes:
            return ()
        assigned = self._assignments(owner)
        unread: set[str] = set()
        for name in names:
            core = name.lstrip("_")
            spelled = {s for s in assigned.get(core, ()) if len(s) >= len(name)}
            if not spelled or any(self._read(spelling) for spelling in spelled):
                return ()
            unread |= spelled
        return tuple(sorted(unread))

    def _assignments(self, owner: str) -> dict[str, set[str]]:
        """``self.<attr> =`` (or ``self.<attr>: <annotation> =``) in class ``owner``'s text."""
        if owner not in self._assigned:
            cls, source = self._classes[owner], self.source
            starts = _line_starts(source)
            start = starts[cls.lineno - 1]
            end = starts[min(cls.end_lineno or cls.lineno, len(starts) - 1)]
            found: dict[str, set[str]] = {}
            for match in at_word_starts(source, SELF_ASSIGNMENT, start, end):
                found.setdefault(match.group(1).lstrip("_"), set()).add(match.group(1))
            self._assigned[owner] = found
        return self._assigned[owner]

    def _read(self, name: str) -> bool:
        """Whether the text reads ``self.name`` or ``self.<part>.name`` (not as an assignment
        target), or calls ``getattr(self, "name")``."""
        if name not in self._reads:
            if self._dotted is None and len(self._reads) >= self.SEARCHES:
                self._index()
            if self._dotted is None:
                self._reads[name] = _read_through_self(self.source, name)
            else:
                assert self._getattr is not None
                self._reads[name] = name in self._getattr or any(
                    _self_read_at(self.source, position, position + 1 + len(name))
                    for position in self._dotted.get(name, ())
                )
        return self._reads[name]

    def _index(self) -> None:
        self._dotted = {}
        for match in DOTTED.finditer(self.source):
            self._dotted.setdefault(match.group(1), []).append(match.start())
        self._getattr = {m.group(1) for m in GETATTR_SELF.finditer(self.source)}


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
SELF_ASSIGNMENT = re.compile(r"self\.(\w+)\b\s*(?::[^=\n]*)?=(?!=)")
DOTTED = re.compile(r"\.(\w+)")  # a dot and the whole name after it
GETATTR_SELF = re.compile(r"getattr\(\s*self\s*,\s*[\"']([^\"']*)[\"']")


def _read_through_self(source: str, name: str) -> bool:
    """Whether ``source`` reads ``self.name`` or ``self.<part>.name`` (not as an assignment
    target), or calls ``getattr(self, "name")``: a byte search for ``.name`` first, the
    regular expressions only around each hit."""
    needle = "." + name
    position = source.find(needle)
    while position != -1:
        after = position + len(needle)
        if (after == len(source) or not (source[after].isalnum() or source[after] == "_")) and (
            _self_read_at(source, position, after)
        ):
            return True
        position = source.find(needle, after)
    return re.search(rf"getattr\(\s*self\s*,\s*[\"']{re.escape(name)}[\"']", source) is not None


def _self_read_at(source: str, position: int, after: int) -> bool:
    """Whether the whole attribute name between the dot at ``position`` and ``after`` is read
    through ``self`` there (``self.name``, ``self.mlp.name``), not assigned to."""
    return (
        NOT_ASSIGNED.match(source, after) is not None
        and SELF_CHAIN_END.search(source, max(0, position - 200), position) is not None
    )


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
