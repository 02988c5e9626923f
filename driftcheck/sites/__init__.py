"""Find hand-written enumerations in one parsed module (see :mod:`.finder`)."""

from .build import span_of
from .finder import SiteFinder, find_sites

__all__ = ["SiteFinder", "find_sites", "span_of"]
