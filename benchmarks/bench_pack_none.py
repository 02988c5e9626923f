"""A tree no pack recognises (``pack = "none"``) beside the same tree under its pack, run by run.

    python benchmarks/bench_pack_none.py [--runs 7] [--project accelerate==1.16.0]

* **vLLM 0.33.0, pack run against pack-none run**: ``driftcheck --no-cache vllm`` (the tree
  selects the vLLM pack) alternating with ``driftcheck --no-cache --config none.toml vllm``
  (``[tool.driftcheck] pack = "none"``: the universes and families inferred from the tree),
  one run each, ``--runs`` times; the min/median/max of each side and the median of the
  paired ratios (each pack-none run divided by the pack run beside it), with the target of
  issue 29 (at most 1.5x);
* **a codebase no pack knows** (``--project``, fetched with ``pip download --no-deps`` into
  the scratch directory and unpacked, never kept): ``driftcheck --no-cache`` on its package
  against ``ruff check --select PLR1714 --no-cache`` (the same peer as ``bench_check.py``),
  and what driftcheck reports there (``--select ALL``), printed once.

Conventions as ``bench_check.py``: each case starts with one pair that is not counted,
driftcheck runs as ``python -P -m driftcheck`` with its modules compiled to bytecode first,
the trees are copies in a temporary directory, and nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from bench_check import compile_bytecode, paired, report, timed

from driftcheck.corpus import fetch_release

NONE = '[tool.driftcheck]\npack = "none"\n'


def main() -> int:
    """Run both cases and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--project", default="accelerate==1.16.0")
    parser.add_argument("--vllm-only", action="store_true", help="run the vLLM case alone")
    args = parser.parse_args()
    compile_bytecode()
    with tempfile.TemporaryDirectory() as scratch:
        vllm_case(Path(scratch), args.runs)
        if not args.vllm_only:
            project_case(Path(scratch), args.project, args.runs)
    return 0


def _environment(scratch: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DRIFTCHECK_CACHE_DIR": str(scratch / "cache"),
        "DRIFTCHECK_RUNS_DIR": str(scratch / "runs"),
    }


def vllm_case(scratch: Path, runs: int) -> None:
    """The pack run and the pack-none run of the pinned vLLM tree, alternating."""
    tree = scratch / "vllm-tree"
    shutil.copytree(fetch_release("vllm==0.33.0"), tree)
    os.sync()
    none = scratch / "none.toml"
    none.write_text(NONE)
    env = _environment(scratch)
    driftcheck = [sys.executable, "-P", "-m", "driftcheck", "--no-cache"]
    print(f"tree: vllm 0.33.0, {sum(1 for _ in tree.rglob('*.py'))} files, {runs} pairs")
    result = paired(
        runs,
        lambda: timed([*driftcheck, "--config", str(none), "vllm"], tree, env),
        lambda: timed([*driftcheck, "vllm"], tree, env),
    )
    report('vLLM 0.33.0, pack = "none" against its pack (no cache)', "pack run", result, "<= 1.5x")


def fetch_project(spec: str, into: Path) -> Path:
    """The wheel of ``spec`` downloaded with ``pip download --no-deps`` and unpacked under
    ``into`` (its top-level package directory is returned)."""
    wheels = into / "wheels"
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    subprocess.run([*pip, "--only-binary=:all:", "--dest", str(wheels), spec], check=True)
    [wheel] = wheels.glob("*.whl")
    tree = into / "project-tree"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tree)
    name = spec.split("==")[0].replace("-", "_")
    return tree / name


def project_case(scratch: Path, spec: str, runs: int) -> None:
    """A codebase no pack knows: its findings once, then its cold run against ruff's."""
    package = fetch_project(spec, scratch)
    tree = package.parent
    env = _environment(scratch)
    driftcheck = [sys.executable, "-P", "-m", "driftcheck", "--no-cache"]
    shown = subprocess.run(
        [*driftcheck, "--color", "never", "--select", "ALL", package.name],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    print(f"{spec} (no pack, no configuration), exit {shown.returncode}:")
    print(shown.stderr + shown.stdout)
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    ruff_env = {**os.environ, "RUFF_CACHE_DIR": str(scratch / "ruff-cache")}
    files = sum(1 for _ in package.rglob("*.py"))
    print(f"tree: {spec}, {files} files, {runs} pairs")
    result = paired(
        runs,
        lambda: timed([*driftcheck, package.name], tree, env),
        lambda: timed(
            [ruff, "check", "--select", "PLR1714", "--quiet", "--no-cache", package.name],
            tree,
            ruff_env,
        ),
    )
    report(f"{spec}, no pack (no cache)", "ruff", result, "(reported)")


if __name__ == "__main__":
    raise SystemExit(main())
