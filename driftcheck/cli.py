"""The ``driftcheck`` command line (click).

``driftcheck [PATHS...]`` is ``driftcheck check [PATHS...]``. Exit codes: 0 clean, 1 findings
at or above ``--fail-on`` remain, 2 bad usage, unreadable configuration or unparsable files
(other files are still checked and reported).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import __version__, replay
from .baseline import Baseline, BaselineError, write_baseline
from .cli_options import codes_option_value as _codes
from .cli_options import config_option, no_cache_option
from .config import pack_detections
from .engine import CheckResult, check
from .model import Finding
from .progress import Progress
from .project import (
    CONFIG_NAMES,
    SOURCE_DIRS,
    SOURCE_PREFIXES,
    VCS_MARKERS,
    anchor_of,
    repository_root,
)
from .report.columns import ColumnMap
from .report.text import format_finding, format_problem, summary

if TYPE_CHECKING:
    from .fix.apply import FixOutcome

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
FORMATS = ["text", "json", "sarif", "github"]


class DefaultGroup(click.Group):
    """A group whose unknown first argument means ``check`` (so ``driftcheck PATH`` works).
    The verifier's commands are imported when named (a check does not pay for them)."""

    LAZY = {
        "verify": "driftcheck.verify_cli:verify_command",
        "gen-test": "driftcheck.verify_cli:gen_test_command",
        "server": "driftcheck.server.command:server_command",
    }

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        known = (*self.commands, *self.LAZY, "--help", "-h", "--version")
        if args and args[0] not in known and not os.path.lexists(args[0]):
            # a path that does not exist, spelled like a command: name the command
            import difflib  # only for a mistyped command

            close = difflib.get_close_matches(args[0], self.list_commands(ctx), n=1)
            if close:
                ctx.fail(
                    f"No such command '{args[0]}', and no file or directory of that name. "
                    f"Did you mean '{close[0]}'?"
                )
        if not args or args[0] not in known:
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.LAZY and name not in self.commands:
            module, _, attribute = self.LAZY[name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="driftcheck")
def main() -> None:
    """Find, fix and verify hand-written backend enumerations that drift from a canonical helper."""


def _use_color(mode: str) -> bool | None:
    """``--color``: always (even into a pipe), never, or auto: when stdout is a terminal and
    ``NO_COLOR`` is unset or empty (None: click then also strips codes bound for a stream
    that is no terminal)."""
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    return None


_RECORDER: replay.Recorder | None = None  # set while a launched read-only check runs
_COLOR: bool | None = None  # the check's --color, as _use_color reads it


def _echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` with the check's colour choice, and what reached the stream kept for
    the run's record."""
    click.echo(message, err=err, nl=nl, color=_COLOR)
    if _RECORDER is not None:
        text = message + ("\n" if nl else "")
        stream = sys.stderr if err else sys.stdout
        styled = stream.isatty() if _COLOR is None else _COLOR
        _RECORDER.wrote(text if styled else click.unstyle(text), err)


def _record_inputs(
    recorder: replay.Recorder, result: CheckResult, paths: list[Path], files: list[Path | None]
) -> None:
    """What the run read: its walked files and directories, the paths it was given, and every
    place its project and configuration were looked for, from the paths' directory up (as
    :func:`~driftcheck.project.discover_project` looks; a run that stopped at a bad
    configuration read these too)."""
    recorder.read(result.inputs or {})
    project = result.project
    given = [project.cwd / p for p in paths] + [f for f in files if f is not None]
    walked = result.inputs or {}
    recorder.read(
        {str(p): replay.stamp_or_none(p) for f in given if (p := os.path.abspath(f)) not in walked}
    )
    specs = (*result.config.canonical, result.config.enum)
    modules = {spec.split(":", 1)[0] for spec in specs if spec}
    modules.update(m for detected in pack_detections().values() for m in detected)
    names = [*CONFIG_NAMES, *VCS_MARKERS, "__init__.py"]
    for module in sorted(modules):
        for prefix in SOURCE_PREFIXES:
            base = os.path.join(prefix, *module.split("."))
            names += [base + ".py", os.path.join(base, "__init__.py")]
    anchor = anchor_of(paths, project.cwd)
    repository = project.repository or repository_root(anchor)
    places = [project.cwd, project.root, anchor]
    if repository is not None:
        places += [repository, *(repository / d for d in SOURCE_DIRS)]
    for place in places:
        recorder.looked_up_from(place, names)


def _exit_code(result: CheckResult, findings: list[Finding], fail_on: str) -> int:
    if result.problems:
        return 2
    threshold = SEVERITY_RANK[fail_on]
    return 1 if any(SEVERITY_RANK[f.severity] >= threshold for f in findings) else 0


def _recorded(run: Callable[..., int]) -> Callable[..., None]:
    """The check command around ``run`` (which returns the exit code): a read-only check
    started at the ``driftcheck`` entry point records what it printed and read, so that the
    same invocation can be answered from the record while nothing changed
    (:mod:`driftcheck.replay`)."""

    @functools.wraps(run)
    def command(**options: Any) -> None:
        global _RECORDER
        launched = replay.launched_argv()
        writes = ("no_cache", "fix", "diff", "write_baseline_path", "create_helper")
        if launched is not None and not any(options[name] for name in writes):
            _RECORDER = replay.Recorder(launched)
        code = run(**options)
        if _RECORDER is not None:
            _RECORDER.save(code)
            _RECORDER = None
        replay.leave(code)

    return command


@main.command("check")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True
)
@click.option(
    "--select",
    help="Comma-separated rule codes or prefixes to report (default: the default-enabled rules).",
)
@click.option("--ignore", help="Comma-separated rule codes or prefixes to leave out.")
@click.option(
    "--extend-select",
    help="Comma-separated rule codes or prefixes to report in addition to the selection.",
)
@config_option
@click.option(
    "--respect-gitignore/--no-respect-gitignore",
    default=None,
    help="Skip what .gitignore and .ignore files exclude (default: the configuration's "
    "respect-gitignore, true).",
)
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(path_type=Path),
    help="Report only findings not in this baseline.",
)
@click.option(
    "--write-baseline",
    "write_baseline_path",
    type=click.Path(path_type=Path),
    help="Write the current findings as a baseline and exit 0.",
)
@no_cache_option
@click.option(
    "--jobs", "-j", type=click.IntRange(1), help="Worker processes (default: available CPUs)."
)
@click.option("--quiet", "-q", is_flag=True, help="Print findings only, no summary.")
@click.option(
    "--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True
)
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning", "info"]),
    default="error",
    show_default=True,
    help="Lowest severity that makes the exit code 1.",
)
@click.option("--fix", is_flag=True, help="Rewrite drifting enumerations in place.")
@click.option("--diff", is_flag=True, help="Show the fixes as a unified diff without writing.")
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="Also add the held-back members: live ones no same-role site lists "
    "(`driftcheck explain DC001`: Fix safety).",
)
@click.option(
    "--fix-style",
    type=click.Choice(["minimal", "helper"]),
    default=None,
    help="minimal: add the missing members (default); helper: call the canonical helper.",
)
@click.option(
    "--create-helper",
    is_flag=True,
    help="With --fix/--diff and --fix-style helper: write the helper an inferred family "
    "lacks (beside the enum) and make its copies call it.",
)
@_recorded
def check_command(  # noqa: C901 - one branch per option of the check command, in the order --help lists them
    paths: tuple[Path, ...],
    output_format: str,
    select: str | None,
    ignore: str | None,
    extend_select: str | None,
    config_path: Path | None,
    respect_gitignore: bool | None,
    baseline_path: Path | None,
    write_baseline_path: Path | None,
    no_cache: bool,
    jobs: int | None,
    quiet: bool,
    color: str,
    fail_on: str,
    fix: bool,
    diff: bool,
    unsafe_fixes: bool,
    fix_style: str | None,
    create_helper: bool,
) -> int:
    """Check PATHS (default: the current directory) for drifting backend enumerations."""
    global _COLOR
    _COLOR = _use_color(color)
    use_color = sys.stdout.isatty() if _COLOR is None else _COLOR
    if diff and output_format != "text":
        _echo(
            f"error: --diff prints a unified diff and takes no --format {output_format}; "
            f"--format {output_format} without --diff gives each finding's fix"
            + (" (its replacement and span)" if output_format == "json" else ""),
            err=True,
        )
        return 2
    baseline = None
    if baseline_path is not None:
        try:
            baseline = Baseline.load(baseline_path)
        except BaselineError as exc:
            _echo(f"error: {exc}", err=True)
            return 2
    progress = Progress()
    run_check = functools.partial(
        check,
        list(paths) or [Path(".")],
        config_path=config_path,
        respect_gitignore=respect_gitignore,
        select=_codes("--select", select),
        ignore=_codes("--ignore", ignore) or (),
        extend_select=_codes("--extend-select", extend_select) or (),
        jobs=jobs,
        use_cache=not no_cache,
        baseline=baseline,
    )
    try:
        result = run_check(record_inputs=_RECORDER is not None, progress=progress)
    finally:
        progress.close()
    if _RECORDER is not None:
        _record_inputs(_RECORDER, result, list(paths) or [Path(".")], [config_path, baseline_path])
    for note in result.notes:
        _echo(f"note: {note}", err=True)
    for warning in result.warnings:
        _echo(f"warning: {warning}", err=True)
    if result.inert:
        if output_format != "text":
            _emit(result, [], output_format, use_color, quiet)
        return 0
    if result.fatal:
        if output_format != "text":
            # machine readers get a document (no findings, the error) rather than empty output
            _emit(result, [], output_format, use_color, quiet)
        else:
            for problem in result.problems:
                shown = result.project.show(problem.path)
                _echo(format_problem(problem, use_color, shown), err=True)
        return 2
    if write_baseline_path is not None:
        write_baseline(write_baseline_path, result.findings)
        count = len(result.findings)
        _echo(
            f"Wrote {count} finding{'s' if count != 1 else ''} to {write_baseline_path}.", err=True
        )
        return 0
    findings = result.findings
    additions: dict[str, str] = {}
    if create_helper:
        if not (fix or diff) or (fix_style or result.config.fix_style) != "helper":
            _echo("error: --create-helper needs --fix or --diff, and --fix-style helper", err=True)
            return 2
        from .fix.create_helper import create_helpers

        created = create_helpers(result, findings)
        additions = created.additions
        for note in [*created.refusals, *created.notes]:
            _echo(note, err=True)
    style = fix_style or result.config.fix_style
    if fix or diff or output_format in ("json", "sarif"):
        from .fix.apply import attach_fixes

        findings = attach_fixes(result, findings, style, unsafe=unsafe_fixes)
    held_back = 0
    if fix or diff:
        from .fix.apply import apply_fixes

        outcome = apply_fixes(result, findings, write=fix and not diff, additions=additions)
        for note in outcome.notes:
            path, _, rest = note.partition(":")  # notes start with a canonical path
            _echo(f"{result.project.display(path)}:{rest}", err=True)
        result.problems.extend(outcome.problems)
        if diff:
            # stdout carries the patch alone; the summary counts what the patch would leave
            # (as --fix does), the exit code every finding (nothing was written)
            _echo(outcome.diff_text, nl=False)
            _emit_text(result, outcome.remaining, use_color, err=True)
            if not quiet:
                remaining = len(outcome.remaining)
                _echo(fix_summary(outcome, written=False, remaining=remaining), err=True)
            return _exit_code(result, findings, fail_on)
        findings = outcome.remaining
        held_back = outcome.held_back
        if outcome.partial and outcome.written:
            # a fix that held members back leaves its finding standing: report it as written
            again = run_check()
            findings = again.findings
            if output_format in ("json", "sarif"):
                findings = attach_fixes(again, findings, style, unsafe=unsafe_fixes)
        if output_format == "text" and outcome.fixed:
            _emit_text(result, findings, use_color)
            if not quiet:
                _echo(fix_summary(outcome, written=True, remaining=len(findings)), err=True)
            return _exit_code(result, findings, fail_on)
    _emit(result, findings, output_format, use_color, quiet)
    if held_back and output_format == "text" and not quiet:
        _echo(held_back_hint(held_back), err=True)
    return _exit_code(result, findings, fail_on)


def held_back_hint(count: int) -> str:
    """``1 fix holds back members: --unsafe-fixes adds them.`` (Ruff's hidden-fix hint)."""
    fixes = "1 fix holds" if count == 1 else f"{count} fixes hold"
    return f"{fixes} back members: --unsafe-fixes adds them."


def _emit(
    result: CheckResult, findings: list[Finding], output_format: str, color: bool, quiet: bool
) -> None:
    if output_format == "json":
        from .report.json_report import render_json

        _echo(
            render_json(
                result.universes.values(),
                findings,
                result.problems,
                result.project.display_root(),
                ColumnMap(result.root, "characters"),
            ),
            nl=False,
        )
        return
    if output_format == "sarif":
        from .report.sarif import render_sarif

        _echo(render_sarif(result, findings), nl=False)
        return
    if output_format == "github":
        from .report.github import render_github

        _echo(render_github(findings, result.problems, result.project), nl=False)
        return
    _emit_text(result, findings, color)
    if not quiet:
        _echo(
            summary(
                findings,
                result.files_checked,
                result.baselined,
                len({problem.path for problem in result.problems if not problem.checked}),
            ),
            err=True,
        )


def _emit_text(
    result: CheckResult, findings: list[Finding], color: bool, *, err: bool = False
) -> None:
    """Findings (stdout, or stderr under ``--diff``) and problems (stderr), display paths."""
    project = result.project
    columns = ColumnMap(result.root, "characters")
    for finding in findings:
        _echo(format_finding(finding, color, project.display(finding.path), columns), err=err)
    for problem in result.problems:
        _echo(format_problem(problem, color, project.show(problem.path)), err=True)


def fix_summary(outcome: FixOutcome, *, written: bool, remaining: int) -> str:
    """``Fixed 33 findings in 14 files; 0 remain.`` (``Would fix ...`` under ``--diff``)."""
    fixed = len(outcome.fixed)
    files = len(outcome.changes)
    verb = "Fixed" if written else "Would fix"
    what = f"{fixed} finding{'s' if fixed != 1 else ''} in {files} file{'s' if files != 1 else ''}"
    grouped, groups = outcome.groups
    if groups:
        what += f" ({grouped} of them in {groups} block{'s' if groups != 1 else ''} fixed as one)"
    tail = f"{remaining} remain{'s' if remaining == 1 else ''}"
    if outcome.held_back:
        tail += f" ({outcome.held_back} with held-back members: --unsafe-fixes adds them)"
    if not written:
        return f"{verb} {what} (nothing written); {tail}."
    return f"{verb} {what}; {tail}."


@main.command("explain")
@click.argument("code")
def explain_command(code: str) -> None:
    """Print a rule's rationale, examples, and how to fix or suppress it."""
    from .explain import render_rule

    text = render_rule(code.upper())
    if text is None:
        from driftcheck.rules import CATALOGUE

        click.echo(f"error: unknown rule '{code}'; known: {', '.join(sorted(CATALOGUE))}", err=True)
        sys.exit(2)
    click.echo(text)


@main.command("discover")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@config_option
@no_cache_option
def discover_command(paths: tuple[Path, ...], config_path: Path | None, no_cache: bool) -> None:
    """Propose each family of the tree: its helper and callers, or how to create one, and
    which hand-written copies drift."""
    from .discover import discover, render

    result, proposals = discover(
        list(paths) or [Path(".")],
        config_path=config_path,
        use_cache=not no_cache,
        progress=lambda text: click.echo(text, err=True),
    )
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    for line in render(proposals):
        click.echo(line)
    for problem in result.problems:
        click.echo(format_problem(problem, False, result.project.show(problem.path)), err=True)
    sys.exit(2 if result.problems else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
