"""``driftcheck verify`` and ``driftcheck gen-test``.

``verify`` proves each finding's fix with a truth table (CPU, milliseconds) and, with
``--layer``, runs the tree's own MoE block (the class its value flows into, built from the
tree's module as written and as the fix writes it, its runtime substituted: torch; CPU gloo or
CUDA NCCL) for a member the site includes and one it misses, and judges by A/B equality
(:mod:`driftcheck.runtime_verify.block`). The DeepEP dispatchers behind the experts are models of
DeepEP's two buffers (``--dispatcher model``) or its real buffers (``--dispatcher deep_ep``).
Exit codes: 0 every site proven (and, with ``--layer``, every unit run confirmed); 1 a site
refuted or unproven, or a layer run refuted or inconclusive; 2 bad usage (a ``--site`` that
matches no site), an unreadable tree, or a layer run that could not start (torch or numpy not
installed, ``--device cuda`` with no GPU visible, ``--dispatcher deep_ep`` without an
importable DeepEP or without a GPU per rank: never a silent fallback); 3 (``--layer`` only, everything else
passing) no site is eligible for a layer run (none reaches a role operation the pack
declares), so nothing was confirmed.

``gen-test`` writes the registry-completeness pytest module for the target repository.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .cli_options import codes_option_value as _codes
from .cli_options import config_option, no_cache_option
from .engine import CheckResult, check
from .model import Finding
from .report.text import format_problem
from .runtime_verify.layer.shapes import SHAPES

if TYPE_CHECKING:
    from .runtime_verify.block.job import LayerSettings
    from .runtime_verify.proof import SiteProof

DEFAULT_CODES = ("DC001", "DC003")
EXIT_NO_ELIGIBLE_SITE = 3


def _checked(
    paths: tuple[Path, ...], config_path: Path | None, select: str | None, no_cache: bool
) -> CheckResult:
    result = check(
        list(paths) or [Path(".")],
        config_path=config_path,
        select=_codes("--select", select) or list(DEFAULT_CODES),
        use_cache=not no_cache,
    )
    _nothing_or_fatal(result)
    return result


def _nothing_or_fatal(result: CheckResult) -> None:
    """Say what the run inferred and warned; exit 2 when it could not read the tree, 0 when
    there is nothing to check (no pack recognises the tree and no universe recurs in it)."""
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if result.inert:
        sys.exit(0)
    if result.fatal:
        for problem in result.problems:
            click.echo(format_problem(problem, False, result.project.show(problem.path)), err=True)
        sys.exit(2)


def _family_findings(
    result: CheckResult, fix_style: str | None, unsafe: bool = False
) -> list[Finding]:
    from .fix.apply import attach_fixes

    findings = [f for f in result.findings if f.canonical and f.missing]
    return attach_fixes(result, findings, fix_style or result.config.fix_style, unsafe=unsafe)


def _arms(value: str) -> tuple[str, str]:
    arms = tuple(a.strip() for a in value.split(",") if a.strip())
    if len(arms) != 2 or arms[0] == arms[1]:
        raise click.BadParameter("give two different members: REFERENCE,TEST")
    return arms


@click.command("verify")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@click.option(
    "--select", help="Comma-separated rule codes whose findings to verify (default: DC001,DC003)."
)
@config_option
@click.option(
    "--fix-style",
    type=click.Choice(["minimal", "helper"]),
    default=None,
    help="The fix to verify (default: the configured style).",
)
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="Verify the full fix, held-back members added (default: the fix --fix applies).",
)
@click.option(
    "--site",
    "sites",
    multiple=True,
    metavar="PATH:SYMBOL",
    help="Only this site (PATH:SYMBOL, PATH:LINE or SYMBOL); repeatable.",
)
@no_cache_option
@click.option(
    "--layer",
    is_flag=True,
    help="Also run each fix's plan decisions through the MoE layer harness (needs torch).",
)
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda"]),
    default="cpu",
    show_default=True,
    help="--layer: where the ranks run.",
)
@click.option(
    "--world-size",
    type=click.IntRange(2),
    default=2,
    show_default=True,
    help="--layer: number of ranks.",
)
@click.option(
    "--shape",
    type=click.Choice(sorted(SHAPES)),
    default="tiny",
    show_default=True,
    help="--layer: layer shape.",
)
@click.option(
    "--arms",
    default=None,
    help="--layer: REFERENCE,TEST members (default: the pack's arms where the sites include "
    "the first and their fixes add the second, else members of their own that do).",
)
@click.option(
    "--configuration",
    "configuration",
    default=None,
    help="--layer: run only this of the pack's configurations (default: each in turn until "
    "one shows the drift).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="--layer: weight and input seed."
)
@click.option(
    "--runner",
    type=click.Choice(["torch", "deep_gemm"]),
    default="torch",
    show_default=True,
    help="--layer: routed experts on torch matmuls or DeepGEMM's m-grouped contiguous GEMM "
    "(CUDA, bf16; torch when deep_gemm is not importable, and the report says so).",
)
@click.option(
    "--dispatcher",
    type=click.Choice(["model", "deep_ep"]),
    default="model",
    show_default=True,
    help="--layer: the dispatchers behind the experts: models of DeepEP's two buffers (any "
    "device), or DeepEP's real kernels (deep_ep: the legacy Buffer or the ElasticBuffer, as "
    "the pack's [verify.dispatchers] assigns each member; CUDA, one rank per GPU, bf16 shapes).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path),
    help="Write the JSON report here (the layer report with --layer).",
)
@click.option(
    "--report-md",
    "report_md_path",
    type=click.Path(path_type=Path),
    help="With --layer: write the Markdown report here.",
)
def verify_command(
    paths: tuple[Path, ...],
    output_format: str,
    select: str | None,
    config_path: Path | None,
    fix_style: str | None,
    unsafe_fixes: bool,
    sites: tuple[str, ...],
    no_cache: bool,
    layer: bool,
    device: str,
    world_size: int,
    shape: str,
    arms: str | None,
    configuration: str | None,
    seed: int,
    runner: str,
    dispatcher: str,
    report_path: Path | None,
    report_md_path: Path | None,
) -> None:
    """Prove each fix in PATHS with a truth table of the site before and after it."""
    from .runtime_verify.proof import prove
    from .runtime_verify.render import proof_dict, render_json, render_text, summary
    from .runtime_verify.site_filter import select as select_sites

    arm_pair = _arms(arms) if layer and arms is not None else None
    if report_md_path is not None and not layer:
        raise click.UsageError("--report-md needs --layer")
    if dispatcher != "model":
        _check_deep_ep_usage(layer, device, shape)
    result = _checked(paths, config_path, select, no_cache)
    candidates = _family_findings(result, fix_style, unsafe_fixes)
    _check_sites_match(candidates, sites)
    findings = select_sites(candidates, sites)
    proofs = [prove(result, finding) for finding in findings]
    layer_report = None
    if layer:
        from .runtime_verify.block.job import LayerSettings

        settings = LayerSettings(
            arm_pair, shape, world_size, device, seed, runner, dispatcher, configuration
        )
        layer_report = _run_layer(result, proofs, settings)
    if output_format == "json":
        document: dict[str, Any] = {"sites": [proof_dict(p) for p in proofs]}
        if layer_report is not None:
            document["layer"] = layer_report
        click.echo(json.dumps(document, indent=2))
    else:
        click.echo(render_text(proofs), nl=False)
        if layer_report is not None:
            from .runtime_verify.block.report import layer_summary

            click.echo(layer_summary(layer_report))
    for problem in result.problems:
        click.echo(format_problem(problem, False, result.project.show(problem.path)), err=True)
    click.echo(summary(proofs), err=True)
    if report_path is not None:
        report_path.write_text(
            json.dumps(layer_report, indent=2) + "\n"
            if layer_report is not None
            else render_json(proofs)
        )
    if report_md_path is not None and layer_report is not None:
        from .runtime_verify.block.report import layer_markdown

        report_md_path.write_text(layer_markdown(layer_report))
    if result.problems:
        sys.exit(2)
    sys.exit(_exit_code(proofs, layer_report))


def _check_sites_match(findings: list[Finding], sites: tuple[str, ...]) -> None:
    """Exit 2 naming each ``--site`` that selects no finding: a run that verified nothing it
    was asked about must not pass."""
    from .runtime_verify.site_filter import nearby, unmatched

    missed = unmatched(findings, sites)
    for selector in missed:
        click.echo(
            f"error: --site {selector} matches no site ({nearby(selector, findings)})", err=True
        )
    if missed:
        sys.exit(2)


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _check_layer_requirements(device: str, dispatcher: str) -> None:
    """Exit 2, before anything runs, when ``--layer`` cannot start here: torch or numpy not
    importable (each missing one named), or ``--device cuda`` with no CUDA GPU visible (for
    ``--dispatcher deep_ep`` DeepEP's own preflight says that, beside its other reasons)."""
    # found, not imported: torch imported without numpy warns (and fails when a digest is taken)
    missing = [module for module in ("torch", "numpy") if not _installed(module)]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        click.echo(
            f"error: --layer needs torch and numpy; {' and '.join(missing)} {verb} not "
            f"installed (from a driftcheck checkout: pip install -e '.[verify]')",
            err=True,
        )
        sys.exit(2)
    if device == "cuda" and dispatcher != "deep_ep":
        import torch

        if torch.cuda.device_count() == 0:
            build = (
                "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
            )
            click.echo(
                f"error: --device cuda needs a CUDA GPU, and torch {torch.__version__} ({build}) "
                "sees none; use --device cpu",
                err=True,
            )
            sys.exit(2)


def _check_deep_ep_usage(layer: bool, device: str, shape: str) -> None:
    if not layer:
        raise click.UsageError("--dispatcher needs --layer")
    if device != "cuda":
        raise click.UsageError("--dispatcher deep_ep runs DeepEP's CUDA kernels: use --device cuda")
    if SHAPES[shape].dtype != "bfloat16":
        raise click.UsageError(
            f"--dispatcher deep_ep moves bfloat16 tokens; --shape {shape} is "
            f"{SHAPES[shape].dtype} (use tiny-bf16 or k3)"
        )


def _exit_code(proofs: list[SiteProof], layer_report: dict[str, Any] | None) -> int:
    from .runtime_verify.block.run import NO_ELIGIBLE_SITE, layer_passed

    if not all(p.verdict == "proven" for p in proofs):
        return 1
    if layer_report is None or layer_passed(layer_report):
        return 0
    return EXIT_NO_ELIGIBLE_SITE if layer_report["verdict"] == NO_ELIGIBLE_SITE else 1


def _run_layer(
    result: CheckResult, proofs: list[SiteProof], settings: LayerSettings
) -> dict[str, Any]:
    from .runtime_verify.block.pack import PackError
    from .runtime_verify.block.run import run_layer

    assert result.universe is not None
    unknown = [arm for arm in settings.arms or () if arm not in result.universe.values]
    if unknown:
        click.echo(
            f"error: --arms names {', '.join(unknown)}, not members of {result.universe.enum_name}",
            err=True,
        )
        sys.exit(2)
    _check_layer_requirements(settings.device, settings.dispatcher)
    from .runtime_verify.layer.deep_ep_module import DeepEPUnavailable

    try:
        return run_layer(result, proofs, settings, progress=lambda text: click.echo(text, err=True))
    except PackError as exc:
        click.echo(f"error: {result.config.source or 'the pack'}: {exc}", err=True)
        sys.exit(2)
    except DeepEPUnavailable as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except Exception as exc:  # a rank's failure (no GPU, NCCL, memory) arrives as any type
        click.echo(f"error: the layer run failed: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)


@click.command("gen-test")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=Path("tests/test_backend_registry.py"),
    show_default=True,
    help="Where to write the pytest module.",
)
@config_option
def gen_test_command(paths: tuple[Path, ...], output: Path, config_path: Path | None) -> None:
    """Write a pytest module asserting each enumeration site in PATHS accepts its whole family."""
    from .runtime_verify.gen_test import planned_tests, render_module
    from .runtime_verify.registry import FAMILY_CODES, SiteRegistry

    result = check(
        list(paths) or [Path(".")],
        config_path=config_path,
        select=list(FAMILY_CODES),
        use_cache=False,
    )
    _nothing_or_fatal(result)
    registry = SiteRegistry(result)
    tests = planned_tests(registry)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render_module(tests, result.root, output))
    for problem in result.problems:
        click.echo(str(problem), err=True)
    files = len({t.path for t in tests})
    click.echo(
        f"Wrote {len(tests)} test{'s' if len(tests) != 1 else ''} for {files} file{'s' if files != 1 else ''} to {output}.",
        err=True,
    )
    sys.exit(2 if result.problems else 0)
