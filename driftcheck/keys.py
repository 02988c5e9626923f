"""Line-independent identities of findings (what baselines and SARIF fingerprints store)."""

from __future__ import annotations

import hashlib
import re

from .model import Finding


def finding_key(finding: Finding, site_text: str) -> str:
    """A baseline key that survives line moves: code, path, symbol, normalised text, missing."""
    normalised = re.sub(r"\s+", " ", re.sub(r"#[^\n]*", "", site_text)).strip()
    payload = "|".join(
        [finding.code, finding.path, finding.symbol, normalised, ",".join(finding.missing)]
    )
    return hashlib.blake2b(payload.encode(), digest_size=10).hexdigest()
