"""One package checked beside another tree, against the same package alone, run by run.

    python benchmarks/bench_beside.py [--version 0.5.23] [--beside vllm==0.33.0] [--runs 7]
                                      [--python PATH]

A folder holding two releases side by side (``sglang/`` and ``vllm/``), or SGLang's own
repository (``python/sglang`` beside ``test/``, ``benchmark/``, ``sgl-kernel/``), holds trees
a run over one package was not asked about. This times ``driftcheck --no-cache sglang`` in a
scratch directory holding the SGLang release and the ``--beside`` release side by side,
against the same command in a directory holding the SGLang release alone, alternating one
run each, ``--runs`` times after one pair that is not counted (as ``bench_check.py`` does),
and prints the min/median/max of each side and the median of the paired ratios (target:
1.15x at most). Nothing is asserted. ``--python`` runs driftcheck with another interpreter
(an install of an earlier commit, for the figure before a change); driftcheck runs as
``python -P -m driftcheck``, its modules compiled to bytecode first. The trees are
hard-linked into the scratch directory where the filesystem allows (copied otherwise).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_check import compile_bytecode, paired, spread, timed

from driftcheck.corpus import fetch_release


def place(release: Path, into: Path) -> None:
    """Every top-level directory of the unpacked ``release`` under ``into`` (hard links where
    the filesystem allows them, else copies)."""
    for entry in (e for e in release.iterdir() if e.is_dir()):
        try:
            shutil.copytree(entry, into / entry.name, copy_function=os.link)
        except OSError:
            shutil.rmtree(into / entry.name, ignore_errors=True)
            shutil.copytree(entry, into / entry.name)


def main() -> int:
    """Time the package beside the other tree and alone, paired, and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.5.23")
    parser.add_argument("--beside", default="vllm==0.33.0")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter driftcheck runs in"
    )
    args = parser.parse_args()
    if args.python == sys.executable:
        compile_bytecode()
    else:
        compiling = "import compileall, os, driftcheck as d; compileall.compile_dir(os.path.dirname(d.__file__), quiet=1)"
        subprocess.run([args.python, "-P", "-c", compiling], check=False)
    with tempfile.TemporaryDirectory() as scratch:
        beside, alone = Path(scratch) / "beside", Path(scratch) / "alone"
        for where in (beside, alone):
            where.mkdir()
            place(fetch_release(args.version), where)
        place(fetch_release(args.beside), beside)
        os.sync()
        env = {
            **os.environ,
            "DRIFTCHECK_CACHE_DIR": str(Path(scratch) / "cache"),
            "DRIFTCHECK_RUNS_DIR": str(Path(scratch) / "runs"),
        }
        command = [args.python, "-P", "-m", "driftcheck", "--no-cache", "sglang"]
        files = sum(1 for _ in beside.rglob("*.py"))
        print(
            f"sglang {args.version} beside {args.beside}: {files} files in all, {args.runs} pairs"
        )
        print(f"driftcheck: {args.python} -P -m driftcheck")
        mine, theirs, ratios = paired(
            args.runs, lambda: timed(command, beside, env), lambda: timed(command, alone, env)
        )
        print("driftcheck --no-cache sglang, beside the other tree / alone")
        print(f"  beside      {spread(mine)}   (min / median / max)")
        print(f"  alone       {spread(theirs)}")
        print(
            f"  paired ratio: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x, "
            f"max {max(ratios):.2f}x); target <= 1.15x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
