"""The public entry point: run a reference and a test arm through each phase's plans."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .family import DEEPEP_FAMILY
from .job import Job


def confirm_plans(
    plans: dict[str, dict[str, bool]],
    *,
    arms: tuple[str, str] = ("deepep", "deepep_v2"),
    shape: str = "tiny",
    world_size: int = 2,
    device: str = "cpu",
    family: frozenset[str] = DEEPEP_FAMILY,
    seed: int = 0,
    role: str = "ep_a2a",
    runner: str = "torch",
    dispatcher: str = "model",
    deep_ep_module: str = "deep_ep",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the K3-style MoE layer for both ``arms`` in every phase of ``plans`` and compare.

    ``plans`` maps a phase ("before", "after") to each arm's value of the site's predicate:
    ``True`` when the site counts the arm's backend as a family member. ``role`` says what that
    value chooses (:mod:`.roles`): for ``ep_a2a`` and ``forward_switch`` the EP all-to-all plan
    against the DP-gather/TP-reduce plan, for ``shared_expert`` a replicated against a TP-sharded
    shared expert. An arm in ``family`` gets a combining dispatcher (``deepep_v2`` DeepEP's
    elastic model, every other member the legacy normal-mode model), any other arm a
    partial-sum one. ``arms`` is ``(reference, test)``. ``runner`` is ``"torch"`` or
    ``"deep_gemm"`` (DeepGEMM's m-grouped contiguous GEMM when importable on CUDA; torch
    otherwise, and the report says why). ``dispatcher`` is ``"model"`` (the dispatcher models
    above, any device) or ``"deep_ep"``: ``deepep`` on DeepEP's legacy ``Buffer`` and
    ``deepep_v2`` on its ``ElasticBuffer`` (:mod:`.deep_ep_dispatchers`), one rank per GPU over
    NCCL, bf16 shapes only; each arm is then also run on its model, and each phase's
    ``emulated`` entry gives how far the real buffer's output is from the model's. A ``deep_ep``
    run that cannot start here raises :class:`.deep_ep_module.DeepEPUnavailable`, never falls
    back. ``deep_ep_module`` names the module holding ``Buffer`` and ``ElasticBuffer``
    (``deep_ep``; a stand-in with DeepEP's API may run on CPU, which is how the tests run it).

    Runs ``world_size`` ranks (spawned here, or the ranks ``torchrun`` started when RANK and
    WORLD_SIZE are set) on ``device`` ("cpu" or "cuda"). Progress lines go to ``progress``.

    Returns a JSON-serialisable report: ``environment``, ``runner``, ``role``, ``arms``,
    ``criterion``, one entry per phase (``plan``, ``correct_plan``, ``dispatcher``,
    ``signature`` per arm, the comparison fields, ``agreement``, ``seconds`` per arm), and
    ``verdict`` ("confirmed", "refuted" or "inconclusive", :mod:`.verdict`) with its
    ``verdict_reason``.
    """
    job = Job(
        plans={phase: dict(flags) for phase, flags in plans.items()},
        arms=tuple(arms),
        shape=shape,
        world_size=world_size,
        device=device,
        family=frozenset(family),
        seed=seed,
        role=role,
        runner=runner,
        dispatcher=dispatcher,
        deep_ep_module=deep_ep_module,
    )
    job.validate()
    from .launch import launch

    return launch(job, progress)
