"""Roles come from what a call resolves to, not from its name: a method of the module's own
logging class called ``combine``, or fed ``reduce_results``, is no role operation; the same
names on the runtime's objects (which the module does not define) are."""

from __future__ import annotations

import shutil
from pathlib import Path

from driftcheck.runtime_verify.proof import prove

from driftcheck.engine import check

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "block_like"

STATS = '''
class MoEStats:
    """Per-layer counters for the metrics endpoint."""

    def __init__(self):
        self.seen = []

    def combine(self, topk_output):
        self.seen.append(len(topk_output))

    def record(self, hidden_states, reduce_results=True):
        self.seen.append((hidden_states.shape, reduce_results))
'''

BLOCK = """from torch import nn

from sglang.srt.layers.moe.token_dispatcher import make_dispatcher
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.stats = {built}

    def forward(self, hidden_states, topk_output):
        b = get_moe_a2a_backend()
        # DeepEP-family backends
        if b.is_deepep() or b.is_mooncake():
            self.stats.combine(topk_output)
        return hidden_states

    def account(self, hidden_states):
        b = get_moe_a2a_backend()
        self.stats.record(hidden_states, reduce_results=not (b.is_deepep() or b.is_mooncake()))

{stats}"""


def operations(tmp_path: Path, stats: str, built: str) -> dict[int, list[str]]:
    """Each site's line and the role operations its value reaches."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE / "sglang/srt/layers", tree / "sglang/srt/layers")
    (tree / "sglang/srt/models").mkdir(parents=True)
    (tree / "sglang/srt/models/stats_block.py").write_text(BLOCK.format(stats=stats, built=built))
    result = check([tree], use_cache=False, select=["DC001"])
    found = {}
    for finding in result.findings:
        site = prove(result, finding).site
        assert site is not None
        found[finding.span.line] = sorted(f"{r.operation} {r.key}" for r in site.role.operations)
    return found


def test_a_logging_call_named_like_a_role_operation_is_not_one(tmp_path: Path) -> None:
    assert operations(tmp_path, STATS, "MoEStats()") == {15: [], 21: []}


def test_the_same_calls_on_an_object_the_module_does_not_define_are(tmp_path: Path) -> None:
    """The negative control: the runtime's dispatcher, which the pack's names describe."""
    assert operations(tmp_path, "", "make_dispatcher()") == {
        15: ["combine call:combine"],
        21: ["tp-reduce kw:reduce_results"],
    }


def test_a_keyword_the_modules_own_class_passes_on_to_a_role_operation_is_one(
    tmp_path: Path,
) -> None:
    """``reduce_results`` handed to the module's own class that builds a row-parallel layer
    with it is the TP reduce."""
    passing = STATS.replace(
        "        self.seen.append((hidden_states.shape, reduce_results))",
        "        self.down = RowParallelLinear(8, 8, reduce_results=reduce_results)",
    )
    assert operations(tmp_path, passing, "MoEStats()")[21] == ["tp-reduce kw:reduce_results"]
