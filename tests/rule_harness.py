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


def example_tree(tmp: Path, snippet: str) -> Path:
    """A copy of the fixture tree with ``snippet`` (after the import header) as a model file."""
    root = tmp / "example_tree"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(FIXTURES / "sglang_like", root)
    (root / EXAMPLE_PATH).write_text(HEADER + snippet)
    return root


def run_example(tmp: Path, snippet: str, select: tuple[str, ...] | None = None) -> CheckResult:
    """Check only the example file; findings of other fixture files are not included."""
    root = example_tree(tmp, snippet)
    return check([root / EXAMPLE_PATH], select=select, use_cache=False)
