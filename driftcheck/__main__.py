"""``python -m driftcheck`` is the ``driftcheck`` command."""

from .replay import run

run()
