"""Record, then compare, what driftcheck says about every pinned tree.

    python scripts/corpus_compare.py record DIR [--only SPEC ...]
    python scripts/corpus_compare.py diff BEFORE AFTER

``record`` writes, for each pinned release (SGLang 0.5.9-0.5.23, sglang-kt, vLLM), the JSON
findings of every rule (``--select ALL --format json --no-cache``) and the ``discover`` output,
run from the tree's root as a user runs them. ``diff`` prints every file that changed between
two recordings and exits 1 when any did. A behaviour change is checked this way before it lands.
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from driftcheck.corpus import OTHER_PINS, PINNED_SHA256, fetch_release  # noqa: E402


def pinned_specs() -> list[str]:
    """Every pinned release, as ``PROJECT==VERSION``."""
    return [f"sglang=={v}" for v in PINNED_SHA256] + [
        f"{pin.project}=={pin.version}" for pin in OTHER_PINS.values()
    ]


def _driftcheck(args: list[str], cwd: Path) -> str:
    command = [sys.executable, "-P", "-m", "driftcheck", *args]
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}"


def record(out: Path, specs: list[str]) -> None:
    """Write each release's findings and discover output under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        tree = fetch_release(spec)
        package = "vllm" if spec.startswith("vllm") else "sglang"
        name = spec.replace("==", "-")
        findings = _driftcheck(["--no-cache", "--format", "json", "--select", "ALL", package], tree)
        (out / f"{name}.findings.txt").write_text(findings)
        (out / f"{name}.discover.txt").write_text(
            _driftcheck(["discover", "--no-cache", package], tree)
        )
        print(f"{spec}: recorded", file=sys.stderr)


def diff(before: Path, after: Path) -> int:
    """Print the changed files between two recordings; 1 when any changed."""
    changed = 0
    names = sorted({p.name for p in before.glob("*.txt")} | {p.name for p in after.glob("*.txt")})
    for name in names:
        old = (before / name).read_text().splitlines() if (before / name).exists() else []
        new = (after / name).read_text().splitlines() if (after / name).exists() else []
        if old != new:
            changed += 1
            sys.stdout.writelines(
                line + "\n"
                for line in difflib.unified_diff(
                    old, new, f"before/{name}", f"after/{name}", lineterm=""
                )
            )
    print(f"{changed} of {len(names)} recordings changed", file=sys.stderr)
    return 1 if changed else 0


def main() -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--only", action="append", default=[], help="PROJECT==VERSION")
    dif = sub.add_parser("diff")
    dif.add_argument("before", type=Path)
    dif.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, args.only or pinned_specs())
        return 0
    return diff(args.before, args.after)


if __name__ == "__main__":
    raise SystemExit(main())
