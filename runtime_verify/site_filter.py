"""``--site`` selectors: which findings a verification run covers.

A selector is ``PATH:SYMBOL`` (``sglang/srt/models/kimi_k3.py:_uses_ep_a2a``), ``PATH:LINE``
or a bare ``SYMBOL``. A path matches the finding's path exactly or as a trailing part
(``kimi_k3.py``); a symbol matches exactly or as the last dotted parts (``__init__`` matches
``DeepEPMoE.__init__``).
"""

from __future__ import annotations

from driftcheck.model import Finding


def _path_matches(wanted: str, path: str) -> bool:
    wanted = wanted.strip("/")
    return path == wanted or path.endswith("/" + wanted)


def _symbol_matches(wanted: str, symbol: str) -> bool:
    return symbol == wanted or symbol.endswith("." + wanted)


def matches(selector: str, finding: Finding) -> bool:
    """Whether ``finding`` is selected by ``selector``."""
    path, sep, rest = selector.rpartition(":")
    if not sep:
        return _symbol_matches(selector, finding.symbol)
    if not _path_matches(path, finding.path):
        return False
    if rest.isdigit():
        return finding.span.line <= int(rest) <= finding.span.end_line
    return _symbol_matches(rest, finding.symbol)


def select(findings: list[Finding], selectors: tuple[str, ...]) -> list[Finding]:
    """The findings any selector matches (all of them when there are no selectors)."""
    if not selectors:
        return list(findings)
    return [f for f in findings if any(matches(s, f) for s in selectors)]


def unmatched(findings: list[Finding], selectors: tuple[str, ...]) -> list[str]:
    """The selectors that match none of ``findings``, in the order given."""
    return [s for s in selectors if not any(matches(s, f) for f in findings)]


NEARBY_LIMIT = 5


def nearby(selector: str, findings: list[Finding]) -> str:
    """What a selector that matched nothing could have named: the sites of the file its path
    names, else every site (at most ``NEARBY_LIMIT``), else a note that there are none."""
    if not findings:
        return "this run has no site to verify"
    path, sep, _ = selector.rpartition(":")
    in_file = [f for f in findings if sep and _path_matches(path, f.path)]
    shown = in_file or findings
    names = [f"{f.path}:{f.span.line} {f.symbol}" for f in shown[:NEARBY_LIMIT]]
    more = len(shown) - len(names)
    listed = ", ".join(names) + (f" and {more} more" if more else "")
    return f"{'sites in that file' if in_file else 'the sites to verify'}: {listed}"
