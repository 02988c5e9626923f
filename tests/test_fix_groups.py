"""Sites whose values meet in one block are fixed as one group (issue 30, item 1): the
verifier's grouping (:mod:`driftcheck.groups`: sites of one file and family whose values reach
the pack's role operations), read by ``--fix`` too. A group is never left half-fixed, and the
summary counts the groups it fixed."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner
from rule_harness import EXAMPLE_PATH, FIXTURES

from driftcheck.cli import main

IMPORT = "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
PLAIN = "get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mooncake()"
# parentheses around every operand: no plain `or` to copy, so its fix is refused
WRAPPED = "(get_moe_a2a_backend().is_deepep()) or (get_moe_a2a_backend().is_mooncake())"
REFUSED = (
    "no separator between the operands is a plain 'or' to copy (parentheses or line "
    "continuations around every one)"
)


def block(second: str) -> str:
    """Two methods of one block switching its forward on the family: one group."""
    return (
        IMPORT + "class Block:\n"
        "    def forward(self, x):\n"
        f"        if {PLAIN}:\n"
        "            return self.forward_deepep(x)\n"
        "        return self.forward_normal(x)\n"
        "\n"
        "    def prefill(self, x):\n"
        f"        if {second}:\n"
        "            return self.forward_deepep(x)\n"
        "        return self.forward_normal(x)\n"
    )


def tree(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    (root / EXAMPLE_PATH).write_text(text)
    return root / EXAMPLE_PATH


def test_a_group_with_a_site_that_cannot_be_fixed_is_not_fixed_at_all(
    tmp_path: Path, runner: CliRunner
) -> None:
    path = tree(tmp_path, block(WRAPPED))
    result = runner.invoke(main, ["--no-cache", "--fix", "--unsafe-fixes", str(path)])
    assert result.exit_code == 1
    assert path.read_text() == block(WRAPPED)
    assert result.stderr.splitlines()[:2] == [
        f"{EXAMPLE_PATH}:6: not fixed DC001: fixed together with line 11 of its block, which "
        f"is not fixed: {REFUSED}",
        f"{EXAMPLE_PATH}:11: not fixed DC001: {REFUSED}",
    ]


def test_a_group_is_fixed_whole_and_counted_as_one(tmp_path: Path, runner: CliRunner) -> None:
    """Control of the test above: both sites can be fixed, so both are, as one group."""
    path = tree(tmp_path, block(PLAIN))
    result = runner.invoke(main, ["--no-cache", "--fix", "--unsafe-fixes", str(path)])
    assert result.exit_code == 0, result.output
    assert path.read_text().count("get_moe_a2a_backend().is_pplx()") == 2
    assert result.stderr.splitlines()[-1] == (
        "Fixed 2 findings in 1 file (2 of them in 1 block fixed as one); 0 remain."
    )
