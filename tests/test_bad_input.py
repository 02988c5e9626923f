"""Hostile and broken input: every case gives a message naming the file (and line where there
is one), exit code 2 when the run could not do its whole job, and every other file is still
checked and reported. Nothing crashes, nothing is overwritten that should not be.

Each test adds one bad thing to a copy of the fixture tree, whose two drifting model files
(``dense_like.py``, ``kimi_like.py``) must still be reported.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from driftcheck.cli import main
from driftcheck.engine import check

MODELS = "sglang/srt/models"
BAD = f"{MODELS}/bad.py"
DENSE = (
    f"{MODELS}/dense_like.py:10:13: DC001 _enable_a2a_moe enumerates 4 of 5 DeepEP-family "
    "backends; missing deepep_v2 (held back: no same-role site lists it) "
    "(canonical: is_deepep_class_backend)"
)
KIMI = (
    f"{MODELS}/kimi_like.py:10:9: DC001 _uses_ep_a2a enumerates 3 of 5 DeepEP-family "
    "backends; missing deepep_v2 (latent), pplx (held back: no same-role site lists it) "
    "(canonical: is_deepep_class_backend)"
)
IMPORT = b"from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n"
# a drifting site, so the prefilter sends the file to the parser (files without backend
# tokens are not parsed at all: driftcheck is not a syntax checker)
SITE = b"X = get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
SITE_MESSAGE = (
    "DC001 X enumerates 2 of 5 DeepEP-family backends; missing deepep_v2 (held back), "
    "mooncake (held back), pplx (held back: no same-role site lists them) "
    "(canonical: is_deepep_class_backend)"
)


_RECORDER: list = []  # the running test's ``record_property`` (see ``evidence``)


@pytest.fixture(autouse=True)
def evidence(record_property) -> Iterator[None]:
    """Every run's exit code and error, warning and fix lines go into the JUnit report, from
    which ``scripts/reliability_report.py`` writes the table in ``docs/reliability.md``."""
    _RECORDER[:] = [record_property]
    yield
    _RECORDER.clear()


def note(name: str, value: object) -> None:
    """Record one piece of evidence for the running test."""
    if _RECORDER:
        _RECORDER[0](name, str(value))


def run(runner: CliRunner, *args: str | Path):
    result = runner.invoke(main, [str(a) for a in args], catch_exceptions=False)
    note("exit", result.exit_code)
    for line in result.stderr.splitlines():
        if ": error: " in line or line.startswith(("warning:", "error:")) or ": not fixed " in line:
            note("stderr", line)
    for line in result.stdout.splitlines():
        if line not in (DENSE, KIMI):  # the fixture's own two findings are in every run
            note("stdout", line)
    return result


def with_bad_file(tree: Path, data: bytes, name: str = "bad.py") -> Path:
    path = tree / MODELS / name
    path.write_bytes(data)
    return path


def assert_problem_and_others_checked(result, problem: str) -> None:
    """Exit 2, exactly ``problem`` on stderr, and both drifting fixture files on stdout."""
    assert result.exit_code == 2
    assert [line for line in result.stderr.splitlines() if ": error: " in line] == [problem]
    assert result.stdout.splitlines() == [DENSE, KIMI]


# -- unparsable files ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param(
            IMPORT + b"def f(:\n    " + SITE,
            f"{BAD}:2: error: syntax error: invalid syntax; file skipped",
            id="syntax-error",
        ),
        pytest.param(
            IMPORT + SITE + b"\n  x = 1\n",
            f"{BAD}:4: error: syntax error: unexpected indent; file skipped",
            id="unexpected-indent",
        ),
        pytest.param(
            IMPORT + SITE + b"x = '''never closed\n",
            f"{BAD}:3: error: syntax error: unterminated triple-quoted string literal (detected at line 3); file skipped",
            id="unterminated-string",
        ),
        pytest.param(
            IMPORT + SITE + b"Y = 1\x00\n",
            f"{BAD}:3: error: source contains a NUL byte; file skipped",
            id="nul-byte",
        ),
        pytest.param(
            IMPORT + SITE + b"# caf\xe9\n",
            f"{BAD}:3: error: cannot decode source: 'utf-8' codec can't decode byte 0xe9 in position 138: invalid continuation byte",
            id="latin-1-without-coding-line",
        ),
        pytest.param(
            b"# caf\xe9\n" + IMPORT + SITE,
            f"{BAD}: error: cannot decode source: invalid or missing encoding declaration",
            id="latin-1-on-line-1-without-coding-line",
        ),
        pytest.param(
            b"# -*- coding: klingon -*-\n" + IMPORT + SITE,
            f"{BAD}: error: cannot decode source: unknown encoding: klingon",
            id="unknown-coding",
        ),
        pytest.param(
            b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n" + IMPORT + SITE,
            f"{BAD}: error: cannot decode source: encoding problem: utf-8",
            id="bom-contradicting-coding-line",
        ),
        pytest.param(
            "\ufeff".encode("utf-16-le") + (IMPORT + SITE).decode().encode("utf-16-le") + b"\n\x00",
            None,
            id="utf-16",
        ),
    ],
)
def test_unparsable_file_is_a_problem_and_the_rest_is_checked(
    runner: CliRunner, sglang_like: Path, data: bytes, problem: str | None
) -> None:
    with_bad_file(sglang_like, data)
    result = run(runner, sglang_like, "--no-cache")
    if problem is None:  # UTF-16: no backend token survives in the bytes, so never parsed
        assert result.exit_code == 1
        assert result.stdout.splitlines() == [DENSE, KIMI]
        return
    assert_problem_and_others_checked(result, problem)


@pytest.mark.parametrize(
    ("data", "line"),
    [
        pytest.param(
            b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + IMPORT + SITE,
            4,
            id="latin-1-with-coding-line",
        ),
        pytest.param(b"\xef\xbb\xbf" + IMPORT + SITE, 2, id="utf-8-bom"),
        pytest.param((IMPORT + SITE).replace(b"\n", b"\r\n"), 2, id="crlf"),
        pytest.param((IMPORT + SITE).replace(b"\n", b"\r"), 2, id="cr-only"),
        pytest.param(
            IMPORT + b"\x0c\n# page\x0cbreak \xe2\x80\xa8 \xc2\x85\n" + SITE,
            4,
            id="form-feed-u2028-nel",
        ),
    ],
)
def test_odd_but_valid_encodings_and_line_endings_are_checked_normally(
    runner: CliRunner, sglang_like: Path, data: bytes, line: int
) -> None:
    with_bad_file(sglang_like, data)
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [f"{BAD}:{line}:5: {SITE_MESSAGE}", DENSE, KIMI]


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"], ids=["crlf", "cr-only"])
def test_fix_keeps_the_line_endings(runner: CliRunner, sglang_like: Path, newline: bytes) -> None:
    path = with_bad_file(sglang_like, (IMPORT + SITE).replace(b"\n", newline))
    result = run(runner, path, "--no-cache", "--fix", "--unsafe-fixes")
    assert result.exit_code == 0
    fixed = (  # past 88 columns: wrapped as ruff format wraps it, in the file's own line ending
        b"X = (\n"
        b"    get_moe_a2a_backend().is_deepep()\n"
        b"    or get_moe_a2a_backend().is_deepep_v2()\n"
        b"    or get_moe_a2a_backend().is_mooncake()\n"
        b"    or get_moe_a2a_backend().is_mori()\n"
        b"    or get_moe_a2a_backend().is_pplx()\n"
        b")\n"
    )
    assert path.read_bytes() == (IMPORT + fixed).replace(b"\n", newline)


def test_ten_megabyte_generated_file_is_scanned(runner: CliRunner, sglang_like: Path) -> None:
    """10 MB of generated data tables with an enumeration every 2,000 rows."""
    rows = [IMPORT]
    size, index = len(IMPORT), 0
    while size < 10_000_000:
        row = b'ROW_%06d = "%s"\n' % (index, b"x" * 60)
        if index % 2000 == 0:
            row += SITE.replace(b"X =", b"FLAG_%06d =" % index)
        rows.append(row)
        size += len(row)
        index += 1
    with_bad_file(sglang_like, b"".join(rows), "big.py")
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2 + (index + 1999) // 2000
    assert lines[0] == f"{MODELS}/big.py:3:15: " + SITE_MESSAGE.replace(
        "DC001 X", "DC001 FLAG_000000"
    )
    assert lines[-2:] == [DENSE, KIMI]


# -- too deep to parse or analyse ------------------------------------------------------------
@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        pytest.param(
            b"(" * 100_000 + b"1" + b")" * 100_000,
            f"{BAD}:3: error: syntax error: too many nested parentheses; file skipped",
            id="100000-nested-parentheses",
        ),
        pytest.param(
            b"-" * 100_000 + b"1",
            f"{BAD}: error: expression nested too deeply to parse; file skipped",
            id="100000-unary-minus",
        ),
        pytest.param(
            b" + ".join([b"1"] * 100_000),
            f"{BAD}: error: expression nested too deeply to parse; file skipped",
            id="100000-term-sum",
        ),
        pytest.param(
            b"not " * 100_000
            + b"get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()",
            f"{BAD}: error: expression nested too deeply to parse; file skipped",
            id="100000-nots-in-a-chain",
        ),
    ],
)
def test_expression_too_deep_is_a_problem_not_a_crash(
    runner: CliRunner, sglang_like: Path, expression: bytes, problem: str
) -> None:
    with_bad_file(sglang_like, IMPORT + SITE + b"Y = " + expression + b"\n")
    assert_problem_and_others_checked(run(runner, sglang_like, "--no-cache"), problem)


def test_syntax_error_away_from_every_site_is_not_read_and_fix_leaves_the_file(
    runner: CliRunner, sglang_like: Path
) -> None:
    """The check reads the statements around its hot lines (driftcheck is not a syntax
    checker): the site is reported. ``--fix`` compiles the whole file first and refuses."""
    data = IMPORT + b"def f(:\n    pass\n\n\n" + SITE
    path = with_bad_file(sglang_like, data)
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 1
    assert f"{BAD}:6:5: {SITE_MESSAGE}" in result.stdout.splitlines()
    fixed = run(runner, sglang_like, "--no-cache", "--fix", "--unsafe-fixes")
    assert fixed.exit_code == 2
    assert (
        f"{BAD}: error: not fixed: the file does not compile (line 2: invalid syntax)"
        in fixed.stderr.splitlines()
    )
    assert path.read_bytes() == data


def test_recursion_while_analysing_is_a_problem_not_a_crash(
    runner: CliRunner, sglang_like: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether an expression that parses overflows the analysis depends on the stack depth
    the scan runs at, so the overflow is simulated where the analysis starts."""

    def overflowing(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("driftcheck.scan.find_sites", overflowing)
    with_bad_file(sglang_like, IMPORT + SITE)
    result = run(runner, sglang_like / MODELS / "bad.py", "--no-cache", "--jobs", "1")
    assert result.exit_code == 2
    assert (
        result.stderr.splitlines()[0]
        == f"{BAD}: error: expression nested too deeply to analyse; file skipped"
    )


def test_50000_term_or_chain_is_one_enumeration(runner: CliRunner, sglang_like: Path) -> None:
    terms = [b"get_moe_a2a_backend().is_deepep()", b"get_moe_a2a_backend().is_mori()"] * 25_000
    with_bad_file(sglang_like, IMPORT + b"X = " + b" or ".join(terms) + b"\n")
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [f"{BAD}:2:5: {SITE_MESSAGE}", DENSE, KIMI]


# -- the file system -------------------------------------------------------------------------
def test_symlink_loop_is_reported(runner: CliRunner, sglang_like: Path) -> None:
    models = sglang_like / MODELS
    (models / "loop_a.py").symlink_to(models / "loop_b.py")
    (models / "loop_b.py").symlink_to(models / "loop_a.py")
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[:2] == [
        f"{MODELS}/loop_a.py: error: broken symlink or symlink loop",
        f"{MODELS}/loop_b.py: error: broken symlink or symlink loop",
    ]
    assert result.stdout.splitlines() == [DENSE, KIMI]


def test_symlinked_directory_loop_is_not_followed(runner: CliRunner, sglang_like: Path) -> None:
    (sglang_like / MODELS / "again").symlink_to(sglang_like / "sglang")
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [DENSE, KIMI]


def test_symlink_pointing_outside_the_root_is_skipped(
    runner: CliRunner, sglang_like: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_bytes(IMPORT + SITE)
    (sglang_like / MODELS / "outside.py").symlink_to(outside)
    result = run(runner, sglang_like, "--no-cache")
    assert_problem_and_others_checked(
        result, f"{MODELS}/outside.py: error: symlink points outside the root ({outside}); skipped"
    )


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="running as root: a chmod 000 file stays readable (see the monkeypatched test)",
)
def test_unreadable_file_is_reported(
    runner: CliRunner, sglang_like: Path
) -> None:  # pragma: no cover
    path = with_bad_file(sglang_like, IMPORT + SITE)
    path.chmod(0)
    try:
        result = run(runner, sglang_like, "--no-cache")
    finally:
        path.chmod(0o644)
    assert_problem_and_others_checked(result, f"{BAD}: error: cannot read file: Permission denied")


def test_unreadable_file_is_reported_when_open_is_refused(
    runner: CliRunner, sglang_like: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``chmod 000`` does for a non-root user, simulated at ``os.open``."""
    path = with_bad_file(sglang_like, IMPORT + SITE)
    real_open = os.open

    def refusing_open(file, *args, **kwargs):
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    result = run(runner, sglang_like, "--no-cache", "--jobs", "1")
    assert_problem_and_others_checked(result, f"{BAD}: error: cannot read file: Permission denied")


def test_file_named_but_missing_is_reported(runner: CliRunner, sglang_like: Path) -> None:
    missing = sglang_like / MODELS / "gone.py"
    result = run(runner, missing, sglang_like / MODELS / "kimi_like.py", "--no-cache")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == f"{missing}: error: no such file or directory"
    assert result.stdout.splitlines() == [KIMI]


# -- --fix against a changing or protected tree ----------------------------------------------
def test_read_only_file_is_not_fixed_and_the_others_are(
    runner: CliRunner, sglang_like: Path
) -> None:
    kimi = sglang_like / MODELS / "kimi_like.py"
    before = kimi.read_bytes()
    kimi.chmod(0o444)
    result = run(runner, sglang_like, "--no-cache", "--fix", "--unsafe-fixes")
    assert result.exit_code == 2
    assert (
        f"{MODELS}/kimi_like.py: error: not fixed: the file is read-only; not overwritten"
        in result.stderr.splitlines()
    )
    assert (
        f"{MODELS}/dense_like.py:10: fixed DC001 (minimal): False -> True for deepep_v2; "
        "unsafe: deepep_v2 (no same-role site lists it)" in result.stderr.splitlines()
    )
    assert result.stdout.splitlines() == [KIMI]
    assert kimi.read_bytes() == before


def test_file_deleted_between_check_and_write_is_not_recreated(sglang_like: Path) -> None:
    from driftcheck.fix.apply import apply_fixes, attach_fixes

    result = check([sglang_like], use_cache=False)
    findings = attach_fixes(result, result.findings, "minimal", unsafe=True)
    kimi = sglang_like / MODELS / "kimi_like.py"
    kimi.unlink()
    outcome = apply_fixes(result, findings, write=True)
    for problem in outcome.problems:
        note("stderr", problem)
    assert [str(p) for p in outcome.problems] == [
        f"{MODELS}/kimi_like.py: error: not fixed: cannot read the file: [Errno 2] No such file or directory: '{kimi}'"
    ]
    assert not kimi.exists()
    assert "is_deepep_v2()" in (sglang_like / MODELS / "dense_like.py").read_text()


def test_file_rewritten_while_fixing_is_not_overwritten(
    sglang_like: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window between the fixer reading a file and replacing it."""
    from driftcheck.fix import apply as apply_module
    from driftcheck.fix.apply import apply_fixes, attach_fixes

    kimi = sglang_like / MODELS / "kimi_like.py"
    edited = kimi.read_text() + "# edited by someone else meanwhile\n"
    real_write = apply_module.write_atomically

    def racing_write(path: Path, data: bytes, expected_digest: str) -> None:
        if path == kimi:
            kimi.write_text(edited)
        real_write(path, data, expected_digest)

    monkeypatch.setattr(apply_module, "write_atomically", racing_write)
    result = check([sglang_like], use_cache=False)
    outcome = apply_fixes(
        result, attach_fixes(result, result.findings, "minimal", unsafe=True), write=True
    )
    for problem in outcome.problems:
        note("stderr", problem)
    assert [str(p) for p in outcome.problems] == [
        f"{MODELS}/kimi_like.py: error: not fixed: the file changed on disk while fixing; not overwritten"
    ]
    assert kimi.read_text() == edited
    assert sorted(p.name for p in kimi.parent.iterdir() if "driftcheck" in p.name) == []


# -- configuration ---------------------------------------------------------------------------
def test_malformed_toml_names_file_and_line(runner: CliRunner, sglang_like: Path) -> None:
    config = sglang_like / "pyproject.toml"
    config.write_text('[tool.driftcheck]\nlabel = "x"\ncanonical = [\n')
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"{config}:4: error: invalid TOML: Invalid value (at end of document)"
    ]
    assert result.stdout == ""


def test_config_that_is_not_utf8_is_an_error(runner: CliRunner, sglang_like: Path) -> None:
    config = sglang_like / "pyproject.toml"
    config.write_bytes(b'[tool.driftcheck]\nlabel = "caf\xe9"\n')
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"{config}: error: cannot read configuration: 'utf-8' codec can't decode byte 0xe9 in position 30: invalid continuation byte"
    ]


def test_unknown_keys_are_warnings_naming_each_key(runner: CliRunner, sglang_like: Path) -> None:
    config = sglang_like / "pyproject.toml"
    config.write_text(
        "[tool.driftcheck]\ncannonical = []\n"
        "[[tool.driftcheck.policies]]\npath = '*'\nallow-mising = ['pplx']\n"
    )
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[:2] == [
        f"warning: {config}: unknown key 'cannonical' in [tool.driftcheck] (ignored)",
        f"warning: {config}: unknown key 'allow-mising' in policies[0] (ignored)",
    ]
    assert result.stdout.splitlines() == [DENSE, KIMI]


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        pytest.param(
            'canonical = ["sglang.srt.layers.moe.missing:is_x"]',
            ":2: canonical predicate sglang.srt.layers.moe.missing:is_x: module sglang.srt.layers.moe.missing "
            "not found under {root} (looked for sglang/srt/layers/moe/missing.py, sglang/srt/layers/moe/missing/__init__.py), "
            "and no family could be inferred from the tree's copies instead",
            id="module-not-found",
        ),
        pytest.param(
            'canonical = ["sglang.srt.layers.moe.utils:is_missing"]',
            ":2: canonical predicate sglang.srt.layers.moe.utils:is_missing: nothing named is_missing "
            "in sglang/srt/layers/moe/utils.py (looked for a function, a method or property, and a "
            "constant); no predicate follows it (considered: is_deepep_class_backend, "
            "uses_per_rank_shared_slots), and no family could be inferred from the tree's copies "
            "instead",
            id="function-not-found",
        ),
        pytest.param(
            'canonical = ["is_deepep_class_backend"]',
            ':2: [tool.driftcheck] canonical entry "is_deepep_class_backend" must look like '
            "'package.module:qualname'",
            id="no-module-part",
        ),
        pytest.param(
            "min-overlap = 0",
            ":2: [tool.driftcheck] min-overlap must be a positive integer, got 0",
            id="bad-value",
        ),
        pytest.param(
            'value-attributes = "moe_a2a_backend"\ncanonical = [1]',
            ":3: [tool.driftcheck] canonical must be a list of strings, got [1]",
            id="bad-type",
        ),
    ],
)
def test_configuration_that_cannot_be_used_is_an_error_naming_what_was_looked_for(
    runner: CliRunner, sglang_like: Path, toml: str, problem: str
) -> None:
    config = sglang_like / "pyproject.toml"
    config.write_text(f"[tool.driftcheck]\n{toml}\n")
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 2
    if problem.startswith(":"):  # a configuration error: the file and the key's line
        line, _, problem = problem[1:].partition(": ")
        where = f"{config}:{line}"
    elif "not found under" in problem:
        where = str(sglang_like)
    else:
        where = "sglang/srt/layers/moe/utils.py"
    assert result.stderr.splitlines() == [f"{where}: error: {problem.format(root=sglang_like)}"]
    assert result.stdout == ""


def test_helper_without_a_getter_names_the_helper_and_its_line(
    runner: CliRunner, sglang_like: Path
) -> None:
    utils = sglang_like / "sglang/srt/layers/moe/utils.py"
    utils.write_text(
        utils.read_text().replace(
            "    backend = get_moe_a2a_backend()\n", "    backend = _A2A_BACKEND\n"
        )
    )
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 2
    # the pack names the universe (MoeA2ABackend), so the error names the construct
    assert result.stderr.splitlines() == [
        "sglang/srt/layers/moe/utils.py:70: error: canonical predicate is_deepep_class_backend "
        "is outside what driftcheck can interpret: name '_A2A_BACKEND'"
    ]


def test_enum_that_cannot_be_found_names_it(runner: CliRunner, sglang_like: Path) -> None:
    utils = sglang_like / "sglang/srt/layers/moe/utils.py"
    text = utils.read_text().replace(
        "def get_moe_a2a_backend() -> MoeA2ABackend:", "def get_moe_a2a_backend() -> Backend:"
    )
    utils.write_text(text + "\n\nclass Backend:\n    pass\n")
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "sglang/srt/layers/moe/utils.py:65: error: canonical predicate is_deepep_class_backend is "
        "outside what driftcheck can interpret: name '_A2A_BACKEND'"
    ]


def test_canonical_module_with_a_syntax_error_names_its_line(
    runner: CliRunner, sglang_like: Path
) -> None:
    utils = sglang_like / "sglang/srt/layers/moe/utils.py"
    utils.write_text(utils.read_text() + "\ndef broken(:\n")
    result = run(runner, sglang_like, "--no-cache")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"{utils}:84: error: cannot parse: invalid syntax"]


# -- the cache -------------------------------------------------------------------------------
def cache_file(tree: Path) -> Path:
    (found,) = (tree / ".driftcheck_cache").glob("scan-*.json")
    return found


def test_truncated_cache_file_is_ignored(runner: CliRunner, sglang_like: Path) -> None:
    cold = run(runner, sglang_like)
    path = cache_file(sglang_like)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    warm = run(runner, sglang_like)
    assert (warm.exit_code, warm.stdout) == (cold.exit_code, cold.stdout)
    assert json.loads(cache_file(sglang_like).read_text())["entries"]  # rewritten whole


def test_cache_file_that_is_not_json_is_ignored(runner: CliRunner, sglang_like: Path) -> None:
    cold = run(runner, sglang_like)
    cache_file(sglang_like).write_bytes(b"\x00\xff not json at all")
    warm = run(runner, sglang_like)
    assert (warm.exit_code, warm.stdout) == (cold.exit_code, cold.stdout)


def test_cache_entry_forged_without_the_key_is_rejected(
    runner: CliRunner, sglang_like: Path
) -> None:
    """An edit that recomputes the entry's checksum without the key (here: the same hash,
    unsalted) is detected: the entry is ignored and the file scanned again."""
    import hashlib

    cold = run(runner, sglang_like)
    path = cache_file(sglang_like)
    document = json.loads(path.read_text())
    entry = document["entries"][f"{MODELS}/kimi_like.py"]  # [size, mtime, ctime, inode, data, sum]
    entry[4] = entry[4].replace('"sites":[{', '"sites":[],"x":[{', 1)
    entry[5] = hashlib.blake2b(f"{entry[:4]}|{entry[4]}".encode(), digest_size=16).hexdigest()
    path.write_text(json.dumps(document))
    warm = run(runner, sglang_like)
    assert warm.stdout == cold.stdout
    assert (
        warm.stderr.splitlines()[0]
        == f"warning: ignored 1 corrupted or tampered cache entry in {path}"
    )


def test_a_file_listed_by_forgery_among_those_without_sites_is_scanned_again(
    runner: CliRunner, sglang_like: Path
) -> None:
    """A drifting file cannot be hidden by adding it, with its stamp, to its directory's
    block of files that contribute nothing: the block no longer matches its checksum, so
    every file of it is scanned again."""
    cold = run(runner, sglang_like)
    path = cache_file(sglang_like)
    document = json.loads(path.read_text())
    entry = document["entries"].pop(f"{MODELS}/kimi_like.py")
    signature, block = document["empty"][MODELS]
    forged = block + "kimi_like.py\t" + ":".join(str(value) for value in entry[:4]) + "\n"
    document["empty"][MODELS] = [signature, forged]
    path.write_text(json.dumps(document))
    warm = run(runner, sglang_like)
    assert warm.stdout == cold.stdout
    assert warm.stderr.splitlines()[0] == (
        f"warning: ignored {forged.count(chr(10))} corrupted or tampered cache entries in {path}"
    )


def test_cache_entry_for_a_file_the_tree_does_not_have_is_never_reported(
    runner: CliRunner, sglang_like: Path
) -> None:
    cold = run(runner, sglang_like)
    path = cache_file(sglang_like)
    document = json.loads(path.read_text())
    document["entries"][f"{MODELS}/ghost.py"] = document["entries"][f"{MODELS}/kimi_like.py"]
    path.write_text(json.dumps(document))
    assert run(runner, sglang_like).stdout == cold.stdout


def test_same_size_rewrite_keeping_the_mtime_is_noticed(
    runner: CliRunner, sglang_like: Path
) -> None:
    kimi = sglang_like / MODELS / "kimi_like.py"
    run(runner, sglang_like)
    stat = kimi.stat()
    kimi.write_text(kimi.read_text().replace("is_mori()", "is_pplx()"))
    os.utime(kimi, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert run(runner, sglang_like).stdout == run(runner, sglang_like, "--no-cache").stdout


def test_unwritable_cache_directory_is_not_an_error(
    runner: CliRunner, sglang_like: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    result = runner.invoke(
        main, [str(sglang_like)], env={"DRIFTCHECK_CACHE_DIR": str(blocker / "cache")}
    )
    note("exit", result.exit_code)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [DENSE, KIMI]


def test_copy_of_the_fixture_tree_is_untouched_by_a_check(
    sglang_like: Path, tmp_path: Path
) -> None:
    """A plain check writes nothing but its cache directory."""
    reference = tmp_path / "reference"
    shutil.copytree(sglang_like, reference)
    check([sglang_like], use_cache=True)
    changed = [
        str(p.relative_to(sglang_like))
        for p in sorted(sglang_like.rglob("*"))
        if p.is_file()
        and ".driftcheck_cache" not in p.parts
        and p.read_bytes() != (reference / p.relative_to(sglang_like)).read_bytes()
    ]
    assert changed == []


def test_enum_defined_in_another_module_is_followed_through_the_import(
    runner: CliRunner, sglang_like: Path
) -> None:
    """The enum moved out of the helper's module: the import says where it is."""
    before = run(runner, sglang_like, "--no-cache")
    utils = sglang_like / "sglang/srt/layers/moe/utils.py"
    text = utils.read_text()
    start, end = text.index("class MoeA2ABackend(Enum):"), text.index("_A2A_BACKEND = None")
    (utils.parent / "backends.py").write_text("from enum import Enum\n\n\n" + text[start:end])
    utils.write_text(text[:start] + "from .backends import MoeA2ABackend\n\n\n" + text[end:])
    result = run(runner, sglang_like, "--no-cache")
    assert (result.exit_code, result.stdout) == (before.exit_code, before.stdout)
    assert result.stdout
