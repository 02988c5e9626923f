"""Issue 31, as a newcomer met it on the command line: no silent pass and no false alarm.

Case 6 (``verify`` passes what it did not check), case 7 (install advice that works from this
repository), and case 8's contract breaks: columns in characters, ``--diff`` with a
machine-readable format, a baseline of an unknown version, policies that name nothing, and
DC005's fix beside ``locals()``.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rule_harness import EXAMPLE_PATH, example_tree

from driftcheck.cli import main

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
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


def verify(runner: CliRunner, *args: str | Path):
    """``driftcheck verify --no-cache --unsafe-fixes ARGS`` in this process."""
    return runner.invoke(
        main,
        ["verify", "--no-cache", "--unsafe-fixes", *(str(a) for a in args)],
        catch_exceptions=False,
    )


# -- case 6: verify --site that matches nothing --------------------------------------------------
def test_verify_site_that_matches_no_site_exits_2_naming_it(
    runner: CliRunner, tmp_path: Path
) -> None:
    model = example_tree(tmp_path, K3_LIKE) / EXAMPLE_PATH
    result = verify(runner, model, "--site", "nosuch.py:foo")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "error: --site nosuch.py:foo matches no site (the sites to verify: "
        "sglang/srt/models/example.py:11 uses_ep_a2a)\n"
    )


def test_verify_site_naming_a_file_lists_that_files_sites(
    runner: CliRunner, tmp_path: Path
) -> None:
    model = example_tree(tmp_path, K3_LIKE) / EXAMPLE_PATH
    result = verify(runner, model, "--site", "example.py:nosuch")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --site example.py:nosuch matches no site (sites in that file: "
        "sglang/srt/models/example.py:11 uses_ep_a2a)\n"
    )


def test_verify_site_names_each_selector_that_matched_nothing(
    runner: CliRunner, tmp_path: Path
) -> None:
    model = example_tree(tmp_path, K3_LIKE) / EXAMPLE_PATH
    result = verify(runner, model, "--site", "uses_ep_a2a", "--site", "example.py:99")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "error: --site example.py:99 matches no site (sites in that file: "
        "sglang/srt/models/example.py:11 uses_ep_a2a)\n"
    )


def test_verify_site_in_a_tree_without_drift_exits_2(runner: CliRunner, tmp_path: Path) -> None:
    clean = "def uses_a2a() -> bool:\n    return is_deepep_class_backend()\n"
    result = verify(runner, example_tree(tmp_path, clean) / EXAMPLE_PATH, "--site", "uses_a2a")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --site uses_a2a matches no site (this run has no site to verify)\n"
    )


def test_verify_site_that_matches_verifies_it_and_exits_0(
    runner: CliRunner, tmp_path: Path
) -> None:
    """The negative control: a selector that names the site passes as before."""
    result = verify(
        runner, example_tree(tmp_path, K3_LIKE) / EXAMPLE_PATH, "--site", "example.py:uses_ep_a2a"
    )
    assert result.exit_code == 0
    assert result.stderr == "1 site verified: 1 proven.\n"


# -- case 6: verify --layer --device cuda without a GPU -----------------------------------------
@pytest.mark.torch
def test_verify_layer_on_cuda_without_a_gpu_exits_2_before_any_rank_starts(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "block_like", tree)
    result = verify(runner, tree, "--layer", "--device", "cuda")
    build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: --device cuda needs a CUDA GPU, and torch {torch.__version__} ({build}) "
        "sees none; use --device cpu\n"
    )


# -- case 7: what to install, from this repository ----------------------------------------------
def _verify_layer_without(sglang_like: Path, *modules: str) -> subprocess.CompletedProcess[str]:
    blocked = "".join(f"sys.modules[{m!r}] = None; " for m in modules)
    return subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            f"import sys; {blocked}sys.argv = ['driftcheck', 'verify', '--layer', '.']; "
            "from driftcheck.replay import main; main()",
        ],
        cwd=sglang_like,
        capture_output=True,
        text=True,
        check=False,
    )


def test_verify_layer_names_both_missing_packages(sglang_like: Path) -> None:
    done = _verify_layer_without(sglang_like, "torch", "numpy")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: --layer needs torch and numpy; torch and numpy are not installed "
        "(from a driftcheck checkout: pip install -e '.[verify]')\n"
    )


def test_verify_layer_names_the_one_missing_package(sglang_like: Path) -> None:
    pytest.importorskip("numpy")  # the one left installed
    done = _verify_layer_without(sglang_like, "torch")
    assert done.returncode == 2
    assert done.stderr == (
        "error: --layer needs torch and numpy; torch is not installed "
        "(from a driftcheck checkout: pip install -e '.[verify]')\n"
    )


def test_driftcheck_server_without_its_extra_names_every_missing_package(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)
    result = runner.invoke(main, ["server"])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "error: driftcheck server needs the server extra (pygls and lsprotocol are missing); "
        "from a driftcheck checkout: pip install -e '.[server]'\n"
    )


INSTALL_ADVICE = re.compile(  # pip install [flags but -e] driftcheck[extra]: an index release
    r"pip install(?: +-(?!e\b)[\w-]+)* +['\"]?driftcheck(?:\[[\w,]+\])?(?:==[\w.]+)?['\"]?(?=[\s`),]|$)"
)
ADVISING = (
    "driftcheck",
    "runtime_verify",
    "rules",
    "docs",
    "examples",
    ".pre-commit-hooks.yaml",
    "README.md",
    "DEVELOPERS.md",
)


def test_no_install_advice_names_a_package_index_release() -> None:
    """driftcheck is not on PyPI: no message, doc or example says ``pip install driftcheck``
    or ``pip install 'driftcheck[extra]'`` (a checkout's ``pip install -e '.[extra]'`` or a
    path works)."""
    files = [
        path
        for name in ADVISING
        for path in ([REPO / name] if (REPO / name).is_file() else (REPO / name).rglob("*"))
        if path.is_file() and path.suffix in (".py", ".md", ".yaml", ".yml", ".toml", "")
    ]
    offending = [
        f"{path.relative_to(REPO)}: {match.group(0)}"
        for path in files
        for match in INSTALL_ADVICE.finditer(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert len(files) > 100
    assert offending == []
    assert INSTALL_ADVICE.search("(pip install 'driftcheck[server]')")  # the negative control
    assert INSTALL_ADVICE.search("`pip install driftcheck`")


def test_the_pre_commit_snippets_name_no_repository_url() -> None:
    """The hooks' manifest and docs/pre-commit.md give ``repo: local`` (language: system) and a
    clone on disk; no URL of a repository nobody here owns."""
    for name in (".pre-commit-hooks.yaml", "docs/pre-commit.md"):
        text = (REPO / name).read_text(encoding="utf-8")
        assert "repo: local" in text, name
        assert "language: system" in text, name
        repos = re.findall(r"repo: (\S+)", text)
        assert [r for r in repos if r != "local" and not r.startswith("/")] == [], name
        assert "github.com" not in text, name


# -- case 8: columns count characters ------------------------------------------------------------
NON_ASCII_BEFORE_THE_SITE = (
    "def uses_ep_a2a() -> bool:\n"
    "    b = get_moe_a2a_backend()\n"
    '    tag = "μ→"; return b.is_deepep() or b.is_mooncake() or b.is_mori()\n'
)
# the site starts after 23 characters (27 UTF-8 bytes: μ and → take 2 and 3): column 24
NON_ASCII_MESSAGE = (
    "uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 (held back), pplx "
    "(held back: no same-role site lists them) (canonical: is_deepep_class_backend)"
)


def check_example(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snippet: str, *args: str
):
    """``driftcheck --no-cache ARGS sglang/srt/models/example.py`` from the example tree."""
    monkeypatch.chdir(example_tree(tmp_path, snippet))
    return runner.invoke(main, ["--no-cache", *args, EXAMPLE_PATH], catch_exceptions=False)


def test_text_column_counts_characters_not_bytes(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = check_example(runner, tmp_path, monkeypatch, NON_ASCII_BEFORE_THE_SITE)
    assert result.stdout == f"{EXAMPLE_PATH}:10:24: DC001 {NON_ASCII_MESSAGE}\n"


def test_json_columns_count_characters_not_bytes(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("--format", "json")
    result = check_example(runner, tmp_path, monkeypatch, NON_ASCII_BEFORE_THE_SITE, *args)
    [finding] = json.loads(result.stdout)["findings"]
    assert (finding["line"], finding["col"], finding["end_line"], finding["end_col"]) == (
        10,
        24,
        10,
        71,
    )
    span = finding["fix"]["span"]
    assert (span["line"], span["col"], span["end_line"], span["end_col"]) == (10, 24, 10, 71)


def test_github_columns_count_characters_not_bytes(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("--format", "github")
    result = check_example(runner, tmp_path, monkeypatch, NON_ASCII_BEFORE_THE_SITE, *args)
    assert result.stdout == (
        f"::error file={EXAMPLE_PATH},line=10,col=24,endLine=10,endColumn=71,title=DC001::"
        f"{NON_ASCII_MESSAGE}\n"
    )


def test_sarif_columns_agree_with_the_text_columns(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("--format", "sarif")
    result = check_example(runner, tmp_path, monkeypatch, NON_ASCII_BEFORE_THE_SITE, *args)
    [sarif_result] = json.loads(result.stdout)["runs"][0]["results"]
    region = sarif_result["locations"][0]["physicalLocation"]["region"]
    assert (region["startColumn"], region["endColumn"]) == (24, 71)


def test_an_ascii_line_keeps_its_column(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative control: where bytes and characters agree the column is unchanged."""
    ascii_line = NON_ASCII_BEFORE_THE_SITE.replace("μ→", "mu")
    result = check_example(runner, tmp_path, monkeypatch, ascii_line)
    assert result.stdout == f"{EXAMPLE_PATH}:10:24: DC001 {NON_ASCII_MESSAGE}\n"


# -- case 8: --diff with a machine-readable format -----------------------------------------------
@pytest.mark.parametrize(
    ("output_format", "advice"),
    [
        (
            "json",
            "--format json without --diff gives each finding's fix (its replacement and span)",
        ),
        ("sarif", "--format sarif without --diff gives each finding's fix"),
        ("github", "--format github without --diff gives each finding's fix"),
    ],
)
def test_diff_with_a_machine_readable_format_exits_2(
    runner: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    output_format: str,
    advice: str,
) -> None:
    args = ("--diff", "--format", output_format)
    result = check_example(runner, tmp_path, monkeypatch, K3_LIKE, *args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: --diff prints a unified diff and takes no --format {output_format}; {advice}\n"
    )


def test_diff_in_text_prints_the_patch(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative control: ``--diff`` alone still prints the patch."""
    result = check_example(runner, tmp_path, monkeypatch, K3_LIKE, "--diff", "--unsafe-fixes")
    assert result.exit_code == 1
    assert result.stdout.startswith(f"--- a/{EXAMPLE_PATH}\n+++ b/{EXAMPLE_PATH}\n")


# -- case 8: a baseline of an unknown version ----------------------------------------------------
def _baseline_of_version(tmp_path: Path, version: object) -> Path:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"version": version, "findings": []}) + "\n")
    return baseline


def test_a_baseline_of_an_unknown_version_exits_2_naming_the_file(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = _baseline_of_version(tmp_path, 99)
    args = ("--baseline", str(baseline))
    result = check_example(runner, tmp_path, monkeypatch, K3_LIKE, *args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: {baseline}: baseline version 99 is not supported: this driftcheck reads "
        "version 1 (write it again with --write-baseline)\n"
    )


def test_a_baseline_of_version_1_is_read(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative control: the version ``--write-baseline`` writes is accepted."""
    baseline = _baseline_of_version(tmp_path, 1)
    args = ("--baseline", str(baseline))
    result = check_example(runner, tmp_path, monkeypatch, K3_LIKE, *args)
    assert result.exit_code == 1
    assert result.stderr == "Found 1 finding (1 error) in 1 file.\n"


# -- case 8: policies that name nothing ----------------------------------------------------------
KIMI = "sglang/srt/models/kimi_like.py"
KIMI_PPLX_HELD = (
    f"{KIMI}:10:9: DC001 _uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing "
    "deepep_v2 (latent), pplx (held back: no same-role site lists it) "
    "(canonical: is_deepep_class_backend)"
)


def check_with_policy(runner: CliRunner, tree: Path, monkeypatch: pytest.MonkeyPatch, policy: str):
    """``driftcheck --no-cache kimi_like.py`` from ``tree`` with one policy configured."""
    (tree / "pyproject.toml").write_text(
        f"[tool.driftcheck]\n\n[[tool.driftcheck.policies]]\n{policy}"
    )
    monkeypatch.chdir(tree)
    return runner.invoke(main, ["--no-cache", KIMI], catch_exceptions=False)


def test_a_policy_accepting_a_divergence_without_a_reason_exits_2(
    runner: CliRunner, sglang_like: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = f'path = "{KIMI}"\nsymbol = "_uses_ep_a2a"\nallow-missing = ["pplx"]\n'
    result = check_with_policy(runner, sglang_like, monkeypatch, policy)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"pyproject.toml:3: error: policies[0] ({KIMI}) sets allow-missing without a reason: "
        'say why the divergence is accepted (reason = "...")\n'
    )


def test_a_policy_naming_a_member_of_no_universe_exits_2(
    runner: CliRunner, sglang_like: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = f'path = "{KIMI}"\nallow-missing = ["ppxl"]\nreason = "not validated"\n'
    result = check_with_policy(runner, sglang_like, monkeypatch, policy)
    assert (result.exit_code, result.stdout) == (2, KIMI_PPLX_HELD + "\n")
    assert result.stderr == (
        f"pyproject.toml:3: error: policies[0] ({KIMI}) allow-missing names ppxl, not a member "
        "of the universe (did you mean pplx?)\n"
        "Found 1 finding (1 error) in 1 file.\n"
    )


def test_a_policy_whose_symbol_names_nothing_in_its_path_exits_2(
    runner: CliRunner, sglang_like: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = f'path = "{KIMI}"\nsymbol = "_uses_ep_a2"\nfix-style = "helper"\n'
    result = check_with_policy(runner, sglang_like, monkeypatch, policy)
    assert (result.exit_code, result.stdout) == (2, KIMI_PPLX_HELD + "\n")
    assert result.stderr == (
        f"pyproject.toml:3: error: policies[0] symbol _uses_ep_a2 names no function or class "
        f"in {KIMI} (did you mean _uses_ep_a2a?)\n"
        "Found 1 finding (1 error) in 1 file.\n"
    )


def test_a_policy_whose_path_names_no_file_exits_2(
    runner: CliRunner, sglang_like: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = 'path = "sglang/srt/models/kimi.py"\nfix-style = "helper"\n'
    result = check_with_policy(runner, sglang_like, monkeypatch, policy)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"pyproject.toml:3: error: policies[0] path sglang/srt/models/kimi.py names no file "
        f"under {sglang_like.resolve()}"
    )


def test_a_policy_that_names_what_the_tree_has_applies(
    runner: CliRunner, sglang_like: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative control: member, symbol and reason in order, the policy accepts pplx."""
    policy = (
        f'path = "{KIMI}"\nsymbol = "_uses_ep_a2a"\nallow-missing = ["pplx"]\n'
        'reason = "not validated on K3"\n'
    )
    result = check_with_policy(runner, sglang_like, monkeypatch, policy)
    assert result.exit_code == 0
    assert result.stdout == (
        f"{KIMI}:10:9: DC001 (warning) _uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; "
        "missing deepep_v2 (latent) (canonical: is_deepep_class_backend)\n"
    )
    assert result.stderr == "Found 1 finding (1 warning) in 1 file.\n"


# -- case 8: DC005's fix beside locals() ---------------------------------------------------------
def dc005_diff(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str, after: str
) -> str:
    """``driftcheck --select DC005 --diff`` of a function whose chain repeats the helper."""
    snippet = (
        f"def uses_ep_a2a():\n{before}"
        "    b = get_moe_a2a_backend()\n"
        "    ep = is_deepep_class_backend() or b.is_deepep_v2()\n"
        f"{after}"
    )
    result = check_example(runner, tmp_path, monkeypatch, snippet, "--select", "DC005", "--diff")
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("", "    return locals()\n"),
        ("", "    return vars()\n"),
        ("", '    return eval("b")\n'),
        ("    global b\n", "    return ep\n"),
    ],
    ids=["locals", "vars", "eval", "global"],
)
def test_dc005_fix_keeps_the_assignment_a_namespace_read_may_use(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str, after: str
) -> None:
    diff = dc005_diff(runner, tmp_path, monkeypatch, before, after)
    assert diff.splitlines()[5:] == [
        "     b = get_moe_a2a_backend()",
        "-    ep = is_deepep_class_backend() or b.is_deepep_v2()",
        "+    ep = is_deepep_class_backend()",
        f" {after.rstrip()}",
    ]


def test_dc005_fix_deletes_the_assignment_it_made_unused(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative control: with nothing reading the namespace the receiver goes."""
    diff = dc005_diff(runner, tmp_path, monkeypatch, "", "    return ep\n")
    assert diff.splitlines()[5:] == [
        " def uses_ep_a2a():",
        "-    b = get_moe_a2a_backend()",
        "-    ep = is_deepep_class_backend() or b.is_deepep_v2()",
        "+    ep = is_deepep_class_backend()",
        "     return ep",
    ]


# -- case 9: the tests that need torch are a tier of their own -----------------------------------
def _skips_without_torch(node: ast.AST) -> bool:
    """Whether ``node`` holds ``pytest.importorskip("torch")`` or ``import torch``."""
    for inner in ast.walk(node):
        if (
            isinstance(inner, ast.Call)
            and ast.unparse(inner.func).endswith("importorskip")
            and [ast.literal_eval(a) for a in inner.args[:1]] == ["torch"]
        ):
            return True
        if isinstance(inner, ast.Import) and any(a.name == "torch" for a in inner.names):
            return True
    return False


def _marked_torch(decorators: list[ast.expr]) -> bool:
    return any("mark.torch" in ast.unparse(d) for d in decorators)


def test_every_test_needing_torch_is_in_the_torch_tier() -> None:
    """``pytest -m "not torch"`` runs every other test on a machine without torch: a module
    that skips without torch is marked ``torch`` as a whole, a test function that does so
    carries the marker itself (the run on a venv without torch: the README's command)."""
    unmarked = []
    needing = 0
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_marked = any(
            isinstance(s, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)
            and "mark.torch" in ast.unparse(s.value)
            for s in tree.body
        )
        top = [s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
        if any(_skips_without_torch(s) for s in top):
            needing += 1
            if not module_marked:
                unmarked.append(path.name)
        tests = [
            f
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")
        ]
        for function in filter(_skips_without_torch, tests):
            needing += 1
            if not (module_marked or _marked_torch(function.decorator_list)):
                unmarked.append(f"{path.name}::{function.name}")
    assert unmarked == []
    assert needing >= 10  # the layer tests are found: the check is not vacuous
