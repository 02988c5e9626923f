"""Speed and memory of `driftcheck` on a whole SGLang release, beside ruff on the same tree.

Usage: python benchmarks/bench_check.py [--version 0.5.23] [--runs 5]

Prints, for the release's `sglang/` tree: file count and size, cold runs (no driftcheck
cache), warm runs (cache filled), the peak resident memory of driftcheck's whole process tree
(main process plus workers: the sum of their proportional set sizes, sampled from /proc every
5 ms, so copy-on-write pages shared by forked workers are not counted twice), and `ruff check --select PLR1714
--no-cache` on the same tree in the same run, as a ratio. Targets (issue 2): cold median
<= 2 s, warm median <= 0.5 s, peak <= 300 MB on a 2-core machine. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from driftcheck.corpus import fetch_release


def _tree_rss_kb(pid: int) -> int:
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
        for child in list(pids[1:]):
            grand = Path(f"/proc/{child}/task/{child}/children").read_text().split()
            pids += [int(g) for g in grand]
    except OSError:
        pass
    for p in pids:
        total += _pss_kb(p)
    return total


def _pss_kb(pid: int) -> int:
    """Proportional set size: shared pages (a forked worker's copy-on-write view of its parent)
    are split between the processes sharing them instead of counted once per process, as
    VmRSS would. Falls back to VmRSS where smaps_rollup is unavailable."""
    for name, field in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            for line in Path(name).read_text().splitlines():
                if line.startswith(field):
                    return int(line.split()[1])
        except OSError:
            continue
    return 0


def timed(
    cmd: list[str], cwd: Path, env: dict[str, str], stdout: Any = None, stderr: Any = None
) -> tuple[float, float, int]:
    """(wall seconds, peak MB of the process tree, exit code); output is discarded unless
    ``stdout``/``stderr`` files are given."""
    peak = 0
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=stdout or subprocess.DEVNULL,
        stderr=stderr or subprocess.DEVNULL,
    )
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_kb(proc.pid))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    return wall, peak / 1024, code


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.5.23")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tree = fetch_release(args.version)
    files = list((tree / "sglang").rglob("*.py"))
    size = sum(f.stat().st_size for f in files)
    driftcheck = [
        sys.executable,
        "-P",
        "-m",
        "driftcheck",
        "check",
        "--quiet",
        ".",
    ]  # -P: never import from the linted tree
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "DRIFTCHECK_CACHE_DIR": cache}
        cold = []
        peaks = []
        for _ in range(args.runs):
            shutil.rmtree(cache, ignore_errors=True)
            wall, peak, code = timed(driftcheck, tree, env)
            cold.append(wall)
            peaks.append(peak)
        warm = []
        for _ in range(args.runs):
            wall, peak, code = timed(driftcheck, tree, env)
            warm.append(wall)
            peaks.append(peak)
    ruff_runs = [
        timed(
            [ruff, "check", "--select", "PLR1714", "--no-cache", "--quiet", "sglang"],
            tree,
            dict(os.environ),
        )[0]
        for _ in range(args.runs)
    ]
    cold_median, warm_median, ruff_median = (statistics.median(x) for x in (cold, warm, ruff_runs))
    print(
        f"tree: sglang {args.version}, {len(files)} files, {size / 1e6:.1f} MB, {os.cpu_count()} CPUs"
    )
    print(
        f"driftcheck cold (no cache): median {cold_median:.3f} s  runs {', '.join(f'{x:.3f}' for x in cold)}  (target <= 2 s)"
    )
    print(
        f"driftcheck warm (cached):   median {warm_median:.3f} s  runs {', '.join(f'{x:.3f}' for x in warm)}  (target <= 0.5 s)"
    )
    print(f"driftcheck peak memory (process tree): {max(peaks):.0f} MB  (target <= 300 MB)")
    print(f"ruff check --select PLR1714 --no-cache: median {ruff_median:.3f} s")
    print(
        f"ratio driftcheck cold / ruff: {cold_median / ruff_median:.2f}x; warm / ruff: {warm_median / ruff_median:.2f}x"
    )
    print(f"last exit code: {code}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
