"""The canonical DeepEP family: backends whose dispatcher already combines expert outputs."""

from __future__ import annotations

DEEPEP_FAMILY: frozenset[str] = frozenset({"deepep", "deepep_v2", "mooncake", "mori", "pplx"})
