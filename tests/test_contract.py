"""The command line's contract on awkward input: what is bad usage (exit 2, a message naming
the path or value), what is no error, and the exact words of each message."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement  # pytest's own dependency
from rule_harness import driftcheck_process

from driftcheck.cli import main
from driftcheck.config import tomllib
from driftcheck.engine import check
from driftcheck.progress import ERASE, Progress

REPO = Path(__file__).resolve().parent.parent
KIMI = "sglang/srt/models/kimi_like.py"
DENSE_FINDING = (
    "sglang/srt/models/dense_like.py:10:13: DC001 _enable_a2a_moe enumerates 4 of 5 "
    "DeepEP-family backends; missing deepep_v2 (held back: no same-role site lists it) "
    "(canonical: is_deepep_class_backend)"
)
KIMI_FINDING = (
    f"{KIMI}:10:9: DC001 _uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing "
    "deepep_v2 (latent), pplx (held back: no same-role site lists it) (canonical: "
    "is_deepep_class_backend)"
)
NO_PYTHON = "no Python files under this directory"


def run(runner: CliRunner, tree: Path, *args: str, **env: str):  # type: ignore[no-untyped-def]
    """The CLI in this process, from ``tree``."""
    cwd = os.getcwd()
    os.chdir(tree)
    try:
        return runner.invoke(main, list(args), catch_exceptions=False, env=env or None)
    finally:
        os.chdir(cwd)


def checked(runner: CliRunner, tree: Path) -> tuple[int, list[str]]:
    """The exit code and stderr of checking ``tree``, whose findings are the fixture's."""
    result = run(runner, tree, "--no-cache", ".")
    assert result.stdout.splitlines() == [DENSE_FINDING, KIMI_FINDING]
    return result.exit_code, result.stderr.splitlines()


# -- files that are never checked ------------------------------------------------------------
def test_a_broken_link_to_a_file_that_is_never_checked_is_no_error(
    runner: CliRunner, sglang_like: Path
) -> None:
    (sglang_like / ".clang-format").symlink_to("/nonexistent/outside/.clang-format")
    assert checked(runner, sglang_like) == (1, ["Found 2 findings (2 errors) in 9 files."])
    assert run(runner, sglang_like, "discover", "--no-cache", ".").exit_code == 0


def test_a_broken_link_named_like_a_python_file_is_an_error(
    runner: CliRunner, sglang_like: Path
) -> None:
    (sglang_like / "sglang/broken.py").symlink_to("/nonexistent/broken.py")
    assert checked(runner, sglang_like) == (
        2,
        [
            "sglang/broken.py: error: broken symlink or symlink loop",
            "Found 2 findings (2 errors) in 9 files. 1 path could not be checked.",
        ],
    )


def test_discover_with_no_cache_writes_nothing_into_the_tree(
    runner: CliRunner, sglang_like: Path
) -> None:
    result = run(runner, sglang_like, "discover", "--no-cache", ".")
    assert result.exit_code == 0
    assert result.stdout.startswith("sglang.srt.layers.moe.utils:is_deepep_class_backend ")
    assert not (sglang_like / ".driftcheck_cache").exists()


# -- what is bad usage -----------------------------------------------------------------------
def test_a_lower_case_rule_code_is_an_error_naming_the_code(
    runner: CliRunner, sglang_like: Path
) -> None:
    result = run(runner, sglang_like, "--no-cache", "--select", "dc001", ".")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --select: unknown rule code or prefix 'dc001'; did you mean 'DC001'? (known "
        "codes: DC001, DC002, DC003, DC004, DC005, DC010, DC011, DC020, DC021, DC030; prefixes "
        "such as DC0 and DC00, and ALL)\n"
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('select = "DC001"', 'select must be a list of strings, got "DC001"'),
        ('exclude = "sglang/test/*"', 'exclude must be a list of strings, got "sglang/test/*"'),
        (
            'canonical = "sglang.srt.layers.moe.utils:is_deepep_class_backend"',
            'canonical must be a list of strings, got "sglang.srt.layers.moe.utils:'
            'is_deepep_class_backend"',
        ),
    ],
)
def test_a_string_where_a_list_belongs_is_an_error_at_its_line(
    runner: CliRunner, sglang_like: Path, table: str, message: str
) -> None:
    (sglang_like / "pyproject.toml").write_text(f"[tool.driftcheck]\n{table}\n")
    result = run(runner, sglang_like, "--no-cache", ".")
    assert result.exit_code == 2
    assert result.stderr == f"pyproject.toml:2: error: [tool.driftcheck] {message}\n"
    assert result.stdout == ""


def test_a_lone_file_that_is_not_python_is_an_error(runner: CliRunner, sglang_like: Path) -> None:
    (sglang_like / "notes.txt").write_text("notes\n")
    result = run(runner, sglang_like, "--no-cache", "notes.txt")
    assert result.exit_code == 2
    assert result.stderr == "notes.txt: error: not a Python file (.py or .pyi); not checked\n"


def test_a_file_that_is_not_python_beside_others_is_an_error_and_the_others_are_checked(
    runner: CliRunner, sglang_like: Path
) -> None:
    (sglang_like / "notes.txt").write_text("notes\n")
    result = run(runner, sglang_like, "--no-cache", "notes.txt", KIMI)
    assert result.exit_code == 2
    assert result.stdout.splitlines() == [KIMI_FINDING]
    assert result.stderr.splitlines() == [
        "notes.txt: error: not a Python file (.py or .pyi); not checked",
        "Found 1 finding (1 error) in 1 file. 1 path could not be checked.",
    ]


def test_an_empty_directory_is_an_error_saying_it_holds_no_python_file(
    runner: CliRunner, sglang_like: Path
) -> None:
    (sglang_like / "empty").mkdir()
    result = run(runner, sglang_like, "--no-cache", "empty")
    assert result.exit_code == 2
    assert result.stderr == f"empty: error: {NO_PYTHON}\n"


def test_a_mistyped_command_is_named(runner: CliRunner, sglang_like: Path) -> None:
    result = run(runner, sglang_like, "discovr")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: No such command 'discovr', and no file or directory of that name. "
        "Did you mean 'discover'?"
    )


def test_a_missing_path_unlike_any_command_is_a_missing_path(
    runner: CliRunner, sglang_like: Path
) -> None:
    result = run(runner, sglang_like, "--no-cache", "models")
    assert result.exit_code == 2
    assert result.stderr == "models: error: no such file or directory\n"


# -- syntax errors: where the check reads, and where --fix writes ---------------------------
BROKEN_TAIL = "\n\ndef broken(:\n    pass\n"


def test_a_syntax_error_in_the_statements_the_check_parses_is_exit_2(
    runner: CliRunner, sglang_like: Path
) -> None:
    (sglang_like / "sglang/srt/models/hot.py").write_text(
        "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n"
        "def f(:\n"
        "    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
    )
    result = run(runner, sglang_like, "--no-cache", ".")
    assert result.exit_code == 2
    assert "sglang/srt/models/hot.py:2: error: syntax error: invalid syntax; file skipped" in (
        result.stderr.splitlines()
    )


def test_a_syntax_error_away_from_the_sites_is_not_reported_by_check(
    runner: CliRunner, sglang_like: Path
) -> None:
    """Only the statements around the lines that can hold a site are parsed: the definition
    holding the error is never read."""
    with (sglang_like / KIMI).open("a") as handle:
        handle.write(BROKEN_TAIL)
    result = run(runner, sglang_like, "--no-cache", ".")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [DENSE_FINDING, KIMI_FINDING]
    assert result.stderr == "Found 2 findings (2 errors) in 9 files.\n"


def test_fix_refuses_a_file_with_a_syntax_error_anywhere_before_it_writes(
    runner: CliRunner, sglang_like: Path
) -> None:
    with (sglang_like / KIMI).open("a") as handle:
        handle.write(BROKEN_TAIL)
    before = (sglang_like / KIMI).read_bytes()
    result = run(runner, sglang_like, "--no-cache", "--fix", "--unsafe-fixes", ".")
    assert result.exit_code == 2
    assert (sglang_like / KIMI).read_bytes() == before
    assert result.stderr.splitlines() == [
        "sglang/srt/models/dense_like.py:10: fixed DC001 (minimal): False -> True for deepep_v2; "
        "unsafe: deepep_v2 (no same-role site lists it)",
        f"{KIMI}: error: not fixed: the file does not compile (line 35: invalid syntax)",
        "Fixed 1 finding in 1 file; 1 remains.",
    ]


# -- colour ----------------------------------------------------------------------------------
def on_a_terminal(tree: Path, *args: str, **env: str) -> str:
    """What the CLI writes to stdout when stdout is a terminal (a pseudo-terminal here)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "driftcheck", *args],
        cwd=tree,
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        try:
            chunk = os.read(master, 1 << 16) if ready else b""
        except OSError:  # the terminal closed with the process
            chunk = b""
        if not chunk:
            break
        chunks.append(chunk)
    process.wait()
    os.close(master)
    return b"".join(chunks).decode()


def test_color_always_colours_a_pipe(sglang_like: Path) -> None:
    piped = driftcheck_process(sglang_like, "--no-cache", "--color", "always", ".")
    assert piped.stdout.startswith("\x1b[1msglang/srt/models/dense_like.py:10:13:\x1b[0m ")


def test_no_color_leaves_a_terminal_uncoloured(sglang_like: Path) -> None:
    coloured = on_a_terminal(sglang_like, "--no-cache", ".", NO_COLOR="")
    plain = on_a_terminal(sglang_like, "--no-cache", ".", NO_COLOR="1")
    assert "\x1b[" in coloured
    assert plain.splitlines() == [DENSE_FINDING, KIMI_FINDING]


# -- small texts -----------------------------------------------------------------------------
def test_the_summary_counts_the_paths_it_lists(runner: CliRunner, sglang_like: Path) -> None:
    for name in ("a.py", "b.py"):
        (sglang_like / "sglang" / name).symlink_to(f"/nonexistent/{name}")
    result = run(runner, sglang_like, "--no-cache", ".")
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 2
    assert result.stderr.splitlines()[-1] == (
        "Found 2 findings (2 errors) in 9 files. 2 paths could not be checked."
    )


def test_write_baseline_counts_one_finding_in_the_singular(
    runner: CliRunner, sglang_like: Path
) -> None:
    result = run(runner, sglang_like, "--no-cache", "--write-baseline", "base.json", KIMI)
    assert result.exit_code == 0
    assert result.stderr == "Wrote 1 finding to base.json.\n"


# -- progress --------------------------------------------------------------------------------
class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_once_a_second_has_passed() -> None:
    now = [0.0]
    stream = Terminal()
    progress = Progress(stream, clock=lambda: now[0])
    progress(1, 10)
    assert stream.getvalue() == ""
    now[0] = 1.5
    progress(5, 10)
    now[0] = 1.55
    progress(6, 10)  # too soon to redraw
    progress.close()
    assert stream.getvalue() == f"{ERASE}driftcheck: scanned 5 of 10 files{ERASE}"


def test_progress_is_silent_into_a_pipe() -> None:
    stream = io.StringIO()
    progress = Progress(stream, clock=lambda: 100.0, delay=0)
    progress(5, 10)
    progress.close()
    assert stream.getvalue() == ""


def test_the_check_reports_each_file_it_scans(sglang_like: Path) -> None:
    calls: list[tuple[int, int]] = []
    check([sglang_like], use_cache=False, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(done, 9) for done in range(1, 10)]


# -- verify's requirements -------------------------------------------------------------------
@pytest.mark.torch
def test_verify_layer_without_numpy_says_what_to_install(sglang_like: Path) -> None:
    pytest.importorskip("torch")
    done = subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            "import sys; sys.modules['numpy'] = None; sys.argv = ['driftcheck', 'verify', "
            "'--layer', '.']; from driftcheck.replay import main; main()",
        ],
        cwd=sglang_like,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "error: --layer needs torch and numpy; numpy is not installed "
        "(from a driftcheck checkout: pip install -e '.[verify]')\n"
    )


def test_the_verify_extra_takes_the_torch_it_is_tested_on_and_the_tests_pin_the_cpu_build() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    verify = {r.name: r for r in map(Requirement, extras["verify"])}
    dev = {r.name: r for r in map(Requirement, extras["dev"])}
    assert [
        v
        for v in ("2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.0")
        if v in verify["torch"].specifier
    ] == [
        "2.11.0",
        "2.12.1",
        "2.13.0",
    ]
    assert str(dev["torch"].specifier) == "==2.13.0"
