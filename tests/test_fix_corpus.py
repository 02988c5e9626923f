"""``--fix`` on real SGLang releases (copied to tmp_path; the corpus cache is never modified)."""

from __future__ import annotations

import ast
import difflib
import json
import py_compile
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from driftcheck.rules import CATALOGUE

from driftcheck.cli import main
from driftcheck.engine import check
from driftcheck.fix.apply import apply_fixes, attach_fixes
from driftcheck.model import Finding

FIXABLE_CODES = {code for code, rule in CATALOGUE.items() if rule.fixable()}

pytestmark = pytest.mark.corpus

K3 = "sglang/srt/models/kimi_k3.py"


def copy_release(release: Callable[[str], Path], version: str, tmp_path: Path) -> Path:
    target = tmp_path / f"sglang-{version}"
    shutil.copytree(release(version), target)
    return target


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in root.rglob("*.py")}


def touched_lines(old: str, new: str) -> set[int]:
    """1-based lines of ``old`` that the change replaces, deletes, or inserts after."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    lines: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            lines.update(range(i1 + 1, i2 + 1) if i2 > i1 else {i1})
    return lines


def allowed_lines(text: str, findings: list[Finding], style: str) -> set[int]:
    """The flagged expressions' lines (with the line before and after, which hold their
    brackets), plus, for helper-style fixes (``--fix-style helper``, and DC020 fixes, which
    always call the helper), the import block and receiver assignments."""
    allowed: set[int] = set()
    for finding in findings:
        allowed.update(range(finding.span.line - 1, finding.span.end_line + 2))
        if finding.fix is not None and finding.fix.style == "delete":
            # a dead copy's whole statement, the receiver only it read, the blank line after
            fix = finding.fix
            allowed.update(range(fix.span.line, fix.span.end_line + 1))
            for span, _ in fix.edits:
                allowed.update(range(span.line, span.end_line + 1))
    if style == "helper" or any(f.code == "DC020" for f in findings):
        tree = ast.parse(text)
        first_def = next(
            (
                s.lineno
                for s in tree.body
                if isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            ),
            len(text.splitlines()) + 1,
        )
        allowed.update(range(1, first_def))
        allowed.update(
            i for i, line in enumerate(text.splitlines(), 1) if "= get_moe_a2a_backend()" in line
        )
    return allowed


@pytest.mark.parametrize("unsafe", [False, True], ids=["fix", "unsafe-fixes"])
@pytest.mark.parametrize("style", ["minimal", "helper"])
def test_fix_on_sglang_0_5_23_converges_and_touches_only_the_flagged_expressions(
    sglang_release: Callable[[str], Path],
    tmp_path: Path,
    runner: CliRunner,
    style: str,
    unsafe: bool,
) -> None:
    """One pass writes every fix; the second finds nothing to write, and what stays reported
    at a fixed site is exactly what the first pass held back."""
    root = copy_release(sglang_release, "0.5.23", tmp_path)
    before = snapshot(root)
    result = check([root], use_cache=False)
    findings = attach_fixes(result, result.findings, style, unsafe=unsafe)
    flagged = [f for f in findings if f.code in FIXABLE_CODES]
    planned = [f for f in flagged if f.fix is not None and f.fix.writes]
    assert planned, "nothing to fix in 0.5.23"
    outcome = apply_fixes(result, findings, write=True)
    assert outcome.problems == []
    after = snapshot(root)
    changed = sorted(rel for rel in before if before[rel] != after[rel])
    assert changed == sorted({f.path for f in planned}) == sorted(outcome.written)
    for rel in changed:
        py_compile.compile(str(root / rel), doraise=True)
        in_file = [f for f in flagged if f.path == rel]
        assert touched_lines(before[rel], after[rel]) <= allowed_lines(
            before[rel], in_file, style
        ), rel

    flags = ["--unsafe-fixes"] if unsafe else []
    second = runner.invoke(
        main,
        [
            "check",
            "--no-cache",
            "--fix",
            *flags,
            "--fix-style",
            style,
            "--format",
            "json",
            str(root),
        ],
    )
    remaining = json.loads(second.stdout)["findings"]
    assert [f for f in remaining if "fix" in f and f["fix"]["flips"]] == []
    # a site by path and subject: an import the fix adds above it moves its line
    held = {(f.path, f.subject): list(f.fix.held_back) for f in planned}  # type: ignore[union-attr]
    again = check([root], use_cache=False).findings
    assert {
        (f.path, f.subject): [(a.member, a.reason) for a in f.applicability]
        for f in again
        if (f.path, f.subject) in held
    } == {site: members for site, members in held.items() if members}
    assert not [line for line in second.stderr.splitlines() if ": fixed " in line]
    assert snapshot(root) == after


HUNK_LINES = (
    "         _a2a_backend.is_megamoe()\n",
    "         or _a2a_backend.is_flashinfer_megamoe()\n",
    "         or _a2a_backend.is_deepep()\n",
    "+        or _a2a_backend.is_deepep_v2()\n",
    "         or _a2a_backend.is_mooncake()\n",
    "         or _a2a_backend.is_ascend_fuseep()\n",
    "         or _a2a_backend.is_mori()\n",
)
K3_HEADER = f"--- a/{K3}\n+++ b/{K3}\n"
K3_0_5_23_MINIMAL = (
    K3_HEADER
    + "@@ -440,9 +440,11 @@\n"
    + "".join(HUNK_LINES)
    + "+        or _a2a_backend.is_pplx()\n"
    + "     )\n"
    + " \n"
    + " \n"
)
# the upstream K3 patch: `or _a2a_backend.is_deepep_v2()` right after `is_deepep()`, nothing else
K3_0_5_23_UPSTREAM = K3_HEADER + "@@ -440,6 +440,7 @@\n" + "".join(HUNK_LINES)


def test_k3_fix_writes_the_upstream_patch_and_nothing_else(
    sglang_release: Callable[[str], Path], tmp_path: Path, runner: CliRunner
) -> None:
    """deepep_v2 is latent for K3 (not in _DEEPEP_V2_MODELS): safe. pplx is live and no
    same-role site lists it: held back, as the upstream patch holds it back."""
    root = copy_release(sglang_release, "0.5.23", tmp_path)
    diff = runner.invoke(main, ["check", "--no-cache", "--diff", str(root / K3)])
    assert diff.stdout == K3_0_5_23_UPSTREAM
    assert diff.stderr.splitlines()[0] == (
        f"{K3}:440: would fix DC001 (minimal): False -> True for deepep_v2; held back: pplx "
        "(no same-role site lists it): --unsafe-fixes adds it"
    )
    original = (root / K3).read_text()
    fixed = runner.invoke(main, ["check", "--no-cache", "--fix", str(root / K3)])
    assert fixed.exit_code == 1
    assert unified(original, (root / K3).read_text()) == K3_0_5_23_UPSTREAM
    assert fixed.stdout == (
        f"{K3}:440:9: DC001 _uses_ep_a2a enumerates 4 of 5 DeepEP-family backends; missing pplx "
        "(held back: no same-role site lists it) (canonical: is_deepep_class_backend)\n"
    )


def test_k3_unsafe_fixes_also_adds_pplx(
    sglang_release: Callable[[str], Path], tmp_path: Path, runner: CliRunner
) -> None:
    root = copy_release(sglang_release, "0.5.23", tmp_path)
    result = runner.invoke(
        main, ["check", "--no-cache", "--diff", "--unsafe-fixes", str(root / K3)]
    )
    assert result.stdout == K3_0_5_23_MINIMAL
    assert result.stderr.splitlines()[0] == (
        f"{K3}:440: would fix DC001 (minimal): False -> True for deepep_v2, pplx; "
        "unsafe: pplx (no same-role site lists it)"
    )


def unified(old: str, new: str) -> str:
    """``--diff``'s patch of K3 from ``old`` to ``new``."""
    from driftcheck.fix.write import unified_diff

    return unified_diff(K3, old, new)


def test_k3_with_pplx_allowed_missing_gets_exactly_the_upstream_patch(
    sglang_release: Callable[[str], Path], tmp_path: Path, runner: CliRunner
) -> None:
    root = copy_release(sglang_release, "0.5.23", tmp_path)
    path = root / K3
    lines = path.read_text().splitlines(keepends=True)
    assert lines[438] == "    return (\n"
    lines[438] = "    return (  # driftcheck: allow-missing[pplx] -- not validated on K3\n"
    path.write_text("".join(lines))
    result = runner.invoke(main, ["check", "--no-cache", "--diff", str(path)])
    assert result.stdout == K3_0_5_23_UPSTREAM
    assert f"{K3}:440: would fix DC001 (minimal): False -> True for deepep_v2" in result.stderr
    fixed = runner.invoke(main, ["check", "--no-cache", "--fix", str(path)])
    assert fixed.exit_code == 0, fixed.output
    assert (
        "        or _a2a_backend.is_deepep()\n        or _a2a_backend.is_deepep_v2()\n"
        in path.read_text()
    )


# what `--fix` and `--fix --unsafe-fixes` add to each of K3's two inline lists (_ep_a2a, _sp_moe),
# and the note each site gets; at 0.5.20 deepep_v2 is live for driftcheck (the gate was a
# hard-coded list in a validation, which the pack's registry gate does not read), so `--fix`
# holds both members back there
K3_INLINE = {
    ("0.5.21", False): (
        ["deepep_v2"],
        "would fix DC001 (minimal): False -> True for deepep_v2; held back: pplx "
        "(no same-role site lists it): --unsafe-fixes adds it",
    ),
    ("0.5.21", True): (
        ["deepep_v2", "pplx"],
        "would fix DC001 (minimal): False -> True for deepep_v2, pplx; "
        "unsafe: pplx (no same-role site lists it)",
    ),
    ("0.5.20", False): (
        [],
        "not fixed DC001: held back: deepep_v2, pplx (no same-role site lists them): "
        "--unsafe-fixes adds them",
    ),
    ("0.5.20", True): (
        ["deepep_v2", "pplx"],
        "would fix DC001 (minimal): False -> True for deepep_v2, pplx; "
        "unsafe: deepep_v2, pplx (no same-role site lists them)",
    ),
}


@pytest.mark.parametrize(("version", "unsafe"), list(K3_INLINE))
def test_both_inline_k3_lists_get_the_same_members(
    sglang_release: Callable[[str], Path],
    tmp_path: Path,
    runner: CliRunner,
    version: str,
    unsafe: bool,
) -> None:
    root = copy_release(sglang_release, version, tmp_path)
    flags = ["--unsafe-fixes"] if unsafe else []
    result = runner.invoke(main, ["check", "--no-cache", "--diff", *flags, str(root / K3)])
    members, note = K3_INLINE[(version, unsafe)]
    added = [
        line
        for line in result.stdout.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    assert added == [
        *(f"+            or _a2a_backend.is_{m}()" for m in members),
        *(f"+                or _a2a_backend.is_{m}()" for m in members),
    ]
    removed = [
        line
        for line in result.stdout.splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]
    assert removed == []
    notes = [line for line in result.stderr.splitlines() if line.startswith(f"{K3}:")]
    assert [n.split(": ", 1)[1] for n in notes if " DC001" in n and "fix" in n] == [note, note]
