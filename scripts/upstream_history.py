"""Reproduce the candidate hunks behind ``docs/upstream-history.toml``.

Fetches every SGLang release 0.5.9 ... 0.5.23 from the package index (sha256-pinned; only the
``sglang/**.py`` tree is extracted, nothing is imported or run), then prints, for each pair of
consecutive releases, every diff hunk whose added or removed lines mention an MoE all-to-all
backend test (``is_deepep()``, ``is_mooncake()``, ``moe_a2a_backend``, ``"deepep"``, ...).
Those hunks are the candidates that were then read and labelled by hand
(drift-fix / refactor / intentional-narrowing / unrelated). It also prints, per release, the
members of ``is_deepep_class_backend()`` as written in ``sglang/srt/layers/moe/utils.py``.

Releases come from ``driftcheck.corpus`` (the same pins and cache as the tests)::

    python scripts/upstream_history.py                 # all pairs, to stdout
    python scripts/upstream_history.py 0.5.18 0.5.19   # one range of releases
"""

from __future__ import annotations

import argparse
import ast
import difflib
import itertools
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from driftcheck.corpus import PINNED_SHA256, fetch_release

RELEASES = list(PINNED_SHA256)
HELPER_FILE = "sglang/srt/layers/moe/utils.py"

# A changed line is a candidate when it tests an a2a backend, by method, helper, value or enum.
CANDIDATE = re.compile(
    r"is_(deepep|mooncake|mori|pplx|nixl)\w*\(|is_deepep_class_backend|a2a_backend"
    r"|MoeA2ABackend\.|[\"'](deepep|deepep_v2|mooncake|mori|pplx)[\"']"
)


def helper_members(tree: Path) -> list[str] | None:
    """Members ``is_deepep_class_backend()`` tests (``b.is_X()`` calls), or None if it is absent."""
    module = ast.parse((tree / HELPER_FILE).read_text())
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and node.name == "is_deepep_class_backend":
            calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
            names = [c.func.attr for c in calls if isinstance(c.func, ast.Attribute)]
            return [n[3:] for n in names if n.startswith("is_")]
    return None


def py_files(tree: Path) -> dict[str, Path]:
    """``sglang/...`` relative path -> file, for every Python file of a release."""
    return {p.relative_to(tree).as_posix(): p for p in (tree / "sglang").rglob("*.py")}


def candidate_hunks(old: Path, new: Path, context: int) -> Iterator[tuple[str, str]]:
    """Yield ``(path, hunk)`` for each hunk between two trees whose +/- lines match CANDIDATE.

    Files present in only one release are reported as a single pseudo-hunk naming how many
    candidate lines they hold (a new or moved file is a new site, not a change of an old one).
    """
    old_files, new_files = py_files(old), py_files(new)
    for rel in sorted(old_files.keys() | new_files.keys()):
        a = old_files[rel].read_text(errors="replace").splitlines() if rel in old_files else []
        b = new_files[rel].read_text(errors="replace").splitlines() if rel in new_files else []
        if not a or not b:
            hits = sum(1 for line in a or b if CANDIDATE.search(line))
            if hits:
                yield rel, f"{'added' if b else 'removed'} file, {hits} candidate lines"
            continue
        if a == b:
            continue
        hunk: list[str] = []
        for line in difflib.unified_diff(a, b, lineterm="", n=context):
            if line.startswith(("---", "+++")):
                continue
            if line.startswith("@@"):
                if _is_candidate(hunk):
                    yield rel, "\n".join(hunk)
                hunk = [line]
            else:
                hunk.append(line)
        if _is_candidate(hunk):
            yield rel, "\n".join(hunk)


def _is_candidate(hunk: list[str]) -> bool:
    return any(line[:1] in "+-" and CANDIDATE.search(line) for line in hunk[1:])


def main(argv: list[str] | None = None) -> int:
    """CLI: fetch the releases, print helper members and candidate hunks per consecutive pair."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", nargs="?", default=RELEASES[0], choices=RELEASES)
    parser.add_argument("last", nargs="?", default=RELEASES[-1], choices=RELEASES)
    parser.add_argument("-U", "--context", type=int, default=3, help="context lines per hunk")
    args = parser.parse_args(argv)
    versions = RELEASES[RELEASES.index(args.first) : RELEASES.index(args.last) + 1]
    trees = {v: fetch_release(v) for v in versions}
    for v in versions:
        members = helper_members(trees[v])
        shown = "absent" if members is None else ", ".join(members)
        print(f"release {v} sha256={PINNED_SHA256[v]} is_deepep_class_backend: {shown}")
    for old, new in itertools.pairwise(versions):
        count = 0
        for rel, hunk in candidate_hunks(trees[old], trees[new], args.context):
            print(f"\n### {old} -> {new} {rel}\n{hunk}")
            count += 1
        print(f"\n=== {old} -> {new}: {count} candidate hunks", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
