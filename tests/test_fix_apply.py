"""How fixes are applied and reported: safety of the write, the CLI's output and exit codes,
and the computed change (``False -> True for ...``)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rule_harness import FIXTURES

from driftcheck.cli import main
from driftcheck.engine import check
from driftcheck.fix import apply as apply_module
from driftcheck.fix import flips
from driftcheck.fix.apply import apply_fixes, attach_fixes
from driftcheck.fix.flips import compute_change
from driftcheck.fix.plan import Replacement

EXAMPLE = "sglang/srt/models/example.py"
IMPORT = "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
DRIFTING = (
    "def f():\n    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
)
# past 88 columns: laid out as ruff format and black lay it out
FIXED_CHAIN = (
    "get_moe_a2a_backend().is_deepep()\n"
    "        or get_moe_a2a_backend().is_deepep_v2()\n"
    "        or get_moe_a2a_backend().is_mooncake()\n"
    "        or get_moe_a2a_backend().is_mori()\n"
    "        or get_moe_a2a_backend().is_pplx()"
)
FIXED = f"def f():\n    return (\n        {FIXED_CHAIN}\n    )\n"

# what a note adds under --unsafe-fixes: the example's members, which no same-role site lists
UNSAFE = "; unsafe: deepep_v2, mooncake, pplx (no same-role site lists them)"


def tree_with(tmp_path: Path, content: bytes | str) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    data = content.encode() if isinstance(content, str) else content
    (root / EXAMPLE).write_bytes(data)
    return root


# -- writing ---------------------------------------------------------------------------------
def test_a_file_changed_after_the_check_is_not_overwritten(tmp_path: Path) -> None:
    root = tree_with(tmp_path, IMPORT + DRIFTING)
    result = check([root / EXAMPLE], use_cache=False)
    findings = attach_fixes(result, result.findings, "minimal", unsafe=True)
    edited = IMPORT + DRIFTING + "# edited meanwhile\n"
    (root / EXAMPLE).write_text(edited)
    outcome = apply_fixes(result, findings, write=True)
    assert (root / EXAMPLE).read_text() == edited
    assert [str(p) for p in outcome.problems] == [
        f"{EXAMPLE}: error: not fixed: the file changed since it was checked"
    ]
    assert [f.code for f in outcome.remaining] == ["DC001"]


def test_mode_bits_are_kept_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    root = tree_with(tmp_path, IMPORT + DRIFTING)
    path = root / EXAMPLE
    os.chmod(path, 0o640)
    result = check([path], use_cache=False)
    apply_fixes(result, attach_fixes(result, result.findings, "minimal", unsafe=True), write=True)
    assert path.read_text() == IMPORT + FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in path.parent.iterdir() if "driftcheck" in p.name) == []


def test_byte_order_mark_and_coding_line_are_kept(tmp_path: Path) -> None:
    header = "# -*- coding: utf-8 -*-\n" + IMPORT
    root = tree_with(tmp_path, b"\xef\xbb\xbf" + (header + DRIFTING).encode())
    result = check([root / EXAMPLE], use_cache=False)
    apply_fixes(result, attach_fixes(result, result.findings, "minimal", unsafe=True), write=True)
    assert (root / EXAMPLE).read_bytes() == b"\xef\xbb\xbf" + (header + FIXED).encode()


def test_dry_run_computes_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    root = tree_with(tmp_path, IMPORT + DRIFTING)
    result = check([root / EXAMPLE], use_cache=False)
    outcome = apply_fixes(
        result, attach_fixes(result, result.findings, "minimal", unsafe=True), write=False
    )
    assert (root / EXAMPLE).read_text() == IMPORT + DRIFTING
    assert outcome.written == []
    assert outcome.diff_text.startswith(f"--- a/{EXAMPLE}\n+++ b/{EXAMPLE}\n@@ -2,4 +2,10 @@\n")
    assert outcome.notes == [
        f"{EXAMPLE}:5: would fix DC001 (minimal): False -> True for deepep_v2, mooncake, pplx"
        + UNSAFE
    ]


def test_nested_enumeration_is_fixed_outer_first_then_inner_on_the_next_run(tmp_path: Path) -> None:
    snippet = (
        "def f(g):\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b.is_deepep() or b.is_mori() or g(b.is_deepep() or b.is_mooncake())\n"
    )
    root = tree_with(tmp_path, IMPORT + snippet)
    result = check([root / EXAMPLE], use_cache=False)
    outcome = apply_fixes(
        result, attach_fixes(result, result.findings, "minimal", unsafe=True), write=True
    )
    assert outcome.notes == [
        f"{EXAMPLE}:6: not fixed DC001: overlaps the fix of the enclosing enumeration at line 6; run --fix again",
        f"{EXAMPLE}:6: fixed DC001 (minimal): False -> True for deepep_v2, mooncake, pplx" + UNSAFE,
    ]
    again = check([root / EXAMPLE], use_cache=False)
    apply_fixes(again, attach_fixes(again, again.findings, "minimal", unsafe=True), write=True)
    text = (root / EXAMPLE).read_text()
    assert text.endswith(
        "    return (\n"
        "        b.is_deepep()\n"
        "        or b.is_deepep_v2()\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "        or b.is_pplx()\n"
        "        or g(\n"
        "            b.is_deepep()\n"
        "            or b.is_deepep_v2()\n"
        "            or b.is_mooncake()\n"
        "            or b.is_mori()\n"
        "            or b.is_pplx()\n"
        "        )\n"
        "    )\n"
    )


def test_a_rewrite_whose_computed_flips_differ_from_the_finding_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree_with(tmp_path, IMPORT + DRIFTING)
    from driftcheck.fix import minimal

    real_plan = minimal.plan_minimal

    def plan_with_an_extra_member(ctx, job, receivers):  # type: ignore[no-untyped-def]
        rewrite = real_plan(ctx, job, receivers)
        wrong = rewrite.after + " or get_moe_a2a_backend().is_nixl()"
        primary = Replacement(rewrite.primary.start, rewrite.primary.end, wrong)
        return apply_module.replace(rewrite, after=wrong, primary=primary)

    monkeypatch.setattr(minimal, "plan_minimal", plan_with_an_extra_member)
    result = check([root / EXAMPLE], use_cache=False)
    findings = attach_fixes(result, result.findings, "minimal", unsafe=True)
    assert [f.fix_refusal for f in findings] == [
        "driftcheck bug: the minimal rewrite would flip deepep_v2, mooncake, pplx, nixl, "
        "not deepep_v2, mooncake, pplx; please report it"
    ]
    assert apply_fixes(result, findings, write=True).changes == {}


# -- the computed change -----------------------------------------------------------------------
def loaded_scope(tmp_path: Path):  # type: ignore[no-untyped-def]
    root = tree_with(tmp_path, IMPORT + DRIFTING)
    result = check([root / EXAMPLE], use_cache=False)
    assert result.loaded is not None and result.universe is not None
    return result.loaded.scope, result.universe


def test_change_counts_a_flip_that_happens_under_some_setting_of_an_unrelated_condition(
    tmp_path: Path,
) -> None:
    scope, universe = loaded_scope(tmp_path)
    change = compute_change(
        scope,
        universe,
        "(b.is_deepep() or b.is_mori()) and self._is_moe_layer",
        "(b.is_deepep() or b.is_deepep_v2() or b.is_mori()) and self._is_moe_layer",
        {"b"},
    )
    assert change.describe() == "False -> True for deepep_v2"


def test_change_of_a_negated_form_is_true_to_false(tmp_path: Path) -> None:
    scope, universe = loaded_scope(tmp_path)
    change = compute_change(
        scope, universe, "b not in ('deepep',)", "b not in ('deepep', 'pplx')", {"b"}
    )
    assert change.describe() == "True -> False for pplx"


def test_change_is_empty_when_the_rewrite_is_equivalent_under_narrowings(tmp_path: Path) -> None:
    scope, universe = loaded_scope(tmp_path)
    change = compute_change(
        scope, universe, "b.is_mori() or b.is_mori_epv2()", "b.is_mori()", {"b"}
    )
    assert change.describe() == "no backend changes"


LEAVES = (
    "b.is_deepep()",
    "b.is_mori()",
    "b.is_deepep_v2()",
    "b.is_mori_epv2()",  # a narrowing: its body reads an environment flag
    "x0",
    "x1",
    "self.x2",
    "not x0",
)
expressions = st.recursive(
    st.sampled_from(LEAVES),
    lambda inner: st.builds(
        lambda op, parts, negate: ("not " if negate else "") + f"({f' {op} '.join(parts)})",
        st.sampled_from(["and", "or"]),
        st.lists(inner, min_size=2, max_size=4),
        st.booleans(),
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=expressions, after=expressions)
def test_the_change_past_the_free_operands_tried_one_by_one_is_the_same(
    scope_and_universe, before: str, after: str
) -> None:
    """Past MAX_FREE free operands, each side is folded over its backend terms instead of
    trying every setting of them: the same change, computed without trying the settings of
    the operands only one side reads."""
    scope, universe = scope_and_universe
    tried = compute_change(scope, universe, before, after, {"b"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flips, "MAX_FREE", 0)
        folded = compute_change(scope, universe, before, after, {"b"})
    assert folded == tried


@pytest.fixture(scope="module")
def scope_and_universe(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return loaded_scope(tmp_path_factory.mktemp("scope"))


# -- the command line --------------------------------------------------------------------------
def test_cli_fix_exits_0_when_everything_found_was_fixed(tmp_path: Path, runner: CliRunner) -> None:
    root = tree_with(tmp_path, IMPORT + DRIFTING)
    result = runner.invoke(main, ["--no-cache", "--fix", "--unsafe-fixes", str(root / EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert (root / EXAMPLE).read_text() == IMPORT + FIXED
    assert result.stderr.splitlines()[0] == (
        f"{EXAMPLE}:5: fixed DC001 (minimal): False -> True for deepep_v2, mooncake, pplx" + UNSAFE
    )


def test_cli_fix_exits_1_when_a_refused_finding_remains(tmp_path: Path, runner: CliRunner) -> None:
    snippet = "def f(server_args):\n    return server_args.moe_a2a_backend in ('deepep', 'mori')\n"
    root = tree_with(tmp_path, IMPORT + snippet)
    result = runner.invoke(
        main,
        ["--no-cache", "--fix", "--unsafe-fixes", "--fix-style", "helper", str(root / EXAMPLE)],
    )
    assert result.exit_code == 1, result.output
    assert (root / EXAMPLE).read_text() == IMPORT + snippet
    assert result.stdout.startswith(f"{EXAMPLE}:5:12: DC003 ")


def test_cli_diff_prints_only_the_patch_on_stdout_and_the_flips_on_stderr(
    tmp_path: Path, runner: CliRunner
) -> None:
    root = tree_with(tmp_path, IMPORT + DRIFTING)
    result = runner.invoke(main, ["--no-cache", "--diff", "--unsafe-fixes", str(root / EXAMPLE)])
    assert result.exit_code == 1
    assert result.stdout == (
        f"--- a/{EXAMPLE}\n"
        f"+++ b/{EXAMPLE}\n"
        "@@ -2,4 +2,10 @@\n"
        " \n"
        " \n"
        " def f():\n"
        "-    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
        + "".join(f"+{line}\n" for line in FIXED.splitlines()[1:])
    )
    assert (
        f"{EXAMPLE}:5: would fix DC001 (minimal): False -> True for deepep_v2, mooncake, pplx"
        + UNSAFE
        in result.stderr
    )
    assert (root / EXAMPLE).read_text() == IMPORT + DRIFTING


def test_cli_json_carries_the_fix_object(tmp_path: Path, runner: CliRunner) -> None:
    root = tree_with(tmp_path, IMPORT + DRIFTING)
    result = runner.invoke(
        main, ["--no-cache", "--format", "json", "--unsafe-fixes", str(root / EXAMPLE)]
    )
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["fix"] == {
        "style": "minimal",
        "replacement": f"(\n        {FIXED_CHAIN}\n    )",
        "flips": ["deepep_v2", "mooncake", "pplx"],
        "held_back": [],
        "members": [
            {"member": m, "applicability": "unsafe", "reason": "no same-role site lists it"}
            for m in ("deepep_v2", "mooncake", "pplx")
        ],
        "change": "False -> True for deepep_v2, mooncake, pplx",
        "span": {"line": 5, "col": 12, "end_line": 5, "end_col": 80},
        "import": None,
    }
