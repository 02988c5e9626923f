"""Read each universe from the linted tree's source: the setting a canonical predicate tests
(an enum, or a string attribute of a class), every predicate the code defines over it, and
each canonical family's members.

Nothing is imported from the tree: predicates are interpreted by :mod:`driftcheck.interpret`,
so when the helper gains a member the family changes with it and no member list lives in
driftcheck.
"""

from .load import Loaded, LoadedUniverse, load_universe, load_universes
from .source import ModuleSource, UniverseError, parse_module, string_constants, string_set_literal

__all__ = [
    "Loaded",
    "LoadedUniverse",
    "ModuleSource",
    "UniverseError",
    "load_universe",
    "load_universes",
    "parse_module",
    "string_constants",
    "string_set_literal",
]
