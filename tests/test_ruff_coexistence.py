"""driftcheck's suppressions live beside ruff (SGLang runs ruff in pre-commit).

The comments are ``# driftcheck: ...``, not ``# noqa``, so ruff's RUF100 (unused noqa) and
RUF102 (invalid noqa code) neither delete nor flag them. These tests run the real ruff with
``--fix`` on ``fixtures/ruff_coexistence`` and compare bytes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driftcheck.engine import check
from driftcheck.suppressions import parse_suppressions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SUPPRESSED = FIXTURES / "ruff_coexistence" / "suppressed_model.py"
NOQA_NEIGHBOURS = FIXTURES / "ruff_coexistence" / "noqa_neighbours.py"
MODELS = Path("sglang/srt/models")

RUFF_FIXES = [
    pytest.param(["--select", "RUF100,RUF102"], id="RUF100,RUF102"),
    pytest.param(["--preview", "--select", "RUF"], id="all-RUF-preview"),
]


def ruff_fix(path: Path, *select: str) -> subprocess.CompletedProcess[str]:
    """``ruff check --fix`` on one file, ignoring any configuration around it."""
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--output-format", "concise", "--fix", *select, str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def placed(tree: Path, fixture: Path) -> Path:
    """``fixture`` copied into the fixture tree's models package."""
    target = tree / MODELS / fixture.name
    shutil.copyfile(fixture, target)
    return target


def driftcheck_comments(source: str) -> list[tuple[int, str, str, tuple[str, ...], str]]:
    """(line, the ``# driftcheck: ...`` text, verb, items, reason) for each suppression."""
    return [
        (s.line, s.text[s.text.rindex("# driftcheck:") :], s.verb, s.items, s.reason)
        for s in parse_suppressions(source)
    ]


@pytest.mark.parametrize("select", RUFF_FIXES)
def test_ruff_leaves_driftcheck_suppressions_byte_for_byte(
    tmp_path: Path, select: list[str]
) -> None:
    target = tmp_path / SUPPRESSED.name
    shutil.copyfile(SUPPRESSED, target)
    outcome = ruff_fix(target, *select)
    assert (outcome.returncode, outcome.stdout) == (0, "All checks passed!\n"), (
        outcome.stdout + outcome.stderr
    )
    assert target.read_bytes() == SUPPRESSED.read_bytes()


def test_every_fixture_suppression_is_in_use(sglang_like: Path) -> None:
    """The fixture is meaningful: each comment silences a real finding (no DC004)."""
    result = check([placed(sglang_like, SUPPRESSED)], use_cache=False)
    assert result.findings == []
    assert len(parse_suppressions(SUPPRESSED.read_text(encoding="utf-8"))) == 3


def test_removing_a_neighbouring_noqa_keeps_the_driftcheck_comment(tmp_path: Path) -> None:
    """RUF100 deletes an unused ``# noqa: E501`` on the same line; the driftcheck part stays."""
    target = tmp_path / NOQA_NEIGHBOURS.name
    shutil.copyfile(NOQA_NEIGHBOURS, target)
    ruff_fix(target, "--select", "RUF100,RUF102")
    after = target.read_text(encoding="utf-8")
    assert "# noqa" not in after
    assert driftcheck_comments(after) == driftcheck_comments(
        NOQA_NEIGHBOURS.read_text(encoding="utf-8")
    )


def test_suppressions_still_work_after_ruff(sglang_like: Path) -> None:
    target = placed(sglang_like, NOQA_NEIGHBOURS)
    ruff_fix(target, "--select", "RUF100,RUF102")
    result = check([target], use_cache=False)
    assert (result.findings, result.problems) == ([], [])


def test_a_noqa_spelling_would_be_deleted_by_ruff(tmp_path: Path) -> None:
    """Why driftcheck has its own syntax: ``# noqa: DC001`` is an invalid code to ruff."""
    target = tmp_path / "noqa_spelling.py"
    target.write_text(
        "def f(b):\n    return b.is_deepep() or b.is_mori()  # noqa: DC001\n", encoding="utf-8"
    )
    outcome = ruff_fix(target, "--select", "RUF100,RUF102")
    assert "Found 1 error (1 fixed, 0 remaining)." in outcome.stdout
    assert (
        target.read_text(encoding="utf-8") == "def f(b):\n    return b.is_deepep() or b.is_mori()\n"
    )
