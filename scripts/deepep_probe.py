"""What a DeepEP build runs on one GPU: each step in its own process, with a time limit.

    PYTHONPATH=DEEPEP_TARGET:DRIFTCHECK python3 scripts/deepep_probe.py --json FILE [--deadline S]

Steps (a step that crashes, hangs or raises is recorded as such, and the next one runs):

- ``import``: ``import deep_ep``; its version, file, SM90 build, ``topk_idx_t``, the NCCL and
  NVSHMEM roots it found, torch's NCCL version.
- ``w1-elastic``: one rank, NCCL group of one: the layer harness's own ``ElasticBufferDispatcher``
  (``deep_ep.ElasticBuffer``, expanded layout, built by ``DeepEPBuffers`` exactly as a
  ``--dispatcher deep_ep`` run builds it) on K3-shaped tokens (hidden 7168, top-8, 192 tokens,
  256 experts: the elastic buffer takes at most 256 per rank), against the elastic model
  (``ElasticExpandDispatcher``) and a float32 reference; expert alignment 128 then 1. The first
  call includes DeepEP's JIT compile.
- ``w1-legacy``: one rank: ``deep_ep.Buffer`` built, ``get_dispatch_layout`` checked against a
  torch count; ``dispatch`` tried (the intranode kernels exist for 2, 4 and 8 ranks only).
- ``w2-legacy-one-gpu`` / ``w4-legacy-one-gpu``: two (four) processes sharing the one GPU over
  a gloo group (NCCL refuses two ranks on one GPU; the legacy buffer needs the group only to
  exchange IPC handles): the harness's ``LegacyBufferDispatcher`` against the legacy model
  (``LegacyNormalDispatcher``), K3-shaped, 256 experts (the legacy intranode kernels take at
  most 128 per rank); each run twice, so the real-vs-model figures sit beside real-vs-real and
  model-vs-model (``index_add_`` on CUDA accumulates with atomics, in no fixed order).

Every rank sets the harness's rank environment first (NVLink multicast off). With
``DEEPEP_PROBE_LAZY=1`` every process imports ``deep_ep`` with lazy symbol binding
(``RTLD_LAZY``), for a build whose NCCL headers are newer than the NCCL library it runs with
(scripts/build_deepep.sh, ``DEEPEP_NCCL_INCLUDE``). GPU machine only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import timedelta
from typing import Any

STEPS = ("import", "w1-legacy", "w2-legacy-one-gpu", "w4-legacy-one-gpu", "w1-elastic")
LIMITS = {
    "import": 60,
    "w1-legacy": 60,
    "w2-legacy-one-gpu": 90,
    "w4-legacy-one-gpu": 90,
    "w1-elastic": 150,
}
RESULT = "PROBE-RESULT "


def _import_deep_ep() -> Any:
    """``import deep_ep``, with lazy symbol binding when ``DEEPEP_PROBE_LAZY=1``."""
    if os.environ.get("DEEPEP_PROBE_LAZY") == "1":
        sys.setdlopenflags(os.RTLD_LAZY)
    import deep_ep

    return deep_ep


def _k3(experts: int) -> Any:
    from driftcheck.runtime_verify.layer.shapes import SHAPES

    return SHAPES["k3"].with_experts(experts)


def _join(rank: int, world: int, backend: str, store: str) -> Any:
    import torch
    import torch.distributed as dist
    from driftcheck.runtime_verify.layer.deep_ep_env import apply_rank_environment

    apply_rank_environment("deep_ep")
    torch.cuda.set_device(0)
    dist.init_process_group(
        backend, init_method=f"file://{store}", rank=rank, world_size=world,
        timeout=timedelta(minutes=2),
    )  # fmt: skip
    return dist.group.WORLD


def _rel(a: Any, b: Any) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def _fp32_reference(tokens: Any, ids: Any, weights: Any, bank: Any) -> Any:
    """sum_k w_k * expert_k(x), every expert in float32 (the one bank of a single rank)."""
    import torch
    from driftcheck.runtime_verify.layer.runners import swiglu

    out = torch.zeros(tokens.shape, dtype=torch.float32, device=tokens.device)
    for j in range(bank.w13.shape[0]):
        token, slot = torch.nonzero(ids == j, as_tuple=True)
        if len(token):
            y = swiglu(tokens[token].float(), bank.w13[j].float(), bank.w2[j].float())
            out.index_add_(0, token, y * weights[token, slot].unsqueeze(-1))
    return out


def step_import() -> dict[str, Any]:
    import torch

    started = time.perf_counter()
    deep_ep = _import_deep_ep()
    from deep_ep.utils.find_pkgs import find_nccl_root, find_nvshmem_root

    return {
        "version": deep_ep.__version__,
        "file": deep_ep.__file__,
        "sm90_compiled": bool(deep_ep.Buffer.is_sm90_compiled()),
        "topk_idx_t": str(deep_ep.topk_idx_t),
        "nccl_root": find_nccl_root(),
        "nvshmem_root": find_nvshmem_root(),
        "torch": torch.__version__,
        "torch_nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "gpus": torch.cuda.device_count(),
        "gpu": torch.cuda.get_device_name(0),
        "import_seconds": round(time.perf_counter() - started, 2),
        "lazy_binding": os.environ.get("DEEPEP_PROBE_LAZY") == "1",
    }


def step_w1_elastic(store: str) -> dict[str, Any]:
    import torch

    deep_ep = _import_deep_ep()
    from driftcheck.runtime_verify.layer.comm import Comm
    from driftcheck.runtime_verify.layer.compare import same_bytes
    from driftcheck.runtime_verify.layer.deep_ep_dispatchers import (
        DeepEPBuffers,
        ElasticBufferDispatcher,
    )
    from driftcheck.runtime_verify.layer.dispatchers import ElasticExpandDispatcher
    from driftcheck.runtime_verify.layer.inputs import prompt_embeddings
    from driftcheck.runtime_verify.layer.router import route
    from driftcheck.runtime_verify.layer.runners import TorchRunner
    from driftcheck.runtime_verify.layer.store import LayerWeights

    group = _join(0, 1, "nccl", store)
    device, dtype, shape = torch.device("cuda", 0), torch.bfloat16, _k3(256)
    comm = Comm(0, 1, device)
    started = time.perf_counter()
    layer = LayerWeights(shape, 0, 0, 1, device, dtype)
    tokens = prompt_embeddings(shape, 0, device, dtype)
    ids, weights = route(tokens, layer.router, shape.top_k, shape.scoring)
    reference = _fp32_reference(tokens, ids, weights, layer.routed_ep)
    torch.cuda.synchronize()
    out: dict[str, Any] = {"setup_seconds": round(time.perf_counter() - started, 2)}
    buffers = DeepEPBuffers(deep_ep, group, shape)
    started = time.perf_counter()
    _ = buffers.elastic
    out["elastic_init_seconds"] = round(time.perf_counter() - started, 2)
    out["buffer"] = buffers.built
    out["logical_domain"] = list(buffers.elastic.get_logical_domain_size())
    out["physical_domain"] = list(buffers.elastic.get_physical_domain_size())
    for alignment in (128, 1):
        runner = TorchRunner(alignment=alignment)
        real = ElasticBufferDispatcher("deepep_v2", comm, layer, runner, None, buffers)
        model = ElasticExpandDispatcher("deepep_v2", comm, layer, runner, None)
        times = []
        for _ in range(2):
            torch.cuda.synchronize()
            started = time.perf_counter()
            got = real(tokens, ids, weights)
            torch.cuda.synchronize()
            times.append(round(time.perf_counter() - started, 3))
        again = real(tokens, ids, weights)
        emulated = model(tokens, ids, weights)
        held = real.last
        assert held is not None
        out[f"alignment_{alignment}"] = {
            "seconds_first_second": times,
            "expanded_rows": int(held.tensor.shape[0]),
            "pairs": int((held.rows_meta[:, 1] >= 0).sum()),
            "deterministic": same_bytes(got, again),
            "vs_model": {
                "bit_exact": same_bytes(got, emulated),
                "rel_l2": _rel(got, emulated),
                "max_abs_diff": float((got.double() - emulated.double()).abs().max()),
            },
            "vs_fp32_reference_rel_l2": _rel(got, reference),
            "model_vs_fp32_reference_rel_l2": _rel(emulated, reference),
        }
    buffers.destroy()
    return out


def step_w1_legacy(store: str) -> dict[str, Any]:
    import torch

    deep_ep = _import_deep_ep()

    group = _join(0, 1, "nccl", store)
    shape = _k3(256)
    config = deep_ep.Config(deep_ep.Buffer.num_sms, 24, 256, 6, 128)
    nvl_bytes = config.get_nvl_buffer_size_hint(shape.hidden * 2, 1)
    buffer = deep_ep.Buffer(
        group, nvl_bytes, 0, low_latency_mode=False, num_qps_per_rank=deep_ep.Buffer.num_sms,
        explicitly_destroy=True,
    )  # fmt: skip
    generator = torch.Generator(device="cuda").manual_seed(0)
    scores = torch.rand(shape.tokens, shape.experts, device="cuda", generator=generator)
    topk = torch.topk(scores, shape.top_k, dim=-1).indices.to(deep_ep.topk_idx_t)
    per_rank, per_rdma, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk, shape.experts)
    expected = torch.bincount(topk.flatten(), minlength=shape.experts).int()
    out: dict[str, Any] = {
        "num_nvl_bytes": int(nvl_bytes),
        "layout": {
            "num_tokens_per_rank": per_rank.tolist(),
            "num_tokens_per_rdma_rank": None if per_rdma is None else per_rdma.tolist(),
            "num_tokens_per_expert_matches_torch": bool(torch.equal(per_expert, expected)),
            "every_token_in_rank_0": bool(in_rank.all()),
        },
    }
    x = torch.randn(shape.tokens, shape.hidden, device="cuda", dtype=torch.bfloat16)
    try:
        buffer.dispatch(
            x, topk_idx=topk, topk_weights=torch.ones(topk.shape, device="cuda"),
            num_tokens_per_rank=per_rank, num_tokens_per_rdma_rank=per_rdma,
            is_token_in_rank=in_rank, num_tokens_per_expert=per_expert, config=config,
        )  # fmt: skip
        torch.cuda.synchronize()
        out["dispatch"] = "ran"
    except Exception as exc:  # the intranode kernels have no 1-rank instance
        out["dispatch"] = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
    try:
        buffer.destroy()
        out["destroy"] = "ran"
    except Exception as exc:  # destroy() runs an intranode barrier too
        out["destroy"] = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
    return out


def _shared_gpu_rank(rank: int, world: int, store: str, queue: Any) -> None:
    import torch

    deep_ep = _import_deep_ep()
    from driftcheck.runtime_verify.layer.comm import Comm
    from driftcheck.runtime_verify.layer.compare import same_bytes
    from driftcheck.runtime_verify.layer.deep_ep_dispatchers import (
        DeepEPBuffers,
        LegacyBufferDispatcher,
    )
    from driftcheck.runtime_verify.layer.dispatchers import LegacyNormalDispatcher
    from driftcheck.runtime_verify.layer.inputs import dp_rows, prompt_embeddings
    from driftcheck.runtime_verify.layer.router import route
    from driftcheck.runtime_verify.layer.runners import TorchRunner
    from driftcheck.runtime_verify.layer.store import LayerWeights

    group = _join(rank, world, "gloo", store)
    device, dtype, shape = torch.device("cuda", 0), torch.bfloat16, _k3(256)
    comm = Comm(rank, world, device)
    layer = LayerWeights(shape, 0, rank, world, device, dtype)
    tokens = prompt_embeddings(shape, 0, device, dtype)[dp_rows(shape.tokens, rank, world)]
    ids, weights = route(tokens, layer.router, shape.top_k, shape.scoring)
    buffers = DeepEPBuffers(deep_ep, group, shape)
    runner = TorchRunner()
    real = LegacyBufferDispatcher("deepep", comm, layer, runner, None, buffers)
    model = LegacyNormalDispatcher("deepep", comm, layer, runner, None)
    torch.cuda.synchronize()
    started = time.perf_counter()
    got = real(tokens, ids, weights)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    held = real.last
    again = real(tokens, ids, weights)
    emulated = model(tokens, ids, weights)
    emulated_again = model(tokens, ids, weights)
    assert held is not None and model.last is not None

    def pair(a: Any, b: Any) -> dict[str, Any]:
        return {
            "bit_exact": same_bytes(a, b),
            "rel_l2": _rel(a, b),
            "elements_differ": int((a != b).sum()),
        }

    queue.put(
        {
            "rank": rank,
            "buffer": buffers.built,
            "seconds_first": round(seconds, 3),
            "tokens": int(tokens.shape[0]),
            "received_rows": int(held.tensor.shape[0]),
            "sources_match_model": bool(
                torch.equal(held.rows_meta.cpu(), model.last.rows_meta.cpu())
            ),
            "partial_bit_exact_vs_model": same_bytes(held.tensor, model.last.tensor),
            "real_vs_model": pair(got, emulated),
            "real_vs_real": pair(got, again),
            "model_vs_model": pair(emulated, emulated_again),
        }
    )
    buffers.destroy()


def step_legacy_one_gpu(world: int, store: str) -> dict[str, Any]:
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    queue = context.Queue()
    mp.spawn(_shared_gpu_rank, args=(world, store, queue), nprocs=world, join=True)
    ranks = sorted((queue.get() for _ in range(world)), key=lambda entry: entry["rank"])
    return {"ranks": ranks}


def _child(step: str) -> None:
    store = os.path.join(tempfile.mkdtemp(prefix="deepep-probe-"), "store")
    runners = {
        "import": step_import,
        "w1-elastic": lambda: step_w1_elastic(store),
        "w1-legacy": lambda: step_w1_legacy(store),
        "w2-legacy-one-gpu": lambda: step_legacy_one_gpu(2, store),
        "w4-legacy-one-gpu": lambda: step_legacy_one_gpu(4, store),
    }
    try:
        result = {"status": "ok", **runners[step]()}
    except Exception as exc:
        traceback.print_exc()
        result = {"status": "raised", "error": f"{type(exc).__name__}: {str(exc)[:600]}"}
    print(RESULT + json.dumps(result), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--step", choices=STEPS, help="run one step in this process")
    parser.add_argument("--steps", default=",".join(STEPS))
    parser.add_argument("--json", help="write every step's result here")
    parser.add_argument("--deadline", type=float, default=600, help="seconds for all steps")
    args = parser.parse_args()
    if args.step:
        _child(args.step)
        return 0
    start, results = time.monotonic(), {}
    for step in args.steps.split(","):
        left = args.deadline - (time.monotonic() - start)
        limit = min(LIMITS[step], left)
        if limit < 20:
            results[step] = {"status": "not run", "why": f"{left:.0f} s left of the deadline"}
            continue
        begun = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--step", step],
                capture_output=True, text=True, timeout=limit,
            )  # fmt: skip
            lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
            entry = json.loads(lines[-1][len(RESULT) :]) if lines else {"status": "no result"}
            entry["returncode"] = done.returncode
            tail = (done.stdout + done.stderr)[-2500:]
        except subprocess.TimeoutExpired as exc:
            entry = {"status": f"timed out after {limit:.0f} s"}
            tail = ((exc.stdout or b"").decode() + (exc.stderr or b"").decode())[-2500:]
        entry["wall_seconds"] = round(time.monotonic() - begun, 1)
        entry["log_tail"] = tail
        results[step] = entry
        print(f"== {step}: {json.dumps({k: v for k, v in entry.items() if k != 'log_tail'})}")
        print(tail, flush=True)
        if args.json:
            with open(args.json, "w") as out:
                json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
