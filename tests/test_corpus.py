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


def test_k3_lists_of_0_5_18_are_role_consensus_errors_with_their_evidence(sglang_release) -> None:
    """The lists this project grew from: one member shared with the family, plus extras."""
    result = check([sglang_release("0.5.18")], use_cache=False)
    k3 = [f for f in result.findings if f.path.endswith("models/kimi_k3.py")]
    assert [(f.code, f.severity, f.span.line, f.missing) for f in k3] == [
        ("DC020", "error", 535, ("mooncake", "mori", "pplx")),
        ("DC020", "error", 2104, ("mooncake", "mori", "pplx")),
    ]
    assert "its use (feeds tp_rank, feeds tp_size) matches 4 sites in 4 files" in k3[0].message
    assert "its comment names DeepEP" in k3[0].message
    assert "the same list at line 535 controls what the family controls" in k3[1].message


def test_k3_lists_of_0_5_17_are_role_consensus_errors(sglang_release) -> None:
    result = check([sglang_release("0.5.17")], use_cache=False)
    k3 = [f for f in result.findings if f.path.endswith("models/kimi_k3.py")]
    assert [(f.code, f.span.line, f.members, f.missing) for f in k3] == [
        ("DC020", 479, ("megamoe", "deepep"), ("mooncake", "mori", "pplx")),
        ("DC020", 1923, ("megamoe", "deepep"), ("mooncake", "mori", "pplx")),
    ]


def test_copies_nothing_reads_are_warnings_on_0_5_23(sglang_0_5_23: Path) -> None:
    """They decide nothing today: reported, but they do not fail a run (--fail-on error)."""
    result = check([sglang_0_5_23], use_cache=False)
    unread = [f for f in result.findings if "nothing reads" in f.message]
    assert [(f.path.rsplit("/", 1)[-1], f.span.line, f.code, f.severity) for f in unread] == [
        ("deepseek_v2.py", 3053, "DC001", "warning"),
        ("exaone_moe.py", 205, "DC020", "warning"),
        ("glm4_moe.py", 527, "DC001", "warning"),
        ("glm4_moe_lite.py", 275, "DC001", "warning"),
        ("minimax_m2.py", 567, "DC020", "warning"),
        ("minimax_m3.py", 499, "DC020", "warning"),
        ("sdar_moe.py", 122, "DC020", "warning"),
        ("step3p5.py", 177, "DC020", "warning"),
        ("xllm.py", 971, "DC001", "warning"),
    ]
    assert unread[0].message.endswith(
        "nothing reads enable_a2a_moe: delete it rather than widen it"
    )


def test_helper_less_fork_is_the_reviewed_snapshot_against_an_inferred_family() -> None:
    """sglang-kt 0.7.2 has no is_deepep_class_backend(): the family is read from its copies
    and takes the pack's canonical name, and every message says it was inferred."""
    from driftcheck.corpus import fetch_release

    result = check([fetch_release("sglang-kt==0.7.2")], use_cache=False)
    assert result.problems == []
    [family] = result.universe.families if result.universe else ()
    assert (family.name, family.members, family.inferred) == (
        "is_deepep_class_backend",
        ("deepep", "mooncake", "mori"),
        True,
    )
    lines = [format_finding(f, color=False) for f in result.findings]
    assert lines == reviewed_snapshot("sglang-kt-0.7.2.txt")
    assert all("inferred from 5 complete and 15 partial" in line for line in lines)
    assert all(f.inferred for f in result.findings)


def test_vllm_with_its_three_canonicals_is_the_reviewed_snapshot() -> None:
    """A property, a string-set property and a method of a base class, configured as a vLLM
    maintainer would; no error-level finding."""
    from driftcheck.corpus import fetch_release

    config = Path(__file__).parent / "corpus_configs" / "vllm-0.33.0.toml"
    result = check(
        [fetch_release("vllm==0.33.0")], config_path=config, select=["ALL"], use_cache=False
    )
    assert result.problems == []
    lines = [format_finding(f, color=False) for f in result.findings]
    assert lines == reviewed_snapshot("vllm-0.33.0.txt")


def test_two_canonicals_over_one_universe_give_each_site_one_finding(sglang_0_5_23: Path) -> None:
    """The DeepEP family and its superset with megamoe: the superset takes a site only on an
    exact match or when the site names it (one extra member is no evidence of the concept)."""
    config = Path(__file__).parent / "corpus_configs" / "sglang-two-canonicals.toml"
    result = check([sglang_0_5_23], config_path=config, select=["ALL"], use_cache=False)
    sites = [(f.path, f.span.line, f.span.col) for f in result.findings]
    assert len(sites) == len(set(sites))
    assert {f.canonical for f in result.findings if f.code != "DC004"} == {
        "is_deepep_class_backend"
    }
    default = check([sglang_0_5_23], config_path=config, use_cache=False)
    assert [format_finding(f, color=False) for f in default.findings] == reviewed_snapshot(
        "sglang-0.5.23.txt"
    )
