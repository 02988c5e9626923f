"""Run a rule example (a model-file snippet) through the engine on the fixture universe."""

from __future__ import annotations

import shutil
from pathlib import Path

from driftcheck.engine import CheckResult, check

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HEADER = (
    "from sglang.srt.layers.moe.utils import (\n"
    "    MoeA2ABackend,\n"
    "    get_moe_a2a_backend,\n"
    "    is_deepep_class_backend,\n"
    ")\n\n\n"
)
EXAMPLE_PATH = "sglang/srt/models/example.py"


def example_tree(tmp: Path, snippet: str, siblings: dict[str, str] | None = None) -> Path:
    """A copy of the fixture tree with ``snippet`` (after the import header) as a model file,
    plus ``siblings`` (file name -> code) as other model files."""
    root = tmp / "example_tree"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(FIXTURES / "sglang_like", root)
    (root / EXAMPLE_PATH).write_text(HEADER + snippet)
    for name, code in (siblings or {}).items():
        (root / "sglang/srt/models" / name).write_text(code)
    return root


def run_example(
    tmp: Path,
    snippet: str,
    select: tuple[str, ...] | None = None,
    siblings: dict[str, str] | None = None,
) -> CheckResult:
    """Check the example file (and its siblings); only the example's findings are returned."""
    root = example_tree(tmp, snippet, siblings)
    targets = [root / EXAMPLE_PATH, *(root / "sglang/srt/models" / name for name in siblings or {})]
    result = check(targets, select=select, use_cache=False)
    result.findings = [f for f in result.findings if f.path == EXAMPLE_PATH]
    return result
