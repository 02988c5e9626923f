"""The layer report as text (the CLI's summary) and Markdown (``--report-md``)."""

from __future__ import annotations

from typing import Any

from .run import TRUST, executed_summary
from .verdict import describe_lines


def _runs(unit: dict[str, Any]) -> list[dict[str, Any]]:
    for configuration in unit["configurations"]:
        if configuration["configuration"]["name"] == unit["configuration"]:
            return configuration["runs"]
    return unit["configurations"][-1]["runs"] if unit["configurations"] else []


def _sites(unit: dict[str, Any]) -> str:
    return ", ".join(f"{s['path']}:{s['line']} {s['symbol']}" for s in unit["sites"])


def layer_summary(report: dict[str, Any]) -> str:
    """The text report: per unit its sites, block, arms, configuration and verdict, the tree's
    functions each arm ran (with line counts), and the sites not run and why."""
    runner = report.get("runner")
    used = f"{runner['used']} {runner['version']}" if runner else "n/a"
    lines = ["", f"layer verification (the tree's own blocks, runner {used}): {report['verdict']}"]
    for unit in report["units"]:
        arms = unit["arms"]
        control = f", control {arms['control']}" if arms["control"] else ", no control"
        lines.append(
            f"  {_sites(unit)} -> {unit['block']} [{unit['configuration'] or 'no configuration decides'}; "
            f"{arms['reference']} vs {arms['test']}{control}]: {unit['verdict']}: "
            f"{unit['verdict_reason']}"
        )
        for run in _runs(unit):
            shown = run["arm"] in (arms["reference"], arms["test"])
            if run["repeat"] == 0 and run["phase"] == "before" and shown:
                lines.append(
                    f"    ran from the tree ({run['arm']}, {run['phase']} the fix): "
                    f"{executed_summary(run) or 'nothing'}"
                )
    for entry in report["not_plan_sites"]:
        lines.append(f"  {entry['path']}:{entry['line']} {entry['symbol']}: {entry['reason']}")
    for skipped in report["skipped"]:
        where = ", ".join(f"{s['path']}:{s['line']} {s['symbol']}" for s in skipped["sites"])
        lines.append(f"  {where}: not run: {skipped['reason']}")
    if not report["units"]:
        lines.append(
            "  no site is eligible for a layer run: none reaches a role operation the pack declares"
        )
    return "\n".join(lines)


def layer_markdown(report: dict[str, Any]) -> str:
    """A section per unit: the sites and their role operations, the configuration that
    decided and what it is, the comparisons, the lines that differ between the arms, and
    per arm and phase the tree's functions that ran, the substitutes called and the
    stand-ins whose answers were used."""
    lines = ["# driftcheck layer verification", "", f"**Verdict:** {report['verdict']}", ""]
    lines += [f"Trust boundary: {TRUST}.", ""]
    environment = report.get("environment") or {}
    runner = report.get("runner") or {}
    if environment:
        lines += [
            f"Environment: {environment.get('gpu')}, torch {environment.get('torch')}, "
            f"{environment.get('world_size')} ranks over {environment.get('dist_backend')}, "
            f"shape {environment.get('shape')} ({environment.get('dtype')}); runner "
            f"{runner.get('used')} {runner.get('version')}.",
            "",
        ]
    for unit in report["units"]:
        lines += [f"## `{unit['path']}` → `{unit['block']}`", ""]
        lines += ["| site | role operations |", "| --- | --- |"]
        for site in unit["sites"]:
            operations = "; ".join(
                f"{o['operation']} `{o['key']}` ({o['scope']}, line {o['line']})"
                for o in site["operations"]
            )
            lines.append(f"| `{site['path']}:{site['line']} {site['symbol']}` | {operations} |")
        arms = unit["arms"]
        lines += [
            "",
            f"Arms: reference **{arms['reference']}**, test **{arms['test']}**, control "
            f"**{arms['control'] or 'none'}**; every other member the site includes: "
            f"{', '.join(arms.get('others', ())) or 'none'}.",
            "",
            f"**{unit['verdict']}**: {unit['verdict_reason']}",
            "",
        ]
        for configuration in unit["configurations"]:
            lines += _configuration_section(configuration)
    for title, entries in (
        ("Not communication-plan sites", report["not_plan_sites"]),
        ("Not run", report["skipped"]),
    ):
        if entries:
            lines += [f"## {title}", "", "| site | reason |", "| --- | --- |"]
            for entry in entries:
                sites = entry.get("sites") or [entry]
                where = ", ".join(f"`{s['path']}:{s['line']} {s['symbol']}`" for s in sites)
                lines.append(f"| {where} | {entry['reason']} |")
            lines.append("")
    return "\n".join(lines)


def _configuration_section(entry: dict[str, Any]) -> list[str]:
    configuration = entry["configuration"]
    criterion = entry["criterion"]
    lines = [
        f"### Configuration `{configuration['name']}`: {entry['verdict']}",
        "",
        f"{configuration['what']}. Groups: "
        + ", ".join(f"{g} {span}" for g, span in configuration["groups"].items())
        + f"; rows: {configuration['rows']}.",
        "",
        f"Agreement: {criterion['measure']} at most max({criterion['tolerance']:g}, "
        f"{criterion['k']:g} x noise {criterion['noise']:.2e}) = {criterion['agree_within']:.2e}; "
        f"{criterion['repeats']} run(s) per arm and phase; bit-exactness not demanded.",
        "",
        entry["reason"],
        "",
    ]
    for phase in ("before", "after"):
        if phase in entry:
            compared = entry[phase]
            lines.append(
                f"- {phase} the fix: rel L2 {compared['rel_l2']:.3g}, top-5 ids "
                f"{compared['top5_token_agreement']}"
            )
            for side, found in compared["lines"].items():
                lines.append(
                    f"  - lines run by the {side.removesuffix('_only')} arm only: {describe_lines(found)}"
                )
    if "control" in entry:
        lines.append(
            f"- control {entry['control']['arm']} against the reference before the fix: "
            f"rel L2 {entry['control']['rel_l2']:.3g}"
        )
    if "included_changed_by_fix" in entry:
        lines.append(
            "- each member the site includes, after the fix against its own output before it: "
            + ", ".join(
                f"{arm} rel L2 {value:.3g}"
                for arm, value in entry["included_changed_by_fix"].items()
            )
        )
    lines += ["", "| arm | phase | ran from the tree | substituted | stand-ins used | s |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for run in entry["runs"]:
        uses = "; ".join(f"{u['name']} ({u['use']}, {u['where']})" for u in run["stand_ins_used"])
        lines.append(
            f"| {run['arm']} | {run['phase']} #{run['repeat'] + 1} | {executed_summary(run)} | "
            f"{', '.join(run['substituted'])} | {uses or 'none'} | {run['seconds']} |"
        )
    lines.append("")
    return lines
