"""A followed canonical is the canonical: a call of every part of a union is a call of it, the
definitions it is made of (its parts, and what it delegates to) are neither copies nor advice,
and "call the helper" is advised only where the site can reach the helper.

``fixtures/vllm_next_like`` (written from scratch): ``moecfg/checks.py`` calls the Spark union,
spells it by hand, and copies the grouped layout from an ``ExchangeConfig`` alone;
``LayerConfig.groups_tokens`` copies the grouped layout inside the class that defines it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from driftcheck.discover import discover, render
from driftcheck.engine import check
from driftcheck.report.text import format_finding

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _dc002(tmp_path: Path) -> list[str]:
    root = tmp_path / "vllm_next_like"
    shutil.copytree(FIXTURES / "vllm_next_like", root)
    result = check([root], select=["DC002"], use_cache=False)
    assert result.problems == []
    return [format_finding(f, color=False).partition(" DC002")[0] for f in result.findings]


def _discover(tmp_path: Path) -> list[str]:
    root = tmp_path / "vllm_next_like"
    shutil.copytree(FIXTURES / "vllm_next_like", root)
    _, proposals = discover([root], cwd=root, use_cache=False)
    return render(proposals)


def test_a_chain_calling_every_part_of_a_union_is_a_call_of_it(tmp_path: Path) -> None:
    found = _dc002(tmp_path)
    # `cfg.use_spark_v1_kernels or cfg.use_spark_v2_kernels` (checks.py:8) is the canonical;
    # the same three exchanges spelled as strings (checks.py:15) are a hand copy
    assert "moecfg/checks.py:8:8:" not in found
    assert "moecfg/checks.py:15:24:" in found


def test_a_definition_the_canonical_delegates_to_is_not_advised_to_call_it(
    tmp_path: Path,
) -> None:
    # Device.is_gpu_like returns self.runs_gpu_kernels(): the match in runs_gpu_kernels
    # (device.py:43) is the canonical's body, not a copy advised to call is_gpu_like()
    assert "moecfg/device.py:43:18:" not in _dc002(tmp_path)


def test_call_the_helper_is_advised_only_where_the_site_can_reach_it(tmp_path: Path) -> None:
    found = _dc002(tmp_path)
    # needs_expert_groups tests ExchangeConfig's predicates: it holds no LayerConfig
    assert not any(line.startswith("moecfg/checks.py:22:") for line in found)
    # LayerConfig.groups_tokens is inside the class that defines uses_grouped_layout
    assert "moecfg/parallel.py:83:16:" in found
    assert found == ["moecfg/checks.py:15:24:", "moecfg/parallel.py:83:16:"]


def test_discover_counts_calls_of_a_union_and_lists_no_part_of_it_as_a_copy(
    tmp_path: Path,
) -> None:
    lines = _discover(tmp_path)
    start = next(i for i, line in enumerate(lines) if "use_spark_v1_kernels |" in line)
    assert lines[start].endswith("helper, 1 caller in 1 file; 2 hand copies, 1 drifting")
    assert lines[start + 1 : start + 3] == [
        "  copy: moecfg/checks.py:15 in spark_staging_by_hand (complete)",
        "  copy: moecfg/users.py:16 spark_buffers() (0 callers; missing spark)",
    ]


def test_discover_lists_no_definition_a_canonical_delegates_to_as_a_copy(
    tmp_path: Path,
) -> None:
    lines = _discover(tmp_path)
    start = next(i for i, line in enumerate(lines) if "LayerConfig.uses_grouped_layout (" in line)
    # LayerConfig.layout, which uses_grouped_layout reads, is not listed; the hand copies are
    assert lines[start + 1 : start + 4] == [
        "  copy: moecfg/checks.py:22 needs_expert_groups() (0 callers; complete)",
        "  copy: moecfg/parallel.py:83 groups_tokens() (0 callers; complete)",
        "  copy: moecfg/users.py:9 in exchange_workspace (missing sparse)",
    ]
    assert lines[start].endswith("3 hand copies, 1 drifting")
    # Device.is_gpu_like returns self.runs_gpu_kernels(): its match is no copy either
    assert not any("moecfg/device.py:43" in line for line in lines)
    assert "  copy: moecfg/users.py:21 in fused_gate (missing GPU_C)" in lines
