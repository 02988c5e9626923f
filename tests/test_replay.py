"""A repeated read-only check is answered from the record of the previous one while none of
its inputs changed (driftcheck.replay), byte for byte, without importing the engine; any
change to a file it read or to a directory it walked runs the check again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODEL = "sglang/srt/models/dense_like.py"
DRIFT = (
    b"\n\ndef _late() -> bool:\n"
    b"    b = get_moe_a2a_backend()\n"
    b"    return b.is_deepep() or b.is_mori()\n"
)


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory of records of this test alone; stamps of files just written count."""
    directory = tmp_path / "runs"
    monkeypatch.setenv("DRIFTCHECK_RUNS_DIR", str(directory))
    monkeypatch.setenv("DRIFTCHECK_RACY_MS", "0")
    return directory


def driftcheck(
    tree: Path, *args: str, importtime: bool = False
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "driftcheck"]
    return subprocess.run([*command, *args], cwd=tree, capture_output=True, text=True, check=False)


def imported(result: subprocess.CompletedProcess[str]) -> set[str]:
    """The modules a ``-X importtime`` run imported."""
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }


def output(result: subprocess.CompletedProcess[str]) -> tuple[str, list[str], int]:
    lines = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    return result.stdout, lines, result.returncode


def test_a_repeated_check_is_the_recorded_output_without_the_engine(
    sglang_like: Path, records: Path
) -> None:
    first = driftcheck(sglang_like, ".")
    second = driftcheck(sglang_like, ".", importtime=True)
    assert first.returncode == 1
    assert output(second) == output(first)
    assert "driftcheck.replay" in imported(second)
    assert "driftcheck.engine" not in imported(second)
    assert len(list(records.iterdir())) == 1


def test_a_changed_file_runs_the_check_again(sglang_like: Path, records: Path) -> None:
    first = driftcheck(sglang_like, ".")
    model = sglang_like / MODEL
    model.write_bytes(model.read_bytes() + DRIFT)
    second = driftcheck(sglang_like, ".", importtime=True)
    assert "driftcheck.engine" in imported(second)
    assert len(second.stdout.splitlines()) == len(first.stdout.splitlines()) + 1


def test_a_file_added_to_a_walked_directory_runs_the_check_again(
    sglang_like: Path, records: Path
) -> None:
    first = driftcheck(sglang_like, ".")
    (sglang_like / "sglang/srt/models/late_like.py").write_bytes(
        b"from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n" + DRIFT
    )
    second = driftcheck(sglang_like, ".")
    assert len(second.stdout.splitlines()) == len(first.stdout.splitlines()) + 1


def test_a_configuration_created_above_the_tree_runs_the_check_again(
    sglang_like: Path, records: Path
) -> None:
    driftcheck(sglang_like, ".")
    (sglang_like / "pyproject.toml").write_text('[tool.driftcheck]\nselect = ["DC002"]\n')
    second = driftcheck(sglang_like, ".", importtime=True)
    assert "driftcheck.engine" in imported(second)
    assert second.returncode == 0


def test_fix_and_no_cache_are_never_answered_from_a_record(
    sglang_like: Path, records: Path
) -> None:
    driftcheck(sglang_like, ".")
    assert "driftcheck.engine" in imported(
        driftcheck(sglang_like, "--no-cache", ".", importtime=True)
    )
    fixed = driftcheck(sglang_like, "--fix", "--unsafe-fixes", ".")
    assert fixed.returncode == 0
    assert driftcheck(sglang_like, ".").returncode == 0


def test_a_damaged_record_is_ignored(sglang_like: Path, records: Path) -> None:
    first = driftcheck(sglang_like, ".")
    [record] = records.iterdir()
    data = bytearray(record.read_bytes())
    data[-3] ^= 0xFF
    record.write_bytes(bytes(data))
    second = driftcheck(sglang_like, ".", importtime=True)
    assert "driftcheck.engine" in imported(second)
    assert output(second) == output(first)


def test_an_input_changed_within_the_clock_granularity_makes_no_record(
    sglang_like: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files written a moment ago (the copied fixture tree) are racy: no record."""
    monkeypatch.setenv("DRIFTCHECK_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("DRIFTCHECK_RACY_MS", raising=False)
    driftcheck(sglang_like, ".")
    assert not (tmp_path / "runs").exists() or not os.listdir(tmp_path / "runs")


def test_a_configuration_fixed_after_a_failing_run_is_read_again(
    sglang_like: Path, records: Path
) -> None:
    """The failing run read the tree's own configuration: the record is keyed by it, and by
    its absence once it is removed (run from above the tree, as the issue did)."""
    config = sglang_like / "pyproject.toml"
    config.write_text('[tool.driftcheck]\nselect = ["DC999"]\n')
    failed = driftcheck(sglang_like.parent, sglang_like.name)
    assert failed.returncode == 2
    assert failed.stderr.startswith(
        f"{sglang_like.name}/pyproject.toml:2: error: [tool.driftcheck] select: unknown rule "
        "code or prefix 'DC999'"
    )
    config.write_text('[tool.driftcheck]\nselect = ["DC005"]\n')
    assert driftcheck(sglang_like.parent, sglang_like.name).returncode == 0
    config.unlink()
    removed = driftcheck(sglang_like.parent, sglang_like.name)
    assert removed.returncode == 1
    assert "pyproject.toml" not in removed.stderr
