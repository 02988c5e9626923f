"""One rank's whole run: join the group, build weights, run every phase and arm, compare."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

import torch
import torch.distributed as dist

from .agreement import criterion_for, judge_agreement
from .budget import experts_that_fit, free_host_bytes
from .comm import Comm
from .compare import ArmResult, compare_arms
from .deep_ep_dispatchers import (
    MAX_LOCAL_EXPERTS,
    DeepEPBuffers,
    deep_ep_expert_cap,
    deep_ep_implementation_of,
    make_deep_ep_dispatcher,
)
from .deep_ep_env import apply_rank_environment
from .deep_ep_module import DeepEPUnavailable, describe_deep_ep, load_deep_ep
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
DispatcherFactory = Callable[..., Dispatcher]


def run_job(job: Job, placement: Placement, init_method: str, emit: Emit) -> dict[str, Any]:
    """Run ``job`` as rank ``placement.rank`` and return the report (every rank returns it).

    The rank first sets its environment (:mod:`.deep_ep_env`: NVLink multicast off, and
    DeepEP's intranode settings for a ``deep_ep`` job), before NCCL or DeepEP initialise.
    """
    rank_env = apply_rank_environment(job.dispatcher)
    device = rank_device(job.device, placement)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // placement.local_world_size))
    backend = dist_backend(job.device, placement)
    if job.dispatcher == "deep_ep" and job.device == "cuda" and backend != "nccl":
        raise DeepEPUnavailable(
            f"--dispatcher deep_ep needs the NCCL backend, one rank per GPU; this rank would "
            f"use {backend} (DRIFTCHECK_DIST_BACKEND={os.environ.get('DRIFTCHECK_DIST_BACKEND')})"
        )
    dist.init_process_group(
        backend,
        init_method=init_method,
        rank=placement.rank,
        world_size=placement.world_size,
        timeout=timedelta(minutes=10),
    )
    try:
        return _run(job, placement, device, backend, rank_env, emit)
    finally:
        dist.destroy_process_group()


def _run(
    job: Job,
    placement: Placement,
    device: torch.device,
    backend: str,
    rank_env: dict[str, str],
    emit: Emit,
) -> dict[str, Any]:
    comm = Comm(placement.rank, placement.world_size, device)
    configured = get_shape(job.shape)
    dtype = getattr(torch, configured.dtype)
    combining = [arm in job.family for arm in job.arms]
    banks = int(any(combining)) + int(not all(combining))
    fits = _agree_on_experts(configured, banks, job.device, placement, device, dtype)
    shape = configured.with_experts(fits)
    if job.dispatcher == "deep_ep" and fits > deep_ep_expert_cap(comm.world_size):
        shape = configured.with_experts(deep_ep_expert_cap(comm.world_size))
        emit(
            f"DeepEP's legacy intranode kernels take at most {MAX_LOCAL_EXPERTS} experts per "
            f"rank: {shape.experts} of {configured.experts} routed experts"
        )
    shape.check(comm.world_size)
    if fits < configured.experts:
        emit(f"memory allows {fits} of {configured.experts} routed experts")
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
    implementations = tuple(_implementation(job, arm) for arm in job.arms)
    criterion = criterion_for(implementations, runner.name)  # type: ignore[arg-type]
    factory: DispatcherFactory = make_dispatcher
    buffers = None
    deep_ep: dict[str, Any] | None = None
    if job.dispatcher == "deep_ep":
        module = load_deep_ep(job.deep_ep_module)
        buffers = DeepEPBuffers(module, dist.group.WORLD, shape)
        factory = partial(make_deep_ep_dispatcher, buffers=buffers)
        deep_ep = describe_deep_ep(module)
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
            "dispatcher": job.dispatcher,
            "rank_env": " ".join(f"{name}={value}" for name, value in rank_env.items()),
        },
        "runner": describe_runner(runner, job.runner, note),
        "role": job.role,
        "arms": {"reference": job.arms[0], "test": job.arms[1]},
        "criterion": criterion,
    }
    try:
        for phase, flags in job.plans.items():
            report[phase] = _run_phase(
                phase, flags, job, comm, layer, local, runner, capacity, criterion, factory, emit
            )
    finally:
        if buffers is not None:
            _synchronize(device)
            buffers.destroy()
    if deep_ep is not None and buffers is not None:
        report["environment"]["deep_ep"] = {
            **deep_ep,
            "max_local_experts": MAX_LOCAL_EXPERTS,
            **buffers.built,
        }
    report["verdict"], report["verdict_reason"] = judge(report)
    return report


def _implementation(job: Job, arm: str) -> str:
    if job.dispatcher == "deep_ep":
        return deep_ep_implementation_of(arm, job.family)
    return implementation_of(arm, job.family)


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
    factory: DispatcherFactory,
    emit: Emit,
) -> dict[str, Any]:
    results: dict[str, ArmResult] = {}
    plans, correct, implementation, seconds, signature = {}, {}, {}, {}, {}
    emulated: dict[str, Any] = {}
    for role, arm in zip(("reference", "test"), job.arms, strict=True):
        dispatcher = factory(arm, job.family, comm, layer, runner, capacity)
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
        if job.dispatcher == "deep_ep" and dispatcher.implementation != implementation_of(
            arm, job.family
        ):
            model = make_dispatcher(arm, job.family, comm, layer, runner, capacity)
            emulated_result = ArmResult(*_forward(plans[arm], comm, layer, local, model))
            emulated[arm] = _against_model(model.implementation, emulated_result, results[arm])
    reference, test = job.arms
    comparison = compare_arms(results[reference], results[test])
    entry = {
        "plan": plans,
        "correct_plan": correct,
        "dispatcher": implementation,
        "signature": signature,
        **comparison,
        "agreement": judge_agreement(criterion, comparison),
        "seconds": seconds,
    }
    if emulated:
        entry["emulated"] = emulated
    return entry


def _against_model(model: str, emulated: ArmResult, real: ArmResult) -> dict[str, Any]:
    """How far an arm on DeepEP's real buffer is from the same arm on its dispatcher model
    (same plan, weights and tokens): the emulation's own agreement figures."""
    comparison = compare_arms(emulated, real)
    keys = ("bit_exact", "max_abs_diff", "rel_l2", "routed_rel_l2", "top5_token_agreement")
    return {"model": model, **{key: comparison[key] for key in keys}}


def _signature(role: str, arm: ArmResult, right: ArmResult, world_size: int) -> dict[str, Any]:
    if SIGNATURE[role] == "double_reduce":
        return double_reduce(arm.routed, right.routed, world_size)
    return unreduced_partial(arm.shared, arm.shared_completed, right.shared)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
