"""``--dispatcher deep_ep``: what runs without DeepEP or GPUs.

The argument checks, the environment every rank gets, the clear refusal when DeepEP cannot run
here, the expanded-layout bookkeeping, and whole runs (gloo, CPU) with ``tests/doubles/
fake_deep_ep.py``, a stand-in with DeepEP's call signatures: the deepep arm calls the legacy
``Buffer``, the deepep_v2 arm the ``ElasticBuffer``, and each arm's plan still comes from the
site's predicate.
"""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
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
from driftcheck.runtime_verify.layer.family import DEEPEP_FAMILY
from driftcheck.runtime_verify.layer.job import Job
from rule_harness import EXAMPLE_PATH, example_tree

from driftcheck.cli import main

DOUBLES = Path(__file__).resolve().parent / "doubles"
K3_PLANS = {
    "before": {"deepep": True, "deepep_v2": False},
    "after": {"deepep": True, "deepep_v2": True},
}
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


def job(**changes: object) -> Job:
    fields: dict = {
        "plans": K3_PLANS,
        "arms": ("deepep", "deepep_v2"),
        "shape": "tiny-bf16",
        "world_size": 2,
        "device": "cuda",
        "family": DEEPEP_FAMILY,
        "seed": 0,
        "dispatcher": "deep_ep",
    }
    fields.update(changes)
    return Job(**fields)


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


def test_a_deep_ep_job_is_valid_for_the_two_deepep_arms_on_cuda_in_bf16() -> None:
    job().validate()
    job(shape="k3").validate()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"dispatcher": "deepep"}, "dispatcher must be one of model, deep_ep"),
        ({"device": "cpu"}, "runs DeepEP's CUDA kernels: use --device cuda"),
        ({"shape": "tiny"}, "moves bfloat16 tokens; shape 'tiny' is float32"),
        (
            {
                "arms": ("deepep", "mooncake"),
                "plans": {"before": {"deepep": True, "mooncake": False}},
            },
            "deepep_v2 (ElasticBuffer) only, not mooncake",
        ),
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


def test_preflight_names_every_reason_at_once() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() >= 2:
        pytest.skip("this host has a GPU per rank")
    with pytest.raises(DeepEPUnavailable) as caught:
        preflight("no_such_deep_ep_module", "cuda", 2)
    assert "importing it failed" in str(caught.value)
    assert f"need 2 GPUs, {torch.cuda.device_count()} visible" in str(caught.value)


def test_confirm_plans_refuses_before_any_rank_starts() -> None:
    pytest.importorskip("torch")
    from driftcheck.runtime_verify.layer import confirm_plans

    with pytest.raises(DeepEPUnavailable, match="importing it failed"):
        confirm_plans(
            K3_PLANS,
            shape="tiny-bf16",
            device="cuda",
            dispatcher="deep_ep",
            deep_ep_module="no_such_deep_ep_module",
        )


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


# --- whole runs with the stand-in buffers (gloo, CPU) --------------------------------------


def _run_with_stand_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plans: dict, arms: tuple[str, str]
) -> tuple[dict, dict[int, list[dict]]]:
    from driftcheck.runtime_verify.layer import confirm_plans

    log = tmp_path / "calls"
    log.mkdir()
    monkeypatch.syspath_prepend(str(DOUBLES))  # spawned ranks inherit sys.path
    monkeypatch.setenv("FAKE_DEEP_EP_LOG", str(log))
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # the ranks must turn it off anyway
    report = confirm_plans(
        plans,
        arms=arms,
        shape="tiny-bf16",
        world_size=2,
        device="cpu",
        dispatcher="deep_ep",
        deep_ep_module="fake_deep_ep",
    )
    calls = {
        rank: [json.loads(line) for line in (log / f"rank{rank}.jsonl").read_text().splitlines()]
        for rank in (0, 1)
    }
    return report, calls


@pytest.fixture(scope="module")
def k3_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[int, list[dict]]]:
    pytest.importorskip("torch")
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _run_with_stand_in(
            tmp_path_factory.mktemp("k3"), monkeypatch, K3_PLANS, ("deepep", "deepep_v2")
        )


def _dispatched(calls: list[dict], buffer: str) -> list[int]:
    return [c["tokens"] for c in calls if c["buffer"] == buffer and c["call"] == "dispatch"]


@pytest.mark.torch
def test_the_deepep_arm_runs_on_the_legacy_buffer_and_deepep_v2_on_the_elastic_buffer(
    k3_run: tuple[dict, dict],
) -> None:
    report, calls = k3_run
    for phase in ("before", "after"):
        assert report[phase]["dispatcher"] == {
            "deepep": "deepep-legacy-buffer",
            "deepep_v2": "deepep-elastic-buffer",
        }
    for rank in (0, 1):
        sequence = [(c["buffer"], c["call"]) for c in calls[rank]]
        assert ("Buffer", "get_dispatch_layout") in sequence
        assert ("Buffer", "combine") in sequence and ("ElasticBuffer", "combine") in sequence
        expanded = [c for c in calls[rank] if c["call"] == "dispatch" and "do_expand" in c]
        assert expanded and all(c["do_expand"] and c["buffer"] == "ElasticBuffer" for c in expanded)
        assert sequence[-2:] == [("Buffer", "destroy"), ("ElasticBuffer", "destroy")]
    environment = report["environment"]
    assert environment["dispatcher"] == "deep_ep"
    assert environment["deep_ep"]["module"] == "fake_deep_ep"
    assert environment["deep_ep"]["max_local_experts"] == 128
    assert environment["deep_ep"]["elastic"]["num_max_tokens_per_rank"] == 21


@pytest.mark.torch
def test_each_arms_plan_still_comes_from_the_predicate(k3_run: tuple[dict, dict]) -> None:
    report, calls = k3_run
    assert report["before"]["plan"] == {"deepep": "ep_a2a", "deepep_v2": "standard"}
    assert report["after"]["plan"] == {"deepep": "ep_a2a", "deepep_v2": "ep_a2a"}
    # the standard plan dispatches the DP-gathered batch (21 tokens) from each rank: only
    # deepep_v2 takes it, once, before the fix (then once more on its correct plan, locally)
    local = {0: 11, 1: 10}
    for rank in (0, 1):
        assert _dispatched(calls[rank], "Buffer") == [local[rank], local[rank]]
        assert _dispatched(calls[rank], "ElasticBuffer") == [21, local[rank], local[rank]]


@pytest.mark.torch
def test_before_the_fix_the_elastic_buffer_arm_shows_the_double_reduce(
    k3_run: tuple[dict, dict],
) -> None:
    report, _ = k3_run
    before, after = report["before"], report["after"]
    assert before["signature"]["deepep_v2"]["ratio"] == pytest.approx(2.0, abs=0.02)
    assert before["signature"]["deepep_v2"]["detected"] is True
    assert before["signature"]["deepep"]["detected"] is False
    assert after["agreement"]["passed"] is True
    assert report["criterion"]["kind"] == "tolerance"
    assert report["verdict"] == "confirmed"


@pytest.mark.torch
def test_each_real_buffer_arm_is_compared_with_its_model_on_the_same_inputs(
    k3_run: tuple[dict, dict],
) -> None:
    report, _ = k3_run
    for phase in ("before", "after"):
        emulated = report[phase]["emulated"]
        assert emulated["deepep"]["model"] == "deepep-legacy-normal"
        assert emulated["deepep"]["bit_exact"] is True  # the same operations in the same order
        assert emulated["deepep_v2"]["model"] == "deepep-elastic-expand"
        assert 0 < emulated["deepep_v2"]["rel_l2"] <= 1e-2  # one reduction per rank first


@pytest.mark.torch
def test_every_rank_saw_multicast_off_and_deep_eps_settings(k3_run: tuple[dict, dict]) -> None:
    report, calls = k3_run
    expected = {**MULTICAST_OFF, **DEEP_EP_DEFAULTS}
    for rank in (0, 1):
        inits = [c for c in calls[rank] if c["call"] == "init"]
        assert [c["buffer"] for c in inits] == ["Buffer", "ElasticBuffer"]
        assert all(c["env"] == expected for c in inits)
    assert report["environment"]["rank_env"] == " ".join(f"{k}={v}" for k, v in expected.items())


@pytest.mark.torch
def test_a_predicate_that_drops_deepep_double_reduces_on_the_legacy_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    plans = {
        "before": {"deepep_v2": True, "deepep": False},
        "after": {"deepep_v2": True, "deepep": True},
    }
    report, calls = _run_with_stand_in(tmp_path, monkeypatch, plans, ("deepep_v2", "deepep"))
    assert report["before"]["plan"] == {"deepep_v2": "ep_a2a", "deepep": "standard"}
    assert 21 in _dispatched(calls[0], "Buffer")  # the gathered batch, on the legacy buffer
    assert report["before"]["signature"]["deepep"]["ratio"] == pytest.approx(2.0, abs=0.02)
    assert report["verdict"] == "confirmed"


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


def test_only_deepep_and_deepep_v2_have_real_buffers() -> None:
    pytest.importorskip("torch")
    from driftcheck.runtime_verify.layer.deep_ep_dispatchers import (
        deep_ep_expert_cap,
        deep_ep_implementation_of,
    )

    assert deep_ep_implementation_of("deepep", DEEPEP_FAMILY) == "deepep-legacy-buffer"
    assert deep_ep_implementation_of("deepep_v2", DEEPEP_FAMILY) == "deepep-elastic-buffer"
    assert deep_ep_implementation_of("flashinfer", DEEPEP_FAMILY) == "tp-partial-sum"
    with pytest.raises(ValueError, match="not pplx"):
        deep_ep_implementation_of("pplx", DEEPEP_FAMILY)
    assert deep_ep_expert_cap(2) == 256  # K3's 384 experts do not fit the legacy kernels at W=2


@pytest.mark.torch
def test_the_markdown_report_lists_the_real_buffers_against_their_models(
    k3_run: tuple[dict, dict],
) -> None:
    from driftcheck.runtime_verify.layer import report_markdown

    text = report_markdown(k3_run[0])
    assert "Real DeepEP buffers against their models (same plan, weights and tokens):" in text
    assert "| after | deepep | deepep-legacy-buffer | deepep-legacy-normal | yes | 0 | 0 |" in text
    assert "| dispatcher | deep_ep |" in text


@pytest.mark.torch
@pytest.mark.parametrize(
    ("device", "message"),
    [("cpu", "use --device cuda"), ("cuda", "--dispatcher deep_ep needs DeepEP's deep_ep")],
)
def test_the_demonstration_exits_2_when_deep_ep_cannot_run(
    device: str, message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    pytest.importorskip("torch")
    from driftcheck.runtime_verify.layer.__main__ import main as demonstration

    monkeypatch.setitem(sys.modules, "deep_ep", None)
    args = ["--dispatcher", "deep_ep", "--device", device, "--shape", "tiny-bf16"]
    assert demonstration(args) == 2
    assert message in capsys.readouterr().err
