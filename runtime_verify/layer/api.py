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
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the K3-style MoE layer for both ``arms`` in every phase of ``plans`` and compare.

    ``plans`` maps a phase ("before", "after") to each arm's value of the EP all-to-all
    predicate: ``True`` takes the EP all-to-all plan, ``False`` the standard DP-gather/TP-reduce
    plan. An arm in ``family`` gets a dispatcher that combines across ranks itself; any other
    arm gets a partial-sum dispatcher. ``arms`` is ``(reference, test)``.

    Runs ``world_size`` ranks (spawned here, or the ranks ``torchrun`` started when RANK and
    WORLD_SIZE are set) on ``device`` ("cpu" or "cuda"). Progress lines go to ``progress``.

    Returns a JSON-serialisable report: ``environment``, ``arms``, one entry per phase
    (``bit_exact``, ``max_abs_diff``, ``top5_agree``, ``top5_token_agreement``, ``plan``,
    ``dispatcher``, ``seconds``, ``double_reduce``) and ``verdict`` ("confirmed" when the
    arms differ before and are bit-exact after).
    """
    job = Job(
        plans={phase: dict(flags) for phase, flags in plans.items()},
        arms=tuple(arms),
        shape=shape,
        world_size=world_size,
        device=device,
        family=frozenset(family),
        seed=seed,
    )
    job.validate()
    from .launch import launch

    return launch(job, progress)
