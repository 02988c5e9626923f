"""``python -m driftcheck`` is the ``driftcheck`` command."""

from .cli import main

main()
