"""A rewrite laid out as the project's formatter lays out code (issue 30, item 5): within the
line length of the tree's ``[tool.ruff]``/``[tool.black]`` configuration (88 by default),
wrapped as ruff format and black wrap it, so that a fixed file passes ``ruff format --check``
wherever the original did."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rule_harness import EXAMPLE_PATH, FIXTURES

from driftcheck.engine import check
from driftcheck.fix.apply import apply_fixes, attach_fixes
from driftcheck.fix.layout import Settings, formatter_settings

RUFF = Path(sys.executable).with_name("ruff")
IMPORT = "from sglang.srt.layers.moe.utils import MoeA2ABackend, get_moe_a2a_backend\n\n\n"
# what reads the attributes the sites set (a copy nothing reads is deleted, not widened)
READS = "\n    def forward(self):\n        return self.on, self.x, self.group\n"
# one-line sites of every shape the layout wraps; each fits in 88 columns before the fix
BEFORE = (
    "class Block:\n"
    "    def __init__(self, server_args, cfg):\n"
    "        self.on = get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
    "        if get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mooncake():\n"
    "            self.x = 1\n"
    "        self.group = (\n"
    '            "replicated"\n'
    "            if (get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori())\n"
    '            else "tp"\n'
    "        )\n"
    "        self.call(\n"
    "            cfg,\n"
    "            get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mooncake(),\n"
    "        )\n"
    "        return server_args.moe_a2a_backend in (MoeA2ABackend.DEEPEP, MoeA2ABackend.MORI)\n"
    + READS
)
AFTER = (
    "class Block:\n"
    "    def __init__(self, server_args, cfg):\n"
    "        self.on = (\n"
    "            get_moe_a2a_backend().is_deepep()\n"
    "            or get_moe_a2a_backend().is_deepep_v2()\n"
    "            or get_moe_a2a_backend().is_mooncake()\n"
    "            or get_moe_a2a_backend().is_mori()\n"
    "            or get_moe_a2a_backend().is_pplx()\n"
    "        )\n"
    "        if (\n"
    "            get_moe_a2a_backend().is_deepep()\n"
    "            or get_moe_a2a_backend().is_deepep_v2()\n"
    "            or get_moe_a2a_backend().is_mooncake()\n"
    "            or get_moe_a2a_backend().is_mori()\n"
    "            or get_moe_a2a_backend().is_pplx()\n"
    "        ):\n"
    "            self.x = 1\n"
    "        self.group = (\n"
    '            "replicated"\n'
    "            if (\n"
    "                get_moe_a2a_backend().is_deepep()\n"
    "                or get_moe_a2a_backend().is_deepep_v2()\n"
    "                or get_moe_a2a_backend().is_mooncake()\n"
    "                or get_moe_a2a_backend().is_mori()\n"
    "                or get_moe_a2a_backend().is_pplx()\n"
    "            )\n"
    '            else "tp"\n'
    "        )\n"
    "        self.call(\n"
    "            cfg,\n"
    "            get_moe_a2a_backend().is_deepep()\n"
    "            or get_moe_a2a_backend().is_deepep_v2()\n"
    "            or get_moe_a2a_backend().is_mooncake()\n"
    "            or get_moe_a2a_backend().is_mori()\n"
    "            or get_moe_a2a_backend().is_pplx(),\n"
    "        )\n"
    "        return server_args.moe_a2a_backend in (\n"
    "            MoeA2ABackend.DEEPEP,\n"
    "            MoeA2ABackend.DEEPEP_V2,\n"
    "            MoeA2ABackend.MOONCAKE,\n"
    "            MoeA2ABackend.MORI,\n"
    "            MoeA2ABackend.PPLX,\n"
    "        )\n" + READS
)


def fixed(tmp_path: Path, text: str, config: str | None = None) -> str:
    """``text`` (after the import) as ``--fix --unsafe-fixes`` writes it in the sglang-like
    fixture, with ``config`` as the tree's pyproject.toml."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    if config is not None:
        (root / "pyproject.toml").write_text(config)
    path = root / EXAMPLE_PATH
    path.write_text(IMPORT + text)
    result = check([path], use_cache=False)
    findings = attach_fixes(result, result.findings, "minimal", unsafe=True)
    outcome = apply_fixes(result, findings, write=True)
    assert not outcome.problems, outcome.problems
    return path.read_text().removeprefix(IMPORT)


def test_each_shape_is_wrapped_as_the_formatter_wraps_it(tmp_path: Path) -> None:
    assert fixed(tmp_path, BEFORE) == AFTER


@pytest.mark.skipif(not RUFF.exists(), reason="ruff is not installed beside this Python")
def test_the_fixed_file_passes_ruff_format_check(tmp_path: Path) -> None:
    """The fixture above as ruff itself judges it: accepted before the fix and after it."""
    for text in (IMPORT + BEFORE, IMPORT + AFTER):
        checked = subprocess.run(
            [str(RUFF), "format", "--check", "--line-length", "88", "-"],
            input=text,
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_line_that_still_fits_stays_one_line(tmp_path: Path) -> None:
    """Negative control: the configured line length is what decides."""
    text = fixed(tmp_path, BEFORE, config="[tool.ruff]\nline-length = 240\n")
    assert text.splitlines()[2] == (
        "        self.on = get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_deepep_v2() "
        "or get_moe_a2a_backend().is_mooncake() or get_moe_a2a_backend().is_mori() "
        "or get_moe_a2a_backend().is_pplx()"
    )
    assert len(text.splitlines()[2]) > 88


def test_an_import_the_fix_lengthens_is_parenthesised_one_name_per_line(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    path = root / EXAMPLE_PATH
    path.write_text(
        "from sglang.srt.layers.moe.utils import get_moe_a2a_backend, get_num_fused_shared\n\n\n"
        "def f():\n    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
    )
    result = check([path], use_cache=False)
    findings = attach_fixes(result, result.findings, "helper", unsafe=True)
    apply_fixes(result, findings, write=True)
    assert path.read_text() == (
        "from sglang.srt.layers.moe.utils import (\n"
        "    get_moe_a2a_backend,\n"
        "    get_num_fused_shared,\n"
        "    is_deepep_class_backend,\n"
        ")\n\n\n"
        "def f():\n    return is_deepep_class_backend()\n"
    )


# -- which configuration governs a file ------------------------------------------------------
def test_settings_come_from_the_nearest_formatter_configuration(tmp_path: Path) -> None:
    inner = tmp_path / "pkg" / "sub"
    inner.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    assert formatter_settings(inner / "m.py") == Settings(100, 4)
    (tmp_path / "pkg" / "pyproject.toml").write_text("[tool.ruff]\nline-length = 79\n")
    assert formatter_settings(tmp_path / "pkg" / "m.py") == Settings(79, 4)
    (tmp_path / "pkg" / "sub" / "ruff.toml").write_text("line-length = 120\nindent-width = 2\n")
    assert formatter_settings(inner / "m.py") == Settings(120, 2)


def test_a_pyproject_without_a_formatter_table_leaves_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.driftcheck]\nselect = ['DC001']\n")
    assert formatter_settings(tmp_path / "m.py") == Settings(88, 4)
