"""How a check's time grows with the sites of one file, on generated files, run by run.

    python benchmarks/bench_sites.py [--sites 2000] [--runs 5] [--large 71000]

The files are written here, into a copy of the hand-written fixture tree (``fixtures/
sglang_like``, whose enum and helper they test): ``sglang/srt/models/generated.py`` holds
``--sites`` functions, each one site (``b = get_moe_a2a_backend()``, then ``if
b.is_deepep() or b.is_mooncake(): return N``, padded to 282 bytes with a docstring and two
unrelated statements, the density of the 20 MB, 71k-site file of issue 23).

* **8x the sites**: ``driftcheck --no-cache`` on the file of ``--sites`` sites and on one of
  8x as many, alternating run by run, ``--runs`` pairs after one that is not counted: each
  side's min/median/max and the median of the paired ratios (target: at most 8x, time linear
  in the sites of a file);
* **the large file**: one run on a file of ``--large`` sites (71,000: about 20 MB; target:
  under 60 s), with its peak resident memory.

driftcheck runs as ``python -P -m driftcheck``, its modules compiled to bytecode first (as in
``bench_check.py``). Nothing is asserted; the figures are printed with their targets.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_check import compile_bytecode, paired, spread

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "sglang_like"
GENERATED = "sglang/srt/models/generated.py"
HEADER = "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n"
SITE_BYTES = 282  # 20 MB / 71k sites


def site_function(index: int) -> str:
    """One function holding one site, padded to :data:`SITE_BYTES` bytes."""
    head = f"\n\ndef f{index}(x, y):\n"
    body = (
        "    b = get_moe_a2a_backend()\n"
        "    if b.is_deepep() or b.is_mooncake():\n"
        f"        return x + {index}\n"
        f"    scale = y * 2.0 + {index}\n"
        "    return x * scale\n"
    )
    padding = SITE_BYTES - len(head) - len(body) - len('    """"""\n')
    return f'{head}    """{"Route the tokens. " * (padding // 18)}{"." * (padding % 18)}"""\n{body}'


def tree_with_sites(into: Path, sites: int) -> Path:
    """A copy of the fixture tree whose generated model file holds ``sites`` sites."""
    shutil.copytree(FIXTURE, into)
    with (into / GENERATED).open("w") as handle:
        handle.write(HEADER)
        for index in range(sites):
            handle.write(site_function(index))
    return into


def run(tree: Path) -> float:
    """Wall seconds of one cold check of ``tree`` (exit code 1: the sites are drift)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-P", "-m", "driftcheck", "--no-cache", "-q", "."],
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode != 1:
        raise SystemExit(f"driftcheck exited {done.returncode} on {tree}: {done.stderr}")
    return time.perf_counter() - start


def main() -> int:
    """Write the trees, time them, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--large", type=int, default=71_000)
    args = parser.parse_args()
    compile_bytecode()
    with tempfile.TemporaryDirectory() as scratch:
        small = tree_with_sites(Path(scratch) / "small", args.sites)
        large = tree_with_sites(Path(scratch) / "large", 8 * args.sites)
        sizes = [(t / GENERATED).stat().st_size for t in (small, large)]
        print(
            f"generated files: {args.sites} sites ({sizes[0] / 1e6:.1f} MB) and "
            f"{8 * args.sites} sites ({sizes[1] / 1e6:.1f} MB), {args.runs} pairs"
        )
        mine, theirs, ratios = paired(args.runs, lambda: run(large), lambda: run(small))
        print(f"8x the sites in one file ({8 * args.sites} against {args.sites})")
        print(f"  {8 * args.sites:>6} sites  {spread(mine)}   (min / median / max)")
        print(f"  {args.sites:>6} sites  {spread(theirs)}")
        print(
            f"  paired ratio: median {statistics.median(ratios):.2f}x "
            f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x); target <= 8x"
        )
        shutil.rmtree(small)
        shutil.rmtree(large)
        huge = tree_with_sites(Path(scratch) / "huge", args.large)
        size = (huge / GENERATED).stat().st_size
        wall = run(huge)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(
            f"one file of {args.large} sites ({size / 1e6:.1f} MB): {wall:.1f} s "
            f"(target < 60 s), peak resident memory {peak:.0f} MB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
