"""What stops a project loading, shown in the editor on the file that says it.

A configuration the CLI refuses (exit 2: invalid TOML, a value of the wrong type, a rule code
that names no rule, a baseline it cannot read) leaves every document of its project without
diagnostics. Besides the error message the session shows (``window/showMessage``), the error
becomes a diagnostic on the file it names, at its line (the first line when it names none),
so the editor's problems list points at what to fix. The diagnostics are withdrawn when the
projects are loaded again (a configuration saved, new settings), and shown again if the error
stays.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from driftcheck.model import Problem

from .diagnostics import problem_diagnostic
from .positions import LineMap

Publish = Callable[[str, list[types.Diagnostic]], None]


class BrokenFiles:
    """The diagnostics of the files whose errors stop a project loading, by URI."""

    def __init__(self, encoding: str, publish: Publish | None) -> None:
        self.encoding = encoding
        self.publish = publish
        self.shown: dict[str, list[types.Diagnostic]] = {}

    def show(self, where: str, line: int | None, message: str, base: Path) -> None:
        """Show ``message`` on file ``where`` (relative to ``base`` unless absolute) at
        ``line``; nothing when ``where`` names no file (a canonical module, an option)."""
        head, _, tail = where.rpartition(":")
        if line is None and head and tail.isdigit():  # an option's error names "path:line"
            where, line = head, int(tail)
        path = Path(where)
        if not path.is_absolute():
            path = base / path
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        uri = from_fs_path(str(path)) or path.as_uri()
        diagnostic = problem_diagnostic(
            Problem(str(path), line, message), LineMap(text, self.encoding)
        )
        shown = self.shown.setdefault(uri, [])
        if diagnostic in shown:
            return
        shown.append(diagnostic)
        if self.publish is not None:
            self.publish(uri, list(shown))

    def clear(self) -> None:
        """Withdraw every diagnostic shown (the projects are loaded again)."""
        for uri in self.shown:
            if self.publish is not None:
                self.publish(uri, [])
        self.shown.clear()
