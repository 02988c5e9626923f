"""Whether anything reads what a site sets: a copy nobody reads decides nothing.

A site whose only effect is to set attributes (``if b.is_deepep(): self.top_k = ...``, or
``self.enable_a2a_moe = <list>``) matters only where those attributes are read. When none is
read — not in its own file, not by ``self`` in a class it inherits from or that inherits from
it — no backend takes another path because of it: widening it fixes nothing, deleting it does.

Reads are found in the source text of the run's files (the scanned ones: model files and files
with sites), so the answer never depends on how much of a file was parsed:

- in the site's own file, ``self.attr`` or ``self.<part>.attr`` (a layer reading its block's
  attribute) that is not the target of an assignment (``config.attr`` is another object's);
- in the related classes of other files (parents and children, by name, transitively), any
  ``self.attr`` that is not the target of an assignment;
- ``getattr(self, "attr")`` in those texts.

A read through another object in another file (``runner.model.attr``) is not looked for: such
a copy is reported as unread (DC006, info) rather than as drift.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from .model import Site

CLASS_HEADER = re.compile(r"^class\s+(\w+)\s*(?:\(([^)]*)\))?\s*:", re.MULTILINE)
ASSIGNED = r"(?!\s*(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=(?!=))"  # not followed by an assignment


class AttributeReads:
    """Answers "is this attribute read anywhere its value could matter?" for a run."""

    def __init__(self, paths: Iterable[str], read_text: Callable[[str], str | None]) -> None:
        self._paths = sorted(paths)
        self._read_text = read_text
        self._texts: dict[str, str] | None = None
        self._classes: dict[str, list[tuple[str, int, int, tuple[str, ...]]]] | None = None

    def unread(self, site: Site) -> tuple[str, ...]:
        """The attributes ``site`` sets that nothing reads, when that is all it does (``()``
        when it does anything else, or when one of them is read)."""
        names = [key[4:] for key in site.controls if key.startswith("set:")]
        if not names or len(names) != len(site.controls):
            return ()
        owner = site.symbol.split(".")[0] if "." in site.symbol else ""
        if not owner:
            return ()
        spellings: list[str] = []
        for name in names:
            spelled = self._unread_spellings(site.path, owner, name)
            if not spelled:
                return ()
            spellings.extend(spelled)
        return tuple(sorted(set(spellings)))

    # -- text index -------------------------------------------------------------------
    def _index(self) -> None:
        if self._texts is not None:
            return
        self._texts, self._classes = {}, {}
        for path in self._paths:
            text = self._read_text(path)
            if text is None:
                continue
            self._texts[path] = text
            for match in CLASS_HEADER.finditer(text):
                bases = tuple(
                    b.strip().split(".")[-1] for b in (match.group(2) or "").split(",") if b.strip()
                )
                start = match.start()
                self._classes.setdefault(match.group(1), []).append(
                    (path, start, _class_end(text, match.end()), bases)
                )

    def _classes_of(self, name: str) -> list[tuple[str, int, int, tuple[str, ...]]]:
        assert self._classes is not None
        return self._classes.get(name, [])

    def _related(self, owner: str) -> list[tuple[str, int, int]]:
        """The bodies of the classes ``owner`` inherits from or that inherit from it."""
        assert self._classes is not None
        seen: set[str] = {owner}
        todo = [owner]
        while todo:
            name = todo.pop()
            parents = [b for _, _, _, bases in self._classes.get(name, ()) for b in bases]
            children = [c for c, defs in self._classes.items() if any(name in d[3] for d in defs)]
            for other in (*parents, *children):
                if other not in seen and other in self._classes:
                    seen.add(other)
                    todo.append(other)
        seen.discard(owner)
        return [(p, s, e) for name in sorted(seen) for p, s, e, _ in self._classes[name]]

    def _unread_spellings(self, path: str, owner: str, name: str) -> tuple[str, ...]:
        """The attribute as ``owner`` spells it (``_x`` or ``x``: keys drop the underscores)
        when nothing reads it; ``()`` when something does, or when that cannot be told."""
        self._index()
        assert self._texts is not None
        own = self._texts.get(path)
        if own is None:
            return ()
        assigned = re.compile(rf"\bself\.(_*{re.escape(name)})\b\s*(?::[^=\n]*)?=(?!=)")
        body = [(start, end) for p, start, end, _ in self._classes_of(owner) if p == path]
        start, end = body[0] if body else (0, len(own))
        spelled = sorted({m.group(1) for m in assigned.finditer(own, start, end)})
        if not spelled:
            return ()
        exact = "|".join(re.escape(s) for s in spelled)
        strings = rf"getattr\(\s*self\s*,\s*[\"'](?:{exact})[\"']"
        # ``self.mlp.top_k`` is a layer reading its block; ``self.config.top_k`` is not
        chained = r"(?:\.(?!\w*(?:config|args)\b)\w+)*"
        through_self = re.compile(rf"\bself{chained}\.(?:{exact})\b{ASSIGNED}|{strings}")
        if through_self.search(own):
            return ()
        by_self = re.compile(rf"\bself\.(?:{exact})\b{ASSIGNED}|{strings}")
        for other, start, end in self._related(owner):
            if other != path and by_self.search(self._texts[other], start, end):
                return ()
        return tuple(spelled)


def _class_end(text: str, after: int) -> int:
    """Where a top-level class's body ends: the next line that starts at column 0 with code."""
    for match in re.finditer(r"^[^\s#)\]}'\"]", text[after:], re.MULTILINE):
        position = after + match.start()
        if position > after:
            return position
    return len(text)
