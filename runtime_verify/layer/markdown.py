"""Render a layer-verification report as Markdown."""

from __future__ import annotations

from typing import Any

from .roles import SIGNATURE
from .verdict import signature_text

_NOT_PHASES = (
    "environment",
    "arms",
    "verdict",
    "verdict_reason",
    "runner",
    "role",
    "criterion",
)


def report_markdown(report: dict[str, Any]) -> str:
    """The verdict, environment, runner and criterion, and one row per phase and arm."""
    arms = report.get("arms", {})
    reference, test = arms.get("reference", "reference"), arms.get("test", "test")
    role = report.get("role", "ep_a2a")
    key = SIGNATURE.get(role, "double_reduce")
    lines = [
        "## Layer verification",
        "",
        f"**Verdict:** {report.get('verdict', 'n/a')}: {report.get('verdict_reason', '')}",
        "",
        "### Environment",
        "",
        "| field | value |",
        "| --- | --- |",
    ]
    lines += [
        f"| {key_} | {_cell(value)} |" for key_, value in report.get("environment", {}).items()
    ]
    runner = report.get("runner", {})
    lines.append(
        f"| runner | {runner.get('used', 'torch')} {runner.get('version', '')}"
        + (f" ({runner['kernel']})" if "kernel" in runner else "")
        + (
            f"; requested {runner['requested']}: {runner['fallback']}"
            if "fallback" in runner
            else ""
        )
        + " |"
    )
    criterion = report.get("criterion", {})
    lines += [
        f"| role | {role} |",
        f"| agreement criterion | {criterion.get('kind', 'n/a')}: {criterion.get('why', '')} |",
        "",
        f"### Phases (reference arm `{reference}`, test arm `{test}`)",
        "",
        f"| phase | arm | dispatcher | plan (correct) | {key} vs its correct plan | seconds |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    phases = [(name, entry) for name, entry in report.items() if name not in _NOT_PHASES]
    for phase, entry in phases:
        for arm in (reference, test):
            sign = entry["signature"][arm]
            lines.append(
                f"| {phase} | {arm} | {entry['dispatcher'][arm]} | {entry['plan'][arm]} "
                f"({entry['correct_plan'][arm]}) | {'**yes**' if sign['detected'] else 'no'}: "
                f"{signature_text(key, sign)} | {entry['seconds'][arm]:.3f} |"
            )
    lines += [
        "",
        "| phase | bit-exact | max abs diff | rel L2 | top-5 ids agree | max top-5 logprob gap "
        "| agreement |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for phase, entry in phases:
        gap = entry["top5_max_logprob_diff"]
        lines.append(
            f"| {phase} | {_yes(entry['bit_exact'])} | {entry['max_abs_diff']:.4g} "
            f"| {entry['rel_l2']:.3g} | {entry['top5_token_agreement']} "
            f"| {'n/a' if gap is None else f'{gap:.3g}'} "
            f"| {'passed' if entry['agreement']['passed'] else 'failed'}: "
            f"{entry['agreement']['summary']} |"
        )
    emulated = [(phase, entry) for phase, entry in phases if "emulated" in entry]
    if emulated:
        lines += [
            "",
            "Real DeepEP buffers against their models (same plan, weights and tokens):",
            "",
            "| phase | arm | real buffer | model | bit-exact | max abs diff | rel L2 | routed rel L2 "
            "| top-5 ids agree |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for phase, entry in emulated:
            for arm, figures in entry["emulated"].items():
                lines.append(
                    f"| {phase} | {arm} | {entry['dispatcher'][arm]} | {figures['model']} "
                    f"| {_yes(figures['bit_exact'])} | {figures['max_abs_diff']:.4g} "
                    f"| {figures['rel_l2']:.3g} | {figures['routed_rel_l2']:.3g} "
                    f"| {figures['top5_token_agreement']} |"
                )
    return "\n".join(lines) + "\n"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _cell(value: Any) -> str:
    return "n/a" if value is None else str(value)
