"""Run a rule example (a model-file snippet) through the engine on a fixture universe.

Each fixture tree (``fixtures/<name>``, written from scratch) has a header the example is
placed after and a path for it: ``sglang_like`` imitates SGLang (an enum with ``is_*``
methods and a helper function), ``config_like`` a string setting held by a config class and
tested through properties (vLLM's shape), ``platform_like`` an ``IntEnum`` of ``auto()``
members tested through a base class's methods.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
# fixture -> (header, example path, directory of sibling files)
FIXTURE_LAYOUT = {
    "sglang_like": (HEADER, EXAMPLE_PATH, "sglang/srt/models"),
    "config_like": (
        "from meshcfg.parallel import LayerConfig, MeshConfig\n\n\n",
        "meshcfg/example.py",
        "meshcfg",
    ),
    "orphan_like": (
        "from meshcfg.parallel import MeshConfig\n\n\n",
        "meshcfg/example.py",
        "meshcfg",
    ),
    "platform_like": (
        "from devices import current_device\nfrom devices.base import Device\n"
        "from devices.kinds import DeviceKind\n\n\n",
        "devices/example.py",
        "devices",
    ),
}


def header_of(fixture: str) -> str:
    """The lines an example is placed after in ``fixture``."""
    return FIXTURE_LAYOUT[fixture][0]


def path_of(fixture: str) -> str:
    """Where an example file goes in ``fixture``."""
    return FIXTURE_LAYOUT[fixture][1]


def example_tree(
    tmp: Path,
    snippet: str,
    siblings: dict[str, str] | None = None,
    fixture: str = "sglang_like",
) -> Path:
    """A copy of the fixture tree with ``snippet`` (after the import header) as a model file,
    plus ``siblings`` (file name -> code) as other model files."""
    header, path, directory = FIXTURE_LAYOUT[fixture]
    root = tmp / "example_tree"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(FIXTURES / fixture, root)
    (root / path).write_text(header + snippet)
    for name, code in (siblings or {}).items():
        (root / directory / name).write_text(code)
    return root


def run_example(
    tmp: Path,
    snippet: str,
    select: tuple[str, ...] | None = None,
    siblings: dict[str, str] | None = None,
    fixture: str = "sglang_like",
) -> CheckResult:
    """Check the example file (and its siblings); only the example's findings are returned."""
    _, path, directory = FIXTURE_LAYOUT[fixture]
    root = example_tree(tmp, snippet, siblings, fixture)
    targets = [root / path, *(root / directory / name for name in siblings or {})]
    result = check(targets, select=select, use_cache=False)
    result.findings = [f for f in result.findings if f.path == path or _about_canonicals(f.code)]
    return result


def _about_canonicals(code: str) -> bool:
    """Whether ``code`` judges the canonicals (its findings are at their modules, not in the
    example file)."""
    from driftcheck.rules import CATALOGUE

    return getattr(CATALOGUE[code], "about", "sites") == "canonicals"


def run_rule_example(tmp: Path, example) -> CheckResult:  # type: ignore[no-untyped-def]
    """:func:`run_example` for a rule's :class:`~driftcheck.rules.Example`."""
    return run_example(
        tmp,
        example.code,
        select=example.select or None,
        siblings=example.siblings,
        fixture=example.fixture,
    )


def driftcheck_process(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``driftcheck ARGS`` as a process of its own, run from ``cwd`` (``env`` added to the
    environment): what a user runs, and a crash is an exit code, not the end of the tests."""
    return subprocess.run(
        [sys.executable, "-P", "-m", "driftcheck", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
    )
