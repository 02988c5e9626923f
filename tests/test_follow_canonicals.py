"""Canonicals that follow the tree (issue 29): a release that renames, moves, splits or
reshapes a canonical is still checked, and never silently.

``fixtures/vllm_next_like`` (written from scratch on the shapes of a config package one release
after its configuration was written) names three families by their old canonicals; each has
a copy the new definitions make drift. ``fixtures/orphan_like`` names one the tree lost.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rule_harness import driftcheck_process

from driftcheck.config import Canonical, Config
from driftcheck.engine import check
from driftcheck.report.text import format_finding
from driftcheck.universe import load_universes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NEXT_NOTES = [
    "note: ExchangeConfig.uses_grouped_layout is gone; following LayerConfig.uses_grouped_layout "
    "(moecfg/parallel.py:64)",
    "note: use_spark_kernels is gone; following use_spark_v1_kernels | use_spark_v2_kernels "
    "(moecfg/parallel.py:48)",
]


def _tree(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    return root


def _families(root: Path, config: Config) -> dict[str, tuple[str, ...]]:
    loaded = load_universes(root, config)
    return {f.name: f.members for u in loaded.universes for f in u.universe.families}


def test_three_followed_families_each_report_the_drift_the_new_definitions_imply(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path, "vllm_next_like")
    proc = driftcheck_process(root, "--no-cache", "--color", "never", ".")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "moecfg/users.py:9:8: DC001 condition in exchange_workspace enumerates 2 of 3 "
        "grouped-layout members; missing sparse (held back: no same-role site lists it) "
        "(canonical: uses_grouped_layout)",
        "moecfg/users.py:16:12: DC003 spark_buffers enumerates 2 of 3 Spark members; missing "
        "spark (held back: no same-role site lists it) (canonical: use_spark_v1_kernels | "
        "use_spark_v2_kernels)",
        "moecfg/users.py:21:8: DC001 condition in fused_gate enumerates 2 of 3 GPU-like members; "
        "missing GPU_C (held back: no same-role site lists it) (canonical: is_gpu_like)",
    ]
    assert [line for line in proc.stderr.splitlines() if line.startswith("note:")] == NEXT_NOTES
    assert "warning" not in proc.stderr


def test_a_split_canonical_is_the_union_of_its_predicates(tmp_path: Path) -> None:
    root = _tree(tmp_path, "vllm_next_like")
    loaded = load_universes(root, check([root], use_cache=False).config)
    family = next(f for u in loaded.universes for f in u.universe.families if f.label == "Spark")
    assert family.members == ("spark", "spark_fast", "spark_bulk")
    assert family.access == "union"
    assert family.call_text() == (
        "ExchangeConfig.use_spark_v1_kernels or ExchangeConfig.use_spark_v2_kernels"
    )
    # "spark" is accepted under a setting of the run, the older two outright
    assert family.condition_of("spark") != ()
    assert family.condition_of("spark_fast") == ("self.ranks > 1", "self.use_ep")


def test_a_union_can_be_named_as_discover_proposes_it(tmp_path: Path) -> None:
    root = _tree(tmp_path, "vllm_next_like")
    spec = (
        "moecfg.parallel:ExchangeConfig.use_spark_v1_kernels | ExchangeConfig.use_spark_v2_kernels"
    )
    config = Config(canonicals=(Canonical(spec, "Spark"),))
    loaded = load_universes(root, config)
    assert loaded.notes == []
    assert _families(root, config) == {
        "use_spark_v1_kernels | use_spark_v2_kernels": ("spark", "spark_fast", "spark_bulk")
    }


def test_a_seed_reads_a_property_returning_an_enum_member(tmp_path: Path) -> None:
    """``layout == Layout.Grouped``: the family is the exchanges for which the property
    returns that member (an if/elif chain over a local, a deferred import)."""
    root = _tree(tmp_path, "vllm_next_like")
    universe = "moecfg.parallel:ExchangeConfig.exchange"
    config = Config(
        canonicals=(
            Canonical("moecfg.parallel:LayerConfig.layout == Layout.Grouped", "g", universe),
            Canonical("moecfg.parallel:LayerConfig.layout == Layout.Padded", "p", universe),
        )
    )
    assert _families(root, config) == {
        "layout == Layout.Grouped": ("ring_ll", "relay", "sparse"),
        "layout == Layout.Padded": ("tide",),
    }


def test_a_named_seed_is_followed_when_the_old_name_is_gone(tmp_path: Path) -> None:
    root = _tree(tmp_path, "vllm_next_like")
    config = Config(
        canonicals=(
            Canonical(
                "moecfg.device:Device.is_accelerator",
                "GPU-like",
                "moecfg.device:DeviceKind",
                ("runs_gpu_kernels",),
            ),
        )
    )
    loaded = load_universes(root, config)
    assert loaded.notes == [
        "is_accelerator is gone; following runs_gpu_kernels (moecfg/device.py:41)"
    ]
    assert _families(root, config) == {"runs_gpu_kernels": ("GPU_A", "GPU_B", "GPU_C")}


def test_membership_in_a_module_constant_is_read(tmp_path: Path) -> None:
    root = _tree(tmp_path, "vllm_next_like")
    config = Config(
        canonicals=(
            Canonical(
                "moecfg.parallel:ExchangeConfig.use_slow_exchange",
                "slow",
                "moecfg.parallel:ExchangeConfig.exchange",
            ),
        )
    )
    assert _families(root, config) == {"use_slow_exchange": ("ring_ht", "naive")}


def test_membership_in_a_module_constant_of_enum_members_is_read(tmp_path: Path) -> None:
    root = _tree(tmp_path, "vllm_next_like")
    config = Config(
        canonicals=(
            Canonical("moecfg.device:Device.has_shared_memory", "shm", "moecfg.device:DeviceKind"),
        )
    )
    assert _families(root, config) == {"has_shared_memory": ("NPU", "CPU")}


def test_a_family_with_no_canonical_is_an_error_finding_listing_the_candidates(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path, "orphan_like")
    proc = driftcheck_process(root, "--no-cache", "--color", "never", ".")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "meshcfg/parallel.py:10:1: DC030 the packed-layout family has no canonical in this tree, "
        "so its copies are not checked: canonical predicate "
        "meshcfg.parallel:MeshConfig.uses_packed_layout: nothing named "
        "MeshConfig.uses_packed_layout in meshcfg/parallel.py (looked for a function, a method "
        "or property, and a constant); no predicate follows it (considered: MeshConfig.use_a2a, "
        "MeshConfig.use_mesh_ll, MeshConfig.use_mesh_ht, MeshConfig.use_relay, "
        "MeshConfig.use_relay_v2, MeshConfig.uses_mesh)"
    ]
    assert "warning" not in proc.stderr


def test_a_selection_without_the_rule_still_says_the_family_was_not_checked(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path, "orphan_like")
    proc = driftcheck_process(root, "--no-cache", "--select", "DC001", ".")
    assert proc.returncode == 0
    unchecked = [line for line in proc.stderr.splitlines() if "not checked" in line]
    assert len(unchecked) == 1
    assert unchecked[0].startswith(
        "warning: the packed-layout family was not checked: canonical predicate "
        "meshcfg.parallel:MeshConfig.uses_packed_layout: nothing named"
    )


def test_an_unreadable_canonical_is_reported_and_the_others_are_still_checked(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path, "vllm_next_like")
    parallel = root / "moecfg" / "parallel.py"
    parallel.write_text(
        parallel.read_text() + "\n\ndef uses_ring() -> bool:\n"
        "    for name in ('ring_ll', 'ring_ht'):\n"
        "        pass\n"
        "    return False\n"
    )
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(
            "canonical = [\n",
            'canonical = [\n    { predicate = "moecfg.parallel:uses_ring", label = "ring", '
            'universe = "moecfg.parallel:ExchangeConfig.exchange" },\n',
        )
    )
    result = check([root], use_cache=False)
    assert result.problems == []
    dc030 = [format_finding(f, color=False) for f in result.findings if f.code == "DC030"]
    assert dc030 == [
        "moecfg/parallel.py:87:1: DC030 the ring family cannot be read, so its copies are not "
        "checked: canonical predicate uses_ring is outside what driftcheck can interpret: "
        "statement 'for name in ('ring_ll', 'ring_ht'):' in uses_ring()"
    ]
    assert sorted(f.code for f in result.findings if f.code != "DC030") == [
        "DC001",
        "DC001",
        "DC003",
    ]


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0", "0.34.0"])
def test_vllm_zero_config_finds_the_three_families_with_no_warning(version: str) -> None:
    from driftcheck.corpus import fetch_release

    tree = fetch_release(f"vllm=={version}")
    result = check([tree], use_cache=False)
    assert result.problems == []
    assert result.warnings == []
    labels = sorted(f.label for u in result.every.universes for f in u.universe.families)
    assert labels == ["CUDA-alike", "MoRI", "batched-activation"]
    assert not [f for f in result.findings if f.code == "DC030"]


def test_vllm_0_34_families_follow_the_renamed_canonicals() -> None:
    from driftcheck.corpus import fetch_release

    result = check([fetch_release("vllm==0.34.0")], use_cache=False)
    families = {
        f.label: (f.name, f.members) for u in result.every.universes for f in u.universe.families
    }
    assert families == {
        "batched-activation": (
            "use_batched_activation_format",
            ("deepep_low_latency", "nixl_ep"),
        ),
        "MoRI": (
            "use_mori_epv1_kernels | use_mori_epv2_kernels",
            ("mori", "mori_high_throughput", "mori_low_latency"),
        ),
        "CUDA-alike": ("is_cuda_alike", ("CUDA", "ROCM")),
    }
    assert result.notes == [
        "FusedMoEParallelConfig.use_batched_activation_format is gone; following "
        "FusedMoEConfig.use_batched_activation_format "
        "(vllm/model_executor/layers/fused_moe/config.py:1464)",
        "use_mori_kernels is gone; following use_mori_epv1_kernels | use_mori_epv2_kernels "
        "(vllm/model_executor/layers/fused_moe/config.py:1114)",
    ]


VLLM_MODULES = (
    "vllm/model_executor/layers/fused_moe/config.py",
    "vllm/model_executor/layers/fused_moe/modular_kernel.py",
    "vllm/platforms/__init__.py",
    "vllm/platforms/interface.py",
    "vllm/config/parallel.py",
)
# one plant per family, each in a shape of its own, written here against 0.34.0's definitions
VLLM_PLANTS = """\
from vllm.model_executor.layers.fused_moe.config import FusedMoEParallelConfig
from vllm.platforms import current_platform


def batched_workspace(moe: FusedMoEParallelConfig) -> int:
    if moe.all2all_backend != "deepep_low_latency":
        raise ValueError("this kernel needs the batched activation format")
    return 2


def mori_buffers(moe: FusedMoEParallelConfig) -> bool:
    return moe.all2all_backend in ("mori_high_throughput", "mori_low_latency")


def cuda_graph_pool() -> int:
    if not current_platform.is_cuda():
        raise RuntimeError("graph pools need a CUDA-alike platform")
    return 1
"""


def test_vllm_0_34_definitions_make_a_plant_in_each_family_drift(tmp_path: Path) -> None:
    """0.34.0's own family modules (copied at test time, zero configuration: the vLLM pack),
    and a file of plants written here: every family reports its plant."""
    from driftcheck.corpus import fetch_release

    release = fetch_release("vllm==0.34.0")
    for rel in VLLM_MODULES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(release / rel, tmp_path / rel)
    (tmp_path / "vllm" / "plants.py").write_text(VLLM_PLANTS)
    result = check([tmp_path], use_cache=False)
    assert result.warnings == []
    assert [format_finding(f, color=False) for f in result.findings] == [
        "vllm/plants.py:6:8: DC021 condition in batched_workspace tests deepep_low_latency in "
        'front of a raise or fallback whose text names batched-activation ("this kernel needs '
        'the batched activation format"): missing nixl_ep; test not '
        "FusedMoEConfig.use_batched_activation_format instead",
        "vllm/plants.py:12:12: DC003 mori_buffers enumerates 2 of 3 MoRI backends; missing mori "
        "(held back: no same-role site lists it) (canonical: use_mori_epv1_kernels | "
        "use_mori_epv2_kernels)",
        "vllm/plants.py:16:12: DC021 condition in cuda_graph_pool tests CUDA in front of a raise "
        'or fallback whose text names CUDA-alike ("graph pools need a CUDA-alike platform"): '
        "missing ROCM; test Platform.is_cuda_alike() instead",
    ]


def test_the_vllm_pack_seed_reads_activation_format_when_the_property_is_gone(
    tmp_path: Path,
) -> None:
    """With FusedMoEConfig.use_batched_activation_format deleted too (a release further on),
    the pack's seed `FusedMoEConfig.activation_format == FusedMoEActivationFormat.BatchedExperts`
    is the family: the backends for which the property returns that member."""
    from driftcheck.corpus import fetch_release

    release = fetch_release("vllm==0.34.0")
    for rel in VLLM_MODULES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(release / rel, tmp_path / rel)
    config = tmp_path / VLLM_MODULES[0]
    text = config.read_text()
    gone = (
        "    @property\n    def use_batched_activation_format(self):\n"
        "        return self.activation_format.is_batched\n\n"
    )
    assert gone in text
    config.write_text(text.replace(gone, ""))
    result = check([tmp_path], use_cache=False)
    assert result.warnings == []
    assert result.notes[0] == (
        "FusedMoEParallelConfig.use_batched_activation_format is gone; following "
        "FusedMoEConfig.activation_format == FusedMoEActivationFormat.BatchedExperts "
        "(vllm/model_executor/layers/fused_moe/config.py:1464)"
    )
    families = {f.label: f.members for u in result.every.universes for f in u.universe.families}
    assert families["batched-activation"] == ("deepep_low_latency", "nixl_ep")
