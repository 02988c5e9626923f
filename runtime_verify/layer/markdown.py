"""Render a layer-verification report as Markdown."""

from __future__ import annotations

from typing import Any

_NOT_PHASES = ("environment", "arms", "verdict")


def report_markdown(report: dict[str, Any]) -> str:
    """The verdict, an environment table and one row per phase."""
    arms = report.get("arms", {})
    reference, test = arms.get("reference", "reference"), arms.get("test", "test")
    lines = [
        "## Layer verification",
        "",
        f"**Verdict:** {report.get('verdict', 'n/a')}",
        "",
        "### Environment",
        "",
        "| field | value |",
        "| --- | --- |",
    ]
    lines += [f"| {key} | {_cell(value)} |" for key, value in report.get("environment", {}).items()]
    lines += [
        "",
        f"### Phases (reference arm `{reference}`, test arm `{test}`)",
        "",
        f"| phase | plan `{reference}` | plan `{test}` | bit-exact | max abs diff | top-5 agree "
        "| top-5 tokens | double reduce | routed ratio (expected) | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for phase, entry in report.items():
        if phase in _NOT_PHASES:
            continue
        plan, double = entry["plan"], entry["double_reduce"]
        lines.append(
            f"| {phase} | {plan.get(reference, '?')} | {plan.get(test, '?')} "
            f"| {_yes(entry['bit_exact'])} | {entry['max_abs_diff']:.4g} "
            f"| {_yes(entry['top5_agree'])} | {entry['top5_token_agreement']} "
            f"| {_yes(double['detected'])} | {double['ratio']:.4f} ({double['expected_ratio']}) "
            f"| {entry['seconds']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _cell(value: Any) -> str:
    return "n/a" if value is None else str(value)
