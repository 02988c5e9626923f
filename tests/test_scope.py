"""A run's scope: what it was asked to check, plus the context that check needs.

The layout is two packs' trees side by side (``fixtures/sglang_like``'s ``sglang/`` beside
``fixtures/vllm_like``'s ``vllm/``), as a folder holding both releases, or SGLang's own
repository (``python/sglang`` beside ``test/``, ``benchmark/``), is. A run over one package
walks and scans that package's tree alone and loads its pack alone; a run over the root
reads both (the negative control); files outside every pack's package keep the whole root
as their context.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from driftcheck.cli import main
from driftcheck.engine import check
from driftcheck.project import discover_project, scope_of
from driftcheck.walk import walk

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SGLANG_FILES = [
    "sglang/__init__.py",
    "sglang/srt/__init__.py",
    "sglang/srt/configs/moe_model_registry.py",
    "sglang/srt/envs.py",
    "sglang/srt/layers/moe/utils.py",
    "sglang/srt/models/__init__.py",
    "sglang/srt/models/clean_like.py",
    "sglang/srt/models/dense_like.py",
    "sglang/srt/models/kimi_like.py",
]
# the order a walk meets them: a directory's files before its subdirectories
SGLANG_WALKED = [
    "sglang/__init__.py",
    "sglang/srt/__init__.py",
    "sglang/srt/envs.py",
    "sglang/srt/configs/moe_model_registry.py",
    "sglang/srt/layers/moe/utils.py",
    "sglang/srt/models/__init__.py",
    "sglang/srt/models/clean_like.py",
    "sglang/srt/models/dense_like.py",
    "sglang/srt/models/kimi_like.py",
]
VLLM_FILES = [
    "vllm/__init__.py",
    "vllm/model_executor/__init__.py",
    "vllm/model_executor/layers/__init__.py",
    "vllm/model_executor/layers/fused_moe/__init__.py",
    "vllm/model_executor/layers/fused_moe/config.py",
    "vllm/model_executor/models/__init__.py",
    "vllm/model_executor/models/tiny.py",
    "vllm/platforms/__init__.py",
    "vllm/platforms/interface.py",
]
SGLANG_CANONICALS = ["is_deepep_class_backend"]
BOTH_CANONICALS = [
    "is_cuda_alike",
    "is_deepep_class_backend",
    "use_batched_activation_format",
    "use_mori_kernels",
]


def layout(into: Path, *, vllm: bool = True) -> Path:
    """``into`` holding a copy of the SGLang-like tree, and (``vllm``) the vLLM-like one
    beside it."""
    shutil.copytree(FIXTURES / "sglang_like/sglang", into / "sglang")
    if vllm:
        shutil.copytree(FIXTURES / "vllm_like/vllm", into / "vllm")
    return into


def walked_files(root: Path, *paths: str) -> list[str]:
    """The canonical paths a run over ``paths`` (from ``root``) walks, in its order."""
    targets = [root / p for p in paths]
    project = discover_project(targets, cwd=root)
    whole = any(t == project.root for t in targets)
    return [rel for _, rel, _ in walk(project, targets, whole, record=False).files]


def run_json(runner: CliRunner, cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict:
    monkeypatch.chdir(cwd)
    result = runner.invoke(main, ["--no-cache", "--format", "json", *args])
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)


def test_a_run_over_one_package_walks_its_tree_alone(tmp_path: Path) -> None:
    root = layout(tmp_path)
    assert walked_files(root, "sglang") == SGLANG_FILES


def test_a_run_over_one_package_reads_nothing_of_the_tree_beside_it(tmp_path: Path) -> None:
    root = layout(tmp_path)
    result = check([Path("sglang")], cwd=root, use_cache=False, record_inputs=True)
    assert result.inputs is not None
    read = sorted(Path(p).relative_to(root).as_posix() for p in result.inputs if p != str(root))
    assert [p for p in read if p.startswith("vllm")] == []
    assert sorted(p for p in read if p.endswith(".py")) == SGLANG_FILES
    assert sorted(result.scans) == [
        "sglang/srt/layers/moe/utils.py",
        "sglang/srt/models/clean_like.py",
        "sglang/srt/models/dense_like.py",
        "sglang/srt/models/kimi_like.py",
    ]


def test_a_run_over_one_package_loads_its_pack_alone(tmp_path: Path) -> None:
    root = layout(tmp_path)
    assert discover_project([root / "sglang"], cwd=root).config.pack == "sglang"
    result = check([Path("sglang")], cwd=root, use_cache=False)
    assert result.every is not None
    assert sorted(u.universe.enum_module for u in result.every.universes) == [
        "sglang.srt.layers.moe.utils"
    ]


def test_a_run_over_the_root_walks_and_loads_both_trees(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = layout(tmp_path)
    assert discover_project([root], cwd=root).config.pack == "sglang+vllm"
    assert walked_files(root, ".") == [*SGLANG_WALKED, *VLLM_FILES]
    assert sorted(run_json(runner, root, monkeypatch, ".")["canonical"]) == BOTH_CANONICALS


def test_a_package_gives_the_same_report_beside_another_tree_as_alone(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    beside = layout(tmp_path / "beside")
    alone = layout(tmp_path / "alone", vllm=False)
    report = run_json(runner, beside, monkeypatch, "sglang")
    assert report == run_json(runner, alone, monkeypatch, "sglang")
    assert sorted(report["canonical"]) == SGLANG_CANONICALS
    assert [(f["path"], f["line"], f["code"]) for f in report["findings"]] == [
        ("sglang/srt/models/dense_like.py", 10, "DC001"),
        ("sglang/srt/models/kimi_like.py", 10, "DC001"),
    ]
    monkeypatch.chdir(beside)
    text = runner.invoke(main, ["--no-cache", "sglang"]).output
    monkeypatch.chdir(alone)
    assert text == runner.invoke(main, ["--no-cache", "sglang"]).output


def test_one_file_is_read_with_the_rest_of_its_own_tree(tmp_path: Path) -> None:
    root = layout(tmp_path)
    model = "sglang/srt/models/kimi_like.py"
    assert walked_files(root, model) == [model, *(f for f in SGLANG_WALKED if f != model)]
    assert discover_project([root / model], cwd=root).config.pack == "sglang"


def test_changed_files_in_both_trees_read_both_trees_and_load_both_packs(tmp_path: Path) -> None:
    root = layout(tmp_path)
    changed = ["sglang/srt/models/kimi_like.py", "vllm/model_executor/models/tiny.py"]
    assert discover_project([root / p for p in changed], cwd=root).config.pack == "sglang+vllm"
    rest = [f for f in [*SGLANG_WALKED, *VLLM_FILES] if f not in changed]
    assert walked_files(root, *changed) == [*changed, *rest]


def test_a_file_outside_every_package_keeps_the_whole_root_as_its_context(
    tmp_path: Path,
) -> None:
    root = layout(tmp_path)
    (root / "tools").mkdir()
    (root / "tools/run.py").write_text("A = 1\n")
    project = discover_project([root / "tools/run.py"], cwd=root)
    assert project.config.pack == "sglang+vllm"
    assert scope_of(project, [root / "tools/run.py"]) is None
    assert walked_files(root, "tools/run.py") == ["tools/run.py", *SGLANG_WALKED, *VLLM_FILES]


def test_the_canonical_module_named_reports_its_own_tree_whole(tmp_path: Path) -> None:
    root = layout(tmp_path)
    result = check([Path("sglang/srt/layers/moe/utils.py")], cwd=root, use_cache=False)
    assert result.expanded
    assert result.files_checked == len(SGLANG_FILES)
    assert sorted({f.path for f in result.findings}) == [
        "sglang/srt/models/dense_like.py",
        "sglang/srt/models/kimi_like.py",
    ]


def test_a_configured_root_in_a_repository_reads_the_package_not_its_neighbours(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.driftcheck]\n")
    shutil.copytree(FIXTURES / "sglang_like/sglang", tmp_path / "python/sglang")
    (tmp_path / "test").mkdir()
    (tmp_path / "test/test_backend.py").write_text("B = 2\n")
    project = discover_project([tmp_path / "python/sglang"], cwd=tmp_path)
    assert project.root == tmp_path
    assert walked_files(tmp_path, "python/sglang") == [f"python/{f}" for f in SGLANG_FILES]
    assert walked_files(tmp_path, ".")[-1] == "test/test_backend.py"


def test_canonicals_configured_without_a_pack_keep_the_whole_root_as_context(
    tmp_path: Path,
) -> None:
    """No pack says which package holds a configured canonical's users: ``common/`` named
    alone still reads ``app/`` (the negative control of the packs' packages)."""
    (tmp_path / "pyproject.toml").write_text(
        "[tool.driftcheck]\npack = 'none'\ncanonical = ['common.modes:is_fast']\n"
        "enum = 'common.modes:Mode'\n"
    )
    (tmp_path / "common").mkdir()
    (tmp_path / "common/modes.py").write_text(
        "import enum\n\n\nclass Mode(enum.Enum):\n    A = 'a'\n    B = 'b'\n    C = 'c'\n\n\n"
        "def is_fast(mode: Mode) -> bool:\n    return mode in (Mode.A, Mode.B)\n"
    )
    (tmp_path / "app").mkdir()
    (tmp_path / "app/run.py").write_text("from common.modes import Mode\n")
    project = discover_project([tmp_path / "common"], cwd=tmp_path)
    assert scope_of(project, [tmp_path / "common"]) is None
    assert walked_files(tmp_path, "common") == ["common/modes.py", "app/run.py"]
