"""A chain of 10,000 or 100,000 operands is reported in every format and fixed: libcst, which
nests such a chain as deep as it is long, runs in a thread whose stack fits it
(driftcheck.fix.deepstack); an expression deeper than that stack holds has its one fix
refused with the reason, and the rest of the report stands. Each run is a process of its own:
a crash would be an exit code here, not the end of the test session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rule_harness import FIXTURES, driftcheck_process

from driftcheck.engine import check
from driftcheck.fix import deepstack
from driftcheck.fix.apply import attach_fixes

DEEP = "sglang/srt/models/deep.py"
FINDING = (
    f"{DEEP}:6:12: DC001 uses_a2a enumerates 2 of 5 DeepEP-family backends; missing "
    "deepep_v2 (held back), mori (held back), pplx (held back: no same-role site lists them) "
    "(canonical: "
    "is_deepep_class_backend)"
)
# the fixture's sites play roles of their own: every member is held back, and these tests
# fix what --unsafe-fixes adds (every missing member)
UNSAFE = "--unsafe-fixes"
FIXED_NOTE = (
    f"{DEEP}:6: fixed DC001 (minimal): False -> True for deepep_v2, mori, pplx; unsafe: "
    "deepep_v2, mori, pplx (no same-role site lists them)"
)


def chain(operands: int) -> str:
    """``b.is_deepep() or b.is_mooncake() or x0 or ... `` with ``operands`` operands."""
    rest = " or ".join(f"x{index}" for index in range(operands - 2))
    return f"b.is_deepep() or b.is_mooncake() or {rest}"


def deep_tree(into: Path, operands: int) -> Path:
    """The fixture tree with a model file whose function returns a chain of ``operands``."""
    shutil.copytree(FIXTURES / "sglang_like", into)
    (into / DEEP).write_text(
        "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
        f"def uses_a2a():\n    b = get_moe_a2a_backend()\n    return {chain(operands)}\n"
    )
    return into


@pytest.fixture(scope="module")
def ten_thousand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return deep_tree(tmp_path_factory.mktemp("deep") / "tree", 10_000)


def test_text_and_github_reports_name_the_site(ten_thousand: Path) -> None:
    text = driftcheck_process(ten_thousand, "--no-cache", ".")
    github = driftcheck_process(ten_thousand, "--no-cache", "--format", "github", ".")
    assert (text.returncode, github.returncode) == (1, 1)
    assert FINDING in text.stdout.splitlines()
    assert (
        f"::error file={DEEP},line=6,col=12,endLine=6,endColumn=88916,title=DC001::"
        in github.stdout
    )


def test_the_json_report_carries_the_fix(ten_thousand: Path) -> None:
    done = driftcheck_process(ten_thousand, "--no-cache", UNSAFE, "--format", "json", ".")
    assert done.returncode == 1, done.stderr
    [finding] = [f for f in json.loads(done.stdout)["findings"] if f["path"] == DEEP]
    assert finding["fix"]["change"] == "False -> True for deepep_v2, mori, pplx"
    assert finding["fix"]["replacement"].startswith(  # wrapped as ruff format wraps it
        "(\n        b.is_deepep()\n        or b.is_deepep_v2()\n        or b.is_mooncake()\n"
        "        or b.is_mori()\n        or b.is_pplx()\n        or x0\n        or x1\n"
    )


def test_the_sarif_report_carries_the_fix(ten_thousand: Path) -> None:
    done = driftcheck_process(ten_thousand, "--no-cache", UNSAFE, "--format", "sarif", ".")
    assert done.returncode == 1, done.stderr
    results = json.loads(done.stdout)["runs"][0]["results"]
    [result] = [r for r in results if DEEP in json.dumps(r["locations"])]
    assert len(result["fixes"]) == 1


def test_diff_shows_the_rewrite(ten_thousand: Path) -> None:
    done = driftcheck_process(ten_thousand, "--no-cache", UNSAFE, "--diff", ".")
    assert done.returncode == 1, done.stderr
    assert f"+++ b/{DEEP}" in done.stdout
    assert FIXED_NOTE.replace(": fixed ", ": would fix ") in done.stderr.splitlines()


def test_verify_reports_every_site(ten_thousand: Path) -> None:
    """The chain's truth table has more settings of its free operands than it tries: that
    site is unproven, the others are proven."""
    done = driftcheck_process(ten_thousand, "verify", UNSAFE, ".")
    assert done.returncode == 1, done.stderr
    assert (
        f"{DEEP}:6 uses_a2a (DC001): unproven\n"
        "  outside the grammar: more than 256 settings of narrowings and free inputs\n"
    ) in done.stdout
    assert done.stderr == "3 sites verified: 2 proven, 1 unproven.\n"


@pytest.mark.parametrize("operands", [10_000, 100_000])
def test_fix_rewrites_the_chain(tmp_path: Path, operands: int) -> None:
    tree = deep_tree(tmp_path / "tree", operands)
    done = driftcheck_process(tree, "--no-cache", "--fix", UNSAFE, ".")
    assert done.returncode == 0, done.stderr
    assert FIXED_NOTE in done.stderr.splitlines()
    fixed = chain(operands).replace(
        "b.is_mooncake()", "b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or b.is_pplx()"
    )
    wrapped = fixed.replace(" or ", "\n        or ")  # past 88 columns, as ruff format wraps it
    assert (tree / DEEP).read_text().endswith(f"    return (\n        {wrapped}\n    )\n")
    assert driftcheck_process(tree, "--no-cache", ".").returncode == 0


def test_a_chain_deeper_than_the_stack_holds_has_its_fix_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stack here is made too small for the chain: libcst never sees it, and the other
    findings of the run are fixed."""
    tree = deep_tree(tmp_path / "tree", 10_000)
    monkeypatch.setattr(deepstack, "stack_for", lambda _levels: 16 * deepstack.MIB)
    result = check([tree], use_cache=False)
    findings = {f.path: f for f in attach_fixes(result, result.findings, "minimal", unsafe=True)}
    assert findings[DEEP].fix is None
    assert findings[DEEP].fix_refusal == (
        "cannot re-read the expression on its own: nested 10004 levels deep, more than "
        "libcst's parser can take in a 16 MiB stack"
    )
    assert all(f.fix is not None for path, f in findings.items() if path != DEEP)
