"""A verdict from A/B equality of the tree's own block, as the upstream patch's evidence was.

The reference arm is a member the site already includes; the test arm a member it misses;
both run the same inputs and weights through the tree's block, before and after the fix.

- ``confirmed``: before the fix the test arm's output differs from the reference beyond the
  noise floor, and after it they agree;
- ``refuted``: after the fix they still differ, or the fix changed the output of a member the
  site already included (the reference, the control or any other: each is compared with its
  own output before the fix, and the reason names it);
- ``inconclusive``: before the fix they already agree (the drift has no effect on this path in
  this configuration: the next configuration is tried), the control arm — a second member the
  site includes — differs from the reference before the fix (the harness separates members
  the site treats alike), or the arms' difference rests on something the harness does not
  provide: the block raised, or used a stand-in's answer as a number or a tensor, or took a
  path in one arm on a stand-in's answer that the other arm did not take.

No ratio or signature is expected in advance: whatever the executed code does is the finding,
and the report explains a difference by the lines of the tree that ran in one arm and not the
other. Agreement: relative L2 distance at most ``max(TOLERANCE, K x noise)``, where the noise
is an arm's own run-to-run difference (each arm runs twice on CUDA, whose atomics and grouped
GEMMs do not reduce in a fixed order); bit-exactness is never demanded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ..layer.compare import digest, relative_error
from .standins import Use

if TYPE_CHECKING:
    from .execute import Execution
    from .job import BlockJob
    from .pack import Configuration

TOLERANCE = 1e-2  # relative L2: the band bf16 rounding differences between dispatchers fall in
K = 10.0  # how many times an arm's own run-to-run difference two arms may differ by
MAX_LINES = 12  # lines quoted per function in a difference


@dataclass
class Run:
    """One execution as rank 0 records it: every rank's output rows (None when a rank's run
    did not finish), the top-5 token ids of the read-out, and what rank 0's run reached."""

    phase: str
    arm: str
    repeat: int
    output: torch.Tensor | None
    top_ids: torch.Tensor | None
    execution: Execution

    def summary(self) -> dict[str, Any]:
        """JSON form: what ran from the tree, what was substituted, what stood in."""
        ledger = self.execution.ledger
        return {
            "phase": self.phase,
            "arm": self.arm,
            "repeat": self.repeat,
            "executed_from_tree": self.execution.executed,
            "substituted": sorted(ledger.substituted),
            "stand_ins_used": [u.to_dict() for u in sorted(_relative_uses(self))],
            "stand_ins_called": [c.to_dict() for c in self.execution.calls],
            "modules_stood_in": len(ledger.modules),
            "config_fields_missing": self.execution.config_unset,
            "tree_parameters_drawn": self.execution.parameters_drawn,
            "error": self.execution.error,
            "seconds": self.execution.seconds,
            "output_sha256": digest(self.output) if self.output is not None else None,
        }


def _relative_uses(run: Run) -> set[Use]:
    return set(run.execution.uses)


def distance(test: Run, reference: Run) -> float:
    """How far ``test``'s outcome is from ``reference``'s: the relative L2 distance of their
    outputs, infinite when one failed (:attr:`Execution.failure`) and the other did not."""
    if test.output is not None and reference.output is not None:
        return relative_error(test.output, reference.output)
    if test.output is None and reference.output is None:
        return 0.0 if test.execution.failure == reference.execution.failure else float("inf")
    return float("inf")


def _shown(value: float) -> str:
    return "its block fails" if value == float("inf") else f"rel L2 {value:.3g}"


def _failure(run: Run) -> str:
    return f": {run.execution.failure}" if run.execution.failure else ""


def _top5_agreement(a: torch.Tensor | None, b: torch.Tensor | None) -> str | None:
    if a is None or b is None:
        return None
    agree = (a == b).all(dim=-1)
    return f"{int(agree.sum())}/{agree.numel()}"


def _lines(executed: list[dict[str, Any]]) -> set[tuple[str, str, int]]:
    return {(e["path"], e["qualname"], line) for e in executed for line in e["lines"]}


def line_difference(first: Run, second: Run) -> dict[str, list[dict[str, Any]]]:
    """The tree's lines that ran in ``first`` and not ``second``, and the other way round,
    grouped by function."""

    def grouped(lines: set[tuple[str, str, int]]) -> list[dict[str, Any]]:
        by: dict[tuple[str, str], list[int]] = {}
        for path, qualname, line in lines:
            by.setdefault((path, qualname), []).append(line)
        return [
            {"path": path, "qualname": qualname, "lines": sorted(found)}
            for (path, qualname), found in sorted(by.items(), key=lambda i: (i[0][0], min(i[1])))
        ]

    a, b = _lines(first.execution.executed), _lines(second.execution.executed)
    return {f"{first.arm}_only": grouped(a - b), f"{second.arm}_only": grouped(b - a)}


def describe_lines(entries: list[dict[str, Any]]) -> str:
    """``kimi_k3.py KimiK3MoE._reduce_shared 1019; ...`` (at most ``MAX_LINES`` per function)."""
    parts = []
    for entry in entries:
        lines = entry["lines"]
        shown = ", ".join(map(str, lines[:MAX_LINES])) + (" ..." if len(lines) > MAX_LINES else "")
        parts.append(f"{entry['path'].rsplit('/', 1)[-1]} {entry['qualname']} {shown}")
    return "; ".join(parts) or "none"


class _Runs:
    def __init__(self, runs: list[Run]) -> None:
        self.runs = runs

    def of(self, phase: str, arm: str) -> list[Run]:
        return [r for r in self.runs if r.phase == phase and r.arm == arm]

    def first(self, phase: str, arm: str) -> Run:
        return self.of(phase, arm)[0]


def _noise(runs: _Runs, arms: list[str]) -> float:
    """The largest run-to-run difference of any arm in any phase (0 with one run each)."""
    worst = 0.0
    for phase in ("before", "after"):
        for arm in arms:
            outputs = [r.output for r in runs.of(phase, arm) if r.output is not None]
            for other in outputs[1:]:
                worst = max(worst, relative_error(other, outputs[0]))
    return worst


def _unprovided(runs: list[Run]) -> str | None:
    """Why the runs rest on something the harness does not provide, if they do."""
    for run in runs:
        execution = run.execution
        if execution.stand_in is not None:
            use = execution.stand_in
            return (
                f"the block reached {use.name}, which the harness does not provide "
                f"(used as a {use.use} at {use.where}, {run.arm} arm {run.phase} the fix)"
            )
        if execution.error is not None:
            return f"{execution.error} ({run.arm} arm, {run.phase} the fix)"
        if execution.failure is not None and run.arm == job_reference(runs):
            return f"the reference arm's block fails {run.phase} the fix: {execution.failure}"
        handed = sorted(u for u in _relative_uses(run) if u.use == "handed")
        if handed:
            use = handed[0]
            return (
                f"the block handed a tensor to {use.name} at {use.where}, which the harness does "
                f"not provide, and used it again at {use.then} ({run.arm} arm {run.phase} the "
                f"fix): what {use.name} does to it is missing from what followed"
            )
        numbers = sorted(u for u in _relative_uses(run) if u.use == "number")
        if numbers:
            use = numbers[0]
            return (
                f"the block reached {use.name}, which the harness does not provide "
                f"(used as a number at {use.where}, {run.arm} arm {run.phase} the fix)"
            )
    return None


def job_reference(runs: list[Run]) -> str:
    """The reference arm of a configuration's runs (the first one run)."""
    return runs[0].arm


def _branch_difference(first: Run, second: Run) -> str | None:
    """A stand-in whose answer decided a path one run took and the other did not (two arms,
    or one arm before and after the fix)."""
    a = {u for u in _relative_uses(first) if u.use == "branch"}
    b = {u for u in _relative_uses(second) if u.use == "branch"}
    # a run that stopped at its own failure saw only part of the path: what it did not reach
    # is no difference
    differing = sorted(
        (a - b if second.execution.failure is None else set())
        | (b - a if first.execution.failure is None else set())
    )
    if not differing:
        return None
    use = differing[0]
    run = first if use in a else second
    where = (
        f"in the {run.arm} arm only"
        if first.arm != second.arm
        else f"in the {run.arm} arm {run.phase} the fix only"
    )
    return (
        f"the block reached {use.name}, which the harness does not provide: its answer "
        f"decided a branch at {use.where} {where}"
    )


def judge_configuration(
    job: BlockJob, configuration: Configuration, runs: list[Run], device: str
) -> dict[str, Any]:
    """The verdict of one configuration's runs (``decides``: whether it settles the site)."""
    index = _Runs(runs)
    arms = job.arms
    noise = _noise(index, list(arms.all()))
    tolerance = max(TOLERANCE, K * noise)
    entry: dict[str, Any] = {
        "configuration": configuration.to_dict(),
        "criterion": {
            "measure": "relative L2 distance of the block's outputs",
            "tolerance": TOLERANCE,
            "k": K,
            "noise": noise,
            "agree_within": tolerance,
            "repeats": job.repeats,
            "bit_exact_demanded": False,
        },
        "runs": [r.summary() for r in runs],
    }
    unprovided = _unprovided(runs)
    if unprovided is not None:
        return _verdict(entry, "inconclusive", unprovided)
    reference, test = index.first("before", arms.reference), index.first("before", arms.test)
    entry["before"] = _compared(test, reference)
    before = entry["before"]["rel_l2"]
    branch = _branch_difference(reference, test)
    if branch is not None:
        return _verdict(entry, "inconclusive", branch)
    entry["included_changed_by_fix"] = {
        arm: distance(index.first("after", arm), index.first("before", arm))
        for arm in arms.included()
    }
    changed = _changed_member(index, arms.included(), tolerance)
    if changed is not None:
        verdict, reason = changed
        return _verdict(entry, verdict, reason)
    if before <= tolerance:
        reason = (
            f"before the fix the arms already agree in configuration {configuration.name} "
            f"({_shown(before)} <= {tolerance:.2e}): the drift does not reach this path "
            f"when {configuration.what}"
        )
        return _verdict(entry, "inconclusive", reason, decides=False)
    if arms.control is not None:
        control = index.first("before", arms.control)
        separated = distance(control, reference)
        entry["control"] = {"arm": arms.control, "rel_l2": separated}
        if separated > tolerance:
            reason = (
                f"the harness separates members the site treats alike: {arms.control} "
                f"differs from {arms.reference} before the fix ({_shown(separated)} > "
                f"{tolerance:.2e}){_failure(control)}"
            )
            return _verdict(entry, "inconclusive", reason)
    after_ref, after_test = index.first("after", arms.reference), index.first("after", arms.test)
    entry["after"] = {
        **_compared(after_test, after_ref),
        "reference_changed_by_fix": distance(after_ref, reference),
    }
    after = entry["after"]["rel_l2"]
    only = entry["before"]["lines"][f"{arms.test}_only"]
    not_test = entry["before"]["lines"][f"{arms.reference}_only"]
    agreeing = entry["before"]["top5_token_agreement"]
    how = (
        f"before the fix {arms.test} differs from {arms.reference} ({_shown(before)}"
        + (f"; top-5 ids agree on {agreeing} tokens" if agreeing else "")
        + f"){_failure(test)}"
    )
    lines = (
        f"; lines run in the {arms.test} arm only: {describe_lines(only)}; in the "
        f"{arms.reference} arm only: {describe_lines(not_test)}"
    )
    control_text = (
        f", while {arms.control} agrees with it ({entry['control']['rel_l2']:.2e})"
        if arms.control is not None
        else " (no second member the site includes, so no negative control)"
    )
    if after > tolerance:
        reason = (
            f"after the fix {arms.test} still differs from {arms.reference} ({_shown(after)} "
            f"> {tolerance:.2e}){_failure(after_test)}; {how}{lines}"
        )
        return _verdict(entry, "refuted", reason)
    reason = (
        f"{how}{control_text}; after it they agree (rel L2 {after:.2e} <= {tolerance:.2e}, "
        f"top-5 ids {entry['after']['top5_token_agreement']}){lines}"
    )
    return _verdict(entry, "confirmed", reason)


def _changed_member(
    index: _Runs, included: tuple[str, ...], tolerance: float
) -> tuple[str, str] | None:
    """The first member the site includes whose output the fix changes: refuted, naming it
    (inconclusive when a stand-in's answer decided a path in one phase only)."""
    for arm in included:
        before, after = index.first("before", arm), index.first("after", arm)
        changed = distance(after, before)
        if changed <= tolerance:
            continue
        branch = _branch_difference(before, after)
        if branch is not None:
            return "inconclusive", branch
        return "refuted", (
            f"the fix changes the {arm} arm, which the site already included ({_shown(changed)} "
            f"against its output before the fix > {tolerance:.2e}){_failure(after)}: a fix adds "
            "what the site misses and changes nothing else"
        )
    return None


def _compared(test: Run, reference: Run) -> dict[str, Any]:
    """How far ``test`` is from ``reference``, their top-5 agreement, the lines that differ."""
    return {
        "rel_l2": distance(test, reference),
        "top5_token_agreement": _top5_agreement(test.top_ids, reference.top_ids),
        "lines": line_difference(reference, test),
    }


def _verdict(
    entry: dict[str, Any], verdict: str, reason: str, *, decides: bool = True
) -> dict[str, Any]:
    return {**entry, "verdict": verdict, "reason": reason, "decides": decides}
