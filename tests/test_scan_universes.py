"""A file is walked for the universes whose own prefilter it passes (ScanSpec.universes_in):
the sites found are those a walk for every universe finds, and a file naming one universe's
tokens alone is walked for that universe alone."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from driftcheck.config import default_config
from driftcheck.engine import scan_spec
from driftcheck.model import Universe
from driftcheck.project import discover_project
from driftcheck.scan import ScanSpec, scan_bytes
from driftcheck.universe import load_universes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _universes(tree: Path) -> tuple[Universe, ...]:
    project = discover_project([tree], cwd=tree)
    return tuple(u.universe for u in load_universes(project.root, project.config).universes)


def _spec(tree: Path) -> ScanSpec:
    return scan_spec(_universes(tree), default_config())


def test_a_run_of_several_universes_keeps_a_prefilter_per_universe() -> None:
    spec = _spec(FIXTURES / "vllm_like")
    assert len(spec.universes) > 1
    assert len(spec.own) == len(spec.universes)


def test_a_file_naming_one_universes_tokens_is_walked_for_it_alone() -> None:
    spec = _spec(FIXTURES / "vllm_like")
    platform = b"from p import Platform\n\n\ndef f(p: Platform) -> bool:\n    return p.is_cuda()\n"
    assert [u.key for u in spec.universes_in(platform)] == ["PlatformEnum"]
    assert [u.key for u in spec.universes_in(b"x = 1\n")] == []


def test_without_own_prefilters_every_universe_is_walked() -> None:
    spec = dataclasses.replace(_spec(FIXTURES / "vllm_like"), own=())
    assert spec.universes_in(b"x = 1\n") == spec.universes


def test_sites_found_are_those_of_a_walk_for_every_universe() -> None:
    tree = FIXTURES / "vllm_like"
    spec = _spec(tree)
    every = dataclasses.replace(spec, own=())
    narrowed = found = 0
    for path in sorted(tree.rglob("*.py")):
        data = path.read_bytes()
        rel = str(path.relative_to(tree))
        sites = scan_bytes(rel, data, spec).sites
        assert sites == scan_bytes(rel, data, every).sites, rel
        narrowed += 0 < len(spec.universes_in(data)) < len(spec.universes)
        found += len(sites)
    # negative control: files were walked for fewer universes and still held sites
    assert narrowed and found


# both universes in one module: a function of each, a class holding both, a module constant
# of members read in a nested function, a setting aliased in an enclosing function
MIXED = """from vllm.model_executor.layers.fused_moe.config import FusedMoEParallelConfig
from vllm.platforms.interface import Platform, PlatformEnum

LOW_LATENCY = ("deepep_low_latency", "nixl_ep")


def batched(config: FusedMoEParallelConfig) -> bool:
    return config.all2all_backend in ("deepep_low_latency", "nixl_ep")


def cuda_alike(platform: Platform) -> bool:
    return platform.is_cuda() or platform.is_rocm()


class Layer:
    def __init__(self, config: FusedMoEParallelConfig, platform: Platform) -> None:
        self.backend = config.all2all_backend
        self.platform = platform

    def mori(self) -> bool:
        return self.backend in ("mori_high_throughput", "mori_low_latency")

    def gpu(self) -> bool:
        return self.platform._enum in (PlatformEnum.CUDA, PlatformEnum.ROCM)


def outer(config: FusedMoEParallelConfig) -> bool:
    backend = config.all2all_backend

    def inner() -> bool:
        return backend in LOW_LATENCY

    return inner()
"""


def test_a_module_of_two_universes_walks_each_function_for_its_own_and_finds_the_same() -> None:
    spec = _spec(FIXTURES / "vllm_like")
    data = MIXED.encode()
    universes, own_lines = spec.walked(data)
    assert len(universes) == 2 and own_lines is not None  # lenses are pruned per function
    sites = scan_bytes("vllm/mixed.py", data, spec).sites
    every = scan_bytes("vllm/mixed.py", data, dataclasses.replace(spec, own=())).sites
    assert sites == every
    # (``self.backend`` and the constant read in ``inner`` are no sites either way)
    assert [(s.span.line, s.universe) for s in sites] == [
        (8, "FusedMoEParallelConfig.all2all_backend"),
        (12, "PlatformEnum"),
        (24, "PlatformEnum"),
    ]
