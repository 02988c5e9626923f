"""Ground truth: the real SGLang releases (downloaded once, sha256-pinned)."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftcheck.engine import check
from driftcheck.report.text import format_finding

pytestmark = pytest.mark.corpus
SNAPSHOTS = Path(__file__).parent / "snapshots"


def reviewed_snapshot(name: str) -> list[str]:
    lines = (SNAPSHOTS / name).read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def test_default_report_on_0_5_23_is_the_reviewed_snapshot(sglang_0_5_23: Path) -> None:
    result = check([sglang_0_5_23], use_cache=False)
    assert result.problems == []
    assert [format_finding(f, color=False) for f in result.findings] == reviewed_snapshot(
        "sglang-0.5.23.txt"
    )


def test_kimi_k3_uses_ep_a2a_on_0_5_23(sglang_0_5_23: Path) -> None:
    result = check([sglang_0_5_23 / "sglang/srt/models/kimi_k3.py"], use_cache=False)
    (finding,) = result.findings
    assert (finding.code, finding.symbol, finding.span.line) == ("DC001", "_uses_ep_a2a", 440)
    assert finding.missing == ("deepep_v2", "pplx")
    assert finding.extra == ("megamoe", "flashinfer_megamoe", "ascend_fuseep")
    assert finding.live == ("pplx",)
    assert set(finding.latent) == {"deepep_v2"}


def test_canonical_helper_itself_is_not_reported(sglang_0_5_23: Path) -> None:
    result = check([sglang_0_5_23 / "sglang/srt/layers/moe/utils.py"], use_cache=False)
    assert [f for f in result.findings if f.path.endswith("layers/moe/utils.py")] == []


def test_universe_is_read_from_the_release(sglang_0_5_23: Path) -> None:
    result = check([sglang_0_5_23 / "sglang/srt/models/kimi_k3.py"], use_cache=False)
    universe = result.universe
    assert universe is not None
    assert universe.families[0].members == ("deepep", "deepep_v2", "mooncake", "mori", "pplx")
    assert universe.predicates["is_mori_epv2"].members == frozenset({"mori"})
    assert universe.predicates["is_mori_epv2"].narrowing == "envs.SGLANG_MORI_EP_V2.get()"


@pytest.mark.parametrize(("version", "lines"), [("0.5.20", (545, 2349)), ("0.5.21", (544, 2405))])
def test_inline_k3_lists_of_older_releases_are_both_reported(
    sglang_release, version: str, lines: tuple[int, int]
) -> None:
    tree = sglang_release(version)
    result = check([tree / "sglang/srt/models/kimi_k3.py"], use_cache=False)
    reported = [
        (f.code, f.span.line, f.missing) for f in result.findings if f.path.endswith("kimi_k3.py")
    ]
    assert reported == [
        ("DC001", lines[0], ("deepep_v2", "pplx")),
        ("DC001", lines[1], ("deepep_v2", "pplx")),
    ]
    assert [f.message.split(" ")[0] for f in result.findings] == ["_ep_a2a", "_sp_moe"]
