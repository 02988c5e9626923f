"""``--dispatcher deep_ep``: what runs without DeepEP or GPUs.

The argument checks, the environment every rank gets, the clear refusal when DeepEP cannot run
here, the expanded-layout bookkeeping, and a whole run of the tree's block (gloo, CPU) with
``tests/doubles/fake_deep_ep.py``, a stand-in with DeepEP's call signatures: the member the pack
puts on the legacy buffer calls ``Buffer``, the elastic one ``ElasticBuffer``.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from driftcheck.runtime_verify.block.job import Arms, BlockJob, LayerSettings
from driftcheck.runtime_verify.block.pack import read_verify_pack
from driftcheck.runtime_verify.layer.deep_ep_env import (
    DEEP_EP_DEFAULTS,
    MULTICAST_OFF,
    apply_rank_environment,
    rank_environment,
)
from driftcheck.runtime_verify.layer.deep_ep_module import (
    DeepEPUnavailable,
    check_gpus,
    load_deep_ep,
    preflight,
)
from rule_harness import EXAMPLE_PATH, example_tree

from driftcheck.cli import main
from driftcheck.config import default_config

DOUBLES = Path(__file__).resolve().parent / "doubles"
FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "block_like"
K3_LIKE = (
    "def uses_ep_a2a() -> bool:\n"
    "    _a2a_backend = get_moe_a2a_backend()\n"
    "    return (\n"
    "        _a2a_backend.is_deepep()\n"
    "        or _a2a_backend.is_mooncake()\n"
    "        or _a2a_backend.is_mori()\n"
    "    )\n"
    "\n"
    "\n"
    "class Layer:\n"
    "    def __init__(self):\n"
    "        self._ep_a2a = uses_ep_a2a()\n"
    "\n"
    "    def forward(self, x):\n"
    "        if not self._ep_a2a:\n"
    "            x = tensor_model_parallel_all_reduce(x)\n"
    "        return x\n"
)


def job(**changes: object) -> BlockJob:
    pack = read_verify_pack(default_config(("sglang",)).verify)
    fields: dict = {
        "root": ".",
        "path": "m.py",
        "module": "m",
        "block": "Block",
        "texts": {"before": "", "after": ""},
        "arms": Arms("deepep", "deepep_v2"),
        "enum": "m:E",
        "family": frozenset({"deepep", "deepep_v2"}),
        "pack": pack,
        "configurations": pack.configurations,
    }
    settings = {"shape": "tiny-bf16", "device": "cuda", "dispatcher": "deep_ep", **changes}
    return BlockJob(**fields, settings=LayerSettings(**settings))


# --- the environment of every rank ---------------------------------------------------------


def test_every_rank_turns_nvlink_multicast_off_whatever_the_dispatcher() -> None:
    assert MULTICAST_OFF == {
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }
    assert rank_environment("model", {}) == MULTICAST_OFF
    assert rank_environment("deep_ep", {}) == {
        **MULTICAST_OFF,
        "EP_DISABLE_GIN": "1",
        "EP_REUSE_NCCL_COMM": "0",
    }


def test_multicast_is_forced_off_and_deep_ep_settings_are_only_defaults() -> None:
    environ = {"NCCL_NVLS_ENABLE": "1", "NVSHMEM_DISABLE_NVLS": "0", "EP_DISABLE_GIN": "0"}
    applied = apply_rank_environment("deep_ep", environ)
    assert environ["NCCL_NVLS_ENABLE"] == "0" and environ["NVSHMEM_DISABLE_NVLS"] == "1"
    assert environ["EP_DISABLE_GIN"] == "0"  # the caller's choice stands
    assert environ["EP_REUSE_NCCL_COMM"] == DEEP_EP_DEFAULTS["EP_REUSE_NCCL_COMM"]
    assert applied == {k: environ[k] for k in applied}


# --- argument validation -------------------------------------------------------------------


def test_a_deep_ep_job_is_valid_on_cuda_in_bf16() -> None:
    job().validate()
    job(shape="k3").validate()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"dispatcher": "deepep"}, "dispatcher must be one of model, deep_ep"),
        ({"device": "cpu"}, "runs DeepEP's CUDA kernels: use --device cuda"),
        ({"shape": "tiny"}, "moves bfloat16 tokens; shape 'tiny' is float32"),
    ],
)
def test_a_deep_ep_job_that_cannot_be_run_is_refused_naming_why(
    changes: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        job(**changes).validate()


def test_a_stand_in_module_may_run_on_the_cpu() -> None:
    job(device="cpu", deep_ep_module="fake_deep_ep").validate()


# --- a clear refusal when DeepEP cannot run here --------------------------------------------


def test_a_missing_deep_ep_is_named_with_how_to_build_it() -> None:
    with pytest.raises(DeepEPUnavailable) as caught:
        load_deep_ep("no_such_deep_ep_module")
    message = str(caught.value)
    assert "needs DeepEP's no_such_deep_ep_module module, and importing it failed" in message
    assert "ModuleNotFoundError" in message and "scripts/build_deepep.sh" in message


def test_a_deep_ep_without_the_elastic_buffer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    legacy_only = types.ModuleType("legacy_only_deep_ep")
    legacy_only.Buffer = object  # type: ignore[attr-defined]
    legacy_only.topk_idx_t = "int64"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "legacy_only_deep_ep", legacy_only)
    with pytest.raises(DeepEPUnavailable, match=r"has no ElasticBuffer: .* main branch"):
        load_deep_ep("legacy_only_deep_ep")


def test_fewer_gpus_than_ranks_is_refused() -> None:
    check_gpus(2, 2)
    with pytest.raises(DeepEPUnavailable, match="2 ranks on this host need 2 GPUs, 1 visible"):
        check_gpus(2, 1)


@pytest.mark.torch
def test_preflight_names_every_reason_at_once() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() >= 2:
        pytest.skip("this host has a GPU per rank")
    with pytest.raises(DeepEPUnavailable) as caught:
        preflight("no_such_deep_ep_module", "cuda", 2)
    assert "importing it failed" in str(caught.value)
    assert f"need 2 GPUs, {torch.cuda.device_count()} visible" in str(caught.value)


# --- the CLI -------------------------------------------------------------------------------


def verify(runner: CliRunner, tmp_path: Path, *args: str) -> object:
    path = example_tree(tmp_path, K3_LIKE) / EXAMPLE_PATH
    # --unsafe-fixes: the full fix (the example's members are held back: nothing shares its role)
    return runner.invoke(
        main, ["verify", str(path), "--no-cache", "--unsafe-fixes", *args], catch_exceptions=False
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--dispatcher", "deep_ep"), "--dispatcher needs --layer"),
        (
            ("--layer", "--dispatcher", "deep_ep", "--shape", "tiny-bf16"),
            "runs DeepEP's CUDA kernels: use --device cuda",
        ),
        (
            ("--layer", "--dispatcher", "deep_ep", "--device", "cuda"),
            "--shape tiny is float32 (use tiny-bf16 or k3)",
        ),
    ],
)
def test_the_cli_refuses_a_deep_ep_run_it_cannot_make(
    runner: CliRunner, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    result = verify(runner, tmp_path, *args)
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert message in result.stderr  # type: ignore[attr-defined]


@pytest.mark.torch
def test_the_cli_exits_2_when_deep_ep_is_not_importable(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setitem(sys.modules, "deep_ep", None)  # import deep_ep raises ImportError
    args = ("--layer", "--dispatcher", "deep_ep", "--device", "cuda", "--shape", "tiny-bf16")
    result = verify(runner, tmp_path, *args)
    assert result.exit_code == 2  # type: ignore[attr-defined]
    stderr = result.stderr  # type: ignore[attr-defined]
    assert "error: --dispatcher deep_ep needs DeepEP's deep_ep module" in stderr
    assert "the layer run failed" not in stderr  # refused up front, not a rank's crash


@pytest.mark.torch
def test_the_cli_exits_2_when_the_host_has_fewer_gpus_than_ranks(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() >= 2:
        pytest.skip("this host has a GPU per rank")
    monkeypatch.syspath_prepend(str(DOUBLES))
    import fake_deep_ep

    monkeypatch.setitem(sys.modules, "deep_ep", fake_deep_ep)  # importable, with both buffers
    args = ("--layer", "--dispatcher", "deep_ep", "--device", "cuda", "--shape", "tiny-bf16")
    result = verify(runner, tmp_path, *args)
    assert result.exit_code == 2  # type: ignore[attr-defined]
    stderr = result.stderr  # type: ignore[attr-defined]
    assert "importing it failed" not in stderr
    assert f"2 ranks on this host need 2 GPUs, {torch.cuda.device_count()} visible" in stderr


# --- a whole run of the tree's block with the stand-in buffers (gloo, CPU) -----------------


@pytest.fixture(scope="module")
def block_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[int, list[dict]]]:
    pytest.importorskip("torch")
    from driftcheck.runtime_verify.block.run import LayerSettings, run_layer
    from driftcheck.runtime_verify.proof import prove

    from driftcheck.engine import check
    from driftcheck.fix.apply import attach_fixes

    tmp = tmp_path_factory.mktemp("deep_ep")
    tree, log = tmp / "tree", tmp / "calls"
    shutil.copytree(FIXTURE, tree)
    log.mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.syspath_prepend(str(DOUBLES))  # spawned ranks inherit sys.path
        monkeypatch.setenv("FAKE_DEEP_EP_LOG", str(log))
        monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # the ranks must turn it off anyway
        result = check([tree], use_cache=False, select=["DC001"])
        [finding] = attach_fixes(result, result.findings, "minimal", unsafe=True)
        settings = LayerSettings(
            shape="tiny-bf16", dispatcher="deep_ep", deep_ep_module="fake_deep_ep"
        )
        report = run_layer(result, [prove(result, finding)], settings)
    calls = {
        rank: [json.loads(line) for line in (log / f"rank{rank}.jsonl").read_text().splitlines()]
        for rank in (0, 1)
    }
    return report, calls


@pytest.mark.torch
def test_each_member_runs_behind_the_buffer_the_pack_gives_it(
    block_run: tuple[dict, dict],
) -> None:
    report, _ = block_run
    [unit] = report["units"]
    runs = unit["configurations"][0]["runs"]
    experts = {
        (r["phase"], r["arm"]): [s for s in r["substituted"] if s.startswith("experts[")]
        for r in runs
    }
    assert experts == {  # every member the site includes runs before and after the fix
        ("before", "deepep"): ["experts[legacy-buffer]"],
        ("before", "deepep_v2"): ["experts[elastic-buffer]"],
        ("before", "mooncake"): ["experts[legacy-buffer]"],
        ("before", "mori"): ["experts[legacy-buffer]"],
        ("after", "deepep"): ["experts[legacy-buffer]"],
        ("after", "deepep_v2"): ["experts[elastic-buffer]"],
        ("after", "mooncake"): ["experts[legacy-buffer]"],
        ("after", "mori"): ["experts[legacy-buffer]"],
    }


@pytest.mark.torch
def test_the_buffers_are_called_on_every_rank(block_run: tuple[dict, dict]) -> None:
    _, calls = block_run
    for rank in (0, 1):
        buffers = {(c["buffer"], c["call"]) for c in calls[rank]}
        assert {("Buffer", "dispatch"), ("ElasticBuffer", "dispatch")} <= buffers


@pytest.mark.torch
def test_the_real_buffers_confirm_the_drift(block_run: tuple[dict, dict]) -> None:
    [unit] = block_run[0]["units"]
    assert unit["verdict"] == "confirmed"


# --- the expanded layout and the legacy handle ---------------------------------------------


@pytest.mark.torch
def test_the_expanded_layout_reads_each_experts_rows_off_the_prefix_sums() -> None:
    torch = pytest.importorskip("torch")
    from driftcheck.runtime_verify.layer.deep_ep_dispatchers import expanded_layout

    # expert 0: 3 rows at 0; expert 1: none (starts at 4); expert 2: 2 rows at 4 (alignment 4)
    rows = torch.arange(8, dtype=torch.float32).unsqueeze(-1)
    psum = torch.tensor([3, 4, 6], dtype=torch.int32)
    counts = torch.tensor([3, 0, 2], dtype=torch.int32)
    layout = expanded_layout(rows, psum, counts)
    assert layout.groups.tolist() == [0, 0, 0, -1, 2, 2, -1, -1]
    assert layout.starts == [0, 4, 4] and layout.counts == [3, 0, 2]
    assert torch.equal(layout.gather(layout.rows), rows)
    padded = expanded_layout(rows, psum, counts, capacity=12)
    assert padded.rows.shape[0] == 12 and padded.groups.tolist()[8:] == [-1] * 4
    with pytest.raises(ValueError, match="8 expanded rows exceed the capacity 6"):
        expanded_layout(rows, psum, counts, capacity=6)


@pytest.mark.torch
def test_the_legacy_handle_gives_each_received_rows_source() -> None:
    torch = pytest.importorskip("torch")
    from driftcheck.runtime_verify.layer.deep_ep_dispatchers import _legacy_sources

    rank_prefix_matrix = torch.tensor([[2, 1], [5, 4]], dtype=torch.int32)  # rank 0 holds 2 + 3
    recv_src_idx = torch.tensor([0, 4, 1, 2, 3], dtype=torch.int32)
    handle = (rank_prefix_matrix, None, None, recv_src_idx, None, None)
    assert _legacy_sources(handle, 0).tolist() == [[0, 0], [0, 4], [1, 1], [1, 2], [1, 3]]


@pytest.mark.torch
def test_the_real_buffers_are_those_of_the_legacy_and_elastic_kinds() -> None:
    pytest.importorskip("torch")
    from driftcheck.runtime_verify.layer.deep_ep_dispatchers import (
        deep_ep_expert_cap,
        deep_ep_implementation_of,
    )

    assert deep_ep_implementation_of("legacy") == "legacy-buffer"
    assert deep_ep_implementation_of("elastic") == "elastic-buffer"
    assert deep_ep_implementation_of("partial") == "tp-partial-sum"
    assert deep_ep_expert_cap(2) == 256  # K3's 384 experts do not fit the legacy kernels at W=2
