"""Properties over generated universes and model files (see ``tests/strategies.py``).

For any universe and any model file built from the supported forms, spellings and layouts,
the engine reports exactly the generated drifting sites, each with exactly its missing and
extra members, and nothing else; and ``--fix`` (when present) rewrites exactly those sites,
keeps every other byte and every comment, flips exactly the missing members, and converges.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import tempfile
import tokenize
from pathlib import Path

import pytest
from hypothesis import given
from strategies import Case, Written, cases, examples

from driftcheck.engine import CheckResult, check

HAVE_FIXER = importlib.util.find_spec("driftcheck.fix.apply") is not None
needs_fixer = pytest.mark.skipif(not HAVE_FIXER, reason="driftcheck.fix.apply (the fixer) is not in this tree yet")


def observed(result: CheckResult) -> tuple[tuple, ...]:
    """Findings in the shape :meth:`SiteSpec.expected` gives."""
    return tuple(
        sorted(
            (f.code, f.path, f.span.line, f.span.col, f.message, f.missing, f.extra)
            for f in result.findings
        )
    )


def run_case(case: Case, root: Path) -> tuple[Written, CheckResult]:
    """Write ``case`` under ``root`` and check it without a cache."""
    written = case.write(root)
    return written, check([root], use_cache=False, jobs=1)


@examples(120)
@given(cases())
def test_engine_reports_exactly_the_generated_drifting_sites(case: Case) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        written, result = run_case(case, Path(tmp) / "tree")
        assert result.problems == []
        assert observed(result) == written.expected


@examples(40)
@given(cases(max_files=2))
def test_site_spans_are_the_generated_expressions(case: Case) -> None:
    """Every generated site (drifting or not) is found at exactly its span."""
    from driftcheck.config import find_config
    from driftcheck.prefilter import build_prefilter
    from driftcheck.scan import scan_bytes
    from driftcheck.universe import load_universe

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        written = case.write(root)
        universe = load_universe(root, find_config(root)).universe
        prefilter = build_prefilter(universe)
        for rel, spans in written.spans.items():
            scan = scan_bytes(rel, (root / rel).read_bytes(), universe, prefilter)
            found = {(s.span.line, s.span.col, s.span.end_line, s.span.end_col) for s in scan.sites}
            assert {span[:4] for span in spans} <= found


# -- the fixer -------------------------------------------------------------------------------
def comments(text: str) -> list[str]:
    """Every comment token of ``text``, in order."""
    return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]


def outside_unchanged(before: str, after: str, ranges: list[tuple[int, int]]) -> bool:
    """Whether ``after`` is ``before`` with only the text inside ``ranges`` replaced."""
    kept = []
    position = 0
    for start, end in sorted(ranges):
        kept.append(before[position:start])
        position = end
    kept.append(before[position:])
    cursor = 0
    if not after.startswith(kept[0]):
        return False
    cursor = len(kept[0])
    for piece in kept[1:-1]:
        found = after.find(piece, cursor)
        if found < 0:
            return False
        cursor = found + len(piece)
    return after.endswith(kept[-1]) and len(after) - len(kept[-1]) >= cursor


def site_ranges(text: str, spans, extra_ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """String ranges of the generated sites (plus the constants they name)."""
    from driftcheck.fix.text import LineIndex

    index = LineIndex(text)
    ranges = [(index.offset(line, col), index.offset(end_line, end_col)) for line, col, end_line, end_col, _ in spans]
    return ranges + extra_ranges


def constant_ranges(text: str) -> list[tuple[int, int]]:
    """String ranges of the ``_BACKENDS_<i> = (...)`` literals (a fix may edit them)."""
    from driftcheck.fix.text import LineIndex

    index = LineIndex(text)
    ranges = []
    for stmt in ast.parse(text).body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id.startswith("_BACKENDS_"):
            node = stmt.value
            ranges.append((index.offset(node.lineno, node.col_offset), index.offset(node.end_lineno, node.end_col_offset)))
    return ranges


@needs_fixer
@examples(60)
@given(cases(max_files=2))
def test_fix_rewrites_exactly_the_drifting_sites(case: Case) -> None:
    from driftcheck.fix.apply import apply_fixes, attach_fixes

    with tempfile.TemporaryDirectory() as tmp:
        written, result = run_case(case, Path(tmp) / "tree")
        root = written.root
        findings = attach_fixes(result, result.findings, "minimal")
        refused = [(f.path, f.span.line, f.fix_refusal) for f in findings if f.fix is None]
        assert refused == []
        assert {(f.path, f.span.line): f.fix.flips for f in findings} == {
            (f.path, f.span.line): f.missing for f in findings
        }
        outcome = apply_fixes(result, findings, write=True)
        assert outcome.problems == []
        assert outcome.remaining == []
        for rel, before in written.texts.items():
            data = (root / rel).read_bytes()
            after = data.decode("utf-8")
            ast.parse(after)
            assert comments(after) == comments(before)
            if "\r\n" in before:
                assert after.count("\r\n") == after.count("\n")
            ranges = site_ranges(before, written.spans[rel], constant_ranges(before))
            assert outside_unchanged(before, after, ranges)
        again = check([root], use_cache=False, jobs=1)
        assert observed(again) == ()
        snapshot = {rel: (root / rel).read_bytes() for rel in written.texts}
        second = apply_fixes(again, attach_fixes(again, again.findings, "minimal"), write=True)
        assert second.changes == {}
        assert {rel: (root / rel).read_bytes() for rel in written.texts} == snapshot
