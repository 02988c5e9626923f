"""Wire truth tables to the GPU layer harness: each eligible site's plan decision per arm,
before and after its fix, run through :func:`driftcheck.runtime_verify.layer.confirm_plans`.

A site is eligible only when its value chooses a communication plan the harness models
(:func:`driftcheck.runtime_verify.plan_role.plan_role`, read from the site's module with
``ast``); every other site is listed under ``not_plan_sites`` with the reason, and is never
counted as confirmed. The harness receives booleans only: whether the site accepts each arm
as a member of the family (its value, negated for a negative site), read from the truth
table, so nothing from the linted tree is ever called. An eligible site is skipped, with its
reason, when it has no fix, no truth table, an arm whose value depends on a narrowing or a
free input, or a fix that changes neither arm's plan (the run could show nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driftcheck.scan import decode_source

from .layer import confirm_plans, report_markdown
from .plan_role import NotPlanSite, PlanRole, plan_role
from .proof import SiteProof
from .render import proof_dict

Plans = dict[str, dict[str, bool]]
NO_ELIGIBLE_SITE = "no eligible site"


@dataclass(frozen=True)
class LayerSettings:
    """How every site's layer run is made."""

    arms: tuple[str, str] = ("deepep", "deepep_v2")
    shape: str = "tiny"
    world_size: int = 2
    device: str = "cpu"
    seed: int = 0
    runner: str = "torch"
    dispatcher: str = "model"


def site_label(proof: SiteProof) -> str:
    """``path:line symbol``."""
    return f"{proof.finding.path}:{proof.finding.span.line} {proof.finding.symbol}"


def site_role(root: Path, proof: SiteProof) -> PlanRole | NotPlanSite:
    """What the site's value controls, read from its module under ``root``."""
    finding = proof.finding
    try:
        source = decode_source((root / finding.path).read_bytes())
    except OSError as exc:
        return NotPlanSite(f"{finding.path} cannot be read: {exc}")
    return plan_role(source, finding.path, finding.span, finding.symbol)


def arm_plans(proof: SiteProof, arms: tuple[str, str]) -> Plans | str:
    """``{"before": {arm: bool}, "after": {arm: bool}}``, or why the site cannot be run."""
    table = proof.table
    if proof.fix is None:
        return f"no fix to confirm ({proof.reason})"
    if table is None:
        return f"no truth table ({proof.reason})"
    plans: Plans = {"before": {}, "after": {}}
    for arm in arms:
        rows = table.rows_of(arm)
        for phase in plans:
            values = {getattr(row, phase) for row in rows}
            if len(values) != 1:
                conditions = sorted({text for row in rows for text, _ in row.setting})
                return f"the value for {arm} depends on {', '.join(conditions)}"
            value = values.pop()
            plans[phase][arm] = value if proof.polarity == "positive" else not value
    if plans["before"] == plans["after"]:
        return f"the fix changes neither arm's plan ({', '.join(arms)})"
    return plans


def run_layer(
    proofs: list[SiteProof],
    settings: LayerSettings,
    root: Path,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every eligible site through the harness; the report is JSON-serialisable.

    ``sites`` holds one entry per run (``role`` and ``role_evidence``, ``plans``, ``before``/``after`` and the
    harness ``verdict`` and ``verdict_reason``); ``not_plan_sites`` names each site whose value
    chooses no modelled communication plan, and why; ``skipped`` each eligible site not run and
    why. ``verdict`` is ``confirmed`` (every run confirmed), ``refuted`` (some run refuted),
    ``inconclusive``, or ``no eligible site`` (nothing ran). With exactly one run, its
    ``before``, ``after`` and a ``site`` label are also at the top level.
    """
    emit = progress or (lambda _text: None)
    runnable: list[tuple[SiteProof, PlanRole, Plans]] = []
    skipped: list[dict[str, Any]] = []
    not_plan: list[dict[str, Any]] = []
    for proof in proofs:
        role = site_role(root, proof)
        if isinstance(role, NotPlanSite):
            not_plan.append({**_where(proof), "reason": role.reason})
            continue
        plans = arm_plans(proof, settings.arms)
        if isinstance(plans, str):
            skipped.append({**_where(proof), "role": role.kind, "reason": plans})
        else:
            runnable.append((proof, role, plans))
    report: dict[str, Any] = {
        "environment": None,
        "runner": None,
        "arms": {"reference": settings.arms[0], "test": settings.arms[1]},
        "sites": [],
        "not_plan_sites": not_plan,
        "skipped": skipped,
    }
    for index, (proof, role, plans) in enumerate(runnable, 1):
        label = site_label(proof)
        emit(
            f"layer {index}/{len(runnable)}: {label} ({role.kind}: {role.describe()}): arms "
            f"{', '.join(settings.arms)}, {settings.world_size} ranks on {settings.device}, "
            f"shape {settings.shape}, runner {settings.runner}, dispatcher {settings.dispatcher}"
        )
        family = _family(proof)
        result = confirm_plans(
            plans,
            arms=settings.arms,
            shape=settings.shape,
            world_size=settings.world_size,
            device=settings.device,
            family=family,
            seed=settings.seed,
            role=role.kind,
            runner=settings.runner,
            dispatcher=settings.dispatcher,
            progress=lambda text, label=label: emit(f"{label}: {text}"),
        )
        report["environment"] = report["environment"] or result["environment"]
        report["runner"] = report["runner"] or result["runner"]
        report["sites"].append(
            {
                **_where(proof),
                "role_evidence": list(role.evidence),
                "plans": plans,
                "family": sorted(family),
                **{key: result[key] for key in _RESULT_KEYS},
                "truth_table": proof_dict(proof),
            }
        )
    if len(report["sites"]) == 1:
        only = report["sites"][0]
        report.update(site=_label_of(only), before=only["before"], after=only["after"])
    report["verdict"] = overall_verdict(report)
    return report


_RESULT_KEYS = (
    "environment",
    "runner",
    "role",
    "arms",
    "criterion",
    "before",
    "after",
    "verdict",
    "verdict_reason",
)


def overall_verdict(report: dict[str, Any]) -> str:
    """``confirmed`` only when at least one site ran and every one was confirmed."""
    verdicts = [site["verdict"] for site in report["sites"]]
    if not verdicts:
        return NO_ELIGIBLE_SITE
    if "refuted" in verdicts:
        return "refuted"
    return "confirmed" if all(v == "confirmed" for v in verdicts) else "inconclusive"


def layer_passed(report: dict[str, Any]) -> bool:
    """Whether the layer run confirmed every site it ran, and ran at least one."""
    return report["verdict"] == "confirmed"


def layer_markdown(report: dict[str, Any]) -> str:
    """A section per site (the harness's own tables, one heading level down), then the sites
    not run and why."""
    lines = ["# driftcheck layer verification", "", f"**Verdict:** {report.get('verdict')}", ""]
    for site in report["sites"]:
        lines += [f"## `{_label_of(site)}`", ""]
        lines += [f"Role: **{site['role']}**, from: " + "; ".join(site["role_evidence"]), ""]
        section = report_markdown({key: site[key] for key in _RESULT_KEYS})
        body = [_demote(line) for line in section.splitlines()]
        if body and body[0].startswith("### Layer"):
            body = body[2:]  # the harness's own heading and the blank line after it
        lines += [*body, ""]
        lines += [
            "Membership from the truth table: "
            + "; ".join(
                f"{phase}: " + ", ".join(f"{arm}={value}" for arm, value in flags.items())
                for phase, flags in site["plans"].items()
            ),
            "",
        ]
    for title, entries in (
        ("Not communication-plan sites", report["not_plan_sites"]),
        ("Not run", report["skipped"]),
    ):
        if entries:
            lines += [f"## {title}", "", "| site | reason |", "| --- | --- |"]
            lines += [f"| `{_label_of(s)}` | {s['reason']} |" for s in entries]
            lines.append("")
    return "\n".join(lines)


def _demote(line: str) -> str:
    return "#" + line if line.startswith("#") else line


def _where(proof: SiteProof) -> dict[str, Any]:
    finding = proof.finding
    return {"path": finding.path, "line": finding.span.line, "symbol": finding.symbol}


def _label_of(entry: dict[str, Any]) -> str:
    return f"{entry['path']}:{entry['line']} {entry['symbol']}"


def _family(proof: SiteProof) -> frozenset[str]:
    """The canonical family's members as the linted tree's helper accepts them."""
    table = proof.table
    assert table is not None
    return frozenset(m for m in table.members if any(row.canonical for row in table.rows_of(m)))
