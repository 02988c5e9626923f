"""One rank's whole block run: join the group, then for each configuration in turn run every
arm in each phase, ``repeats`` times, and judge.

Every rank executes the same code on its own rows; rank 0 gathers the outputs and judges
(:mod:`.verdict`). A configuration in which the arms already agree before the fix shows
nothing, and the next one is tried; the first that shows a difference (or cannot run) decides.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from ..layer.comm import Comm
from ..layer.deep_ep_env import apply_rank_environment
from ..layer.dispatchers import kind_of
from ..layer.environment import Placement, describe, dist_backend, leave_group, rank_device
from ..layer.inputs import dp_row_counts, dp_rows, prompt_embeddings
from ..layer.lm_head import top5
from ..layer.runners import contiguous_capacity, describe_runner, make_runner
from ..layer.shapes import Shape, get_shape
from ..layer.weights import lm_head_weight
from .execute import Execution, execute
from .job import BlockJob
from .pack import Configuration
from .substitutes import RunContext
from .verdict import Run, judge_configuration

Emit = Callable[[str], None]


def run_block_job(
    job: BlockJob, placement: Placement, init_method: str, emit: Emit
) -> dict[str, Any]:
    """Run ``job`` as rank ``placement.rank``; rank 0 returns the report (others ``{}``)."""
    apply_rank_environment(job.settings.dispatcher)
    # the tree's code runs eagerly: a torch.compile of it runs the function as written (its
    # compiler backend is the runtime's, which the harness does not provide)
    import torch._dynamo

    torch._dynamo.config.disable = True
    device = rank_device(job.settings.device, placement)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // placement.local_world_size))
    backend = dist_backend(job.settings.device, placement)
    dist.init_process_group(
        backend,
        init_method=init_method,
        rank=placement.rank,
        world_size=placement.world_size,
        timeout=timedelta(minutes=10),
    )
    finished = False
    try:
        report = _run(job, Comm(placement.rank, placement.world_size, device), backend, emit)
        finished = True
        return report
    finally:
        leave_group(finished)


def _run(job: BlockJob, comm: Comm, backend: str, emit: Emit) -> dict[str, Any]:
    shape = get_shape(job.settings.shape)
    if job.settings.dispatcher == "deep_ep":
        from ..layer.deep_ep_dispatchers import MAX_LOCAL_EXPERTS, deep_ep_expert_cap

        cap = deep_ep_expert_cap(comm.world_size)
        if shape.experts > cap:
            emit(
                f"DeepEP's legacy intranode kernels take at most {MAX_LOCAL_EXPERTS} experts "
                f"per rank: {cap} of {shape.experts} routed experts"
            )
            shape = shape.with_experts(cap)
    dtype = getattr(torch, shape.dtype)
    runner, note = make_runner(job.settings.runner, comm.device, dtype)
    if note:
        emit(f"runner {job.settings.runner} not used: {note}; routed experts run on torch")
    capacity = None
    if runner.name == "deep_gemm":
        groups = shape.experts // comm.world_size
        capacity = contiguous_capacity(
            comm.world_size, shape.tokens, shape.top_k, groups, runner.alignment
        )
    make_deep_ep = None
    buffers = None
    if job.settings.dispatcher == "deep_ep":
        from functools import partial

        from ..layer.deep_ep_dispatchers import DeepEPBuffers, make_deep_ep_dispatcher
        from ..layer.deep_ep_module import load_deep_ep

        buffers = DeepEPBuffers(load_deep_ep(job.settings.deep_ep_module), dist.group.WORLD, shape)
        make_deep_ep = partial(make_deep_ep_dispatcher, buffers=buffers)
    tokens = prompt_embeddings(shape, job.settings.seed, comm.device, dtype)
    lm_head = lm_head_weight(shape, job.settings.seed, comm.device)
    report: dict[str, Any] = {
        "environment": describe(
            comm.device, backend, comm.world_size, shape.name, dtype, shape.experts, shape.experts
        ),
        "runner": describe_runner(runner, job.settings.runner, note),
        "configurations": [],
    }
    try:
        for configuration in job.configurations:
            runs: list[Run] = []
            for phase in ("before", "after"):
                for arm in job.arms.all():
                    for repeat in range(job.repeats):
                        emit(
                            f"{configuration.name}: {phase} the fix, {arm} arm"
                            + (f" (run {repeat + 1} of {job.repeats})" if job.repeats > 1 else "")
                        )
                        execution = _execute(
                            job, comm, configuration, arm, phase, tokens, shape, runner,
                            capacity, make_deep_ep,
                        )  # fmt: skip
                        runs.append(
                            _gathered(
                                job,
                                comm,
                                configuration,
                                phase,
                                arm,
                                repeat,
                                execution,
                                tokens,
                                lm_head,
                            )
                        )
            entry = (
                judge_configuration(job, configuration, runs, comm.device.type)
                if comm.rank == 0
                else {}
            )
            report["configurations"].append(entry)
            decided = torch.tensor([int(bool(entry.get("decides")))], device=comm.device)
            dist.broadcast(decided, src=0)
            if int(decided[0]):
                break
    finally:
        if buffers is not None:
            buffers.destroy()
    return report if comm.rank == 0 else {}


def _rows(configuration: Configuration, tokens: int, comm: Comm) -> slice:
    if configuration.rows == "all":
        return slice(0, tokens)
    return dp_rows(tokens, comm.rank, comm.world_size)


def _execute(
    job: BlockJob,
    comm: Comm,
    configuration: Configuration,
    arm: str,
    phase: str,
    tokens: torch.Tensor,
    shape: Shape,
    runner: Any,
    capacity: int | None,
    make_deep_ep: Any,
) -> Execution:
    rows = tokens[_rows(configuration, tokens.shape[0], comm)]
    ctx = RunContext(
        pack=job.pack,
        configuration=configuration,
        comm=comm,
        shape=shape,
        seed=job.settings.seed,
        dtype=tokens.dtype,
        arm=arm,
        enum=job.enum,
        dispatcher_kind=kind_of(arm, job.family, job.pack.dispatchers),
        runner=runner,
        capacity=capacity,
        rows=rows.shape[0],
        make_deep_ep=make_deep_ep,
    )
    executed = (*job.pack.executed_modules, ctx.enum_module)
    if comm.device.type == "cuda":
        torch.cuda.synchronize(comm.device)
    result = execute(
        Path(job.root), job.module, job.block, job.texts[phase], job.pack, executed, ctx, rows
    )
    if comm.device.type == "cuda":
        torch.cuda.synchronize(comm.device)
    return result


def _gathered(
    job: BlockJob,
    comm: Comm,
    configuration: Configuration,
    phase: str,
    arm: str,
    repeat: int,
    execution: Execution,
    tokens: torch.Tensor,
    lm_head: torch.Tensor,
) -> Run:
    """Rank 0's record of a run: every rank's output rows (when every rank has them), the
    top-5 read-out, and what rank 0's execution reached."""
    failed = torch.tensor([int(execution.output is None)], device=comm.device)
    dist.all_reduce(failed)
    output = top_ids = None
    if int(failed[0]) == 0:
        assert execution.output is not None
        mine = execution.output.reshape(execution.output.shape[0], -1)
        if configuration.rows == "all":
            rows = mine
        else:
            rows = comm.all_gather_rows(mine, dp_row_counts(tokens.shape[0], comm.world_size))
        residual = tokens[: rows.shape[0]] + rows.to(tokens.dtype)
        _, top_ids = top5(residual, lm_head)
        output, top_ids = rows.float().cpu(), top_ids.cpu()
    return Run(phase, arm, repeat, output, top_ids, execution)
