"""The command line as a user meets it: output, exit codes, configuration, suppressions,
baselines, the cache and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from driftcheck.cli import main

KIMI = (
    "sglang/srt/models/kimi_like.py:10:9: DC001 _uses_ep_a2a enumerates 3 of 5 DeepEP-family "
    "backends; missing deepep_v2 (latent), pplx (held back: no same-role site lists it) "
    "(canonical: is_deepep_class_backend)"
)
LATENT_ONLY = (
    "sglang/srt/models/kimi_like.py:10:9: DC001 (warning) _uses_ep_a2a enumerates 3 of 5 DeepEP-family "
    "backends; missing deepep_v2 (latent) (canonical: is_deepep_class_backend)"
)
DENSE = (
    "sglang/srt/models/dense_like.py:10:13: DC001 _enable_a2a_moe enumerates 4 of 5 DeepEP-family "
    "backends; missing deepep_v2 (held back: no same-role site lists it) (canonical: is_deepep_class_backend)"
)


def run(runner: CliRunner, *args: str | Path):
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_check_prints_one_line_per_finding_and_exits_1(
    runner: CliRunner, sglang_like: Path
) -> None:
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [DENSE, KIMI]
    assert result.stderr.strip() == "Found 2 findings (2 errors) in 9 files."


def test_check_subcommand_is_the_default(runner: CliRunner, sglang_like: Path) -> None:
    assert (
        run(runner, "check", sglang_like, "--no-cache").stdout
        == run(runner, sglang_like, "--no-cache").stdout
    )


def test_clean_tree_exits_0(runner: CliRunner, sglang_like: Path) -> None:
    result = run(runner, sglang_like / "sglang/srt/models/clean_like.py", "--no-cache")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr.strip() == "No drift found in 1 file."


def test_json_output_is_the_documented_contract(runner: CliRunner, sglang_like: Path) -> None:
    result = run(
        runner, sglang_like / "sglang/srt/models/kimi_like.py", "--no-cache", "--format", "json"
    )
    document = json.loads(result.stdout)
    assert sorted(document) == ["canonical", "errors", "findings", "root", "version"]
    assert document["root"] == str(sglang_like)
    assert document["canonical"] == {
        "is_deepep_class_backend": ["deepep", "deepep_v2", "mooncake", "mori", "pplx"]
    }
    (finding,) = document["findings"]
    expected = {
        "code": "DC001",
        "severity": "error",
        "path": "sglang/srt/models/kimi_like.py",
        "line": 10,
        "col": 9,
        "end_line": 15,
        "end_col": 34,
        "symbol": "_uses_ep_a2a",
        "canonical": "is_deepep_class_backend",
        "members": ["megamoe", "flashinfer_megamoe", "deepep", "mooncake", "ascend_fuseep", "mori"],
        "missing": ["deepep_v2", "pplx"],
        "extra": ["megamoe", "flashinfer_megamoe", "ascend_fuseep"],
        "kind": "property",
    }
    assert {k: finding[k] for k in expected} == expected
    assert finding["latent"] == {
        "deepep_v2": "latent (becomes live when KimiLikeForCausalLM is registered via register_deepep_v2_model)"
    }
    assert document["errors"] == []


def test_select_and_ignore(runner: CliRunner, sglang_like: Path) -> None:
    assert run(runner, sglang_like, "--no-cache", "--ignore", "DC001").exit_code == 0
    assert run(runner, sglang_like, "--no-cache", "--select", "DC003").stdout == ""
    assert run(runner, sglang_like, "--no-cache", "--select", "DC00").stdout.splitlines() == [
        DENSE,
        KIMI,
    ]


def test_repo_layout_under_python_needs_no_configuration(
    runner: CliRunner, tmp_path: Path, monkeypatch
) -> None:
    shutil.copytree(
        Path(__file__).parent.parent / "fixtures/sglang_like/sglang",
        tmp_path / "repo/python/sglang",
    )
    monkeypatch.chdir(tmp_path / "repo")
    result = run(runner, "--no-cache")
    assert result.exit_code == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == [
        "python/sglang/srt/models/dense_like.py",
        "python/sglang/srt/models/kimi_like.py",
    ]


def test_registering_the_architecture_makes_latent_drift_live(
    runner: CliRunner, sglang_like: Path
) -> None:
    (sglang_like / "sglang/srt/models/kimi_like.py").write_text(
        (sglang_like / "sglang/srt/models/kimi_like.py").read_text()
        + "\nfrom sglang.srt.configs.moe_model_registry import register_deepep_v2_model\n"
        "register_deepep_v2_model('KimiLikeForCausalLM')\n"
    )
    result = run(
        runner, sglang_like / "sglang/srt/models/kimi_like.py", "--no-cache", "--format", "json"
    )
    (finding,) = json.loads(result.stdout)["findings"]
    assert "latent" not in finding
    assert finding["message"].endswith(
        "missing deepep_v2 (held back), pplx (held back: no same-role site lists them) "
        "(canonical: is_deepep_class_backend)"
    )


def test_latent_only_drift_is_a_warning_that_does_not_fail(
    runner: CliRunner, sglang_like: Path
) -> None:
    kimi = sglang_like / "sglang/srt/models/kimi_like.py"
    kimi.write_text(
        kimi.read_text().replace(
            "or _a2a_backend.is_mori()",
            "or _a2a_backend.is_mori()\n        or _a2a_backend.is_pplx()",
        )
    )
    result = run(runner, kimi, "--no-cache")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [LATENT_ONLY.replace("3 of 5", "4 of 5")]
    assert run(runner, kimi, "--no-cache", "--fail-on", "warning").exit_code == 1


def test_explain_prints_the_rule_documentation(runner: CliRunner) -> None:
    result = run(runner, "explain", "dc001")
    assert result.exit_code == 0
    assert result.stdout.startswith("# DC001 (missing-family-members)\n")
    assert "allow-missing[pplx]" in result.stdout


def test_explain_unknown_rule_exits_2(runner: CliRunner) -> None:
    result = run(runner, "explain", "DC999")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown rule 'DC999'")


def test_discover_names_the_helper_its_callers_and_lists_every_copy_it_counts(
    runner: CliRunner, sglang_like: Path
) -> None:
    result = run(runner, "discover", sglang_like)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "sglang.srt.layers.moe.utils:is_deepep_class_backend (sglang/srt/layers/moe/utils.py:68) "
        "{deepep, deepep_v2, mooncake, mori, pplx}: helper, 2 callers in 2 files; "
        "2 hand copies, 2 drifting",
        "  copy: sglang/srt/models/dense_like.py:10 in DenseLikeBlock.__init__ (missing deepep_v2)",
        "  copy: sglang/srt/models/kimi_like.py:10 _uses_ep_a2a() (2 callers; missing deepep_v2, "
        "pplx, adds megamoe, flashinfer_megamoe, ascend_fuseep)",
        '  [tool.driftcheck] canonical = ["sglang.srt.layers.moe.utils:is_deepep_class_backend"]',
    ]
    assert result.stderr.splitlines()[0] == "discover: scanning"


def test_syntax_error_is_reported_with_file_and_line_and_exit_2(
    runner: CliRunner, sglang_like: Path
) -> None:
    (sglang_like / "sglang/srt/models/broken.py").write_text(
        "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\ndef f(:\n    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
    )
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 2
    assert (
        "sglang/srt/models/broken.py:3: error: syntax error: invalid syntax; file skipped"
        in result.stderr
    )
    assert result.stdout.splitlines() == [DENSE, KIMI]


def test_missing_canonical_module_is_an_error_naming_what_was_looked_for(
    runner: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.driftcheck]\ncanonical = ["pkg.utils:is_family"]\n'
    )
    (tmp_path / "mod.py").write_text("x = 1\n")
    result = run(runner, tmp_path, "--no-cache")
    assert result.exit_code == 2
    assert "canonical predicate pkg.utils:is_family: module pkg.utils not found" in result.stderr
    assert "pkg/utils.py" in result.stderr


def test_malformed_config_names_file_and_line(runner: CliRunner, sglang_like: Path) -> None:
    (sglang_like / "pyproject.toml").write_text("[tool.driftcheck]\ncanonical = [\n")
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 2
    assert "pyproject.toml:3: error: invalid TOML" in result.stderr


def test_unknown_config_key_is_a_warning_naming_the_key(
    runner: CliRunner, sglang_like: Path
) -> None:
    (sglang_like / "pyproject.toml").write_text("[tool.driftcheck]\ncannonical = []\n")
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 1
    assert "unknown key 'cannonical' in [tool.driftcheck] (ignored)" in result.stderr


def test_config_exclude_applies_to_files_named_explicitly(
    runner: CliRunner, sglang_like: Path
) -> None:
    (sglang_like / "pyproject.toml").write_text(
        '[tool.driftcheck]\nexclude = ["sglang/srt/models/kimi_like.py"]\n'
    )
    result = run(runner, sglang_like / "sglang/srt/models/kimi_like.py", "--no-cache")
    assert result.exit_code == 0
    assert result.stdout == ""


def test_config_policy_accepts_a_divergence(runner: CliRunner, sglang_like: Path) -> None:
    (sglang_like / "pyproject.toml").write_text(
        "[tool.driftcheck]\n[[tool.driftcheck.policies]]\npath = 'sglang/srt/models/kimi_like.py'\n"
        "symbol = '_uses_ep_a2a'\nallow-missing = ['pplx']\nreason = 'not validated'\n"
    )
    result = run(runner, sglang_like / "sglang/srt/models/kimi_like.py", "--no-cache")
    assert result.stdout.splitlines() == [LATENT_ONLY]


def test_allow_missing_suppression_accepts_exactly_that_divergence(
    runner: CliRunner, sglang_like: Path
) -> None:
    kimi = sglang_like / "sglang/srt/models/kimi_like.py"
    kimi.write_text(
        kimi.read_text().replace(
            "    return (\n",
            "    return (  # driftcheck: allow-missing[pplx] -- not validated on K3\n",
            1,
        )
    )
    result = run(runner, kimi, "--no-cache")
    assert result.stdout.splitlines() == [LATENT_ONLY]


def test_suppression_that_matches_nothing_is_dc004(runner: CliRunner, sglang_like: Path) -> None:
    clean = sglang_like / "sglang/srt/models/clean_like.py"
    clean.write_text(
        clean.read_text().replace(
            "        self._enable_a2a_moe = is_deepep",
            "        # driftcheck: allow-missing[pplx] -- old decision\n        self._enable_a2a_moe = is_deepep",
        )
    )
    result = run(runner, clean, "--no-cache")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "sglang/srt/models/clean_like.py:8:9: DC004 '# driftcheck: allow-missing[pplx] -- old decision' "
        "matches no finding at this site; remove it"
    ]


def test_suppression_without_reason_is_dc004(runner: CliRunner, sglang_like: Path) -> None:
    kimi = sglang_like / "sglang/srt/models/kimi_like.py"
    kimi.write_text(
        kimi.read_text().replace(
            "    return (\n", "    return (  # driftcheck: allow-missing[pplx]\n", 1
        )
    )
    lines = run(runner, kimi, "--no-cache").stdout.splitlines()
    assert lines == [
        "sglang/srt/models/kimi_like.py:9:15: DC004 suppression needs a reason after '--'",
        KIMI,
    ]


def test_helper_gaining_a_member_flags_a_suppressed_site_again(
    runner: CliRunner, sglang_like: Path
) -> None:
    dense = sglang_like / "sglang/srt/models/dense_like.py"
    dense.write_text(
        dense.read_text().replace(
            "        self._enable_a2a_moe = (\n",
            "        # driftcheck: allow-missing[deepep_v2] -- v2 not validated\n        self._enable_a2a_moe = (\n",
        )
    )
    assert run(runner, dense, "--no-cache").exit_code == 0
    utils = sglang_like / "sglang/srt/layers/moe/utils.py"
    utils.write_text(
        utils.read_text().replace(
            "        or backend.is_pplx()\n",
            "        or backend.is_pplx()\n        or backend.is_nixl()\n",
        )
    )
    result = run(runner, dense, "--no-cache")
    assert result.exit_code == 1
    assert "missing nixl (canonical: is_deepep_class_backend)" in result.stdout


def test_changing_the_helper_checks_every_site_in_the_tree(
    runner: CliRunner, sglang_like: Path
) -> None:
    """pre-commit passes only changed files: a changed helper re-checks all enumerations."""
    result = run(runner, sglang_like / "sglang/srt/layers/moe/utils.py", "--no-cache")
    assert result.stdout.splitlines() == [DENSE, KIMI]


def test_baseline_survives_line_moves_and_reports_new_drift(
    runner: CliRunner, sglang_like: Path, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.json"
    assert run(runner, sglang_like, "--no-cache", "--write-baseline", baseline).exit_code == 0
    kimi = sglang_like / "sglang/srt/models/kimi_like.py"
    kimi.write_text("# a new first line moves every site\n" + kimi.read_text())
    moved = run(runner, sglang_like, "--no-cache", "--baseline", baseline)
    assert moved.exit_code == 0
    assert moved.stderr.strip() == "No drift found in 9 files. 2 baselined findings not shown."
    (sglang_like / "sglang/srt/models/new.py").write_text(
        "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n\n\n"
        "def f():\n    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
    )
    fresh = run(runner, sglang_like, "--no-cache", "--baseline", baseline)
    assert fresh.exit_code == 1
    assert [line.split(":")[0] for line in fresh.stdout.splitlines()] == [
        "sglang/srt/models/new.py"
    ]


def test_warm_cache_gives_the_same_report(runner: CliRunner, sglang_like: Path) -> None:
    cold = run(runner, sglang_like)
    warm = run(runner, sglang_like)
    assert (sglang_like / ".driftcheck_cache/.gitignore").read_text().endswith("*\n")
    assert warm.stdout == cold.stdout
    assert warm.exit_code == cold.exit_code == 1


def test_cache_is_invalidated_when_the_helper_changes(runner: CliRunner, sglang_like: Path) -> None:
    run(runner, sglang_like)
    utils = sglang_like / "sglang/srt/layers/moe/utils.py"
    utils.write_text(utils.read_text().replace("        or backend.is_pplx()\n", ""))
    result = run(runner, sglang_like)
    assert "missing deepep_v2 (held back: no same-role site lists it) (canonical" in result.stdout
    assert "pplx" not in result.stdout.split("kimi_like")[0]


def test_tampered_cache_entry_is_ignored_with_a_warning(
    runner: CliRunner, sglang_like: Path
) -> None:
    first = run(runner, sglang_like)
    (cache_file,) = (sglang_like / ".driftcheck_cache").glob("scan-*.json")
    data = json.loads(cache_file.read_text())
    entry = data["entries"][
        "sglang/srt/models/kimi_like.py"
    ]  # [size, mtime, ctime, inode, data, sum]
    entry[4] = entry[4].replace('"sites":[{', '"sites":[],"x":[{', 1)
    cache_file.write_text(json.dumps(data))
    result = run(runner, sglang_like)
    assert result.stdout == first.stdout
    assert "ignored 1 corrupted or tampered cache entry" in result.stderr
