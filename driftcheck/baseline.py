"""Baselines: adopt driftcheck on a tree with existing findings and fail only on new ones.

Entries are keyed by rule, path, enclosing symbol, the site's normalised text and the missing
members (Semgrep's habit), never by line number, so unrelated edits that move a site keep it
baselined while a change to the list itself surfaces it again.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .model import Finding

FORMAT = 1


class BaselineError(Exception):
    """The baseline file cannot be read."""


@dataclass
class Baseline:
    """A multiset of finding keys."""

    keys: Counter[str] = field(default_factory=Counter)

    def contains(self, finding: Finding) -> bool:
        """Whether ``finding`` is baselined (each entry absorbs one finding)."""
        if self.keys[finding.key] > 0:
            self.keys[finding.key] -= 1
            return True
        return False

    @staticmethod
    def load(path: Path) -> Baseline:
        """Read a baseline written by :func:`write_baseline`."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            version = data.get("version") if isinstance(data, dict) else None
            keys = Counter(entry["key"] for entry in data["findings"])
        except FileNotFoundError as exc:
            raise BaselineError(f"{path}: baseline file not found") from exc
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise BaselineError(f"{path}: not a driftcheck baseline ({exc})") from exc
        if version != FORMAT:
            raise BaselineError(
                f"{path}: baseline version {json.dumps(version)} is not supported: this "
                f"driftcheck reads version {FORMAT} (write it again with --write-baseline)"
            )
        return Baseline(keys)


def write_baseline(path: Path, findings: list[Finding]) -> None:
    """Write ``findings`` as a baseline, atomically, sorted for stable diffs."""
    entries = sorted(
        (
            {
                "key": f.key,
                "code": f.code,
                "path": f.path,
                "symbol": f.symbol,
                "missing": list(f.missing),
            }
            for f in findings
        ),
        key=lambda e: (e["path"], e["symbol"], e["code"], e["key"]),
    )
    payload = json.dumps({"version": FORMAT, "findings": entries}, indent=2) + "\n"
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(payload)
    os.replace(tmp, path)
