"""Issue 31, the files a run covers, as a newcomer met them: no silent pass and no false alarm.

Case 1: a ``[tool.driftcheck]`` table below the project's top is an error naming it, whatever
the invocation (one file, the root, pre-commit), never a silent change of root. Case 4:
``.gitignore`` and ``.ignore`` are honoured by default (ruff's ``respect-gitignore``), with
``--no-respect-gitignore`` to turn that off. Case 8: a file reached through a symlinked alias
is reported once, under its real path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from driftcheck.cli import main
from driftcheck.ignores import Level, parse, parse_line
from driftcheck.project import discover_project
from driftcheck.walk import walk

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
DRIFTCHECK = Path(sys.executable).parent / "driftcheck"

DENSE = (
    "sglang/srt/models/dense_like.py:10:13: DC001 _enable_a2a_moe enumerates 4 of 5 "
    "DeepEP-family backends; missing deepep_v2 (held back: no same-role site lists it) "
    "(canonical: is_deepep_class_backend)"
)
KIMI = (
    "sglang/srt/models/kimi_like.py:10:9: DC001 _uses_ep_a2a enumerates 3 of 5 DeepEP-family "
    "backends; missing deepep_v2 (latent), pplx (held back: no same-role site lists it) "
    "(canonical: is_deepep_class_backend)"
)
NESTED = '[tool.driftcheck]\nselect = ["DC001"]\n'
MISPLACED_IN_REPOSITORY = (
    "sglang/srt/pyproject.toml:1: error: [tool.driftcheck] below the project root is not read "
    "(one configuration per project, at the repository root or its python/ or src/): move it "
    "there, or delete it\n"
)


def git(root: Path, *args: str) -> None:
    """Run git in ``root``, isolated from the user's configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def tree(tmp_path: Path, *, repository: bool = True) -> Path:
    """A copy of ``fixtures/sglang_like`` (wheel layout), a git repository unless told."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    if repository:
        git(root, "init", "-q")
    return root


def run(runner: CliRunner, root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    """``driftcheck --no-cache ARGS`` from ``root``, in this process."""
    monkeypatch.chdir(root)
    return runner.invoke(main, ["--no-cache", *args], catch_exceptions=False)


def lines(*found: str) -> str:
    return "".join(f"{line}\n" for line in found)


# -- case 1: a [tool.driftcheck] table below the project's top --------------------------------
def test_a_nested_table_is_an_error_naming_it_when_one_file_below_it_is_checked(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    (root / "sglang/srt/pyproject.toml").write_text(NESTED)
    result = run(runner, root, monkeypatch, "sglang/srt/models/kimi_like.py")
    assert (result.exit_code, result.stdout) == (2, lines(KIMI))
    assert result.stderr == MISPLACED_IN_REPOSITORY + (
        "Found 1 finding (1 error) in 1 file. 1 path could not be checked.\n"
    )


def test_a_nested_table_is_the_same_error_when_the_root_is_checked(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    (root / "sglang/srt/pyproject.toml").write_text(NESTED)
    result = run(runner, root, monkeypatch)
    assert (result.exit_code, result.stdout) == (2, lines(DENSE, KIMI))
    assert result.stderr == MISPLACED_IN_REPOSITORY + (
        "Found 2 findings (2 errors) in 9 files. 1 path could not be checked.\n"
    )


def test_a_nested_pyproject_without_a_driftcheck_table_is_no_error(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    (root / "sglang/srt/pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    result = run(runner, root, monkeypatch, "sglang/srt/models/kimi_like.py")
    assert (result.exit_code, result.stdout) == (1, lines(KIMI))
    assert result.stderr == "Found 1 finding (1 error) in 1 file.\n"


def test_a_nested_driftcheck_toml_names_its_table_line_and_the_configuration_in_use(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.driftcheck]\n")
    (root / "sglang/srt/pyproject.toml").write_text("[tool.ruff]\n\n" + NESTED)
    result = run(runner, root, monkeypatch, "sglang/srt/models/kimi_like.py")
    assert (result.exit_code, result.stdout) == (2, lines(KIMI))
    assert result.stderr.splitlines()[0] == (
        "sglang/srt/pyproject.toml:3: error: [tool.driftcheck] below the project root is not "
        "read (one configuration per project: pyproject.toml is this project's): move its "
        "settings there, or delete it"
    )


def test_a_table_inside_a_package_is_an_error_outside_a_repository_too(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path, repository=False)
    (root / "sglang/srt/pyproject.toml").write_text(NESTED)
    result = run(runner, root, monkeypatch, "sglang/srt/models/kimi_like.py")
    assert (result.exit_code, result.stdout) == (2, lines(KIMI))
    assert result.stderr.splitlines()[0] == (
        "sglang/srt/pyproject.toml:1: error: [tool.driftcheck] below the project root is not "
        "read (one configuration per project, at the project root or its python/ or src/): "
        "move it there, or delete it"
    )


def test_the_pre_commit_hook_fails_on_a_nested_table_as_a_run_over_every_file_does(
    tmp_path: Path,
) -> None:
    pytest.importorskip("pre_commit.clientlib")
    from test_precommit import K3_LIKE_SERVED, MODELS, make_repo

    repo = make_repo(tmp_path, "driftcheck", models={"k3_like.py": K3_LIKE_SERVED})
    repo.write("python/sglang/srt/pyproject.toml", NESTED)
    repo.git("add", ".")
    assert repo.git("commit", "--no-verify", "-qm", "nested").returncode == 0
    one = repo.run(sys.executable, "-m", "pre_commit", "run", "--files", str(MODELS / "k3_like.py"))
    every = repo.run(sys.executable, "-m", "pre_commit", "run", "--all-files")
    error = (
        "python/sglang/srt/pyproject.toml:1: error: [tool.driftcheck] below the project root is not "
        "read (one configuration per project, at the repository root or its python/ or src/): "
        "move it there, or delete it"
    )
    assert (one.returncode, every.returncode) == (1, 1)
    assert error in one.stdout.splitlines()
    assert error in every.stdout.splitlines()


# -- case 4: .gitignore and .ignore ------------------------------------------------------------
def with_build_copy(root: Path) -> Path:
    """``build/lib/sglang``: a copy of the package, as ``pip install .`` leaves it."""
    shutil.copytree(root / "sglang", root / "build/lib/sglang")
    return root


def test_a_gitignored_build_copy_is_not_reported(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = with_build_copy(tree(tmp_path))
    (root / ".gitignore").write_text("build/\n")
    result = run(runner, root, monkeypatch)
    assert (result.exit_code, result.stdout) == (1, lines(DENSE, KIMI))
    assert result.stderr == "Found 2 findings (2 errors) in 9 files.\n"


def test_no_respect_gitignore_reports_the_ignored_copy(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = with_build_copy(tree(tmp_path))
    (root / ".gitignore").write_text("build/\n")
    result = run(runner, root, monkeypatch, "--no-respect-gitignore")
    assert result.stdout == lines(f"build/lib/{DENSE}", f"build/lib/{KIMI}", DENSE, KIMI)
    assert result.stderr == "Found 4 findings (4 errors) in 18 files.\n"


def test_respect_gitignore_false_in_the_configuration_reports_the_ignored_copy(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = with_build_copy(tree(tmp_path))
    (root / ".gitignore").write_text("build/\n")
    (root / "pyproject.toml").write_text("[tool.driftcheck]\nrespect-gitignore = false\n")
    assert run(runner, root, monkeypatch).stderr == "Found 4 findings (4 errors) in 18 files.\n"
    flag = run(runner, root, monkeypatch, "--respect-gitignore")
    assert flag.stderr == "Found 2 findings (2 errors) in 9 files.\n"


def test_respect_gitignore_of_the_wrong_type_is_exit_2_naming_its_line(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    (root / "pyproject.toml").write_text('[tool.driftcheck]\nrespect-gitignore = "no"\n')
    result = run(runner, root, monkeypatch)
    assert result.exit_code == 2
    assert result.stderr == (
        "pyproject.toml:2: error: [tool.driftcheck] respect-gitignore must be true or false, "
        'got "no"\n'
    )


def test_fix_leaves_a_gitignored_copy_untouched(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = with_build_copy(tree(tmp_path))
    (root / ".gitignore").write_text("build/\n")
    copy = root / "build/lib/sglang/srt/models/kimi_like.py"
    before = copy.read_text()
    result = run(runner, root, monkeypatch, "--fix")
    assert copy.read_text() == before
    assert (root / "sglang/srt/models/kimi_like.py").read_text() != before  # the real one
    assert "build/" not in result.stdout + result.stderr


def test_an_ignored_file_named_on_the_command_line_is_checked_as_ruff_does(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = with_build_copy(tree(tmp_path))
    (root / ".gitignore").write_text("build/\n")
    result = run(runner, root, monkeypatch, "build/lib/sglang/srt/models/kimi_like.py")
    assert (result.exit_code, result.stdout) == (1, lines(f"build/lib/{KIMI}"))


def test_outside_a_git_repository_gitignore_does_not_count_and_ignore_does(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = with_build_copy(tree(tmp_path, repository=False))
    (root / ".gitignore").write_text("build/\n")
    assert run(runner, root, monkeypatch).stderr == "Found 4 findings (4 errors) in 18 files.\n"
    (root / ".ignore").write_text("build/\n")
    assert run(runner, root, monkeypatch).stderr == "Found 2 findings (2 errors) in 9 files.\n"


def test_git_info_exclude_counts_as_a_gitignore_at_the_repository_root(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = with_build_copy(tree(tmp_path))
    (root / ".git/info").mkdir(parents=True, exist_ok=True)
    (root / ".git/info/exclude").write_text("/build\n")
    assert run(runner, root, monkeypatch).stderr == "Found 2 findings (2 errors) in 9 files.\n"


PATTERNS_TREE = {
    ".gitignore": "*.gen.py\n/top_only.py\nscratch/\ndocs/**/example.py\n",
    "top_only.py": "",
    "pkg/top_only.py": "",  # /top_only.py is anchored: this one stays
    "pkg/a.gen.py": "",
    "pkg/keep.gen.py": "",
    "pkg/.gitignore": "!keep.gen.py\nlocal/\n",
    "pkg/local/x.py": "",
    "pkg/deep/scratch/y.py": "",
    "docs/example.py": "",  # ** matches zero directories too
    "docs/a/b/example.py": "",
    "docs/a/b/other.py": "",
    "other/local/z.py": "",  # pkg/.gitignore's local/ holds below pkg only
}


def walked_files(root: Path, respect: bool = True) -> list[str]:
    project = discover_project([root], cwd=root)
    if not respect:
        project = replace(project, config=replace(project.config, respect_gitignore=False))
    return [rel for _, rel, _ in walk(project, [root], whole=True, record=False).files]


def test_nested_gitignores_negation_anchors_directory_only_patterns_and_double_stars(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tree"
    for rel, text in PATTERNS_TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q")
    assert walked_files(root) == [
        "docs/a/b/other.py",
        "other/local/z.py",
        "pkg/keep.gen.py",
        "pkg/top_only.py",
    ]
    assert len(walked_files(root, respect=False)) == 10  # the control: every file is there


@pytest.mark.parametrize(
    ("line", "path", "is_dir", "ignored"),
    [
        ("build/", "build", True, True),
        ("build/", "build", False, None),  # a file named build: directories only
        ("/build", "pkg/build", True, None),  # anchored to its file's directory
        ("build", "pkg/build", True, True),  # no slash: any depth
        ("a/**/b", "a/b", True, True),
        ("a/**/b", "a/x/y/b", True, True),
        ("**/b", "x/b", False, True),
        ("a/**", "a/x/y", False, True),
        ("*.py", "x/y.py", False, True),
        ("x*", "ab/xc", True, True),
        ("a/*.py", "a/b/c.py", False, None),  # * stops at a slash
        ("!keep.py", "keep.py", False, False),  # re-included
        ("\\!bang.py", "!bang.py", False, True),
        ("[ab].py", "b.py", False, True),
        ("[!ab].py", "b.py", False, None),
        ("# comment", "# comment", False, None),
        ("*", "x/y", False, True),
        ("doc/frotz", "doc/frotz", True, True),  # a slash inside: anchored
        ("doc/frotz", "a/doc/frotz", True, None),
    ],
)
def test_one_ignore_line_matches_as_git_reads_it(
    line: str, path: str, is_dir: bool, ignored: bool | None
) -> None:
    pattern = parse_line(line)
    if pattern is None:
        assert ignored is None
        return
    level = Level("/r/", (pattern,))
    assert level.decide("/r/" + path, path.rsplit("/", 1)[-1], is_dir) is ignored


def test_the_last_matching_line_of_one_file_wins() -> None:
    level = Level("/r/", parse("*.py\n!keep*.py\nkeep_not.py\n"))
    decided = [level.decide(f"/r/{n}", n, False) for n in ("a.py", "keep.py", "keep_not.py", "a.c")]
    assert decided == [True, False, True, None]


def test_an_edited_gitignore_is_not_answered_from_the_previous_runs_record(
    tmp_path: Path,
) -> None:
    root = with_build_copy(tree(tmp_path))
    env = {**os.environ, "DRIFTCHECK_RUNS_DIR": str(tmp_path / "runs"), "DRIFTCHECK_RACY_MS": "0"}

    def summary() -> str:
        done = subprocess.run(
            [str(DRIFTCHECK), "--color", "never"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stderr.splitlines()[-1]

    (root / ".gitignore").write_text("# nothing yet\n")
    assert summary() == summary() == "Found 4 findings (4 errors) in 18 files."
    (root / ".gitignore").write_text("build/\n")  # same directory, same size class: edited
    assert summary() == "Found 2 findings (2 errors) in 9 files."
    (root / "sglang/srt/pyproject.toml").write_text("[tool.ruff]\n")
    assert summary() == summary() == "Found 2 findings (2 errors) in 9 files."
    (root / "sglang/srt/pyproject.toml").write_text(NESTED)
    assert summary() == "Found 2 findings (2 errors) in 9 files. 1 path could not be checked."


# -- case 8: a file reached through a symlinked alias ------------------------------------------
@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symlinks")
def test_a_file_reached_through_a_symlinked_alias_is_reported_once_under_its_real_path(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    (root / "sglang/srt/alias").symlink_to("models")
    (root / "sglang/srt/models/kimi_alias.py").symlink_to("kimi_like.py")
    whole = run(runner, root, monkeypatch)
    assert whole.stdout == lines(DENSE, KIMI)
    assert whole.stderr == "Found 2 findings (2 errors) in 9 files.\n"
    both = run(runner, root, monkeypatch, "sglang/srt/alias", "sglang/srt/models")
    assert both.stdout == lines(DENSE, KIMI)
    assert both.stderr == "Found 2 findings (2 errors) in 4 files.\n"
    named = run(
        runner, root, monkeypatch, "sglang/srt/alias/kimi_like.py", "sglang/srt/models/kimi_like.py"
    )
    assert named.stdout == lines(KIMI)
    assert named.stderr == "Found 1 finding (1 error) in 1 file.\n"
