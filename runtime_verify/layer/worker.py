"""One rank's whole run: join the group, build weights, run every phase and arm, compare."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from .agreement import criterion_for, judge_agreement
from .budget import experts_that_fit, free_host_bytes
from .comm import Comm
from .compare import ArmResult, compare_arms
from .dispatchers import Dispatcher, implementation_of, make_dispatcher
from .environment import Placement, describe, dist_backend, rank_device, ranks_per_memory
from .inputs import dp_row_counts, dp_rows, prompt_embeddings
from .job import Job
from .lm_head import top5
from .plans import PLANS
from .roles import SIGNATURE, plan_for
from .runners import Runner, contiguous_capacity, describe_runner, make_runner
from .shapes import Shape, get_shape
from .signatures import double_reduce, unreduced_partial
from .store import LayerWeights
from .verdict import judge

Emit = Callable[[str], None]


def run_job(job: Job, placement: Placement, init_method: str, emit: Emit) -> dict[str, Any]:
    """Run ``job`` as rank ``placement.rank`` and return the report (every rank returns it)."""
    device = rank_device(job.device, placement)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // placement.local_world_size))
    backend = dist_backend(job.device, placement)
    dist.init_process_group(
        backend,
        init_method=init_method,
        rank=placement.rank,
        world_size=placement.world_size,
        timeout=timedelta(minutes=10),
    )
    try:
        return _run(job, placement, device, backend, emit)
    finally:
        dist.destroy_process_group()


def _run(
    job: Job, placement: Placement, device: torch.device, backend: str, emit: Emit
) -> dict[str, Any]:
    comm = Comm(placement.rank, placement.world_size, device)
    configured = get_shape(job.shape)
    dtype = getattr(torch, configured.dtype)
    combining = [arm in job.family for arm in job.arms]
    banks = int(any(combining)) + int(not all(combining))
    shape = configured.with_experts(
        _agree_on_experts(configured, banks, job.device, placement, device, dtype)
    )
    shape.check(comm.world_size)
    if shape.experts < configured.experts:
        emit(f"memory allows {shape.experts} of {configured.experts} routed experts")
    runner, note = make_runner(job.runner, device, dtype)
    if note:
        emit(f"runner {job.runner} not used: {note}; routed experts run on torch")
    capacity = None
    if runner.name == "deep_gemm":
        capacity = contiguous_capacity(
            comm.world_size,
            shape.tokens,
            shape.top_k,
            shape.experts // comm.world_size,
            runner.alignment,
        )

    started = time.perf_counter()
    layer = LayerWeights(shape, job.seed, comm.rank, comm.world_size, device, dtype)
    _build(layer, job)
    local = prompt_embeddings(shape, job.seed, device, dtype)[
        dp_rows(shape.tokens, comm.rank, comm.world_size)
    ]
    _synchronize(device)
    implementations = tuple(implementation_of(arm, job.family) for arm in job.arms)
    criterion = criterion_for(implementations, runner.name)  # type: ignore[arg-type]
    report: dict[str, Any] = {
        "environment": {
            **describe(
                device,
                backend,
                comm.world_size,
                shape.name,
                dtype,
                shape.experts,
                configured.experts,
            ),
            "setup_seconds": round(time.perf_counter() - started, 3),
        },
        "runner": describe_runner(runner, job.runner, note),
        "role": job.role,
        "arms": {"reference": job.arms[0], "test": job.arms[1]},
        "criterion": criterion,
    }
    for phase, flags in job.plans.items():
        report[phase] = _run_phase(
            phase, flags, job, comm, layer, local, runner, capacity, criterion, emit
        )
    report["verdict"], report["verdict_reason"] = judge(report)
    return report


def _agree_on_experts(
    shape: Shape,
    banks: int,
    device_kind: str,
    placement: Placement,
    device: torch.device,
    dtype: torch.dtype,
) -> int:
    """Rank 0 sizes the expert count to its free memory; every rank adopts its answer.

    Plain tensors carry the answer (no object collectives); -1 means too little.
    """
    answer = torch.zeros(1, dtype=torch.int64, device=device)
    failure: MemoryError | None = None
    if placement.rank == 0:
        free = torch.cuda.mem_get_info(device)[0] if device.type == "cuda" else free_host_bytes()
        try:
            answer[0] = experts_that_fit(
                shape,
                placement.world_size,
                banks,
                ranks_per_memory(device_kind, placement),
                free,
                torch.empty((), dtype=dtype).element_size(),
            )
        except MemoryError as error:
            failure = error
            answer[0] = -1
    dist.broadcast(answer, src=0)
    if failure is not None:
        raise failure
    if int(answer[0]) < 0:
        raise MemoryError("rank 0 found too little memory for the smallest expert count")
    return int(answer[0])


def _build(layer: LayerWeights, job: Job) -> None:
    """Generate up front every weight some arm will use, so phase timings exclude it."""
    for arm in job.arms:
        _ = layer.routed_ep if arm in job.family else layer.routed_tp
    _ = layer.shared_full, layer.shared_tp, layer.router, layer.lm_head


def _forward(
    plan: str, comm: Comm, layer: LayerWeights, local: torch.Tensor, dispatcher: Dispatcher
) -> list[torch.Tensor]:
    out = PLANS[plan](local, comm, layer, dispatcher)
    values, ids = top5(local + out.output, layer.lm_head)
    counts = dp_row_counts(layer.shape.tokens, comm.world_size)
    tensors = (out.output, out.routed, out.shared, out.shared_completed, values, ids)
    return [comm.all_gather_rows(t, counts).cpu() for t in tensors]


def _run_phase(
    phase: str,
    flags: dict[str, bool],
    job: Job,
    comm: Comm,
    layer: LayerWeights,
    local: torch.Tensor,
    runner: Runner,
    capacity: int | None,
    criterion: dict[str, Any],
    emit: Emit,
) -> dict[str, Any]:
    results: dict[str, ArmResult] = {}
    plans, correct, implementation, seconds, signature = {}, {}, {}, {}, {}
    for role, arm in zip(("reference", "test"), job.arms, strict=True):
        dispatcher = make_dispatcher(arm, job.family, comm, layer, runner, capacity)
        plans[arm] = plan_for(job.role, flags[arm])
        correct[arm] = plan_for(job.role, arm in job.family)
        implementation[arm] = dispatcher.implementation
        emit(
            f"[{phase}] {role} arm {arm}: {plans[arm]} plan, {dispatcher.implementation} "
            f"dispatcher, {runner.name} experts, world size {comm.world_size}"
        )
        _synchronize(comm.device)
        started = time.perf_counter()
        results[arm] = ArmResult(*_forward(plans[arm], comm, layer, local, dispatcher))
        _synchronize(comm.device)
        seconds[arm] = round(time.perf_counter() - started, 4)
        right = results[arm]
        if correct[arm] != plans[arm]:
            right = ArmResult(*_forward(correct[arm], comm, layer, local, dispatcher))
        signature[arm] = _signature(job.role, results[arm], right, comm.world_size)
    reference, test = job.arms
    comparison = compare_arms(results[reference], results[test])
    return {
        "plan": plans,
        "correct_plan": correct,
        "dispatcher": implementation,
        "signature": signature,
        **comparison,
        "agreement": judge_agreement(criterion, comparison),
        "seconds": seconds,
    }


def _signature(role: str, arm: ArmResult, right: ArmResult, world_size: int) -> dict[str, Any]:
    if SIGNATURE[role] == "double_reduce":
        return double_reduce(arm.routed, right.routed, world_size)
    return unreduced_partial(arm.shared, arm.shared_completed, right.shared)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
