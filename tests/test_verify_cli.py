"""``driftcheck verify`` as a user and a CI job meet it: the JSON contract, exit codes, site
selection, the layer wiring, and the GPU workflow example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from driftcheck.runtime_verify.block.plan import Unit, accepts, choose_arms
from driftcheck.runtime_verify.block.run import LayerSettings, run_layer, verify_pack
from driftcheck.runtime_verify.proof import prove
from rule_harness import EXAMPLE_PATH, example_tree

from driftcheck.cli import main

REPO = Path(__file__).resolve().parent.parent
K3_LIKE = (
    "def uses_ep_a2a() -> bool:\n"
    "    _a2a_backend = get_moe_a2a_backend()\n"
    "    return (\n"
    "        _a2a_backend.is_megamoe()\n"
    "        or _a2a_backend.is_deepep()\n"
    "        or _a2a_backend.is_mooncake()\n"
    "        or _a2a_backend.is_mori()\n"
    "    )\n"
)
PPLX_ONLY = (
    "class Block:\n"
    "    def __init__(self):\n"
    "        b = get_moe_a2a_backend()\n"
    "        self.a2a = b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori()\n\n"
    "    def forward(self, x):\n"
    "        return x if self.a2a else -x\n"
)
GUARDED = (
    "def guarded() -> bool:\n"
    "    b = get_moe_a2a_backend()\n"
    "    if b is None:\n"
    "        return False\n"
    "    return b.is_deepep() or b.is_mooncake()\n"
)


def run(runner: CliRunner, *args: str | Path, unsafe: bool = True):
    """``driftcheck verify ARGS``; with ``--unsafe-fixes`` unless ``unsafe`` is false: the
    examples' members are held back (no other site plays their role), and these tests prove
    the full fix."""
    flags = ["--unsafe-fixes"] if unsafe else []
    return runner.invoke(main, ["verify", *flags, *(str(a) for a in args)], catch_exceptions=False)


def model_file(tmp_path: Path, snippet: str) -> Path:
    return example_tree(tmp_path, snippet) / EXAMPLE_PATH


def test_json_output_is_the_documented_contract(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, model_file(tmp_path, K3_LIKE), "--no-cache", "--format", "json")
    assert result.exit_code == 0, result.output
    [site] = json.loads(result.stdout)["sites"]
    assert {k: site[k] for k in ("path", "line", "symbol", "verdict", "flips")} == {
        "path": "sglang/srt/models/example.py",
        "line": 11,
        "symbol": "uses_ep_a2a",
        "verdict": "proven",
        "flips": ["deepep_v2", "pplx"],
    }
    assert site["table"]["deepep_v2"] == {"before": False, "after": True, "canonical": True}
    assert site["table"]["megamoe"] == {"before": True, "after": True, "canonical": False}
    assert list(site["table"]) == [
        "none", "deepep", "mooncake", "nixl", "mori", "ascend_fuseep", "flashinfer",
        "megamoe", "deepep_v2", "pplx", "flashinfer_megamoe",
    ]  # fmt: skip
    assert site["reason"] == (
        "the fix flips exactly deepep_v2, pplx; after it the site agrees with "
        "is_deepep_class_backend() on 5 of 5 DeepEP-family backends"
    )
    assert site["style"] == "minimal"


def test_text_output_is_a_table_per_site_and_a_summary(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, model_file(tmp_path, K3_LIKE), "--no-cache")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "sglang/srt/models/example.py:11 uses_ep_a2a (DC001): proven"
    assert "  deepep_v2           no      yes    yes        flipped" in lines
    assert result.stderr.strip() == "1 site verified: 1 proven."


def test_an_unproven_site_exits_1(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, model_file(tmp_path, GUARDED), "--no-cache", "--format", "json")
    assert result.exit_code == 1
    [site] = json.loads(result.stdout)["sites"]
    assert (site["verdict"], site["table"], site["flips"]) == ("unproven", {}, [])
    assert site["reason"] == "outside the grammar: statement 'if b is None:' in guarded() (line 10)"


def test_a_tree_without_drift_verifies_nothing_and_exits_0(
    runner: CliRunner, tmp_path: Path
) -> None:
    clean = "def uses_a2a() -> bool:\n    return is_deepep_class_backend()\n"
    result = run(runner, model_file(tmp_path, clean), "--no-cache", "--format", "json")
    assert (result.exit_code, json.loads(result.stdout)) == (0, {"sites": []})
    assert result.stderr.strip() == "0 sites verified."


def test_a_tree_without_the_configured_canonical_module_exits_2(
    runner: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "model.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text('[tool.driftcheck]\npack = "sglang"\n')
    result = run(runner, tmp_path, "--no-cache")
    assert result.exit_code == 2
    assert "is_deepep_class_backend" in result.stderr


def test_a_tree_no_pack_recognises_with_nothing_recurring_has_nothing_to_verify(
    runner: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "model.py").write_text("x = 1\n")
    result = run(runner, tmp_path, "--no-cache")
    assert result.exit_code == 0
    assert result.stderr.startswith("note: no pack recognises this tree and nothing is configured")


def test_site_selects_one_site_by_path_and_symbol(runner: CliRunner, tmp_path: Path) -> None:
    path = model_file(tmp_path, K3_LIKE + "\n\n" + GUARDED)
    everything = json.loads(run(runner, path, "--no-cache", "--format", "json").stdout)
    assert [s["symbol"] for s in everything["sites"]] == ["uses_ep_a2a", "guarded"]
    result = run(runner, path, "--no-cache", "--format", "json", "--site", "example.py:uses_ep_a2a")
    assert result.exit_code == 0
    assert [s["symbol"] for s in json.loads(result.stdout)["sites"]] == ["uses_ep_a2a"]


def test_site_selects_by_line(runner: CliRunner, tmp_path: Path) -> None:
    path = model_file(tmp_path, K3_LIKE + "\n\n" + GUARDED)
    result = run(runner, path, "--no-cache", "--format", "json", "--site", "example.py:22")
    assert [s["symbol"] for s in json.loads(result.stdout)["sites"]] == ["guarded"]


def test_fix_style_helper_proves_the_helper_rewrite(runner: CliRunner, tmp_path: Path) -> None:
    path = model_file(tmp_path, K3_LIKE)
    result = run(runner, path, "--no-cache", "--format", "json", "--fix-style", "helper")
    [site] = json.loads(result.stdout)["sites"]
    assert (result.exit_code, site["style"], site["verdict"]) == (0, "helper", "proven")
    assert site["flips"] == ["deepep_v2", "pplx"]


def test_report_writes_the_json_document(runner: CliRunner, tmp_path: Path) -> None:
    report = tmp_path / "verify.json"
    result = run(runner, model_file(tmp_path, K3_LIKE), "--no-cache", "--report", report)
    assert result.exit_code == 0
    assert [s["verdict"] for s in json.loads(report.read_text())["sites"]] == ["proven"]


def test_report_md_needs_layer(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, model_file(tmp_path, K3_LIKE), "--report-md", tmp_path / "r.md")
    assert result.exit_code == 2
    assert "--report-md needs --layer" in result.stderr


def test_arms_must_be_two_different_backends(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, model_file(tmp_path, K3_LIKE), "--layer", "--arms", "deepep")
    assert result.exit_code == 2
    assert "REFERENCE,TEST" in result.stderr


def test_arms_must_be_members_of_the_enum(runner: CliRunner, tmp_path: Path) -> None:
    path = model_file(tmp_path, K3_LIKE)
    result = run(runner, path, "--no-cache", "--layer", "--arms", "deepep,nvshmem")
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "error: --arms names nvshmem, not members of MoeA2ABackend"
    )


def _proofs(tmp_path: Path, snippet: str) -> list:
    from driftcheck.engine import check
    from driftcheck.fix.apply import attach_fixes

    result = check([model_file(tmp_path, snippet)], select=["DC001"], use_cache=False)
    fixed = attach_fixes(result, result.findings, "minimal", unsafe=True)
    return [prove(result, f) for f in fixed]


def _result_and_proofs(tmp_path: Path, snippet: str) -> tuple:
    from driftcheck.engine import check
    from driftcheck.fix.apply import attach_fixes

    result = check([model_file(tmp_path, snippet)], select=["DC001"], use_cache=False)
    return result, [
        prove(result, f) for f in attach_fixes(result, result.findings, "minimal", unsafe=True)
    ]


def membership(proof: object) -> dict[str, dict[str, bool | None]]:
    return {
        phase: {arm: accepts(proof, arm, phase) for arm in ("deepep", "deepep_v2")}  # type: ignore[arg-type]
        for phase in ("before", "after")
    }


def test_what_each_arm_is_comes_from_the_truth_table(tmp_path: Path) -> None:
    [proof] = _proofs(tmp_path, K3_LIKE)
    assert membership(proof) == {
        "before": {"deepep": True, "deepep_v2": False},
        "after": {"deepep": True, "deepep_v2": True},
    }


def test_a_negative_site_counts_what_it_accepts(tmp_path: Path) -> None:
    code = (
        "def forward(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if not (b.is_deepep() or b.is_mori()):\n"
        "        return x\n"
        "    return -x\n"
    )
    [proof] = _proofs(tmp_path, code)
    assert membership(proof) == {
        "before": {"deepep": True, "deepep_v2": False},
        "after": {"deepep": True, "deepep_v2": True},
    }


def test_the_test_arm_is_a_member_the_fix_adds_when_the_packs_is_not(tmp_path: Path) -> None:
    result, [proof] = _result_and_proofs(tmp_path, PPLX_ONLY)
    unit = Unit(proof.finding.path, proof.finding.canonical, (proof,), "Block")
    family = result.universe.family(proof.finding.canonical).members
    arms = choose_arms(unit, family, verify_pack(result), None)
    assert (arms.reference, arms.test) == ("deepep", "pplx")  # type: ignore[union-attr]


def test_an_arm_decided_by_a_free_input_is_no_test_arm(tmp_path: Path) -> None:
    code = (
        "class Block:\n"
        "    def __init__(self):\n"
        "        b = get_moe_a2a_backend()\n"
        "        self.a2a = self._enabled or b.is_deepep() or b.is_mooncake()\n\n"
        "    def forward(self, x):\n"
        "        return x if self.a2a else -x\n"
    )
    result, [proof] = _result_and_proofs(tmp_path, code)
    assert accepts(proof, "deepep_v2", "before") is None  # depends on self._enabled
    unit = Unit(proof.finding.path, proof.finding.canonical, (proof,), "Block")
    family = result.universe.family(proof.finding.canonical).members
    assert choose_arms(unit, family, verify_pack(result), None) == (
        "the fix adds no family member at every site (no test arm)"
    )


def test_a_site_that_reaches_no_block_class_is_not_run(tmp_path: Path) -> None:
    code = (
        "def uses():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b.is_deepep() or b.is_mooncake()\n\n\n"
        "def forward(x):\n"
        "    if not uses():\n"
        "        x = tensor_model_parallel_all_reduce(x)\n"
        "    return x\n"
    )
    result, proofs = _result_and_proofs(tmp_path, code)
    report = run_layer(result, proofs, LayerSettings())
    assert report["units"] == []
    assert [s["reason"] for s in report["skipped"]] == [
        "its value reaches no class of its module (no block to build)"
    ]
    assert report["verdict"] == "no eligible site"


def test_the_gpu_workflow_example_is_a_github_actions_job() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML validates the workflow example")
    text = (REPO / "examples/github-workflow-driftcheck-gpu.yml").read_text()
    workflow = yaml.safe_load(text)
    [job] = workflow["jobs"].values()
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    uses = [step.get("uses", "") for step in job["steps"]]
    assert "driftcheck --fix --diff" in runs
    assert "driftcheck verify " in runs
    assert "--layer --device cuda" in runs
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    assert any(u.startswith("actions/checkout@") for u in uses)
    assert workflow[True]["pull_request"]["paths"]  # PyYAML reads the key `on` as True


@pytest.mark.corpus
def test_every_fix_of_sglang_0_5_23_is_proven(runner: CliRunner, sglang_0_5_23: Path) -> None:
    result = run(runner, sglang_0_5_23, "--no-cache", "--format", "json")
    sites = json.loads(result.stdout)["sites"]
    assert result.exit_code == 0
    assert len(sites) == 23
    assert {s["verdict"] for s in sites} == {"proven"}
    k3 = next(s for s in sites if s["symbol"] == "_uses_ep_a2a")
    assert (k3["path"], k3["line"], k3["flips"]) == (
        "sglang/srt/models/kimi_k3.py",
        440,
        ["deepep_v2", "pplx"],
    )


@pytest.mark.corpus
def test_verify_proves_the_fix_that_fix_applies_on_sglang_0_5_23(
    runner: CliRunner, sglang_0_5_23: Path
) -> None:
    """Without --unsafe-fixes: every fix that adds a member is proven for what it adds; one
    that holds every member back has nothing to prove, and says why."""
    result = run(runner, sglang_0_5_23, "--no-cache", "--format", "json", unsafe=False)
    sites = json.loads(result.stdout)["sites"]
    assert result.exit_code == 1
    for site in sites:
        if site["style"] == "delete":  # a dead copy deleted: proven by "nothing reads it"
            assert (site["verdict"], site["flips"]) == ("proven", []), site["reason"]
            continue
        added = [m for m in site["missing"] if m not in site["held_back"]]
        assert site["verdict"] == ("proven" if added else "unproven"), site["reason"]
        assert site["flips"] == (added if added else [])
    k3 = next(s for s in sites if s["symbol"] == "_uses_ep_a2a")
    assert (k3["flips"], k3["held_back"], k3["reason"]) == (
        ["deepep_v2"],
        ["pplx"],
        "the fix flips exactly deepep_v2; after it the site agrees with "
        "is_deepep_class_backend() on 4 of 5 DeepEP-family backends (pplx held back: "
        "--unsafe-fixes proves the full fix)",
    )
    held = next(s for s in sites if s["symbol"] == "_is_scattered_a2a_backend")
    assert (held["verdict"], held["reason"]) == (
        "unproven",
        "no fix to prove: held back: mooncake, mori, pplx (no same-role site lists them): "
        "--unsafe-fixes adds them",
    )
