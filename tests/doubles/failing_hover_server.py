"""``driftcheck server`` whose hover fails (tests only): a handler error must be logged to
the client and leave the server running."""

from __future__ import annotations

from driftcheck.server import session
from driftcheck.server.server import build_server


def _broken_hover(self: object, *args: object) -> str:
    raise RuntimeError("hover broke (test double)")


session.Session.hover = _broken_hover  # type: ignore[method-assign]
build_server().start_io()
