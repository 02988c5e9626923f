"""Generated documentation is what the generators produce (it cannot go stale), and the JSON
contract's page documents every field the JSON output has."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from driftcheck.rules import CATALOGUE

from driftcheck.cli import main
from driftcheck.model import Finding, Fix, Problem, Span

REPO = Path(__file__).resolve().parent.parent


def load_script(name: str) -> ModuleType:
    """A module from ``scripts/`` (not a package), loaded by path."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = load_script("gen_docs")
readme_run = load_script("readme_run")
GENERATED = gen_docs.generated_files()


@pytest.mark.parametrize("path", sorted(GENERATED), ids=lambda p: str(p.relative_to(REPO)))
def test_committed_doc_matches_the_generator(path: Path) -> None:
    assert path.exists(), f"{path.relative_to(REPO)} missing: run python scripts/gen_docs.py"
    assert path.read_text(encoding="utf-8") == GENERATED[path], (
        "stale: run python scripts/gen_docs.py"
    )


def test_every_rule_has_a_page_and_every_page_a_rule() -> None:
    pages = {p.stem for p in (REPO / "docs" / "rules").glob("*.md")} - {"README"}
    assert pages == set(CATALOGUE)


@pytest.mark.parametrize("code", sorted(CATALOGUE))
def test_explain_prints_the_rule_page(runner, code: str) -> None:
    outcome = runner.invoke(main, ["explain", code.lower()])
    assert outcome.exit_code == 0
    page = (REPO / "docs" / "rules" / f"{code}.md").read_text(encoding="utf-8")
    assert page == f"{gen_docs.GENERATED}\n\n{outcome.stdout.removesuffix(chr(10))}"


def test_json_example_is_what_the_cli_prints(tmp_path: Path, runner, monkeypatch) -> None:
    tree = tmp_path / "sglang_like"
    shutil.copytree(REPO / "fixtures" / "sglang_like", tree)
    monkeypatch.chdir(tree)
    outcome = runner.invoke(main, ["--no-cache", "--format", "json", gen_docs.EXAMPLE_FILE])
    doc = (REPO / "docs" / "json-output.md").read_text(encoding="utf-8")
    expected = f"$ driftcheck --format json {gen_docs.EXAMPLE_FILE}\n{outcome.stdout}$ echo $?\n{outcome.exit_code}\n"
    assert expected in doc


def _documented_fields() -> set[str]:
    """The names in the first cell of every table row of docs/json-output.md."""
    doc = (REPO / "docs" / "json-output.md").read_text(encoding="utf-8")
    first_cells = re.findall(r"^\| (`[^|]+)\|", doc, re.MULTILINE)
    return {name for cell in first_cells for name in re.findall(r"`([a-z_]+)`", cell)}


def test_json_page_documents_every_field() -> None:
    """Every key the JSON output can hold has a row on docs/json-output.md."""
    span = Span(1, 0, 1, 5)
    fix = Fix("helper", span, "x", ("pplx",), "import x", "False -> True for pplx", ((span, "y"),))
    finding = Finding(
        "DC001",
        "error",
        "a.py",
        span,
        "f",
        "h",
        ("deepep",),
        ("pplx",),
        (),
        "m",
        latent={"pplx": "why"},
        fix=fix,
        inferred=True,
    )
    refused = Finding(
        "DC001", "error", "a.py", span, "f", "h", ("deepep",), ("pplx",), (), "m", fix_refusal="why"
    )
    keys = (
        set(finding.to_dict())
        | set(refused.to_dict())
        | set(fix.to_dict())
        | set(Problem("a.py", 1, "m").to_dict())
    )
    keys |= set(fix.to_dict()["span"]) | {"version", "root", "canonical", "findings", "errors"}
    assert keys - _documented_fields() == set()


def test_readme_block_replaces_only_the_marked_section() -> None:
    text = f"intro\n{readme_run.START}\nold\n{readme_run.END}\noutro\n"
    block = readme_run.real_run_block(
        "a.py:1:1: DC001 m\nFound 1 finding (1 error) in 1 file.\n", 1
    )
    assert readme_run.replace_block(text, block) == f"intro\n{block}\noutro\n"
    assert block.splitlines()[-6:] == [
        "a.py:1:1: DC001 m",
        "Found 1 finding (1 error) in 1 file.",
        "$ echo $?",
        "1",
        "```",
        readme_run.END,
    ]


def test_readme_block_needs_both_markers() -> None:
    assert readme_run.replace_block(f"no end marker\n{readme_run.START}\n", "block") is None
