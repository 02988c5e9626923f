"""Rule documentation rendered from the rule modules (one source of truth)."""

from __future__ import annotations

from driftcheck.rules import CATALOGUE


def render_rule(code: str) -> str | None:
    """Markdown for ``driftcheck explain CODE`` and ``docs/rules/CODE.md``."""
    rule = CATALOGUE.get(code)
    if rule is None:
        return None
    lines = [
        f"# {rule.code} ({rule.name})",
        "",
        rule.summary + ".",
        "",
        f"Severity: {rule.severity}. Enabled by default: {'yes' if rule.default_enabled else 'no'}. "
        f"Fix: {'available' if rule.fixable() else 'none'}.",
        "",
        rule.explanation.rstrip(),
        "",
        "## Fix safety",
        rule.fix_safety,
    ]
    if rule.INVALID:
        lines += ["", "## Examples that are reported", ""]
        for example in rule.INVALID:
            lines += ["```python", example.code.rstrip(), "```", ""]
            if example.expected_safe_fix is not None:
                held = ", ".join(example.held_back or ())
                lines += [
                    f"Fixed by `--fix` (`--fix-style minimal`; held back: {held}):",
                    "",
                    "```python",
                    example.expected_safe_fix.rstrip(),
                    "```",
                    "",
                ]
            if example.expected_fix is not None:
                lines += [
                    "Fixed by `--fix --unsafe-fixes` (`--fix-style minimal`):",
                    "",
                    "```python",
                    example.expected_fix.rstrip(),
                    "```",
                    "",
                ]
    if rule.VALID:
        lines += ["## Examples that are not reported", ""]
        for example in rule.VALID:
            if example.note:
                lines.append(f"{example.note}:")
                lines.append("")
            lines += ["```python", example.code.rstrip(), "```", ""]
    return "\n".join(lines).rstrip() + "\n"
