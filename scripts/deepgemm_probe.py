"""Does a DeepGEMM build run its JIT kernels? Each kernel runs in its own process.

    PYTHONPATH=DIR python3 scripts/deepgemm_probe.py [--k3] [--json FILE]

For every kernel a child process imports ``deep_gemm`` (from DIR), runs it once on random
inputs, checks the result against a float32 torch reference (``|d - ref| / |ref|``) and reports
the time of the first call (which includes the JIT compile, or a cache hit) and of the second.
A child killed by a signal (the known failure: SIGSEGV, -11) is reported as such. With
``--k3`` it also runs the m-grouped bf16 GEMMs at the shapes the layer harness uses for K3
(``runtime_verify.layer.runners.contiguous_capacity``), so their kernels land in the JIT cache
(``DG_JIT_CACHE_DIR``). Runs on the GPU machine only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

KERNELS = ("cublaslt_gemm_nt", "bf16_gemm_nt", "m_grouped_bf16", "m_grouped_fp8")
# (name, experts per rank, N, K, capacity rows): K3 w13 and w2 at W=2 (192 local experts) and
# W=4 (96), capacity = align(W * 192 tokens * top-8 + experts * 127, 128).
K3_KERNELS = {
    "k3_w13_w2ranks": (192, 4096, 7168, 27520),
    "k3_w2_w2ranks": (192, 7168, 2048, 27520),
    "k3_w13_w4ranks": (96, 4096, 7168, 18432),
    "k3_w2_w4ranks": (96, 7168, 2048, 18432),
}


def _rel(d: Any, ref: Any) -> float:
    return float((d.float() - ref).norm() / ref.norm())


def _contiguous_inputs(torch: Any, dg: Any, groups: int, n: int, k: int, rows: int | None):
    align = dg.get_mk_alignment_for_contiguous_layout()
    gen = torch.Generator(device="cuda").manual_seed(0)
    counts = torch.randint(1, 40, (groups,), generator=gen, device="cuda").tolist()
    starts, m = [], 0
    for count in counts:
        starts.append(m)
        m += -(-count // align) * align
    m = max(m, rows or 0)
    a = torch.zeros(m, k, device="cuda", dtype=torch.bfloat16)
    layout = torch.full((m,), -1, device="cuda", dtype=torch.int32)
    b = torch.randn(groups, n, k, device="cuda", generator=gen, dtype=torch.bfloat16)
    b.mul_(k**-0.5)
    for g, (start, count) in enumerate(zip(starts, counts, strict=True)):
        a[start : start + count] = torch.randn(count, k, device="cuda", generator=gen).to(
            torch.bfloat16
        )
        layout[start : start + count] = g
    valid = layout >= 0
    ref = torch.zeros(m, n, device="cuda")
    for g, (start, count) in enumerate(zip(starts, counts, strict=True)):
        ref[start : start + count] = a[start : start + count].float() @ b[g].float().T
    return a, b, layout, valid, ref


def run_one(name: str) -> dict[str, Any]:
    """Run kernel ``name`` in this process and describe the outcome."""
    import deep_gemm as dg
    import torch

    out: dict[str, Any] = {"kernel": name, "deep_gemm": dg.__version__, "file": dg.__file__}
    if name in ("cublaslt_gemm_nt", "bf16_gemm_nt"):
        a = torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
        d = torch.empty(256, 512, device="cuda", dtype=torch.bfloat16)
        ref = a.float() @ b.float().T

        def call() -> None:
            getattr(dg, name)(a, b, d)

        valid = None
    elif name == "m_grouped_fp8":
        a, b, layout, valid, ref = _contiguous_inputs(torch, dg, 4, 512, 1024, None)
        a8 = dg.per_token_cast_to_fp8(a, use_ue8m0=False)
        b8 = (
            torch.empty_like(b, dtype=torch.float8_e4m3fn),
            torch.empty(b.shape[0], b.shape[1] // 128, b.shape[2] // 128, device="cuda"),
        )
        for g in range(b.shape[0]):
            b8[0][g], b8[1][g] = dg.per_block_cast_to_fp8(b[g], use_ue8m0=False)
        d = torch.empty(a.shape[0], b.shape[1], device="cuda", dtype=torch.bfloat16)

        def call() -> None:
            dg.m_grouped_fp8_gemm_nt_contiguous(a8, b8, d, layout)

    else:
        groups, n, k, rows = K3_KERNELS.get(name, (4, 512, 1024, None))
        a, b, layout, valid, ref = _contiguous_inputs(torch, dg, groups, n, k, rows)
        d = torch.empty(a.shape[0], n, device="cuda", dtype=torch.bfloat16)
        out["shape"] = {"m": a.shape[0], "n": n, "k": k, "groups": groups}

        def call() -> None:
            dg.m_grouped_bf16_gemm_nt_contiguous(a, b, d, layout)

    for attempt in ("first_call_s", "second_call_s"):
        torch.cuda.synchronize()
        started = time.perf_counter()
        call()
        torch.cuda.synchronize()
        out[attempt] = round(time.perf_counter() - started, 3)
    if valid is not None:
        d, ref = d[valid], ref[valid]
    out["rel_err"] = _rel(d, ref)
    out["ok"] = out["rel_err"] < (5e-2 if name == "m_grouped_fp8" else 1e-2)
    return out


def probe(name: str, timeout: float) -> dict[str, Any]:
    """Run ``name`` in a child process; a crash or a hang becomes a result, not our death."""
    started = time.perf_counter()
    try:
        child = subprocess.run(
            [sys.executable, __file__, "--child", name],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"kernel": name, "ok": False, "outcome": f"timed out after {timeout:.0f} s"}
    seconds = round(time.perf_counter() - started, 1)
    lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
    if child.returncode == 0 and lines:
        return {**json.loads(lines[-1]), "outcome": "ran", "process_s": seconds}
    outcome = (
        f"killed by signal {-child.returncode}"
        if child.returncode < 0
        else f"exit {child.returncode}"
    )
    tail = (child.stdout + child.stderr).strip().splitlines()[-6:]
    return {"kernel": name, "ok": False, "outcome": outcome, "tail": tail, "process_s": seconds}


def main() -> int:
    """Probe every kernel; print one line each and, with --json, write them all."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--k3", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child)), flush=True)
        return 0
    names = list(KERNELS)
    results = []
    for name in names:
        results.append(probe(name, args.timeout))
        print(json.dumps(results[-1]), flush=True)
    if args.k3 and all(r["ok"] for r in results if r["kernel"] == "m_grouped_bf16"):
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(K3_KERNELS)) as pool:  # the JIT compiles run side by side
            for result in pool.map(lambda name: probe(name, args.timeout), K3_KERNELS):
                results.append(result)
                print(json.dumps(result), flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
