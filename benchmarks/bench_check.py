"""driftcheck beside its peers on a whole SGLang release, run by run (A B A B ...).

    python benchmarks/bench_check.py [--version 0.5.23] [--runs 7]

Each case alternates driftcheck and its peer, one run each, ``--runs`` times, and prints the
min/median/max of each side and the median of the paired ratios (each driftcheck run divided
by the peer run beside it, so a machine that slows down for a while slows both sides):

* **cold, whole tree**: ``driftcheck --no-cache .`` against ``ruff check --select PLR1714
  --no-cache .``; before every driftcheck run its scan cache and run records are removed;
* **warm, whole tree**: ``driftcheck .`` with its cache and run record filled against
  ``ruff check --select PLR1714 .`` with ruff's cache filled;
* **one file from pre-commit, warm**: ``driftcheck sglang/srt/models/kimi_k3.py`` against
  ``python3 -c pass`` (starting the interpreter is the floor);
* **one file, just edited, warm**: the same after appending a new comment line to the file
  before each run (the record cannot answer; the scan cache holds the rest of the tree);
* **one file, empty cache**: against a whole-tree run with an empty cache (both fill it);

and the peak memory of driftcheck's process tree on a cold run (the sum of its processes'
proportional set sizes, sampled from /proc every 5 ms). driftcheck runs as ``python -P -m
driftcheck`` (``-P``: never import from the linted tree). Nothing is asserted; the figures
are printed with the targets of issue 14. The release is copied to a temporary directory
first (the edits never touch the corpus cache).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from driftcheck.corpus import fetch_release

EDITED = "sglang/srt/models/kimi_k3.py"


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _pss_kb(pid: int) -> int:
    """Proportional set size (a forked worker's copy-on-write pages are split between the
    processes sharing them, not counted once each); VmRSS where smaps_rollup is missing."""
    for name, field in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            for line in Path(name).read_text().splitlines():
                if line.startswith(field):
                    return int(line.split()[1])
        except OSError:
            continue
    return 0


def _tree_pss_kb(pid: int) -> int:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        todo.extend(_children(current))
    return sum(_pss_kb(p) for p in pids)


def run_sampled(
    cmd: list[str], cwd: Path, env: dict[str, str], stdout: Any = None, stderr: Any = None
) -> tuple[float, float, int]:
    """(wall seconds, peak MB of the process tree, exit code) of one run; output is discarded
    unless ``stdout``/``stderr`` files are given."""
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
            peak = max(peak, _tree_pss_kb(proc.pid))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    return wall, peak / 1024, code


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak MB of the process tree) of one run; output is discarded."""
    wall, peak, _ = run_sampled(cmd, cwd, env)
    return wall, peak


def paired(
    runs: int,
    ours: Callable[[], tuple[float, float]],
    theirs: Callable[[], tuple[float, float]],
    before_ours: Callable[[], None] = lambda: None,
    before_theirs: Callable[[], None] = lambda: None,
) -> tuple[list[float], list[float], list[float], float]:
    """``runs`` alternating pairs: (our walls, their walls, paired ratios, our peak MB)."""
    mine, peer, peak = [], [], 0.0
    for _ in range(runs):
        before_ours()
        wall, mb = ours()
        mine.append(wall)
        peak = max(peak, mb)
        before_theirs()
        peer.append(theirs()[0])
    return mine, peer, [a / b for a, b in zip(mine, peer, strict=True)], peak


def spread(values: list[float]) -> str:
    """``min / median / max`` in seconds."""
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f} s"


def report(
    name: str, peer: str, result: tuple[list[float], list[float], list[float], float], target: str
) -> None:
    mine, theirs, ratios, _ = result
    print(f"{name}")
    print(f"  driftcheck  {spread(mine)}   (min / median / max)")
    print(f"  {peer:<11} {spread(theirs)}")
    print(
        f"  paired ratio: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x, max {max(ratios):.2f}x); target {target}"
    )


def main() -> int:
    """Run every case and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.5.23")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(fetch_release(args.version), tree)
        files = list(tree.rglob("*.py"))
        size = sum(f.stat().st_size for f in files)
        cache, runs_dir = Path(scratch) / "cache", Path(scratch) / "runs"
        env = {
            **os.environ,
            "DRIFTCHECK_CACHE_DIR": str(cache),
            "DRIFTCHECK_RUNS_DIR": str(runs_dir),
        }
        ruff_env = {**os.environ, "RUFF_CACHE_DIR": str(Path(scratch) / "ruff-cache")}
        time.sleep(2.1)  # the copy's stamps are older than the records' racy window
        driftcheck = [sys.executable, "-P", "-m", "driftcheck"]

        def ours(*argv: str) -> Callable[[], tuple[float, float]]:
            return lambda: timed([*driftcheck, *argv], tree, env)

        def theirs(
            cmd: list[str], environment: dict[str, str]
        ) -> Callable[[], tuple[float, float]]:
            return lambda: timed(cmd, tree, environment)

        def forget() -> None:
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(runs_dir, ignore_errors=True)

        edits = iter(range(10**6))

        def edit() -> None:
            with (tree / EDITED).open("a") as handle:
                handle.write(f"# benchmark edit {next(edits)}\n")

        ruff_cmd = [ruff, "check", "--select", "PLR1714", "--quiet", "."]
        print(
            f"tree: sglang {args.version}, {len(files)} files, {size / 1e6:.1f} MB, {os.cpu_count()} CPUs, {args.runs} pairs per case"
        )
        cold = paired(
            args.runs, ours("--no-cache", "."), theirs([*ruff_cmd, "--no-cache"], ruff_env), forget
        )
        report("cold, whole tree (no cache)", "ruff", cold, "<= 1.0x ruff --no-cache")
        timed([*driftcheck, "."], tree, env)
        timed(ruff_cmd, tree, ruff_env)
        time.sleep(2.1)
        timed([*driftcheck, "."], tree, env)  # records the run (its inputs are not racy now)
        warm = paired(args.runs, ours("."), theirs(ruff_cmd, ruff_env))
        report("warm, whole tree (caches filled)", "ruff", warm, "<= 2.0x ruff with its cache")
        interpreter = theirs([sys.executable, "-c", "pass"], dict(os.environ))
        timed([*driftcheck, EDITED], tree, env)
        one = paired(args.runs, ours(EDITED), interpreter)
        report(f"one file ({EDITED}), warm", "python -c pass", one, "<= 5x python3 -c pass")
        edited = paired(args.runs, ours(EDITED), interpreter, edit)
        report(
            "one file, just edited, warm (no record can answer)",
            "python -c pass",
            edited,
            "(reported, no target)",
        )
        empty = paired(args.runs, ours(EDITED), ours("."), forget, forget)
        report("one file, empty cache", "cold tree", empty, "<= 1.0x a cold whole-tree run")
        print(
            f"peak memory of driftcheck's process tree (cold): {cold[3]:.0f} MB (target <= 100 MB)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
