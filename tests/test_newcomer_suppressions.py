"""Suppressions as a newcomer meets them (issue 31, cases 2 and 3): a suppression beside a
syntax error elsewhere in its file is still read and the syntax error is reported; a
suppression is judged stale only against the rules that ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from driftcheck.cli import main
from driftcheck.suppressions import parse_suppressions

KIMI = "sglang/srt/models/kimi_like.py"
SUPPRESSED = "    return (  # driftcheck: allow-missing[pplx] -- not validated on K3\n"
# kimi_like's finding once the suppression accepts pplx (deepep_v2 is latent: a warning)
LATENT_ONLY = (
    f"{KIMI}:10:9: DC001 (warning) _uses_ep_a2a enumerates 3 of 5 DeepEP-family "
    "backends; missing deepep_v2 (latent) (canonical: is_deepep_class_backend)"
)
UNSUPPRESSED = (
    f"{KIMI}:10:9: DC001 _uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing "
    "deepep_v2 (latent), pplx (held back: no same-role site lists it) "
    "(canonical: is_deepep_class_backend)"
)
ELSEWHERE = "(outside the statements checked: the file's sites and suppressions were still read)"


def run(runner: CliRunner, *args: str | Path):
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


def suppressed(tree: Path, comment: str = SUPPRESSED, tail: str = "") -> Path:
    """kimi_like.py with ``comment`` on its site's first line and ``tail`` appended."""
    kimi = tree / KIMI
    kimi.write_text(kimi.read_text().replace("    return (\n", comment, 1) + tail)
    return kimi


# -- case 2: a syntax error elsewhere in the file ------------------------------------------


def test_a_suppression_beside_an_unclosed_bracket_still_accepts_its_member(
    runner: CliRunner, sglang_like: Path
) -> None:
    """``def g(:`` leaves a bracket open to the end of the file: the tokenizer stops there,
    after it has read the suppression."""
    kimi = suppressed(sglang_like, tail="\n\ndef g(:\n    pass\n")
    result = run(runner, kimi, "--no-cache")
    assert result.stdout.splitlines() == [LATENT_ONLY]
    assert result.stderr.splitlines() == [
        f"{KIMI}:35: error: syntax error: invalid syntax {ELSEWHERE}",
        "Found 1 finding (1 warning) in 1 file.",
    ]
    assert result.exit_code == 2


def test_the_same_file_without_the_syntax_error_passes(
    runner: CliRunner, sglang_like: Path
) -> None:
    """Negative control: the exit 2 above is the syntax error's, not the suppression's."""
    kimi = suppressed(sglang_like, tail="\n\ndef g():\n    pass\n")
    result = run(runner, kimi, "--no-cache")
    assert result.stdout.splitlines() == [LATENT_ONLY]
    assert result.stderr.splitlines() == ["Found 1 finding (1 warning) in 1 file."]
    assert result.exit_code == 0


def test_a_suppression_after_a_tokenizer_error_is_read(
    runner: CliRunner, sglang_like: Path
) -> None:
    """An unindent that matches no outer level stops the tokenizer (line 8, above the
    suppression): it starts again there, and the suppression below is read."""
    kimi = sglang_like / KIMI
    kimi.write_text(
        kimi.read_text().replace(
            "\n\ndef _uses_ep_a2a",
            "\n\ndef _broken() -> None:\n        x = 1\n    return x\n\n\ndef _uses_ep_a2a",
            1,
        )
    )
    suppressed(sglang_like)
    result = run(runner, kimi, "--no-cache")
    assert result.stdout.splitlines() == [LATENT_ONLY.replace(":10:9:", ":15:9:")]
    assert result.stderr.splitlines() == [
        f"{KIMI}:8: error: syntax error: unindent does not match any outer indentation level "
        f"{ELSEWHERE}",
        "Found 1 finding (1 warning) in 1 file.",
    ]
    assert result.exit_code == 2


def test_the_syntax_error_is_reported_on_a_cached_run_too(
    runner: CliRunner, sglang_like: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan with a syntax error is never cached: the second run reads the file again."""
    monkeypatch.setenv("DRIFTCHECK_CACHE_DIR", str(tmp_path / "cache"))
    kimi = suppressed(sglang_like, tail="\n\ndef g(:\n    pass\n")
    first = run(runner, kimi)
    second = run(runner, kimi)
    assert (second.stdout, second.stderr, second.exit_code) == (
        first.stdout,
        first.stderr,
        first.exit_code,
    )
    assert f"{KIMI}:35: error: syntax error: invalid syntax {ELSEWHERE}" in second.stderr


def test_a_syntax_error_in_the_checked_statements_still_skips_the_file(
    runner: CliRunner, sglang_like: Path
) -> None:
    """The site's own function does not parse: the file is skipped, as before (exit 2)."""
    kimi = suppressed(sglang_like)
    kimi.write_text(
        kimi.read_text().replace("        or _a2a_backend.is_mori()\n", "        or or\n")
    )
    result = run(runner, kimi, "--no-cache")
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"{KIMI}:15: error: syntax error: invalid syntax; file skipped",
        "1 path could not be checked; no other file was checked.",
    ]
    assert result.exit_code == 2


def test_a_file_without_a_suppression_is_not_parsed_whole(
    runner: CliRunner, sglang_like: Path
) -> None:
    """Negative control: the README's rule stands for every other file (a syntax error
    outside the checked statements is not reported by ``check``)."""
    kimi = sglang_like / KIMI
    kimi.write_text(kimi.read_text() + "\n\ndef g():\n    x = 1 1\n")
    result = run(runner, kimi, "--no-cache")
    assert result.stdout.splitlines() == [UNSUPPRESSED]
    assert result.exit_code == 1


@pytest.mark.parametrize(
    "source",
    [
        'x = "abc\ny = 1  # driftcheck: allow-missing[pplx] -- r\n',  # unterminated string
        "x = '''abc\ny = 1  # driftcheck: allow-missing[pplx] -- r\n",  # unterminated '''
        "def f():\n        a = 1\n    y = 1  # driftcheck: allow-missing[pplx] -- r\n",
    ],
    ids=["string", "triple-quoted", "unindent"],
)
def test_the_comment_after_a_tokenizer_error_is_read(source: str) -> None:
    [found] = parse_suppressions(source)
    assert (found.line, found.verb, found.items, found.reason) == (
        source.count("\n"),
        "allow-missing",
        ("pplx",),
        "r",
    )


def test_a_suppression_inside_a_string_is_no_suppression() -> None:
    """Negative control: the tokenizer still tells a comment from a string."""
    assert parse_suppressions('x = """\n# driftcheck: allow-missing[pplx] -- r\n"""\n') == []


# -- case 3: stale only against the rules that ran -------------------------------------------


@pytest.mark.parametrize("narrowed", [["--select", "DC004"], ["--ignore", "DC001"]])
def test_a_needed_suppression_is_not_stale_when_its_rule_did_not_run(
    runner: CliRunner, sglang_like: Path, narrowed: list[str]
) -> None:
    kimi = suppressed(sglang_like)
    result = run(runner, kimi, "--no-cache", *narrowed)
    assert result.stdout == ""
    assert result.stderr.splitlines() == ["No drift found in 1 file."]
    assert result.exit_code == 0


def test_the_suppression_is_needed_by_a_full_run(runner: CliRunner, sglang_like: Path) -> None:
    """Negative control: removing the suppression brings the finding back."""
    result = run(runner, sglang_like / KIMI, "--no-cache")
    assert result.stdout.splitlines() == [UNSUPPRESSED]
    assert result.exit_code == 1


def test_a_stale_suppression_is_reported_when_every_rule_it_applies_to_ran(
    runner: CliRunner, sglang_like: Path
) -> None:
    """``mori`` is listed: nothing misses it. With DC001 ignored, the rules that honour
    allow-missing and may judge the site still ran (DC003, DC020, DC021) or were asked
    (DC010, DC011): none reports mori missing."""
    kimi = suppressed(sglang_like, SUPPRESSED.replace("[pplx]", "[mori]"))
    result = run(runner, kimi, "--no-cache", "--ignore", "DC001")
    assert result.stdout.splitlines() == [
        f"{KIMI}:9:15: DC004 '# driftcheck: allow-missing[mori] -- not validated on K3' "
        "matches no finding at this site; remove it"
    ]
    assert result.exit_code == 1


def test_an_ignore_naming_a_rule_that_did_not_run_is_not_judged(
    runner: CliRunner, sglang_like: Path
) -> None:
    comment = "    return (  # driftcheck: ignore[DC001, DC020] -- reviewed\n"
    kimi = suppressed(sglang_like, comment)
    result = run(runner, kimi, "--no-cache", "--ignore", "DC020")
    assert result.stdout == ""
    assert result.exit_code == 0


def test_an_ignore_whose_rules_all_ran_and_matched_nothing_is_stale(
    runner: CliRunner, sglang_like: Path
) -> None:
    """Negative control: DC020 and DC005 ran; neither reports this site."""
    comment = "    return (  # driftcheck: ignore[DC005, DC020] -- reviewed\n"
    kimi = suppressed(sglang_like, comment)
    result = run(runner, kimi, "--no-cache")
    assert result.stdout.splitlines() == [
        f"{KIMI}:9:15: DC004 '# driftcheck: ignore[DC005, DC020] -- reviewed' matches no "
        "finding at this site; remove it",
        UNSUPPRESSED,
    ]
    assert result.exit_code == 1


def test_a_suppression_on_no_site_is_stale_whatever_ran(
    runner: CliRunner, sglang_like: Path
) -> None:
    """No rule can match a suppression that no site is in reach of: DC004 alone reports it."""
    kimi = sglang_like / KIMI
    kimi.write_text(
        kimi.read_text().replace(
            "class KimiLikeForCausalLM:",
            "# driftcheck: allow-missing[pplx] -- old decision\nclass KimiLikeForCausalLM:",
        )
    )
    result = run(runner, kimi, "--no-cache", "--select", "DC004")
    assert result.stdout.splitlines() == [
        f"{KIMI}:28:1: DC004 '# driftcheck: allow-missing[pplx] -- old decision' matches no "
        "finding at this site; remove it"
    ]
    assert result.exit_code == 1


def test_stale_allow_missing_is_judged_by_the_rules_that_report_missing_members() -> None:
    """DC004 asks these rules about a site when they did not run: a rule that reports missing
    members (its INVALID examples name some) must say it honours allow-missing."""
    from driftcheck.rules import CATALOGUE

    reporting = {c for c, rule in CATALOGUE.items() if any(e.missing for e in rule.INVALID)}
    honouring = {c for c, rule in CATALOGUE.items() if rule.honours_allow_missing}
    assert honouring == reporting
    assert "DC001" in honouring and "DC004" not in honouring
