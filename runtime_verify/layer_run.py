"""Wire truth tables to the GPU layer harness: each site's plan decision per arm, before and
after its fix, run through :func:`driftcheck.runtime_verify.layer.confirm_plans`.

The harness receives booleans only. An arm's decision is whether the site accepts it as a
member of the family (its value, negated for a negative site) as read from the truth table,
so nothing from the linted tree is ever called. A site is skipped, with its reason, when it
has no fix, no truth table, an arm whose value depends on a narrowing or a free input, or a
fix that changes neither arm's plan (the run could show nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .layer import confirm_plans, report_markdown
from .proof import SiteProof
from .render import proof_dict

Plans = dict[str, dict[str, bool]]


@dataclass(frozen=True)
class LayerSettings:
    """How every site's layer run is made."""

    arms: tuple[str, str] = ("deepep", "deepep_v2")
    shape: str = "tiny"
    world_size: int = 2
    device: str = "cpu"
    seed: int = 0


def site_label(proof: SiteProof) -> str:
    """``path:line symbol``."""
    return f"{proof.finding.path}:{proof.finding.span.line} {proof.finding.symbol}"


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
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every runnable site through the harness; the report is JSON-serialisable.

    ``sites`` holds one entry per run (``before``/``after`` with ``bit_exact``,
    ``max_abs_diff``, ``top5_agree``, ``plan``, ``seconds``, and the harness ``verdict``);
    ``skipped`` names each site not run and why. With exactly one run, its ``before``,
    ``after`` and ``verdict`` are also at the top level.
    """
    emit = progress or (lambda _text: None)
    runnable: list[tuple[SiteProof, Plans]] = []
    skipped: list[dict[str, Any]] = []
    for proof in proofs:
        plans = arm_plans(proof, settings.arms)
        if isinstance(plans, str):
            skipped.append({**_where(proof), "reason": plans})
        else:
            runnable.append((proof, plans))
    report: dict[str, Any] = {
        "environment": None,
        "arms": {"reference": settings.arms[0], "test": settings.arms[1]},
        "sites": [],
        "skipped": skipped,
    }
    for index, (proof, plans) in enumerate(runnable, 1):
        label = site_label(proof)
        emit(
            f"layer {index}/{len(runnable)}: {label}: arms {', '.join(settings.arms)}, "
            f"{settings.world_size} ranks on {settings.device}, shape {settings.shape}"
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
            progress=lambda text, label=label: emit(f"{label}: {text}"),
        )
        report["environment"] = report["environment"] or result["environment"]
        report["sites"].append(
            {
                **_where(proof),
                "plans": plans,
                "family": sorted(family),
                "environment": result["environment"],
                "before": result["before"],
                "after": result["after"],
                "verdict": result["verdict"],
                "truth_table": proof_dict(proof),
            }
        )
    if len(report["sites"]) == 1:
        only = report["sites"][0]
        report.update(
            site=_label_of(only),
            before=only["before"],
            after=only["after"],
            verdict=only["verdict"],
        )
    else:
        report["verdict"] = overall_verdict(report)
    return report


def overall_verdict(report: dict[str, Any]) -> str:
    """``confirmed`` when every site run is confirmed (or none could be run)."""
    failed = [_label_of(s) for s in report["sites"] if s["verdict"] != "confirmed"]
    if failed:
        return f"not confirmed: {', '.join(failed)}"
    return "confirmed" if report["sites"] else "nothing to run"


def layer_passed(report: dict[str, Any]) -> bool:
    """Whether every site that ran was confirmed."""
    return all(site["verdict"] == "confirmed" for site in report["sites"])


def layer_markdown(report: dict[str, Any]) -> str:
    """A section per site (the harness's own tables, one heading level down) and the skips."""
    lines = ["# driftcheck layer verification", "", f"**Verdict:** {report.get('verdict')}", ""]
    for site in report["sites"]:
        lines += [f"## `{_label_of(site)}`", ""]
        phases = {key: site[key] for key in ("environment", "before", "after", "verdict")}
        section = report_markdown({**phases, "arms": report["arms"]})
        body = [_demote(line) for line in section.splitlines()]
        if body and body[0].startswith("### Layer"):
            body = body[2:]  # the harness's own heading and the blank line after it
        lines += [*body, ""]
        plans = site["plans"]
        lines += [
            "Plan decisions from the truth table: "
            + "; ".join(
                f"{phase}: " + ", ".join(f"{arm}={value}" for arm, value in flags.items())
                for phase, flags in plans.items()
            ),
            "",
        ]
    if report["skipped"]:
        lines += ["## Not run", "", "| site | reason |", "| --- | --- |"]
        lines += [f"| `{_label_of(s)}` | {s['reason']} |" for s in report["skipped"]]
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
