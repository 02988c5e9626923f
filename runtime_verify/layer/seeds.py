"""Stable seeds derived from the base seed and a tag, identical in every process."""

from __future__ import annotations

import hashlib


def derive_seed(base: int, *parts: object) -> int:
    """A 63-bit seed for ``(base, *parts)``; stable across processes and Python runs.

    Python's ``hash`` is salted per process for strings, so a digest is used instead.
    """
    digest = hashlib.blake2b(repr((base, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)
