"""How a check's time grows with the sites of one file, for every shape a site takes.

    python benchmarks/bench_shapes.py [--sizes 1000,2000,4000,8000] [--runs 3]
                                      [--shapes return,if,...] [--large 69250] [--large-shape return]

For each shape, files of each ``--sizes`` sites are written into a copy of the hand-written
fixture tree (``fixtures/sglang_like``, whose enum and helper they test), as
``sglang/srt/models/generated.py``; each site sits in a function padded to 282 bytes (the
density of issue 23's 20 MB file of 71,000 sites). The shapes, each what the site's value
does, and so each a different path of the role analysis (:mod:`driftcheck.sites.controls`):

* ``return``: K3's ``_uses_ep_a2a``, a function returning the chain, called by a function of
  its own that dispatches on it (its callers, the functions they call);
* ``if``: ``if b.is_deepep() or b.is_mooncake(): return ...`` (``bench_sites.py``'s shape);
* ``assignment``: a local bound to the chain and read by the function's return (its reads);
* ``keyword``: the chain passed as a keyword argument (``combine(x, enabled=...)``);
* ``attribute``: a class per site whose ``__init__`` sets ``self.use_deepep`` to the chain and
  whose ``forward`` reads it (the reads of an attribute in its class, a method parsed later);
* ``module``: a module-level constant bound to the chain, read by a function (the reads of a
  module's name, searched for in the whole file);
* ``method``: ``return``'s two functions as methods of one class holding every site (a class
  parsed with only its hot methods, the others parsed when a question needs them).

Each N's ``driftcheck --no-cache`` run alternates with its peer's, the run on the file of
half as many sites (as ``bench_sites.py`` alternates 8x the sites with 1x), ``--runs`` pairs
after one that is not counted: the median time at N, and the median of the paired ratios, the
growth per doubling (linear time is about 2.0x, quadratic 4.0x; each pair ran side by side, so
a machine that slows down for a while slows both), and the same of the runs' CPU time (the
user and system seconds of the check's processes: on a machine shared with other work, what
the check itself cost). The first N is paired with ``ruff check --select PLR1714
--no-cache`` on its tree. Then one run per N with its peak memory (the
process tree's proportional set size, sampled), and one run of ``--large`` sites of
``--large-shape`` (69,250: issue 31's 20 MB file) with its time and peak memory. driftcheck
runs as ``python -P -m driftcheck``, its modules compiled to bytecode first (as in
``bench_check.py``). Nothing is asserted; the figures are printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_check import compile_bytecode, paired, run_sampled

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "sglang_like"
GENERATED = "sglang/srt/models/generated.py"
HEADER = (
    "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n"
    "_BACKEND = get_moe_a2a_backend()\n"
)
SITE_BYTES = 282  # 20 MB / 71k sites


def _docstring(indent: str, room: int) -> str:
    """A docstring line of ``room`` bytes (at least the quotes), at ``indent``."""
    padding = max(0, room - len(indent) - len('""""""\n'))
    return f'{indent}"""{"Route the tokens. " * (padding // 18)}{"." * (padding % 18)}"""\n'


def _padded(head: str, indent: str, body: str) -> str:
    """``head``, a docstring, then ``body``: :data:`SITE_BYTES` bytes when they fit."""
    return head + _docstring(indent, SITE_BYTES - len(head) - len(body)) + body


def return_shape(i: int) -> str:
    """K3's ``_uses_ep_a2a``, and a function dispatching on it."""
    site = _padded(
        f"\n\ndef _uses_ep_a2a_{i}():\n",
        "    ",
        "    b = get_moe_a2a_backend()\n"
        "    return b.is_deepep() or b.is_mooncake() or b.is_mori()\n",
    )
    return (
        f"{site}\n\ndef forward_{i}(x):\n"
        f"    if _uses_ep_a2a_{i}():\n"
        f"        return dispatch_{i}(x)\n"
        "    return x\n"
    )


def if_shape(i: int) -> str:
    """``bench_sites.py``'s shape: ``if <chain>: return``."""
    return _padded(
        f"\n\ndef f{i}(x, y):\n",
        "    ",
        "    b = get_moe_a2a_backend()\n"
        "    if b.is_deepep() or b.is_mooncake():\n"
        f"        return x + {i}\n"
        f"    scale = y * 2.0 + {i}\n"
        "    return x * scale\n",
    )


def assignment_shape(i: int) -> str:
    """A local bound to the chain, read by the return."""
    return _padded(
        f"\n\ndef f{i}(x):\n",
        "    ",
        "    b = get_moe_a2a_backend()\n"
        "    use_a2a = b.is_deepep() or b.is_mooncake()\n"
        f"    return dispatch_{i}(x) if use_a2a else x\n",
    )


def keyword_shape(i: int) -> str:
    """The chain passed as a keyword argument."""
    return _padded(
        f"\n\ndef f{i}(x):\n",
        "    ",
        "    b = get_moe_a2a_backend()\n"
        f"    y = combine_{i}(x, enabled=b.is_deepep() or b.is_mooncake())\n"
        "    return y\n",
    )


def attribute_shape(i: int) -> str:
    """A class setting ``self.use_deepep`` to the chain and reading it in another method."""
    return _padded(
        f"\n\nclass Layer{i}:\n",
        "    ",
        "    def __init__(self):\n"
        "        b = get_moe_a2a_backend()\n"
        "        self.use_deepep = b.is_deepep() or b.is_mooncake()\n\n"
        "    def forward(self, x):\n"
        f"        return dispatch_{i}(x) if self.use_deepep else x\n",
    )


def module_shape(i: int) -> str:
    """A module-level constant bound to the chain, read by a function."""
    return _padded(
        f"\n\nUSE_A2A_{i} = _BACKEND.is_deepep() or _BACKEND.is_mooncake()\n\n\ndef f{i}(x):\n",
        "    ",
        f"    return dispatch_{i}(x) if USE_A2A_{i} else x\n",
    )


METHODS_CLASS = (
    "\n\nclass Model:\n    def __init__(self):\n        self.backend = get_moe_a2a_backend()\n"
)


def method_shape(i: int) -> str:
    """``return``'s shape as two methods of one class that holds every site."""
    site = _padded(
        f"\n    def _uses_ep_a2a_{i}(self):\n",
        "        ",
        "        b = self.backend\n"
        "        return b.is_deepep() or b.is_mooncake() or b.is_mori()\n",
    )
    return (
        f"{site}\n    def forward_{i}(self, x):\n"
        f"        if self._uses_ep_a2a_{i}():\n"
        f"            return self.dispatch_{i}(x)\n"
        "        return x\n"
    )


# shape -> (what the file holds before its sites, the text of site i)
SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "return": ("", return_shape),
    "if": ("", if_shape),
    "assignment": ("", assignment_shape),
    "keyword": ("", keyword_shape),
    "attribute": ("", attribute_shape),
    "module": ("", module_shape),
    "method": (METHODS_CLASS, method_shape),
}


def tree_with_sites(into: Path, shape: str, sites: int) -> Path:
    """A copy of the fixture tree whose generated model file holds ``sites`` sites of
    ``shape``."""
    shutil.copytree(FIXTURE, into)
    prefix, write = SHAPES[shape]
    with (into / GENERATED).open("w") as handle:
        handle.write(HEADER + prefix)
        for index in range(sites):
            handle.write(write(index))
    return into


DRIFTCHECK = [sys.executable, "-P", "-m", "driftcheck", "--no-cache", "-q", "."]


CPU: dict[Path, list[float]] = {}  # a tree -> the CPU seconds of each of its runs


def cpu_seconds() -> float:
    """User and system seconds of the children waited for so far (a check's forked helpers
    are its children, waited for by it)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(tree: Path) -> float:
    """Wall seconds of one cold check of ``tree`` (exit code 1: the sites are drift); its CPU
    seconds are kept in :data:`CPU` (on a shared machine, what the check itself cost)."""
    start, cpu = time.perf_counter(), cpu_seconds()
    done = subprocess.run(
        DRIFTCHECK, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    if done.returncode != 1:
        raise SystemExit(f"driftcheck exited {done.returncode} on {tree}: {done.stderr!r}")
    CPU.setdefault(tree, []).append(cpu_seconds() - cpu)
    return time.perf_counter() - start


def peer(ruff: str, tree: Path) -> float:
    """Wall seconds of ruff's check of the same tree (no cache)."""
    start = time.perf_counter()
    subprocess.run(
        [ruff, "check", "--select", "PLR1714", "--quiet", "--no-cache", "."],
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


def peak_mb(tree: Path) -> float:
    """Peak memory of one cold check's process tree (MB)."""
    return run_sampled(DRIFTCHECK, tree, dict(os.environ))[1]


def shape_figures(scratch: Path, shape: str, sizes: list[int], runs: int, ruff: str) -> None:
    """Print one shape's table: per N, the median wall time, the paired growth from N/2
    (against ruff's time for the first N), the same of CPU time, the peak memory."""
    print(f"shape {shape}: {runs} pairs per N, each against N/2 (the first N against ruff)")
    print(
        "       N       MB    wall median   peer   paired ratio"
        "    CPU median   paired ratio   peak MB"
    )
    previous: Path | None = None
    for sites in sizes:
        tree = tree_with_sites(scratch / f"{shape}-{sites}", shape, sites)
        size = (tree / GENERATED).stat().st_size
        if previous is None:
            other: Callable[[], float] = lambda t=tree: peer(ruff, t)  # noqa: E731
            name = "ruff"
        else:
            other, name = (lambda t=previous: run(t)), "N/2"
        CPU.clear()
        mine, theirs, ratios = paired(runs, lambda t=tree: run(t), other)
        cpu = CPU[tree][1:]  # the pair that warms the page cache is not counted
        growth = (
            f"{statistics.median(a / b for a, b in zip(cpu, CPU[previous][1:], strict=True)):>9.2f}x N/2"
            if previous is not None
            else f"{'':>13}"
        )
        print(
            f"  {sites:>6} {size / 1e6:>8.1f} {statistics.median(mine):>10.2f} s "
            f"{statistics.median(theirs):>6.2f} s {statistics.median(ratios):>7.2f}x {name:<5}"
            f"{statistics.median(cpu):>10.2f} s {growth} {peak_mb(tree):>9.0f}",
            flush=True,
        )
        if previous is not None:
            shutil.rmtree(previous)
        previous = tree
    if previous is not None:
        shutil.rmtree(previous)


def main() -> int:
    """Write the trees, time them, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,4000,8000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--large", type=int, default=69_250, help="0: no large run")
    parser.add_argument("--large-shape", default="return", choices=sorted(SHAPES))
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",") if n]
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    compile_bytecode()
    with tempfile.TemporaryDirectory() as scratch:
        for shape in args.shapes.split(","):
            shape_figures(Path(scratch), shape, sizes, args.runs, ruff)
        if args.large:
            huge = tree_with_sites(Path(scratch) / "huge", args.large_shape, args.large)
            size = (huge / GENERATED).stat().st_size
            cpu = cpu_seconds()
            wall, peak, code = run_sampled(DRIFTCHECK, huge, dict(os.environ))
            print(
                f"one file of {args.large} {args.large_shape}-shape sites ({size / 1e6:.1f} MB): "
                f"{wall:.1f} s wall, {cpu_seconds() - cpu:.1f} s CPU, peak memory {peak:.0f} MB "
                f"(exit {code})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
