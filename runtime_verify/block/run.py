"""``verify --layer``: run each eligible unit's block from the tree, and report what ran.

For every unit (:mod:`.plan`) the file is taken as written and as ``--fix`` writes it, one
:class:`~.job.BlockJob` is launched over the ranks (spawned here, or the ranks ``torchrun``
started), and its configurations' verdicts come back (:mod:`.verdict`). Units that cannot run
(no fix, no arms, no block) are listed with the reason; sites whose value reaches no role
operation are listed as not communication-plan sites; nothing is ever counted as confirmed
without a run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from driftcheck.engine import CheckResult
from driftcheck.fix.apply import apply_fixes
from driftcheck.project import module_name_of

from ..proof import SiteProof
from .job import BlockJob, LayerSettings
from .pack import VerifyPack, read_verify_pack
from .plan import Unit, choose_arms, package_root, units

NO_ELIGIBLE_SITE = "no eligible site"
TRUST = (
    "verify --layer executes the linted tree's layer module and the modules the pack names "
    "(as the project's own tests do), with the runtime it imports answered by the harness's "
    "substitutes and inert stand-ins; check, --fix and verify without --layer never execute "
    "the tree's code"
)


def verify_pack(result: CheckResult) -> VerifyPack:
    """The run's ``[verify]`` table (:class:`~.pack.PackError` when malformed)."""
    return read_verify_pack(result.config.verify)


def job_for(
    result: CheckResult, unit: Unit, settings: LayerSettings, pack: VerifyPack
) -> BlockJob | str:
    """The unit's job, or why it cannot run."""
    findings = [p.finding for p in unit.proofs if p.fix is not None]
    if not findings:
        return "no fix to run (" + "; ".join(p.reason for p in unit.proofs) + ")"
    if not unit.block:
        return "its value reaches no class of its module (no block to build)"
    if not result.config.enum:
        return "the configuration names no enum (`enum`): the arms are its members"
    outcome = apply_fixes(result, findings, write=False)
    if unit.path not in outcome.changes:
        problems = "; ".join(p.message for p in outcome.problems) or "the fixes did not apply"
        return f"the fix could not be written: {problems}"
    before, after = outcome.changes[unit.path]
    universe = result.universe
    family = universe.family(unit.family) if universe is not None else None
    if family is None:
        return f"the family {unit.family} is not in this run"
    arms = choose_arms(unit, family.members, pack, settings.arms)
    if isinstance(arms, str):
        return arms
    configurations = pack.configurations
    if settings.configuration is not None:
        configurations = (pack.configuration(settings.configuration),)
    module = module_name_of(result.root, result.root / unit.path)
    root = package_root(result.root, unit.path, module)
    return BlockJob(
        root=str(root),
        path=(result.root / unit.path).resolve().relative_to(root).as_posix(),
        module=module,
        block=unit.block,
        texts={"before": before, "after": after},
        arms=arms,
        enum=result.config.enum,
        family=family.member_set,
        pack=pack,
        configurations=configurations,
        settings=settings,
        sites=tuple(unit.where()),
    )


def launch_job(job: BlockJob, progress: Callable[[str], None]) -> dict[str, Any]:
    """Run ``job`` over its ranks (``torchrun``'s, or spawned here); rank 0's report."""
    from ..layer.deep_ep_module import preflight
    from ..layer.launch import spawn_ranks, torchrun_placement
    from .rank import run_block_job

    job.validate()
    placement = torchrun_placement()
    if job.settings.dispatcher == "deep_ep":
        on_host = job.settings.world_size if placement is None else placement.local_world_size
        preflight(job.settings.deep_ep_module, job.settings.device, on_host)
    if placement is None:
        return spawn_ranks(run_block_job, job, job.settings.world_size, progress)
    return run_block_job(job, placement, "env://", progress)


def run_layer(
    result: CheckResult,
    proofs: list[SiteProof],
    settings: LayerSettings,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every eligible unit's block run; the report is JSON-serialisable (``docs/verify.md``)."""
    emit = progress or (lambda _text: None)
    pack = verify_pack(result)
    found, not_plan = units(proofs)
    report: dict[str, Any] = {
        "engine": "tree",
        "trust": TRUST,
        "environment": None,
        "runner": None,
        "units": [],
        "not_plan_sites": not_plan,
        "skipped": [],
    }
    for index, unit in enumerate(found, 1):
        job = job_for(result, unit, settings, pack)
        if isinstance(job, str):
            report["skipped"].append({"sites": unit.where(), "reason": job})
            continue
        label = f"{unit.path} {unit.block}"
        emit(
            f"layer {index}/{len(found)}: {label}: arms {job.arms.reference} (reference), "
            f"{job.arms.test} (test), {job.arms.control or 'no'} control; "
            f"{job.settings.world_size} ranks on {job.settings.device}, shape {job.settings.shape}, runner {job.settings.runner}"
        )
        ran = launch_job(job, functools.partial(_labelled, emit, label))
        report["environment"] = report["environment"] or ran["environment"]
        report["runner"] = report["runner"] or ran["runner"]
        report["units"].append(_unit_entry(unit, job, ran))
    report["verdict"] = overall_verdict(report)
    return report


def _unit_entry(unit: Unit, job: BlockJob, ran: dict[str, Any]) -> dict[str, Any]:
    configurations = ran["configurations"]
    deciding = next((c for c in configurations if c.get("decides")), None)
    if deciding is None:
        tried = ", ".join(c["configuration"]["name"] for c in configurations)
        verdict = "inconclusive"
        reason = (
            f"in every configuration tried ({tried}) the arms already agree before the fix: "
            "the drift does not reach the block's path in any of them; "
            + " ".join(c["reason"] for c in configurations[-1:])
        )
    else:
        verdict, reason = deciding["verdict"], deciding["reason"]
    return {
        "path": unit.path,
        "family": unit.family,
        "module": job.module,
        "block": unit.block,
        "sites": list(job.sites),
        "arms": {
            "reference": job.arms.reference,
            "test": job.arms.test,
            "control": job.arms.control,
            "others": list(job.arms.others),
        },
        "verdict": verdict,
        "verdict_reason": reason,
        "configuration": deciding["configuration"]["name"] if deciding else None,
        "configurations": configurations,
    }


def overall_verdict(report: dict[str, Any]) -> str:
    """``confirmed`` only when at least one unit ran and every one was confirmed."""
    verdicts = [unit["verdict"] for unit in report["units"]]
    if not verdicts:
        return NO_ELIGIBLE_SITE
    if "refuted" in verdicts:
        return "refuted"
    return "confirmed" if all(v == "confirmed" for v in verdicts) else "inconclusive"


def layer_passed(report: dict[str, Any]) -> bool:
    """Whether every unit that ran was confirmed, and at least one ran."""
    return report["verdict"] == "confirmed"


def executed_summary(run: dict[str, Any]) -> str:
    """``KimiK3MoE.__init__ (52 lines), KimiK3MoE.forward (3 lines), ...`` for one run."""
    parts = [
        f"{entry['qualname']} ({len(entry['lines'])} line{'s' if len(entry['lines']) != 1 else ''})"
        for entry in run["executed_from_tree"]
        if entry["qualname"] != "<module>"
    ]
    return ", ".join(parts)


def _labelled(emit: Callable[[str], None], label: str, text: str) -> None:
    """``emit`` the progress line ``text`` of the unit ``label``."""
    emit(f"{label}: {text}")
