"""``--format github``: GitHub Actions workflow commands, escaped per the Actions toolkit."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftcheck.cli import main
from driftcheck.engine import check
from driftcheck.model import Finding, Problem, Span
from driftcheck.report.github import escape_data, escape_property, render_github

K3_LIKE = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


def _uses_ep_a2a() -> bool:
    _a2a_backend = get_moe_a2a_backend()
    return (
        _a2a_backend.is_megamoe()
        or _a2a_backend.is_deepep()
        or _a2a_backend.is_mooncake()
        or _a2a_backend.is_mori()
    )
"""

ONE_LINE = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


def uses_a2a() -> bool:
    b = get_moe_a2a_backend()
    return b.is_deepep() or b.is_mooncake()
"""

CLEAN = """\
from sglang.srt.layers.moe.utils import is_deepep_class_backend


def uses_a2a() -> bool:
    return is_deepep_class_backend()
"""


def model(root: Path, name: str, source: str) -> Path:
    path = root / "sglang" / "srt" / "models" / name
    path.write_text(source, encoding="utf-8")
    return path


def finding(severity: str = "error", message: str = "m", path: str = "a.py") -> Finding:
    return Finding(
        code="DC001", severity=severity, path=path, span=Span(3, 4, 3, 20), symbol="f",  # type: ignore[arg-type]
        canonical="is_deepep_class_backend", members=(), missing=("pplx",), extra=(), message=message,
    )  # fmt: skip


def test_multi_line_site_gives_lines_without_columns(sglang_like: Path) -> None:
    """GitHub supports a column range only on one line; a multi-line span names its lines."""
    result = check([model(sglang_like, "k3_like.py", K3_LIKE)], use_cache=False)
    assert render_github(result.findings, result.problems) == (
        "::error file=sglang/srt/models/k3_like.py,line=7,endLine=10,title=DC001::"
        "_uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 (held back), "
        "pplx (held back: no same-role site lists them) (canonical: is_deepep_class_backend)\n"
    )


def test_one_line_site_gives_the_column_range(sglang_like: Path) -> None:
    result = check([model(sglang_like, "one_line.py", ONE_LINE)], use_cache=False)
    assert render_github(result.findings, result.problems) == (
        "::error file=sglang/srt/models/one_line.py,line=6,col=12,endLine=6,endColumn=44,title=DC001::"
        "uses_a2a enumerates 2 of 5 DeepEP-family backends; missing deepep_v2 (held back), "
        "mori (held back), pplx (held back: no same-role site lists them) "
        "(canonical: is_deepep_class_backend)\n"
    )


@pytest.mark.parametrize(
    ("severity", "kind"), [("error", "error"), ("warning", "warning"), ("info", "notice")]
)
def test_command_follows_severity(severity: str, kind: str) -> None:
    assert render_github([finding(severity)], []) == (
        f"::{kind} file=a.py,line=3,col=5,endLine=3,endColumn=21,title=DC001::m\n"
    )


def test_message_escapes_percent_and_line_breaks() -> None:
    assert escape_data("100% of\r\nit: a, b") == "100%25 of%0D%0Ait: a, b"


def test_property_escapes_colon_and_comma_too() -> None:
    assert escape_property("C:\\x,y%\n") == "C%3A\\x%2Cy%25%0A"


def test_escaping_applies_to_a_whole_command() -> None:
    odd = finding(message="50% done\nnext: a, b", path="dir,1/x:y.py")
    assert render_github([odd], []) == (
        "::error file=dir%2C1/x%3Ay.py,line=3,col=5,endLine=3,endColumn=21,title=DC001::50%25 done%0Anext: a, b\n"
    )


def test_unparsable_file_is_an_error_annotation(sglang_like: Path) -> None:
    broken = model(
        sglang_like,
        "broken.py",
        "def f(:\n    b = get_moe_a2a_backend()\n    return b.is_deepep() or b.is_mori()\n",
    )
    result = check([broken], use_cache=False)
    assert render_github(result.findings, result.problems) == (
        "::error file=sglang/srt/models/broken.py,line=1,title=driftcheck::syntax error: invalid syntax; file skipped\n"
    )


def test_problem_without_a_line_names_the_file() -> None:
    assert render_github([], [Problem("x.py", None, "cannot read file")]) == (
        "::error file=x.py,title=driftcheck::cannot read file\n"
    )


def test_paths_are_relative_to_the_working_directory(tmp_path: Path, sglang_like: Path) -> None:
    """SGLang's repository keeps the package under python/: annotations must name python/..."""
    repo = tmp_path / "repo"
    (repo / "python").mkdir(parents=True)
    (sglang_like / "sglang").rename(repo / "python" / "sglang")
    result = check([model(repo / "python", "one_line.py", ONE_LINE)], cwd=repo, use_cache=False)
    (only,) = result.findings
    assert only.path == "sglang/srt/models/one_line.py"
    assert render_github(result.findings, [], result.project).startswith(
        "::error file=python/sglang/srt/models/one_line.py,line=6,"
    )


def test_cli_prints_annotations_from_the_repository_root(
    tmp_path: Path, sglang_like: Path, runner, monkeypatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "python").mkdir(parents=True)
    (sglang_like / "sglang").rename(repo / "python" / "sglang")
    model(repo / "python", "one_line.py", ONE_LINE)
    monkeypatch.chdir(repo)
    outcome = runner.invoke(
        main, ["--no-cache", "--format", "github", "python/sglang/srt/models/one_line.py"]
    )
    assert outcome.exit_code == 1
    assert outcome.stdout == (
        "::error file=python/sglang/srt/models/one_line.py,line=6,col=12,endLine=6,endColumn=44,title=DC001::"
        "uses_a2a enumerates 2 of 5 DeepEP-family backends; missing deepep_v2 (held back), "
        "mori (held back), pplx (held back: no same-role site lists them) "
        "(canonical: is_deepep_class_backend)\n"
    )


def test_cli_prints_nothing_for_a_clean_file(sglang_like: Path, runner, monkeypatch) -> None:
    model(sglang_like, "clean.py", CLEAN)
    monkeypatch.chdir(sglang_like)
    outcome = runner.invoke(
        main, ["--no-cache", "--format", "github", "sglang/srt/models/clean.py"]
    )
    assert (outcome.exit_code, outcome.stdout) == (0, "")
