"""Files that can hold only single checks are analysed when something reads them
(driftcheck.singles): a run defers them, reads those of a directory where package evidence can
judge them, and reads every one once anything is reported; the answer is the one a run that
analysed them all gives.

The tree is written here: a string setting with four transports and a family of two
(``uses_packed_layout``: mesh_ll and relay), where a single check is judged only by its package.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import driftcheck.engine
from driftcheck.engine import CheckResult, check
from driftcheck.model import Finding
from driftcheck.project import discover_project
from driftcheck.scan import FileScan, ScanSpec, scan_bytes
from driftcheck.singles import build_single_filter
from driftcheck.universe import load_universes

PARALLEL = '''\
"""Parallel settings: which transport moves tokens between ranks."""

from dataclasses import dataclass
from typing import Literal

Transport = Literal["ring", "mesh_ll", "relay", "spray"]


@dataclass
class MeshConfig:
    transport: Transport

    @property
    def use_mesh_ll(self) -> bool:
        return self.transport == "mesh_ll"

    @property
    def use_relay(self) -> bool:
        return self.transport == "relay"

    @property
    def use_spray(self) -> bool:
        return self.transport == "spray"

    @property
    def uses_packed_layout(self) -> bool:
        """Transports whose kernels take activations in the packed layout."""
        return self.use_mesh_ll or self.use_relay


@dataclass
class LayerConfig:
    mesh: MeshConfig
'''
PYPROJECT = """\
[tool.driftcheck]
pack = "none"
canonical = [
    { predicate = "meshcfg.parallel:MeshConfig.uses_packed_layout", label = "packed-layout" },
]
"""
HEADER = "from meshcfg.parallel import LayerConfig\n\n\n"
# two files of a package computing the layout with the helper: the package's evidence
USER = HEADER + (
    "def pick(layer: LayerConfig) -> str:\n"
    '    activation_layout = "packed" if layer.mesh.uses_packed_layout else "flat"\n'
    "    return activation_layout\n"
)


USERS = {"meshcfg/layouts/one.py": USER, "meshcfg/layouts/two.py": USER}


def one_member_layout(member: str) -> str:
    """The layout chosen from one member's check (the role the users play)."""
    return HEADER + (
        "def layout_of(layer: LayerConfig) -> str:\n"
        f"    if layer.mesh.use_{member}:\n"
        '        activation_layout = "packed"\n'
        "    else:\n"
        '        activation_layout = "flat"\n'
        "    return activation_layout\n"
    )


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {
        "pyproject.toml": PYPROJECT,
        "meshcfg/__init__.py": "",
        "meshcfg/parallel.py": PARALLEL,
        **files,
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def spec_of(root: Path) -> ScanSpec:
    """The tree's scan spec, with the single-check filter (deferral on)."""
    project = discover_project([root], cwd=root)
    universes = tuple(u.universe for u in load_universes(root, project.config).universes)
    spec = driftcheck.engine.scan_spec(universes, project.config)
    return replace(spec, singles=build_single_filter(universes))


def deferred(root: Path, text: str) -> bool:
    """Whether the scan defers a file holding ``text`` (it can hold only single checks)."""
    return scan_bytes("meshcfg/kernels/probe.py", text.encode(), spec_of(root)).deferred


def run(root: Path, monkeypatch: pytest.MonkeyPatch, defer: bool = True) -> CheckResult:
    if not defer:
        monkeypatch.setattr(driftcheck.engine, "single_filter", lambda *args: None)
    result = check([root], cwd=root, use_cache=False, jobs=1)
    monkeypatch.undo()
    return result


def shown(findings: list[Finding]) -> list[tuple[str, int, str, str]]:
    return [(f.path, f.span.line, f.code, f.message) for f in findings]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "tree", {})


# --- which files can hold only single checks ------------------------------------------------


def test_a_file_testing_one_member_is_deferred(tree: Path) -> None:
    assert deferred(tree, one_member_layout("relay"))


def test_two_members_in_one_expression_are_analysed(tree: Path) -> None:
    text = HEADER + "def packed(layer: LayerConfig) -> bool:\n"
    text += "    return layer.mesh.use_mesh_ll or layer.mesh.use_relay\n"
    assert not deferred(tree, text)


def test_two_members_tested_in_different_statements_are_deferred(tree: Path) -> None:
    text = (
        one_member_layout("relay")
        + "\n\n"
        + one_member_layout("mesh_ll").replace("layout_of", "other_layout").removeprefix(HEADER)
    )
    assert deferred(tree, text)


def test_a_member_split_over_lines_of_one_statement_is_analysed(tree: Path) -> None:
    text = HEADER + "def packed(layer: LayerConfig) -> bool:\n"
    text += "    return (\n        layer.mesh.use_mesh_ll\n        or layer.mesh.use_relay  # why\n    )\n"
    assert not deferred(tree, text)


def test_a_collection_of_two_values_is_analysed(tree: Path) -> None:
    text = 'PACKED = ("mesh_ll", "relay")\n'
    text += HEADER + "def packed(layer: LayerConfig) -> bool:\n"
    text += "    return layer.mesh.transport in PACKED\n"
    assert not deferred(tree, text)


@pytest.mark.parametrize(
    "line",
    [
        "    return layer.mesh.uses_packed_layout\n",  # the helper
        "    # driftcheck: ignore[DC020] -- a suppression is judged (DC004)\n",
    ],
)
def test_a_file_naming_the_helper_or_a_suppression_is_analysed(tree: Path, line: str) -> None:
    text = one_member_layout("relay") + "\n\ndef more(layer: LayerConfig):\n" + line
    assert not deferred(tree, text)


KERNEL = HEADER + 'def kernel(layer: LayerConfig) -> str:\n{body}    return "packed"\n'


@pytest.mark.parametrize(
    "body",
    [
        '    match layer.mesh.transport:\n        case "relay":\n            return "r"\n',
        '    if not layer.mesh.use_relay:\n        raise ValueError("needs a packed-layout transport")\n',
        "    if layer.mesh.use_spray:\n"
        '        raise ValueError("the packed kernel runs on mesh_ll and relay only")\n',
    ],
    ids=["a match case", "a refusal naming the family", "a refusal naming each member"],
)
def test_a_file_a_rule_may_judge_single_checks_of_is_analysed(tree: Path, body: str) -> None:
    assert not deferred(tree, KERNEL.format(body=body))


def test_a_refusal_naming_the_member_it_checks_is_no_reason_to_analyse(tree: Path) -> None:
    """Its text names each member of the family, the one tested among them: DC021 reads such
    a refusal as being about that member."""
    body = "    if not layer.mesh.use_relay:\n"
    body += '        raise ValueError("the packed kernel runs on mesh_ll and relay only")\n'
    assert deferred(tree, KERNEL.format(body=body))


def test_the_family_named_away_from_a_check_is_no_refusal(tree: Path) -> None:
    text = '"""Kernels for the packed-layout transports."""\n' + one_member_layout("relay")
    assert deferred(tree, text)


# --- what a run reads of them ---------------------------------------------------------------


def test_a_run_that_reports_nothing_leaves_them_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(
        tmp_path,
        {
            **USERS,
            "meshcfg/kernels/relay.py": one_member_layout("relay"),
        },
    )
    result = run(root, monkeypatch)
    assert (result.findings, sorted(result.deferred)) == ([], ["meshcfg/kernels/relay.py"])
    assert "meshcfg/kernels/relay.py" not in result.scans


def test_those_of_a_package_whose_siblings_use_the_family_are_read_and_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(
        tmp_path,
        {
            **USERS,
            "meshcfg/layouts/mesh_only.py": one_member_layout("mesh_ll"),
        },
    )
    result = run(root, monkeypatch)
    assert shown(result.findings) == [
        (
            "meshcfg/layouts/mesh_only.py",
            5,
            "DC020",
            "condition in layout_of tests mesh_ll where its sibling one.py:5 (pick) and 1 more "
            "sibling file in meshcfg/layouts/ compute activation_layout with "
            ".uses_packed_layout; missing relay",
        )
    ]


def test_a_finding_reads_every_deferred_file_for_its_fix_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kernels/relay.py computes the same layout from relay alone: a same-role site that
    lists the member the finding misses, so its fix may add it (read once the finding is
    made; without it relay would be held back)."""
    root = write_tree(
        tmp_path,
        {
            **USERS,
            "meshcfg/layouts/mesh_only.py": one_member_layout("mesh_ll"),
            "meshcfg/kernels/relay.py": one_member_layout("relay"),
        },
    )
    result = run(root, monkeypatch)
    [finding] = result.findings
    assert [(a.member, a.safe) for a in finding.applicability] == [("relay", True)]
    assert result.deferred == {}
    assert "meshcfg/kernels/relay.py" in result.scans


def test_deferring_changes_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(
        tmp_path,
        {
            **USERS,
            "meshcfg/layouts/mesh_only.py": one_member_layout("mesh_ll"),
            "meshcfg/kernels/relay.py": one_member_layout("relay"),
            "meshcfg/kernels/spray.py": one_member_layout("spray"),
        },
    )
    deferring, reading = run(root, monkeypatch), run(root, monkeypatch, defer=False)
    assert shown(deferring.findings) == shown(reading.findings)
    assert [f.applicability for f in deferring.findings] == [
        f.applicability for f in reading.findings
    ]


def test_a_rule_that_reads_single_checks_anywhere_turns_deferral_off(tmp_path: Path) -> None:
    """With min-overlap 1 a single check is an enumeration (DC001 reads it anywhere)."""
    root = write_tree(
        tmp_path,
        {"meshcfg/kernels/relay.py": one_member_layout("relay")},
    )
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "min-overlap = 1\n")
    result = check([root], cwd=root, use_cache=False, jobs=1)
    assert result.deferred == {}
    assert isinstance(result.scans.get("meshcfg/kernels/relay.py"), FileScan)


# --- on real code ---------------------------------------------------------------------------


@pytest.mark.corpus
def test_every_file_a_vllm_run_defers_holds_single_checks_no_refusal_names() -> None:
    """vLLM 0.33.0, zero configuration: its families are pairs, so most files naming a member
    are deferred. Each, analysed in full, holds single checks only, and none stands in front
    of a refusal whose text names a family (what DC021 would read)."""
    from driftcheck.corpus import fetch_release
    from driftcheck.families import names_family

    tree = fetch_release("vllm==0.33.0")
    result = check([tree], use_cache=False)
    # its one finding (qwen4_exp's hand-written complement, DC021) reads no other site
    assert [(f.code, f.path) for f in result.findings] == [
        ("DC021", "vllm/models/qwen4_exp/__init__.py")
    ]
    assert len(result.deferred) > 200
    assert result.analysis is not None
    universes = result.universes
    for rel, file in sorted(result.deferred.items()):
        scan = scan_bytes(rel, Path(file.path).read_bytes(), result.analysis.spec)
        assert {site.form for site in scan.sites} <= {"single"}, rel
        assert not scan.suppressions and not scan.problems, rel
        for site in scan.sites:
            universe = universes[site.universe]
            assert not any(names_family(site.role.refusal, f, universe) for f in universe.families)


def test_the_language_server_judges_a_buffer_as_the_cli_judges_the_file(
    tmp_path: Path,
) -> None:
    """The server's project defers the same files; a buffer whose finding reads every site
    reads them, and its applicability is the one ``driftcheck check FILE`` gives."""
    from driftcheck.server.live import LiveProject
    from driftcheck.server.settings import Settings

    rel = "meshcfg/layouts/mesh_only.py"
    root = write_tree(
        tmp_path,
        {
            **USERS,
            rel: USER,  # saved without drift: the load reports nothing and reads no deferred file
            "meshcfg/kernels/relay.py": one_member_layout("relay"),
        },
    )
    project = LiveProject.load(root, root, Settings())
    assert "meshcfg/kernels/relay.py" in project.deferred
    edited = one_member_layout("mesh_ll")
    live = project.judge(rel, edited.encode())
    (root / rel).write_text(edited)
    cli = check([root / rel], cwd=root, use_cache=False, jobs=1)
    assert shown(live.findings) == shown(cli.findings)
    assert [f.applicability for f in live.findings] == [f.applicability for f in cli.findings]
    assert project.deferred == {}
    assert "meshcfg/kernels/relay.py" in project.scans
