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


def test_vllm_zero_config_picks_the_vllm_pack_and_is_the_reviewed_snapshot() -> None:
    """No configuration: the tree's modules select the vLLM pack (a property, a string-set
    property and a method of a base class as canonicals), and the report is the snapshot."""
    from driftcheck.corpus import fetch_release

    result = check([fetch_release("vllm==0.33.0")], select=["ALL"], use_cache=False)
    assert result.problems == []
    assert result.config.pack == "vllm"
    lines = [format_finding(f, color=False) for f in result.findings]
    assert lines == reviewed_snapshot("vllm-0.33.0.txt")


def test_vllm_0_32_0_zero_config_is_the_reviewed_snapshot() -> None:
    """The release before the pack's: the same three canonicals where the pack names them, and the
    same five reviewed sites as 0.33.0 at 0.32.0's lines."""
    from driftcheck.corpus import fetch_release

    result = check([fetch_release("vllm==0.32.0")], select=["ALL"], use_cache=False)
    assert result.problems == []
    assert result.config.pack == "vllm"
    lines = [format_finding(f, color=False) for f in result.findings]
    assert lines == reviewed_snapshot("vllm-0.32.0.txt")


def test_vllm_0_34_0_zero_config_is_the_reviewed_snapshot() -> None:
    """The release after the pack's, whose batched-activation and MoRI canonicals are gone: the
    followed canonicals check all three families, and the report is the reviewed snapshot."""
    from driftcheck.corpus import fetch_release

    result = check([fetch_release("vllm==0.34.0")], select=["ALL"], use_cache=False)
    assert result.problems == []
    assert result.config.pack == "vllm"
    lines = [format_finding(f, color=False) for f in result.findings]
    assert lines == reviewed_snapshot("vllm-0.34.0.txt")


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


def _tallies_and_listings(tree: Path) -> list[tuple[str, str, int]]:
    """Per family of ``discover``: (its tally as printed, the tally its listing gives, its
    ``copy:`` lines)."""
    from driftcheck.discover import discover, render

    _, proposals = discover([tree], use_cache=False)
    found = []
    for proposal in proposals:
        lines = render([proposal])
        copies = [line for line in lines if line.startswith("  copy: ")]
        drifting = sum("missing " in line for line in copies)
        tally = lines[0].rsplit("; ", 1)[1]
        listed = f"{len(copies)} hand cop{'y' if len(copies) == 1 else 'ies'}, {drifting} drifting"
        found.append((tally, listed, len(copies)))
    return found


def test_discover_lists_every_copy_it_counts_on_vllm_and_sglang(sglang_0_5_23: Path) -> None:
    from driftcheck.corpus import fetch_release

    for tree in (fetch_release("vllm==0.33.0"), sglang_0_5_23):
        tallies = _tallies_and_listings(tree)
        assert [tally for tally, _, _ in tallies] == [listed for _, listed, _ in tallies]
        assert sum(count for _, _, count in tallies) > 0


def test_discover_counts_vllm_mori_string_set_copies() -> None:
    """The MoRI family's hand copies are a dispatch arm and two allowlists: counted, listed,
    and the canonical's own body is not one of them."""
    from driftcheck.corpus import fetch_release
    from driftcheck.discover import discover

    _, proposals = discover([fetch_release("vllm==0.33.0")], use_cache=False)
    [mori] = [p for p in proposals if p.family.label == "MoRI"]
    assert [c.describe() for c in mori.copies] == [
        "vllm/distributed/device_communicators/all2all.py:928 in MoriAll2AllManager.__init__ "
        "(allowlist; complete)",
        "vllm/distributed/device_communicators/cuda_communicator.py:221 in "
        "CudaCommunicator.__init__ (dispatch; complete)",
        "vllm/models/deepseek_v4/amd/model.py:571 in _validate_aiter_mega_moe_config "
        "(allowlist; complete)",
    ]


def test_json_header_on_vllm_names_every_canonical() -> None:
    import json

    from click.testing import CliRunner

    from driftcheck.cli import main
    from driftcheck.corpus import fetch_release

    tree = fetch_release("vllm==0.33.0")
    result = CliRunner().invoke(
        main, [str(tree), "--no-cache", "--format", "json"], catch_exceptions=False
    )
    assert json.loads(result.stdout)["canonical"] == {
        "use_batched_activation_format": ["deepep_low_latency", "nixl_ep"],
        "use_mori_kernels": ["mori_high_throughput", "mori_low_latency"],
        "is_cuda_alike": ["CUDA", "ROCM"],
    }
