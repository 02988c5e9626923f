"""Regular expressions matched at line starts, found by a plain search first.

``pattern.finditer`` with ``^`` in multiline mode tries every line of a file; searching for a
word the match must contain (``import``, ``EntryClass``, ``class``) and matching only at the
start of the lines holding it gives the same matches several times cheaper.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import AnyStr


def at_line_starts(
    text: AnyStr, needle: AnyStr, pattern: re.Pattern[AnyStr], column_zero: bool = False
) -> Iterator[re.Match[AnyStr]]:
    """``pattern`` matched at the start of each line of ``text`` holding ``needle`` (when
    ``column_zero``, only lines that start with it), each line once, in order."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    seen = -1
    position = text.find(needle)
    while position != -1:
        start = text.rfind(newline, 0, position) + 1  # type: ignore[arg-type]
        if start != seen and (not column_zero or start == position):
            seen = start
            match = pattern.match(text, start)
            if match is not None:
                yield match
        position = text.find(needle, position + 1)
