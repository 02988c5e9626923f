"""``python -m driftcheck`` is the ``driftcheck`` command."""

from .replay import main

main()
