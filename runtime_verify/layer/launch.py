"""Start the ranks: spawn them here, or join a group ``torchrun`` already started."""

from __future__ import annotations

import contextlib
import os
import queue as queues
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import torch.multiprocessing as mp

from .deep_ep_module import preflight
from .environment import Placement
from .job import Job
from .worker import run_job

Progress = Callable[[str], None]


def torchrun_placement() -> Placement | None:
    """This process's placement when started by ``torchrun`` (RANK and WORLD_SIZE set)."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return None
    world_size = int(os.environ["WORLD_SIZE"])
    return Placement(
        rank=int(os.environ["RANK"]),
        world_size=world_size,
        local_rank=int(os.environ.get("LOCAL_RANK", "0")),
        local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE", str(world_size))),
    )


def launch(job: Job, progress: Progress | None) -> dict[str, Any]:
    """Run ``job`` over ``job.world_size`` ranks and return rank 0's report.

    A ``deep_ep`` job that cannot run here (no importable DeepEP, fewer GPUs than ranks on
    this host) raises :class:`.deep_ep_module.DeepEPUnavailable` before any rank starts.
    """
    placement = torchrun_placement()
    if job.dispatcher == "deep_ep":
        on_host = job.world_size if placement is None else placement.local_world_size
        preflight(job.deep_ep_module, job.device, on_host)
    if placement is None:
        return _spawn(job, progress)
    if placement.world_size != job.world_size:
        raise ValueError(
            f"torchrun started {placement.world_size} ranks but world_size={job.world_size}"
        )
    emit = progress if progress is not None and placement.rank == 0 else _silent
    return run_job(job, placement, "env://", emit)


@contextlib.contextmanager
def _outside_the_tree(directory: str) -> Iterator[None]:
    """Start processes from ``directory`` with ``PYTHONSAFEPATH`` set.

    A spawned rank (and the resource tracker) starts as ``python -c ...``, which puts the
    working directory first on ``sys.path`` before driftcheck's code runs: from inside a linted
    tree, the tree's own ``multiprocessing.py`` or ``torch.py`` would be imported and executed.
    """
    saved_dir, saved_env = os.getcwd(), os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(saved_dir)
        if saved_env is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = saved_env


def _spawn(job: Job, progress: Progress | None) -> dict[str, Any]:
    context = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="driftcheck-layer-") as rendezvous:
        init_method = f"file://{rendezvous}/store"
        with _outside_the_tree(rendezvous):
            messages = context.Queue()
            ranks = mp.spawn(
                _spawned_rank,
                args=(job, init_method, messages),
                nprocs=job.world_size,
                join=False,
            )
        report: dict[str, Any] | None = None
        done = False
        while not done:
            done = ranks.join(timeout=0.1)
            report = _drain(messages, progress) or report
    if report is None:
        raise RuntimeError("rank 0 finished without a report")
    return report


def _spawned_rank(index: int, job: Job, init_method: str, messages: Any) -> None:
    placement = Placement(index, job.world_size, index, job.world_size)
    if index == 0:
        report = run_job(job, placement, init_method, lambda text: messages.put(("progress", text)))
        messages.put(("report", report))
    else:
        run_job(job, placement, init_method, _silent)


def _drain(messages: Any, progress: Progress | None) -> dict[str, Any] | None:
    """Pass queued progress lines on; return the report if it arrived."""
    report = None
    while True:
        try:
            kind, payload = messages.get_nowait()
        except queues.Empty:
            return report
        if kind == "report":
            report = payload
        elif progress is not None:
            progress(payload)


def _silent(_text: str) -> None:
    pass
