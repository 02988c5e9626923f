"""Which lines of the tree a run executed, measured by tracing its files."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any


class LineTrace:
    """Records ``(path, qualname) -> lines`` for every frame of ``files`` while active; frames
    of other files are not traced at all (their cost is a call check, not a line check)."""

    def __init__(self, files: frozenset[str]) -> None:
        self.files = files
        self.lines: dict[tuple[str, str], set[int]] = {}
        self._previous: Callable[..., Any] | None = None

    def _global(self, frame: FrameType, event: str, arg: object) -> Callable[..., Any] | None:
        code = frame.f_code
        if code.co_filename not in self.files:
            return None
        key = (code.co_filename, getattr(code, "co_qualname", code.co_name))
        seen = self.lines.setdefault(key, set())

        def local(frame: FrameType, event: str, arg: object) -> Callable[..., Any] | None:
            if event == "line":
                seen.add(frame.f_lineno)
            return local

        return local

    def __enter__(self) -> LineTrace:
        self._previous = sys.gettrace()
        threading.settrace(self._global)
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)
        threading.settrace(self._previous)

    def executed(self, relative: Callable[[str], str]) -> list[dict[str, Any]]:
        """``[{"path", "qualname", "lines"}]`` sorted by path and first line (``relative``
        turns a file's path into the tree-relative one reports use)."""
        entries = [
            {"path": relative(path), "qualname": qualname, "lines": sorted(lines)}
            for (path, qualname), lines in self.lines.items()
            if lines
        ]
        return sorted(entries, key=lambda e: (e["path"], e["lines"][0], e["qualname"]))
