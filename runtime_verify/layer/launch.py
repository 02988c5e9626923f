"""Start the ranks: spawn them here, or join a group ``torchrun`` already started."""

from __future__ import annotations

import contextlib
import os
import queue as queues
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import torch.multiprocessing as mp

from .environment import Placement

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


RankEntry = Callable[[Any, Placement, str, Progress], dict[str, Any]]


def spawn_ranks(
    entry: RankEntry, job: Any, world_size: int, progress: Progress | None
) -> dict[str, Any]:
    """Spawn ``world_size`` ranks running ``entry(job, placement, init_method, emit)`` and
    return rank 0's report (progress lines from rank 0 go to ``progress``)."""
    context = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="driftcheck-layer-") as rendezvous:
        init_method = f"file://{rendezvous}/store"
        with _outside_the_tree(rendezvous):
            messages = context.Queue()
            ranks = mp.spawn(
                _spawned_rank,
                args=(entry, job, world_size, init_method, messages),
                nprocs=world_size,
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


def _spawned_rank(
    index: int, entry: RankEntry, job: Any, world_size: int, init_method: str, messages: Any
) -> None:
    placement = Placement(index, world_size, index, world_size)
    if index == 0:
        report = entry(job, placement, init_method, lambda text: messages.put(("progress", text)))
        messages.put(("report", report))
    else:
        entry(job, placement, init_method, _silent)


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
