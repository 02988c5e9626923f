"""Single checks judged by role, for a family of any size (issue 21).

A single check — one member's predicate or property, or a string compare of the setting with
one member — is reported (DC020, an error) when sibling files of its own package use the
whole family in the same role: they compute the same value (an attribute or local it is
assigned to, a keyword it feeds) or guard the same call with the canonical. A check in front
of a raise or fallback whose text names the family is judged as the family or its negation
(DC021). The plants are written here, into a copy of vLLM 0.33.0 fetched at test time and
into a copy of the SGLang-shaped fixture; nothing of vLLM is committed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from driftcheck.engine import CheckResult, check
from driftcheck.fix.apply import attach_fixes
from driftcheck.model import Finding
from driftcheck.report.sarif import sarif_document

REPO = Path(__file__).resolve().parent.parent
ORACLE = "vllm/model_executor/layers/fused_moe/oracle"
ROUTER = "vllm/model_executor/layers/fused_moe/router"
EXPERTS = "vllm/model_executor/layers/fused_moe/experts"
# the oracle files that pick the activation format with use_batched_activation_format
ORACLE_SIBLINGS = {
    f"{ORACLE}/{name}.py"
    for name in (
        "fp8",
        "int8",
        "int_wna16",
        "mxfp4",
        "mxfp8",
        "nvfp4",
        "unquantized",
        "w4a8",
        "w4a8_int8",
    )
}


def run_on_vllm(tree: Path) -> CheckResult:
    """driftcheck on a vLLM tree with no configuration: the tree picks the vLLM pack."""
    return check([tree / "vllm"], cwd=tree, use_cache=False)


@pytest.fixture(scope="module")
def vllm_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A writable copy of vLLM 0.33.0 (fetched, sha256-pinned, into the corpus cache)."""
    from driftcheck.corpus import fetch_release

    target = tmp_path_factory.mktemp("vllm") / "vllm-0.33.0"
    shutil.copytree(fetch_release("vllm==0.33.0"), target)
    return target


def planted(result: CheckResult, path: str) -> list[tuple[int, str, str]]:
    """``(line, code, severity)`` of the findings in ``path``."""
    return [(f.span.line, f.code, f.severity) for f in result.findings if f.path == path]


def related_paths(finding: Finding) -> set[str]:
    return {r.path for r in finding.related}


VLLM_PLANTS = """\
import vllm.model_executor.layers.fused_moe.modular_kernel as mk
from vllm.model_executor.layers.fused_moe.config import FusedMoEConfig


def select_assigned(config: FusedMoEConfig):
    activation_format = (
        mk.FusedMoEActivationFormat.BatchedExperts
        if config.moe_parallel_config.use_deepep_ll_kernels
        else mk.FusedMoEActivationFormat.Standard
    )
    return activation_format


def select_guarded(config: FusedMoEConfig):
    if config.moe_parallel_config.use_deepep_ll_kernels:
        activation_format = mk.FusedMoEActivationFormat.BatchedExperts
    else:
        activation_format = mk.FusedMoEActivationFormat.Standard
    return activation_format


def select_fed(config: FusedMoEConfig):
    return make_experts(
        activation_format=mk.FusedMoEActivationFormat.BatchedExperts
        if config.moe_parallel_config.use_nixl_ep_kernels
        else mk.FusedMoEActivationFormat.Standard
    )


def select_compared(config: FusedMoEConfig):
    activation_format = (
        mk.FusedMoEActivationFormat.BatchedExperts
        if config.moe_parallel_config.all2all_backend == "deepep_low_latency"
        else mk.FusedMoEActivationFormat.Standard
    )
    return activation_format
"""
# kernel gates beside experts/ files whose _supports_current_device calls is_cuda_alike():
# a capability answer, and a capability list, each one kernel's own
VLLM_GATES = """\
import torch

from vllm.platforms import current_platform


class PlantedExperts:
    @staticmethod
    def _supports_current_device() -> bool:
        return current_platform.is_cuda()


def planted_op():
    if current_platform.is_cuda() or current_platform.is_xpu():
        op = torch.ops._C.planted_kernel
    else:
        op = None
    return op
"""
VLLM_REFUSALS = """\
from vllm.platforms import current_platform


def check_router_gemm_platform() -> None:
    if current_platform.is_cpu() or current_platform.is_xpu() or current_platform.is_tpu():
        raise ValueError("the fused router GEMM needs a CUDA-alike platform")


def check_router_gemm_device() -> None:
    if not current_platform.is_cuda():
        raise ValueError("the fused router GEMM needs a CUDA-alike platform")


def check_router_gemm_cuda() -> None:
    if not current_platform.is_cuda():
        raise ValueError("the fused router GEMM is built for CUDA only")


def check_batched_experts(config) -> None:
    if not config.moe_parallel_config.use_deepep_ll_kernels:
        raise ValueError("these experts take the batched activation format")


def check_mori_low_latency(config) -> None:
    if config.moe_parallel_config.all2all_backend == "mori_low_latency":
        raise ValueError("MoRI low-latency mode has no fused router")
"""


@pytest.mark.corpus
def test_vllm_plants_in_a_package_sharing_a_role_through_the_canonical(vllm_tree: Path) -> None:
    """vLLM's MoE oracles each pick the batched activation format with
    use_batched_activation_format (deepep_low_latency or nixl_ep). A new oracle that tests
    one member instead — assigned, guarded by an if, fed as a keyword, or compared as a
    string — is an error naming the oracle files; the same checks in a package where no file
    computes activation_format, kernel gates beside experts that call is_cuda_alike(), and
    the sites of vLLM itself (its kernel gates, allowlists and per-backend arms) stay silent,
    but for its one drifting complement (qwen4_exp, reviewed in the snapshot)."""
    (vllm_tree / ORACLE / "planted.py").write_text(VLLM_PLANTS)
    (vllm_tree / EXPERTS / "planted_gate.py").write_text(VLLM_GATES)
    (vllm_tree / ROUTER / "planted_alone.py").write_text(VLLM_PLANTS)
    (vllm_tree / ROUTER / "planted_refusal.py").write_text(VLLM_REFUSALS)
    result = run_on_vllm(vllm_tree)
    assert result.problems == []
    assert [(f.path, f.span.line, f.code) for f in result.findings] == [
        (f"{ORACLE}/planted.py", 8, "DC020"),
        (f"{ORACLE}/planted.py", 15, "DC020"),
        (f"{ORACLE}/planted.py", 25, "DC020"),
        (f"{ORACLE}/planted.py", 33, "DC020"),
        (f"{ROUTER}/planted_refusal.py", 5, "DC021"),
        (f"{ROUTER}/planted_refusal.py", 10, "DC021"),
        (f"{ROUTER}/planted_refusal.py", 20, "DC021"),
        ("vllm/models/qwen4_exp/__init__.py", 30, "DC021"),
    ]
    assert {f.severity for f in result.findings} == {"error"}
    oracle = [f for f in result.findings if f.code == "DC020"]
    assert [f.message for f in oracle] == [
        f"{subject} tests {member} where its sibling fp8.py:415 (select_fp8_moe_backend) and 8 "
        f"more sibling files in {ORACLE}/ compute activation_format with "
        f".use_batched_activation_format; missing {missing}"
        for subject, member, missing in (
            ("activation_format", "deepep_low_latency", "nixl_ep"),
            ("condition in select_guarded", "deepep_low_latency", "nixl_ep"),
            ("select_fed", "nixl_ep", "deepep_low_latency"),
            ("activation_format", "deepep_low_latency", "nixl_ep"),
        )
    ]
    for finding in oracle:
        assert related_paths(finding) - {"vllm/model_executor/layers/fused_moe/config.py"} == (
            ORACLE_SIBLINGS
        )
    # the fix does what the siblings do: call the canonical; a string compare, which the
    # helper style leaves alone, gets the member the canonical adds
    helper = "config.moe_parallel_config.use_batched_activation_format"
    compared = "config.moe_parallel_config.all2all_backend"
    fixed = attach_fixes(result, oracle, "minimal")
    assert [f.fix.replacement if f.fix else f.fix_refusal for f in fixed] == [
        helper,
        helper,
        helper,
        # past 88 columns: wrapped as ruff format wraps it
        f'(\n            {compared} == "deepep_low_latency"\n'
        f'            or {compared} == "nixl_ep"\n        )',
    ]


@pytest.mark.corpus
def test_vllm_refusals_naming_the_family_are_judged_as_its_negation(vllm_tree: Path) -> None:
    """A raise whose message names CUDA-alike (the family's label): the platforms it
    excludes, listed by hand, let out-of-tree platforms through; a lone is_cuda() refuses
    ROCm. A message naming the batched activation format (the canonical's name) refuses
    nixl_ep. A message naming CUDA alone is about CUDA, and "MoRI low-latency" names the
    member mori_low_latency, not the MoRI family: both stay silent."""
    (vllm_tree / ROUTER / "planted_refusal.py").write_text(VLLM_REFUSALS)
    result = run_on_vllm(vllm_tree)
    refusals = [f for f in result.findings if f.path.endswith("planted_refusal.py")]
    messages = [f.message for f in refusals]
    # the canonical's definition, then the raise whose text is the evidence
    assert [[(r.path, r.line) for r in f.related] for f in refusals] == [
        [("vllm/platforms/interface.py", 227), (f"{ROUTER}/planted_refusal.py", line)]
        for line in (6, 11)
    ] + [
        [
            ("vllm/model_executor/layers/fused_moe/config.py", 1066),
            (f"{ROUTER}/planted_refusal.py", 21),
        ]
    ]
    needs = '("the fused router GEMM needs a CUDA-alike platform")'
    assert messages == [
        "condition in check_router_gemm_platform lists CPU, XPU, TPU by hand, members that "
        f"CUDA-alike excludes, in front of a raise or fallback whose text names CUDA-alike "
        f"{needs}: it lets through OOT, UNSPECIFIED, which are not CUDA-alike; test not "
        "Platform.is_cuda_alike() instead",
        "condition in check_router_gemm_device tests CUDA in front of a raise or fallback "
        f"whose text names CUDA-alike {needs}: missing ROCM; test Platform.is_cuda_alike() "
        "instead",
        "condition in check_batched_experts tests deepep_low_latency in front of a raise or "
        'fallback whose text names batched-activation ("these experts take the batched '
        'activation format"): missing nixl_ep; test '
        "FusedMoEParallelConfig.use_batched_activation_format instead",
    ]


SGLANG_HELPER_USER = """\
from sglang.srt.layers.moe.utils import is_deepep_class_backend


def select_{name}_backend(config):
    activation_format = "batched" if is_deepep_class_backend() else "standard"
    return make_{name}_experts(config, activation_format)
"""
SGLANG_PLANTS = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


def select_assigned(config):
    activation_format = "batched" if get_moe_a2a_backend().is_deepep() else "standard"
    return activation_format


def select_guarded(config):
    if get_moe_a2a_backend().is_deepep():
        activation_format = "batched"
    else:
        activation_format = "standard"
    return activation_format


def select_fed(config):
    return make_experts(
        activation_format="batched" if get_moe_a2a_backend().is_mooncake() else "standard"
    )


def select_compared(server_args):
    activation_format = "batched" if server_args.moe_a2a_backend == "deepep" else "standard"
    return activation_format
"""
QUANTIZATION = "sglang/srt/layers/quantization"


def sglang_tree(root: Path, plants: str, directory: str = QUANTIZATION) -> Path:
    """A copy of the SGLang-shaped fixture with a quantization package whose two files pick
    the activation format with is_deepep_class_backend(), and ``plants`` in ``directory``."""
    tree = root / "tree"
    shutil.copytree(REPO / "fixtures" / "sglang_like", tree)
    package = tree / QUANTIZATION
    package.mkdir(parents=True)
    for name in ("fp8", "int8"):
        (package / f"{name}_like.py").write_text(SGLANG_HELPER_USER.format(name=name))
    (tree / directory).mkdir(parents=True, exist_ok=True)
    (tree / directory / "planted.py").write_text(plants)
    return tree


def test_sglang_shaped_plants_are_errors_naming_the_package_siblings(tmp_path: Path) -> None:
    """The same four shapes in an SGLang-shaped tree: each is an error naming the two files
    of its package that compute activation_format with the helper."""
    tree = sglang_tree(tmp_path, SGLANG_PLANTS)
    result = check([tree], cwd=tree, use_cache=False)
    path = f"{QUANTIZATION}/planted.py"
    assert planted(result, path) == [
        (5, "DC020", "error"),
        (10, "DC020", "error"),
        (19, "DC020", "error"),
        (24, "DC020", "error"),
    ]
    siblings = {f"{QUANTIZATION}/fp8_like.py", f"{QUANTIZATION}/int8_like.py"}
    for finding in (f for f in result.findings if f.path == path):
        assert (
            f"where its sibling fp8_like.py:5 (select_fp8_backend) and 1 more sibling file in "
            f"{QUANTIZATION}/ compute activation_format with is_deepep_class_backend()"
        ) in finding.message
        assert siblings <= related_paths(finding)


def test_sglang_shaped_single_check_with_no_same_role_sibling_is_silent(tmp_path: Path) -> None:
    """The same single checks computing another value (dispatch_format): no file of the
    package computes it with the family, so nothing says they should."""
    tree = sglang_tree(tmp_path, SGLANG_PLANTS.replace("activation_format", "dispatch_format"))
    result = check([tree], cwd=tree, use_cache=False)
    assert planted(result, f"{QUANTIZATION}/planted.py") == []


def test_the_package_siblings_are_sarif_related_locations(tmp_path: Path) -> None:
    """Code scanning shows the evidence beside the finding: the canonical's definition, then
    each sibling site, as SARIF relatedLocations."""
    tree = sglang_tree(tmp_path, SGLANG_PLANTS)
    result = check([tree / QUANTIZATION / "planted.py"], cwd=tree, use_cache=False)
    first = sarif_document(result, result.findings, cwd=tree)["runs"][0]["results"][0]
    assert [
        (
            place["physicalLocation"]["artifactLocation"]["uri"],
            place["physicalLocation"]["region"]["startLine"],
            place["message"]["text"],
        )
        for place in first["relatedLocations"]
    ] == [
        ("sglang/srt/layers/moe/utils.py", 68, "is_deepep_class_backend is defined here"),
        (f"{QUANTIZATION}/fp8_like.py", 5, "a sibling site that computes activation_format"),
        (f"{QUANTIZATION}/int8_like.py", 5, "a sibling site that computes activation_format"),
    ]


ONE_BRANCH_USER = """\
from sglang.srt.layers.moe.utils import is_deepep_class_backend


def output_{name}(state, hidden_states):
    if is_deepep_class_backend():
        hidden_states = hidden_states[: state.num_tokens]
        num_tokens = state.num_tokens
    return hidden_states
"""
ONE_BRANCH_PLANT = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


def output_planted(state, hidden_states):
    if get_moe_a2a_backend().is_mori():
        hidden_states = hidden_states[: state.num_tokens]
        num_tokens = state.num_tokens
    return hidden_states
"""


def test_a_local_one_branch_assigns_is_no_shared_role(tmp_path: Path) -> None:
    """A local that only one branch assigns is a default overridden or an update
    (``hidden_states = hidden_states[:n]`` behind MoRI's padding), not a value the check
    chooses: siblings doing the same with the helper are no evidence."""
    tree = sglang_tree(tmp_path, ONE_BRANCH_PLANT)
    for name in ("one", "two", "three"):
        (tree / QUANTIZATION / f"output_{name}.py").write_text(ONE_BRANCH_USER.format(name=name))
    result = check([tree], cwd=tree, use_cache=False)
    assert planted(result, f"{QUANTIZATION}/planted.py") == []


TWO_MEMBER_HELPER = '''

def is_one_sided_backend() -> bool:
    """Fixture helper: the two one-sided transports."""
    backend = get_moe_a2a_backend()
    return backend.is_mori() or backend.is_nixl()
'''
TWO_MEMBER_CONFIG = """\
[tool.driftcheck]
canonical = [
    { predicate = "sglang.srt.layers.moe.utils:is_one_sided_backend", label = "one-sided" },
]
"""


def two_member_tree(root: Path, plants_in: str) -> Path:
    """The SGLang-shaped tree with a two-member canonical (mori or nixl) configured, the
    quantization package's two files calling it, and the four shapes testing one member in
    ``plants_in``."""
    tree = sglang_tree(
        root,
        SGLANG_PLANTS.replace("is_deepep()", "is_mori()")
        .replace("is_mooncake()", "is_nixl()")
        .replace('== "deepep"', '== "mori"'),
        plants_in,
    )
    utils = tree / "sglang/srt/layers/moe/utils.py"
    utils.write_text(utils.read_text() + TWO_MEMBER_HELPER)
    (tree / "pyproject.toml").write_text(TWO_MEMBER_CONFIG)
    for name in ("fp8", "int8"):
        (tree / QUANTIZATION / f"{name}_like.py").write_text(
            SGLANG_HELPER_USER.format(name=name).replace(
                "is_deepep_class_backend", "is_one_sided_backend"
            )
        )
    return tree


def two_member_findings(tree: Path, plants_in: str) -> list[Finding]:
    result = check([tree], cwd=tree, use_cache=False)
    assert result.problems == []
    return [f for f in result.findings if f.path == f"{plants_in}/planted.py"]


def test_a_single_check_of_a_two_member_family_is_judged_by_its_package(tmp_path: Path) -> None:
    """A two-member family (as vLLM's are), on the SGLang-shaped tree: the same four shapes
    testing mori alone are errors naming the package's two files that call the helper; the
    tree-wide use evidence, refused for a family this small, plays no part."""
    tree = two_member_tree(tmp_path, QUANTIZATION)
    findings = two_member_findings(tree, QUANTIZATION)
    assert [(f.span.line, f.code, f.severity, f.missing) for f in findings] == [
        (5, "DC020", "error", ("nixl",)),
        (10, "DC020", "error", ("nixl",)),
        (19, "DC020", "error", ("mori",)),
        (24, "DC020", "error", ("nixl",)),
    ]
    assert all(
        f"its sibling fp8_like.py:5 (select_fp8_backend) and 1 more sibling file in "
        f"{QUANTIZATION}/ compute activation_format with is_one_sided_backend()" in f.message
        for f in findings
    )


def test_a_two_member_family_single_check_outside_the_package_is_silent(tmp_path: Path) -> None:
    """The same checks in another package: for a family this small a single check is as
    often a choice between the two members, so files elsewhere computing the same name are
    no evidence."""
    tree = two_member_tree(tmp_path, "sglang/srt/layers/moe")
    assert two_member_findings(tree, "sglang/srt/layers/moe") == []
