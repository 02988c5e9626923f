"""Safe and held-back members (Ruff's safe and unsafe fixes, per member): `--fix` adds a member
that is latent or that a same-role site lists, `--unsafe-fixes` adds the held-back ones too,
and the finding names every missing member until it is fixed. On ``fixtures/sglang_like``:
``kimi_like.py`` misses deepep_v2 (latent: its architecture is not registered) and pplx (live,
and no site plays its role)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from rule_harness import FIXTURES

from driftcheck.cli import main
from driftcheck.engine import check
from driftcheck.fix.apply import apply_fixes, attach_fixes
from driftcheck.model import Applicability

KIMI = "sglang/srt/models/kimi_like.py"
LATENT = "latent (becomes live when KimiLikeForCausalLM is registered via register_deepep_v2_model)"
HELD = "no same-role site lists it"
LIST = (
    "        _a2a_backend.is_megamoe()\n"
    "        or _a2a_backend.is_flashinfer_megamoe()\n"
    "        or _a2a_backend.is_deepep()\n"
)
TAIL = (
    "        or _a2a_backend.is_mooncake()\n"
    "        or _a2a_backend.is_ascend_fuseep()\n"
    "        or _a2a_backend.is_mori()\n"
)
DEEPEP_V2 = "        or _a2a_backend.is_deepep_v2()\n"
PPLX = "        or _a2a_backend.is_pplx()\n"
FINDING_BEFORE = (
    f"{KIMI}:10:9: DC001 _uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing "
    f"deepep_v2 (latent), pplx (held back: {HELD}) (canonical: is_deepep_class_backend)"
)
FINDING_AFTER_SAFE_FIX = (
    f"{KIMI}:10:9: DC001 _uses_ep_a2a enumerates 4 of 5 DeepEP-family backends; missing "
    f"pplx (held back: {HELD}) (canonical: is_deepep_class_backend)"
)
SAFE_NOTE = (
    f"{KIMI}:10: fixed DC001 (minimal): False -> True for deepep_v2; held back: pplx ({HELD}): "
    "--unsafe-fixes adds it"
)
MODEL = "sglang/srt/models/example.py"
SIBLING = "sglang/srt/models/sibling.py"
IMPORT = "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"


def block(attribute: str, chain: str) -> str:
    """A model block whose ``attribute`` holds ``chain`` and whose forward reads it."""
    return (
        IMPORT + "class Block:\n"
        "    def __init__(self):\n"
        "        b = get_moe_a2a_backend()\n"
        f"        self.{attribute} = {chain}\n\n"
        "    def forward(self, x):\n"
        f"        return -x if self.{attribute} else x\n"
    )


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """The sglang-like fixture with ``files`` (path -> text) written into it."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    for rel, text in files.items():
        (root / rel).write_text(text)
    return root


def applicability(root: Path, rel: str) -> tuple[Applicability, ...]:
    """The applicability of the one finding in ``rel``."""
    (finding,) = [f for f in check([root], use_cache=False).findings if f.path == rel]
    return finding.applicability


# -- per member ------------------------------------------------------------------------------
def test_a_latent_member_is_safe_and_a_live_one_no_same_role_site_lists_is_held_back(
    sglang_like: Path,
) -> None:
    assert applicability(sglang_like, KIMI) == (
        Applicability("deepep_v2", True, LATENT),
        Applicability("pplx", False, HELD),
    )


def test_a_member_a_same_role_site_lists_is_safe(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            MODEL: block("_use_a2a", "b.is_deepep() or b.is_mooncake()"),
            SIBLING: block("_use_a2a", "b.is_deepep() or b.is_mori()"),
        },
    )
    assert applicability(root, MODEL) == (
        Applicability("deepep_v2", False, HELD),
        Applicability("mori", True, "same-role site sibling.py:7 (Block.__init__) lists it"),
        Applicability("pplx", False, HELD),
    )


def test_a_site_of_another_role_is_no_evidence(tmp_path: Path) -> None:
    """Negative control of the test above: the same sibling, its attribute renamed."""
    root = tree(
        tmp_path,
        {
            MODEL: block("_use_a2a", "b.is_deepep() or b.is_mooncake()"),
            SIBLING: block("_other_path", "b.is_deepep() or b.is_mori()"),
        },
    )
    assert [a.safe for a in applicability(root, MODEL)] == [False, False, False]


def test_a_member_latent_in_the_same_role_site_file_is_no_evidence(tmp_path: Path) -> None:
    """A site may list a member its file cannot run (the latent wiring a safe fix adds): that
    is no evidence the role runs with it, so a safe fix never makes the next run's fix wider."""
    sibling = block("_use_a2a", "b.is_deepep() or b.is_deepep_v2()")
    sibling += "\n\nclass SiblingForCausalLM:\n    pass\n\n\nEntryClass = SiblingForCausalLM\n"
    root = tree(
        tmp_path,
        {MODEL: block("_use_a2a", "b.is_deepep() or b.is_mooncake()"), SIBLING: sibling},
    )
    assert applicability(root, MODEL)[0] == Applicability("deepep_v2", False, HELD)


def test_a_member_live_in_the_same_role_site_file_is_evidence(tmp_path: Path) -> None:
    """Control of the test above: the same sibling serving no architecture, where the
    registry gates nothing."""
    root = tree(
        tmp_path,
        {
            MODEL: block("_use_a2a", "b.is_deepep() or b.is_mooncake()"),
            SIBLING: block("_use_a2a", "b.is_deepep() or b.is_deepep_v2()"),
        },
    )
    assert applicability(root, MODEL)[0] == Applicability(
        "deepep_v2", True, "same-role site sibling.py:7 (Block.__init__) lists it"
    )


# -- the command line ------------------------------------------------------------------------
def test_fix_adds_the_safe_members_and_exits_1_while_a_held_back_one_remains(
    sglang_like: Path, runner: CliRunner
) -> None:
    result = runner.invoke(main, ["--no-cache", "--fix", str(sglang_like / KIMI)])
    assert result.exit_code == 1
    assert LIST + DEEPEP_V2 + TAIL + "    )\n" in (sglang_like / KIMI).read_text()
    assert result.stdout == FINDING_AFTER_SAFE_FIX + "\n"
    assert result.stderr == (
        f"{SAFE_NOTE}\nFixed 1 finding in 1 file; 1 remains "
        "(1 with held-back members: --unsafe-fixes adds them).\n"
    )


def test_a_second_fix_run_writes_nothing_and_says_what_it_holds_back(
    sglang_like: Path, runner: CliRunner
) -> None:
    runner.invoke(main, ["--no-cache", "--fix", str(sglang_like / KIMI)])
    written = (sglang_like / KIMI).read_text()
    again = runner.invoke(main, ["--no-cache", "--fix", str(sglang_like / KIMI)])
    assert again.exit_code == 1
    assert (sglang_like / KIMI).read_text() == written
    assert again.stderr == (
        f"{KIMI}:10: not fixed DC001: held back: pplx ({HELD}): --unsafe-fixes adds it\n"
        "Found 1 finding (1 error) in 1 file.\n"
        "1 fix holds back members: --unsafe-fixes adds them.\n"
    )


def test_unsafe_fixes_adds_the_held_back_members_too(sglang_like: Path, runner: CliRunner) -> None:
    result = runner.invoke(main, ["--no-cache", "--fix", "--unsafe-fixes", str(sglang_like / KIMI)])
    assert result.exit_code == 0, result.output
    assert LIST + DEEPEP_V2 + TAIL + PPLX + "    )\n" in (sglang_like / KIMI).read_text()
    assert result.stderr == (
        f"{KIMI}:10: fixed DC001 (minimal): False -> True for deepep_v2, pplx; "
        f"unsafe: pplx ({HELD})\nFixed 1 finding in 1 file; 0 remain.\n"
    )


def test_diff_counts_what_remains_as_the_same_fix_does(
    sglang_like: Path, runner: CliRunner
) -> None:
    """``--diff`` says what ``--fix`` would leave: here nothing (issue 31: it said "1 remains"
    where the same ``--fix`` said "0 remain")."""
    shown = runner.invoke(main, ["--no-cache", "--diff", "--unsafe-fixes", str(sglang_like / KIMI)])
    fixed = runner.invoke(main, ["--no-cache", "--fix", "--unsafe-fixes", str(sglang_like / KIMI)])
    assert shown.stderr.splitlines()[-1] == (
        "Would fix 1 finding in 1 file (nothing written); 0 remain."
    )
    assert fixed.stderr.splitlines()[-1] == "Fixed 1 finding in 1 file; 0 remain."
    assert shown.exit_code == 1  # nothing was written: the finding still stands


def test_diff_shows_the_safe_members_and_names_the_held_back_ones(
    sglang_like: Path, runner: CliRunner
) -> None:
    result = runner.invoke(main, ["--no-cache", "--diff", str(sglang_like / KIMI)])
    assert result.exit_code == 1
    assert result.stdout == (
        f"--- a/{KIMI}\n+++ b/{KIMI}\n@@ -10,6 +10,7 @@\n"
        + "".join(f" {line}\n" for line in LIST.splitlines())
        + f"+{DEEPEP_V2}"
        + "".join(f" {line}\n" for line in TAIL.splitlines())
    )
    assert result.stderr == (
        f"{SAFE_NOTE.replace(': fixed', ': would fix')}\n{FINDING_BEFORE}\n"
        "Would fix 1 finding in 1 file (nothing written); 1 remains "
        "(1 with held-back members: --unsafe-fixes adds them).\n"
    )


def test_the_helper_style_applies_only_with_unsafe_fixes_when_a_member_is_held_back(
    sglang_like: Path, runner: CliRunner
) -> None:
    before = (sglang_like / KIMI).read_text()
    held = runner.invoke(
        main, ["--no-cache", "--fix", "--fix-style", "helper", str(sglang_like / KIMI)]
    )
    assert held.exit_code == 1
    assert (sglang_like / KIMI).read_text() == before
    assert held.stdout == FINDING_BEFORE + "\n"
    assert held.stderr.splitlines()[0] == (
        f"{KIMI}:10: not fixed DC001: the helper style adds every member at once, and pplx "
        f"({HELD}) is held back: applied only with --unsafe-fixes"
    )
    applied = runner.invoke(
        main,
        ["--no-cache", "--fix", "--fix-style", "helper", "--unsafe-fixes", str(sglang_like / KIMI)],
    )
    assert applied.exit_code == 0, applied.output
    assert "        is_deepep_class_backend()\n" in (sglang_like / KIMI).read_text()


# -- JSON and SARIF --------------------------------------------------------------------------
def test_json_fix_names_what_it_flips_and_what_it_holds_back(
    sglang_like: Path, runner: CliRunner
) -> None:
    result = runner.invoke(main, ["--no-cache", "--format", "json", str(sglang_like / KIMI)])
    (finding,) = json.loads(result.stdout)["findings"]
    fix = finding["fix"]
    assert (fix["flips"], fix["held_back"], fix["members"]) == (
        ["deepep_v2"],
        [{"member": "pplx", "reason": HELD}],
        [
            {"member": "deepep_v2", "applicability": "safe", "reason": LATENT},
            {"member": "pplx", "applicability": "unsafe", "reason": HELD},
        ],
    )
    assert finding["missing"] == ["deepep_v2", "pplx"]


def test_a_fix_that_may_add_nothing_flips_nothing_and_leaves_the_file(tmp_path: Path) -> None:
    """Every member held back: the fix is the site's own text, SARIF offers no edit."""
    from driftcheck.report.sarif import render_sarif

    root = tree(tmp_path, {MODEL: block("_use_a2a", "b.is_deepep() or b.is_mooncake()")})
    result = check([root / MODEL], use_cache=False)
    (finding,) = attach_fixes(result, result.findings, "minimal")
    assert finding.fix is not None
    assert (finding.fix.flips, finding.fix.replacement) == (
        (),
        "b.is_deepep() or b.is_mooncake()",
    )
    assert finding.fix.held_back == (("deepep_v2", HELD), ("mori", HELD), ("pplx", HELD))
    outcome = apply_fixes(result, [finding], write=True)
    assert (outcome.written, outcome.remaining) == ([], [finding])
    assert outcome.notes == [
        f"{MODEL}:7: not fixed DC001: held back: deepep_v2, mori, pplx "
        "(no same-role site lists them): --unsafe-fixes adds them"
    ]
    (sarif,) = json.loads(render_sarif(result, [finding]))["runs"][0]["results"]
    assert "fixes" not in sarif
    assert [h["member"] for h in sarif["properties"]["heldBack"]] == ["deepep_v2", "mori", "pplx"]


def test_a_fix_that_could_not_be_made_at_all_is_refused_not_held_back(tmp_path: Path) -> None:
    """Every member held back, and no fix possible even with --unsafe-fixes (no plain `or`
    to copy): the refusal is what the user needs to hear."""
    chain = "(b.is_deepep()) or (b.is_mooncake())"
    root = tree(tmp_path, {MODEL: block("_use_a2a", chain)})
    result = check([root / MODEL], use_cache=False)
    (finding,) = attach_fixes(result, result.findings, "minimal")
    assert [a.safe for a in finding.applicability] == [False, False, False]
    assert (finding.fix, finding.fix_refusal) == (
        None,
        "no separator between the operands is a plain 'or' to copy (parentheses or line "
        "continuations around every one)",
    )
