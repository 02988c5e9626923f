"""Time ``driftcheck --fix`` over a copy of a pinned SGLang release and print the figures.

    /work/venv/bin/python benchmarks/bench_fix.py [--version 0.5.23] [--repeat 5]

Each repetition works on a fresh copy of the release (the corpus cache is never modified):

* ``cli --no-cache``: wall time of ``driftcheck --no-cache --fix`` as a subprocess (cold scan),
  alternating run by run with ``ruff check --select PLR1714 --no-cache --fix`` on its own fresh
  copy (the peer), and the median of the paired ratios;
* ``cli cached``: wall time of ``driftcheck --fix`` after a plain ``driftcheck`` run filled the
  scan cache (what a developer sees on the second command);
* in-process phases: ``check`` (scan + judge), ``attach`` (plan every fix and compute its
  flips), ``apply`` (splice, byte-compile, atomic write with fsync), ``diff`` (unified diff);
* ``libcst import``: what the rewrite substrate costs a fresh process before the first fix
  (the CLI pays it once per ``--fix`` run; the in-process ``attach`` median does not show it),
  and ``libcst parse``: the share of ``attach`` spent in ``libcst.parse_expression`` on the
  rewritten expressions' text (the only text libcst is given).

Figures are medians over the repetitions (min in brackets). Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import libcst

from driftcheck.corpus import fetch_release
from driftcheck.engine import check
from driftcheck.fix.apply import apply_fixes, attach_fixes

DRIFTCHECK = str(Path(sys.executable).with_name("driftcheck"))


def fresh_copy(release: Path, into: Path) -> Path:
    target = into / f"tree-{time.monotonic_ns()}"
    shutil.copytree(release, target)
    return target


def timed_cli(tree: Path, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run([DRIFTCHECK, *args, "."], cwd=tree, capture_output=True, check=False)
    return time.perf_counter() - start


def libcst_import() -> float:
    """Seconds a fresh interpreter spends importing libcst."""
    code = "import time; t = time.perf_counter(); import libcst; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout)


def phases(tree: Path, style: str) -> dict[str, float]:
    start = time.perf_counter()
    result = check([tree], use_cache=False)
    checked = time.perf_counter()
    parsing = [0.0]
    real_parse = libcst.parse_expression

    def timed_parse(*args, **kwargs):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        try:
            return real_parse(*args, **kwargs)
        finally:
            parsing[0] += time.perf_counter() - began

    libcst.parse_expression = timed_parse
    try:
        findings = attach_fixes(result, result.findings, style)
    finally:
        libcst.parse_expression = real_parse
    attached = time.perf_counter()
    outcome = apply_fixes(result, findings, write=True)
    applied = time.perf_counter()
    _ = outcome.diff_text
    diffed = time.perf_counter()
    return {
        "check": checked - start,
        "attach": attached - checked,
        "libcst parse": parsing[0],
        "apply": applied - attached,
        "diff": diffed - applied,
        "fixes": float(len(outcome.fixed)),
        "files": float(len(outcome.written)),
    }


def summary(values: list[float]) -> str:
    """``median s (min / max)``."""
    return f"{statistics.median(values):6.3f} s  (min {min(values):.3f}, max {max(values):.3f})"


def timed_ruff(tree: Path) -> float:
    """Wall time of ``ruff check --select PLR1714 --no-cache --fix`` on ``tree``: the peer."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    start = time.perf_counter()
    subprocess.run(
        [ruff, "check", "--select", "PLR1714", "--no-cache", "--fix", "--quiet", "."],
        cwd=tree,
        capture_output=True,
        check=False,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.5.23")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    release = fetch_release(args.version)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for style in ("minimal", "helper"):
            cold, warm, peer = [], [], []
            table: dict[str, list[float]] = {}
            for _ in range(args.repeat):  # driftcheck and ruff alternate, each on a fresh copy
                cold.append(
                    timed_cli(
                        fresh_copy(release, work), "--no-cache", "--fix", "--fix-style", style
                    )
                )
                peer.append(timed_ruff(fresh_copy(release, work)))
                tree = fresh_copy(release, work)
                timed_cli(tree)
                warm.append(timed_cli(tree, "--fix", "--fix-style", style))
                for key, value in phases(fresh_copy(release, work), style).items():
                    table.setdefault(key, []).append(value)
            print(f"sglang {args.version}, --fix-style {style}, {args.repeat} runs")
            print(f"  cli --no-cache --fix : {summary(cold)}")
            print(f"  ruff PLR1714 --fix   : {summary(peer)}")
            ratios = [a / b for a, b in zip(cold, peer, strict=True)]
            print(f"  paired ratio         : median {statistics.median(ratios):.2f}x")
            print(f"  cli cached --fix     : {summary(warm)}")
            for key in ("check", "attach", "apply", "diff"):
                print(f"  in-process {key:<9} : {summary(table[key])}")
            print(f"  libcst parse (attach): {summary(table['libcst parse'])}")
            imports = [libcst_import() for _ in range(args.repeat)]
            print(f"  libcst import        : {summary(imports)}")
            print(
                f"  fixes applied        : {int(table['fixes'][0])} in {int(table['files'][0])} files"
            )


if __name__ == "__main__":
    main()
