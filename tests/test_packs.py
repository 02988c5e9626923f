"""Packs chosen by the tree, and a tree no pack recognises: its universe and family inferred,
or nothing to check (exit 0)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from driftcheck.cli import main
from driftcheck.project import discover_project

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SLOW = (
    "relay/links/slow.py:8:12: DC001 retransmits enumerates 2 of 3 {tcp, quic, rdma} members; "
    "missing rdma (inferred from 2 complete and 1 partial hand-written copies in 3 files; no "
    "helper defines it: `driftcheck discover` proposes one)"
)
INFERRED_NOTE = (
    "note: no pack recognises this tree: inferred the universe Transport (relay/transport.py) "
    "and its family {tcp, quic, rdma} from the enumerations of its members across files"
)
NOTHING_NOTE = (
    "note: no pack recognises this tree and nothing is configured, and no enum or string "
    "setting has members that recur in enumerations across files: nothing to check (name a "
    "canonical in [tool.driftcheck] to check one)"
)


def run(runner: CliRunner, *args: str | Path):
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


def unknown_tree(tmp_path: Path) -> Path:
    """A writable copy of ``fixtures/unknown_like`` (no pack's modules, no configuration)."""
    target = tmp_path / "tree"
    shutil.copytree(FIXTURES / "unknown_like", target)
    return target


def test_an_sglang_tree_without_configuration_gets_the_sglang_pack(sglang_like: Path) -> None:
    project = discover_project([sglang_like], cwd=sglang_like)
    assert (project.config.pack, project.root, project.config_file) == (
        "sglang",
        sglang_like,
        None,
    )


def test_the_repo_layout_finds_the_pack_through_python(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "sglang_like", tmp_path / "python")
    (tmp_path / ".git").mkdir()
    project = discover_project([tmp_path], cwd=tmp_path)
    assert (project.config.pack, project.root) == ("sglang", tmp_path / "python")


def test_a_tree_holding_the_vllm_modules_gets_the_vllm_pack(tmp_path: Path) -> None:
    interface = tmp_path / "vllm/platforms/interface.py"
    interface.parent.mkdir(parents=True)
    interface.write_text("class Platform:\n    pass\n")
    project = discover_project([tmp_path], cwd=tmp_path)
    assert project.config.pack == "vllm"
    assert [c.label for c in project.config.canonicals] == [
        "batched-activation",
        "MoRI",
        "CUDA-alike",
    ]


def test_a_tree_holding_both_packs_modules_gets_both_packs(sglang_like: Path) -> None:
    interface = sglang_like / "vllm/platforms/interface.py"
    interface.parent.mkdir(parents=True)
    interface.write_text("class Platform:\n    pass\n")
    config = discover_project([sglang_like], cwd=sglang_like).config
    assert config.pack == "sglang+vllm"
    assert [c.label for c in config.canonicals] == [
        "DeepEP-family",
        "batched-activation",
        "MoRI",
        "CUDA-alike",
    ]


def test_a_table_without_a_pack_key_sits_on_the_packs_the_tree_selects(
    sglang_like: Path,
) -> None:
    (sglang_like / "pyproject.toml").write_text('[tool.driftcheck]\nselect = ["ALL"]\n')
    config = discover_project([sglang_like], cwd=sglang_like).config
    assert (config.pack, config.model_marker) == ("sglang", "EntryClass")


def test_pack_none_stays_an_explicit_choice_on_an_sglang_tree(sglang_like: Path) -> None:
    (sglang_like / "pyproject.toml").write_text('[tool.driftcheck]\npack = "none"\n')
    config = discover_project([sglang_like], cwd=sglang_like).config
    assert (config.pack, config.canonicals, config.model_marker) == ("none", (), "")


def test_pack_sglang_named_on_a_tree_without_its_modules_is_exit_2(
    runner: CliRunner, tmp_path: Path
) -> None:
    tree = unknown_tree(tmp_path)
    (tree / "pyproject.toml").write_text('[tool.driftcheck]\npack = "sglang"\n')
    result = run(runner, tree, "--no-cache")
    assert result.exit_code == 2
    assert "module sglang.srt.layers.moe.utils not found" in result.stderr


def test_an_unrecognised_tree_gets_its_universe_and_family_inferred(
    runner: CliRunner, tmp_path: Path, monkeypatch
) -> None:
    tree = unknown_tree(tmp_path)
    monkeypatch.chdir(tree)
    result = run(runner, "relay", "--no-cache")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [SLOW]
    assert result.stderr.splitlines() == [
        INFERRED_NOTE,
        "warning: no helper defines {tcp, quic, rdma}: inferred from 2 complete and 1 partial "
        "hand-written copies in 3 files (name a canonical in [tool.driftcheck], or let "
        "`driftcheck --fix --fix-style helper --create-helper` write is_tcp_family())",
        "Found 1 finding (1 error) in 7 files.",
    ]


def test_an_unrecognised_tree_where_nothing_recurs_says_so_and_exits_0(
    runner: CliRunner, tmp_path: Path, monkeypatch
) -> None:
    tree = unknown_tree(tmp_path)
    (tree / "relay/links/fast.py").unlink()
    (tree / "relay/links/steady.py").unlink()
    monkeypatch.chdir(tree)
    result = run(runner, "relay", "--no-cache")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", NOTHING_NOTE + "\n")


def test_nothing_to_check_is_an_empty_json_document(
    runner: CliRunner, tmp_path: Path, monkeypatch
) -> None:
    tree = unknown_tree(tmp_path)
    (tree / "relay/links/fast.py").unlink()
    (tree / "relay/links/steady.py").unlink()
    monkeypatch.chdir(tree)
    result = run(runner, "relay", "--no-cache", "--format", "json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert (document["canonical"], document["findings"], document["errors"]) == ({}, [], [])


def test_discover_on_an_unrecognised_tree_proposes_the_inferred_family_with_every_copy(
    runner: CliRunner, tmp_path: Path, monkeypatch
) -> None:
    tree = unknown_tree(tmp_path)
    monkeypatch.chdir(tree)
    result = run(runner, "discover", "relay", "--no-cache")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "{tcp, quic, rdma}: no helper; inferred from 2 complete and 1 partial hand-written "
        "copies in 3 files; 3 hand copies, 1 drifting",
        "  create it: driftcheck --fix --fix-style helper --create-helper (writes "
        "is_tcp_family() beside Transport in relay/transport.py)",
        "  copy: relay/links/fast.py:8 retransmits() (0 callers; complete)",
        "  copy: relay/links/slow.py:8 retransmits() (0 callers; missing rdma)",
        "  copy: relay/links/steady.py:8 retransmits() (0 callers; complete)",
    ]
