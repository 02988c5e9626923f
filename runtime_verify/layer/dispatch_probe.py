"""Run DeepEP's two dispatcher models side by side on the same tokens and show how they differ.

:func:`probe_dispatchers` spawns ``world_size`` ranks (gloo), routes the same inputs once, and
passes them through the legacy normal-mode model and the elastic expanded-layout model. It
returns, per model, what rank 0 held just before the combine (its row count and the first
rows' metadata: ``(source rank, source token)`` for legacy, ``(pair, local expert)`` for
elastic) and the combined output of every rank, and the comparison of the two outputs under
the block verdict's tolerance (:data:`..block.verdict.TOLERANCE`).
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ..block.verdict import TOLERANCE
from .comm import Comm
from .compare import relative_error, same_bytes
from .dispatchers import ELASTIC, LEGACY, make_dispatcher
from .environment import leave_group
from .inputs import dp_row_counts, dp_rows, prompt_embeddings
from .launch import _outside_the_tree
from .router import route
from .runners import TorchRunner
from .shapes import get_shape
from .store import LayerWeights

KIND_OF = {LEGACY: "legacy", ELASTIC: "elastic"}


def probe_dispatchers(shape: str = "tiny", world_size: int = 2, seed: int = 0) -> dict[str, Any]:
    """Both models' pre-combine buffers (rank 0) and combined outputs, and their agreement."""
    get_shape(shape).check(world_size)
    context = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="driftcheck-probe-") as rendezvous:
        with _outside_the_tree(rendezvous):
            results = context.Queue()
            ranks = mp.spawn(
                _rank,
                args=(shape, world_size, seed, f"file://{rendezvous}/store", results),
                nprocs=world_size,
                join=False,
            )
        report = None
        while not ranks.join(timeout=0.1):
            if not results.empty():
                report = results.get()
        if report is None and not results.empty():
            report = results.get()
    if report is None:
        raise RuntimeError("rank 0 finished without a report")
    return report


def _rank(index: int, shape_name: str, world_size: int, seed: int, init: str, out: Any) -> None:
    dist.init_process_group(
        "gloo", init_method=init, rank=index, world_size=world_size,
        timeout=timedelta(minutes=5),
    )  # fmt: skip
    finished = False
    try:
        report = _probe(index, shape_name, world_size, seed)
        if index == 0:
            out.put(report)
        finished = True
    finally:
        leave_group(finished)


def _probe(rank: int, shape_name: str, world_size: int, seed: int) -> dict[str, Any]:
    shape = get_shape(shape_name)
    dtype, cpu = getattr(torch, shape.dtype), torch.device("cpu")
    comm = Comm(rank, world_size, cpu)
    layer = LayerWeights(shape, seed, rank, world_size, cpu, dtype)
    local = prompt_embeddings(shape, seed, cpu, dtype)[dp_rows(shape.tokens, rank, world_size)]
    expert_ids, weights = route(local, layer.router, shape.top_k, shape.scoring)
    counts = dp_row_counts(shape.tokens, world_size)
    report: dict[str, Any] = {"shape": shape_name, "world_size": world_size}
    outputs = {}
    for implementation in (LEGACY, ELASTIC):
        kind = KIND_OF[implementation]
        dispatcher = make_dispatcher(kind, kind, comm, layer, TorchRunner())
        combined = dispatcher(local, expert_ids, weights)
        held = getattr(dispatcher, "last", None)
        assert held is not None
        outputs[implementation] = comm.all_gather_rows(combined, counts)
        report[implementation] = {
            "kind": kind,
            "pre_combine_rows": held.tensor.shape[0],
            "pre_combine_meta": held.rows_meta[:6].tolist(),
        }
    legacy, elastic = outputs[LEGACY], outputs[ELASTIC]
    report["after_combine"] = {
        "tolerance": TOLERANCE,
        "bit_exact": same_bytes(legacy, elastic),
        "rel_l2": relative_error(elastic, legacy),
        "max_abs_diff": float((elastic.double() - legacy.double()).abs().max()),
    }
    return report
