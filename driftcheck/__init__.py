"""driftcheck: find, fix and verify predicate drift."""

__version__ = "0.1.0"
