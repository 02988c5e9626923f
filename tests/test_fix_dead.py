"""A dead copy's fix deletes it (issue 30, item 2): a site whose only effect is to set
attributes nothing reads is deleted, with the receiver only it read, by plain ``--fix``; it is
never widened, and a shape that cannot be deleted cleanly is refused with the finding's own
advice."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner
from rule_harness import EXAMPLE_PATH, FIXTURES

from driftcheck.cli import main

IMPORT = "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
INIT = (
    "class Block:\n"
    "    def __init__(self, config):\n"
    "        self.hidden = config.hidden\n"
    "        b = get_moe_a2a_backend()\n"
    "\n"
    "        if b.is_deepep() or b.is_mooncake():\n"
    "            self.ep_size = 8\n"
    "            self.top_k = config.top_k\n"
    "        else:\n"
    "            self.ep_size = 1\n"
    "\n"
    "        self.dropout = config.dropout\n"
    "\n"
)
FORWARD = "    def forward(self, x):\n        return x * self.hidden + self.dropout\n"


def tree(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    (root / EXAMPLE_PATH).write_text(IMPORT + text)
    return root / EXAMPLE_PATH


def test_a_copy_nothing_reads_is_deleted_with_the_receiver_only_it_read(
    tmp_path: Path, runner: CliRunner
) -> None:
    path = tree(tmp_path, INIT + FORWARD)
    result = runner.invoke(main, ["--no-cache", "--fix", str(path)])
    assert result.exit_code == 0, result.output
    assert (
        path.read_text()
        == IMPORT
        + (
            "class Block:\n"
            "    def __init__(self, config):\n"
            "        self.hidden = config.hidden\n"
            "\n"
            "        self.dropout = config.dropout\n"
            "\n"
        )
        + FORWARD
    )
    assert result.stderr == (
        f"{EXAMPLE_PATH}:9: fixed DC001 (delete): deleted (nothing reads ep_size, top_k)\n"
        "Fixed 1 finding in 1 file; 0 remain.\n"
    )


def test_a_copy_something_reads_is_widened_not_deleted(tmp_path: Path, runner: CliRunner) -> None:
    """Negative control: ``forward`` reads ``top_k``; the copy decides something."""
    forward = "    def forward(self, x):\n        return x * self.top_k + self.dropout\n"
    path = tree(tmp_path, INIT + forward)
    result = runner.invoke(main, ["--no-cache", "--fix", "--unsafe-fixes", str(path)])
    assert result.exit_code == 0, result.output
    text = path.read_text()
    assert "self.ep_size = 8" in text and "b.is_deepep()\n" in text
    assert "(minimal)" in result.stderr


def test_a_dead_copy_that_does_more_than_set_is_refused_never_widened(
    tmp_path: Path, runner: CliRunner
) -> None:
    """An ``elif`` (a test of its own) is left to a person, with the finding's advice; the
    file is not touched, not even by ``--unsafe-fixes``."""
    text = INIT.replace("        else:\n", "        elif config.other:\n") + FORWARD
    path = tree(tmp_path, text)
    result = runner.invoke(main, ["--no-cache", "--fix", "--unsafe-fixes", str(path)])
    assert result.exit_code == 0, result.output  # the finding is a warning
    assert path.read_text() == IMPORT + text
    assert result.stderr.splitlines()[0] == (
        f"{EXAMPLE_PATH}:9: not fixed DC001: nothing reads ep_size, top_k: delete it rather "
        "than widen it (it does more than set them: delete it by hand)"
    )
