"""driftcheck beside its peers on a whole SGLang release, run by run (A B A B ...).

    python benchmarks/bench_check.py [--version 0.5.23] [--runs 7] [--vllm-only]

Each case alternates driftcheck and its peer, one run each, ``--runs`` times, and prints the
min/median/max of each side and the median of the paired ratios (each driftcheck run divided
by the peer run beside it, so a machine that slows down for a while slows both sides):

* **cold, whole tree**: ``driftcheck --no-cache .`` against ``ruff check --select PLR1714
  --no-cache .``; before every driftcheck run its scan cache and run records are removed;
* **whole tree, nothing changed (answered by the run record)**: ``driftcheck .`` with its
  cache and run record filled against ``ruff check --select PLR1714 .`` with ruff's cache
  filled: a repeat, which the record answers without the engine;
* **whole tree after one edit (scan cache)**: the same, a new comment line appended to
  ``sglang/srt/models/kimi_k3.py`` before each run of either side (no record can answer; the
  scan cache holds the rest of the tree, ruff's cache the rest of its files): the case a user
  meets after editing a file;
* **one file, nothing changed (answered by the run record)**: ``driftcheck
  sglang/srt/models/kimi_k3.py``, as pre-commit runs it, against ``python3 -c pass``
  (starting the interpreter is the floor);
* **one file just edited (scan cache)**: the same after appending a new comment line to the
  file before each run (the record cannot answer; the scan cache holds the rest of the tree);
* **one file, empty cache**: against a whole-tree run with an empty cache (both fill it);

* **cold, whole tree, driftcheck compiled from source**: the cold case again, driftcheck's
  modules copied without their bytecode and run with ``PYTHONDONTWRITEBYTECODE=1`` (what
  every run costs over a source checkout in an environment that forbids writing bytecode);
* **cold, vLLM 0.33.0, zero configuration**: ``driftcheck --no-cache vllm`` on the pinned
  vLLM tree, no configuration (the tree selects the vLLM pack), against ``ruff check
  --select PLR1714 --no-cache vllm`` (``--vllm-only`` runs this case alone);

and the peak memory of driftcheck's process tree over three cold runs of their own (the sum
of its processes' proportional set sizes, sampled from /proc every 5 ms; timed runs are not
sampled). Each case starts with one pair that is not counted. driftcheck runs as ``python -P
-m driftcheck`` (``-P``: never import from the linted tree), its modules compiled to bytecode
first, as ``pip install`` does. Nothing is asserted; the figures are printed with the targets
of issue 14. The release is copied to a temporary directory first (the edits never touch the
corpus cache).
"""

from __future__ import annotations

import argparse
import compileall
import importlib
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


PACKAGES = ("driftcheck", "driftcheck.rules", "driftcheck.runtime_verify")


def _package_dir(name: str) -> Path:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    return Path(module.__file__).parent


def compile_bytecode() -> None:
    """Compile driftcheck's modules as an install does (an editable install of a checkout
    writes them on first use, unless ``PYTHONDONTWRITEBYTECODE`` forbids it)."""
    for name in PACKAGES:
        compileall.compile_dir(_package_dir(name), quiet=1)


def source_copy(into: Path) -> Path:
    """driftcheck laid out as installed under ``into``, without bytecode (for ``PYTHONPATH``)."""
    for name in PACKAGES:
        shutil.copytree(
            _package_dir(name),
            into.joinpath(*name.split(".")),
            ignore=shutil.ignore_patterns("__pycache__"),
            dirs_exist_ok=True,
        )
    return into


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


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall seconds of one run, output discarded (memory is sampled in runs of its own: the
    sampler would take CPU from the run it times)."""
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def paired(
    runs: int,
    ours: Callable[[], float],
    theirs: Callable[[], float],
    before_ours: Callable[[], None] = lambda: None,
    before_theirs: Callable[[], None] = lambda: None,
) -> tuple[list[float], list[float], list[float]]:
    """``runs`` alternating pairs after one that is not counted (it warms the page cache):
    (our walls, their walls, paired ratios)."""
    mine, peer = [], []
    for index in range(runs + 1):
        before_ours()
        wall = ours()
        before_theirs()
        other = theirs()
        if index:
            mine.append(wall)
            peer.append(other)
    return mine, peer, [a / b for a, b in zip(mine, peer, strict=True)]


def spread(values: list[float]) -> str:
    """``min / median / max`` in seconds."""
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f} s"


def report(
    name: str, peer: str, result: tuple[list[float], list[float], list[float]], target: str
) -> None:
    mine, theirs, ratios = result
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
    parser.add_argument("--vllm-only", action="store_true", help="run the vLLM case alone")
    args = parser.parse_args()
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    compile_bytecode()
    if not args.vllm_only:
        sglang_cases(args, ruff)
    vllm_case(args, ruff)
    return 0


def vllm_case(args: argparse.Namespace, ruff: str) -> None:
    """The cold zero-configuration case on vLLM 0.33.0 (the tree copied to a scratch
    directory, so no configuration above the corpus cache applies)."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(fetch_release("vllm==0.33.0"), tree)
        os.sync()
        files = list(tree.rglob("*.py"))
        cache, runs_dir = Path(scratch) / "cache", Path(scratch) / "runs"
        env = {
            **os.environ,
            "DRIFTCHECK_CACHE_DIR": str(cache),
            "DRIFTCHECK_RUNS_DIR": str(runs_dir),
        }
        ruff_env = {**os.environ, "RUFF_CACHE_DIR": str(Path(scratch) / "ruff-cache")}
        driftcheck = [sys.executable, "-P", "-m", "driftcheck"]

        def forget() -> None:
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(runs_dir, ignore_errors=True)

        print(f"tree: vllm 0.33.0, {len(files)} files, {args.runs} pairs")
        cold = paired(
            args.runs,
            lambda: timed([*driftcheck, "--no-cache", "vllm"], tree, env),
            lambda: timed(
                [ruff, "check", "--select", "PLR1714", "--quiet", "--no-cache", "vllm"],
                tree,
                ruff_env,
            ),
            forget,
        )
        report(
            "cold, vLLM 0.33.0, zero configuration (no cache)",
            "ruff",
            cold,
            "<= 1.5x ruff --no-cache",
        )


def sglang_cases(args: argparse.Namespace, ruff: str) -> None:
    """Every case on the SGLang release ``--version``."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(fetch_release(args.version), tree)
        os.sync()  # the copy written back before anything is timed
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

        def ours(*argv: str) -> Callable[[], float]:
            return lambda: timed([*driftcheck, *argv], tree, env)

        def theirs(cmd: list[str], environment: dict[str, str]) -> Callable[[], float]:
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
        report(
            "whole tree, nothing changed (answered by the run record)",
            "ruff",
            warm,
            "<= 2.0x ruff with its cache",
        )
        after_edit = paired(args.runs, ours("."), theirs(ruff_cmd, ruff_env), edit, edit)
        report(
            f"whole tree after one edit (scan cache; {EDITED} just edited)",
            "ruff",
            after_edit,
            "(reported, no target) ruff with its cache, the same edit",
        )
        interpreter = theirs([sys.executable, "-c", "pass"], dict(os.environ))
        timed([*driftcheck, EDITED], tree, env)
        time.sleep(2.1)
        timed([*driftcheck, EDITED], tree, env)  # records the run (the last edit is not racy)
        one = paired(args.runs, ours(EDITED), interpreter)
        report(
            f"one file ({EDITED}), nothing changed (answered by the run record)",
            "python -c pass",
            one,
            "<= 5x python3 -c pass",
        )
        edited = paired(args.runs, ours(EDITED), interpreter, edit)
        report(
            "one file just edited (scan cache)",
            "python -c pass",
            edited,
            "(reported, no target)",
        )
        empty = paired(args.runs, ours(EDITED), ours("."), forget, forget)
        report("one file, empty cache", "cold tree", empty, "<= 1.0x a cold whole-tree run")
        no_bytecode = {
            **env,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": str(source_copy(Path(scratch) / "source")),
        }
        source = paired(
            args.runs,
            lambda: timed([*driftcheck, "--no-cache", "."], tree, no_bytecode),
            theirs([*ruff_cmd, "--no-cache"], ruff_env),
            forget,
        )
        report("cold, whole tree, driftcheck compiled from source", "ruff", source, "(reported)")
        peaks = []
        for _ in range(3):
            forget()
            peaks.append(run_sampled([*driftcheck, "--no-cache", "."], tree, env)[1])
        print(
            f"peak memory of driftcheck's process tree (cold, 3 runs): {max(peaks):.0f} MB (target <= 100 MB)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
