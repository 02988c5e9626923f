"""``driftcheck server`` specified through a real client over stdio (pytest-lsp).

What the server publishes for a document is what ``driftcheck check`` reports for the saved
file; its quick fixes and fix-all write what ``--fix`` writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from click.testing import CliRunner
from driftcheck.rules import CATALOGUE
from lsp_session import DRIFTCHECK, Editor, serving, start, stop, uri_of
from lsprotocol import types
from rule_harness import FIXTURES, example_tree

from driftcheck.cli import main
from driftcheck.replay import eligible

KIMI_LIKE = "sglang/srt/models/kimi_like.py"
DENSE_LIKE = "sglang/srt/models/dense_like.py"
HELPER = "sglang/srt/layers/moe/utils.py"
HOSTILE_MODEL = "sglang/srt/models/hostile_model.py"
KIMI_LIKE_MESSAGE = (
    "_uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 (latent), "
    "pplx (held back: no same-role site lists it) (canonical: is_deepep_class_backend)"
)
TREES = ["sglang_like", "config_like", "platform_like", "hostile"]


def copy_tree(tmp_path: Path, name: str = "sglang_like") -> Path:
    """A writable copy of fixture tree ``name``."""
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    return root


@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    """Run the CLI from ``path``."""
    here = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(here)


def cli_json(cwd: Path, *args: str) -> dict:
    """``driftcheck check --format json ARGS`` run in ``cwd``."""
    with working_directory(cwd):
        result = CliRunner().invoke(main, ["check", "--format", "json", "--no-cache", *args])
    return json.loads(result.stdout)


def cli_findings(root: Path, target: str = ".") -> dict[str, list[tuple]]:
    """The CLI's findings for ``target`` (run from ``root``), by absolute path."""
    document = cli_json(root, target)
    found: dict[str, list[tuple]] = {}
    for f in document["findings"]:
        key = str((root / document["root"] / f["path"]).resolve())
        found.setdefault(key, []).append(
            (
                f["code"],
                f["severity"],
                f["line"],
                f["col"],
                f["end_line"],
                f["end_col"],
                f["message"],
            )
        )
    return found


SEVERITY = {1: "error", 2: "warning", 3: "info"}


def shown(diagnostics: list[types.Diagnostic]) -> list[tuple]:
    """Diagnostics in the CLI's terms (1-based lines and columns)."""
    return [
        (
            d.code,
            SEVERITY[d.severity],
            d.range.start.line + 1,
            d.range.start.character + 1,
            d.range.end.line + 1,
            d.range.end.character + 1,
            d.message,
        )
        for d in diagnostics
    ]


def cli_fixed(root: Path, rel: str, *options: str) -> str:
    """The text ``driftcheck check --fix OPTIONS FILE`` leaves in a copy of ``rel``'s tree."""
    copy = root.parent / f"fixed-{root.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".driftcheck_cache"))
    with working_directory(copy):
        CliRunner().invoke(main, ["check", "--fix", "--no-cache", *options, rel])
    return (copy / rel).read_text()


@pytest_asyncio.fixture
async def editor(tmp_path: Path) -> AsyncIterator[Editor]:
    """The server on a copy of the SGLang-like fixture tree."""
    async with serving(copy_tree(tmp_path)) as session:
        yield session


def titled(actions: list[types.CodeAction], start: str) -> types.CodeAction:
    """The one action whose title starts with ``start``."""
    (action,) = [a for a in actions if a.title.startswith(start)]
    return action


# -- initialize and shutdown ------------------------------------------------------------
@pytest.mark.asyncio
async def test_initialize_advertises_diagnostics_actions_and_hover(editor: Editor) -> None:
    result = editor.initialize_result
    assert result.server_info is not None and result.server_info.name == "driftcheck"
    capabilities = result.capabilities
    assert capabilities.code_action_provider.code_action_kinds == (
        "quickfix",
        "source.fixAll.driftcheck",
    )
    assert capabilities.hover_provider
    assert capabilities.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    assert capabilities.text_document_sync.save


@pytest.mark.asyncio
async def test_shutdown_then_exit_ends_the_server_with_status_0(tmp_path: Path) -> None:
    session = await start(copy_tree(tmp_path))
    await session.open(session.root / KIMI_LIKE)
    assert await stop(session) == 0


# -- diagnostics --------------------------------------------------------------------------
@pytest.mark.asyncio
@pytest.mark.parametrize("tree", TREES)
async def test_diagnostics_equal_the_cli_on_every_file_of_the_fixture_trees(
    tmp_path: Path, tree: str
) -> None:
    root = copy_tree(tmp_path, tree)
    expected = cli_findings(root)
    async with serving(root) as session:
        for path in sorted(root.rglob("*.py")):
            diagnostics = await session.open(path)
            assert shown(diagnostics) == expected.get(str(path.resolve()), []), path


@pytest.mark.asyncio
@pytest.mark.corpus
async def test_diagnostics_equal_the_cli_on_kimi_k3_of_sglang_0_5_23(
    tmp_path: Path, sglang_0_5_23: Path
) -> None:
    kimi_k3 = "sglang/srt/models/kimi_k3.py"
    expected = cli_findings(sglang_0_5_23, kimi_k3)[str((sglang_0_5_23 / kimi_k3).resolve())]
    async with serving(
        sglang_0_5_23, env={"DRIFTCHECK_CACHE_DIR": str(tmp_path / "cache")}
    ) as session:
        assert shown(await session.open(sglang_0_5_23 / kimi_k3)) == expected
        assert [m for *_, m in expected] == [
            "_uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 (latent), "
            "pplx (held back: no same-role site lists it) (canonical: is_deepep_class_backend)"
        ]


@pytest.mark.asyncio
async def test_a_diagnostic_carries_its_rule_link_and_the_canonicals_definition(
    editor: Editor,
) -> None:
    (diagnostic,) = await editor.open(editor.root / KIMI_LIKE)
    assert diagnostic.source == "driftcheck"
    assert diagnostic.code_description.href == uri_of(
        FIXTURES.parent / "docs" / "rules" / "DC001.md"
    )
    (related,) = diagnostic.related_information
    assert related.location.uri == uri_of(editor.root / HELPER)
    assert related.location.range.start == types.Position(line=67, character=0)
    assert related.message == "is_deepep_class_backend is defined here"


@pytest.mark.asyncio
async def test_a_change_to_the_buffer_is_judged_before_it_is_saved(editor: Editor) -> None:
    path = editor.root / KIMI_LIKE
    await editor.open(path)
    text = path.read_text().replace(
        "        or _a2a_backend.is_mori()\n",
        "        or _a2a_backend.is_mori()\n        or _a2a_backend.is_pplx()\n",
    )
    editor.change(path, text)
    diagnostics = await editor.diagnostics(path)
    assert [d.message for d in diagnostics] == [
        "_uses_ep_a2a enumerates 4 of 5 DeepEP-family backends; missing deepep_v2 (latent) "
        "(canonical: is_deepep_class_backend)"
    ]


@pytest.mark.asyncio
async def test_a_syntax_error_keeps_the_diagnostics_of_the_lines_it_left_alone(
    editor: Editor,
) -> None:
    path = editor.root / KIMI_LIKE
    (before,) = await editor.open(path)
    lines = path.read_text().splitlines(keepends=True)
    editor.change(path, "".join([*lines[:3], "_TABLE = (\n", *lines[3:]]))
    error, kept = await editor.diagnostics(path)
    assert (error.message, error.range.start.line, error.code) == (
        "syntax error: '(' was never closed",
        3,
        None,
    )
    assert kept.message == before.message
    assert (kept.range.start.line, kept.range.end.line) == (
        before.range.start.line + 1,
        before.range.end.line + 1,
    )


@pytest.mark.asyncio
async def test_a_syntax_error_in_a_finding_drops_that_finding(editor: Editor) -> None:
    path = editor.root / KIMI_LIKE
    await editor.open(path)
    editor.change(path, path.read_text().replace("or _a2a_backend.is_mori()", "or (", 1))
    (error,) = await editor.diagnostics(path)
    assert error.message.startswith("syntax error: ")


STALE = "    return (  # driftcheck: allow-missing[mori] -- not validated on K3\n"
STALE_DC004 = (
    "DC004",
    "error",
    9,
    "'# driftcheck: allow-missing[mori] -- not validated on K3' matches no finding at this "
    "site; remove it",
)


def briefly(diagnostics: list[types.Diagnostic]) -> list[tuple]:
    """Code, severity, first line (1-based) and message of each diagnostic."""
    return [
        (code, severity, line, message)
        for code, severity, line, _, _, _, message in shown(diagnostics)
    ]


@pytest.mark.asyncio
async def test_a_syntax_error_elsewhere_keeps_the_suppressions_and_their_dc004(
    editor: Editor,
) -> None:
    """Issue 31 case 2: the suppressions are read past the syntax error, which is shown."""
    path = editor.root / KIMI_LIKE
    await editor.open(path)
    text = path.read_text().replace("    return (\n", STALE, 1)
    editor.change(path, text + "\n\ndef g(:\n    pass\n")
    assert briefly(await editor.diagnostics(path)) == [
        (
            None,
            "error",
            35,
            "syntax error: invalid syntax (outside the statements checked: the file's sites "
            "and suppressions were still read)",
        ),
        STALE_DC004,
        ("DC001", "error", 10, KIMI_LIKE_MESSAGE),
    ]


@pytest.mark.asyncio
async def test_the_same_buffer_without_the_syntax_error_shows_the_same_findings(
    editor: Editor,
) -> None:
    """Negative control for the test above: only the syntax error's diagnostic differs."""
    path = editor.root / KIMI_LIKE
    await editor.open(path)
    text = path.read_text().replace("    return (\n", STALE, 1)
    editor.change(path, text + "\n\ndef g():\n    pass\n")
    assert briefly(await editor.diagnostics(path)) == [
        STALE_DC004,
        ("DC001", "error", 10, KIMI_LIKE_MESSAGE),
    ]


@pytest.mark.asyncio
async def test_saving_the_helper_judges_the_other_open_documents_again(editor: Editor) -> None:
    root = editor.root
    await editor.open(root / KIMI_LIKE)
    await editor.open(root / DENSE_LIKE)
    helper = root / HELPER
    await editor.open(helper)
    editor.change(helper, helper.read_text().replace("        or backend.is_pplx()\n", "", 1))
    await editor.diagnostics(helper)
    editor.save(helper)
    republished = {}
    while len(republished) < 2:
        params = await editor.published.get()
        for path in (root / KIMI_LIKE, root / DENSE_LIKE):
            if params.uri == uri_of(path):
                republished[path] = shown(list(params.diagnostics))
    expected = cli_findings(root)
    assert republished[root / KIMI_LIKE] == expected[str((root / KIMI_LIKE).resolve())]
    assert republished[root / DENSE_LIKE] == expected[str((root / DENSE_LIKE).resolve())]
    assert [m for *_, m in republished[root / KIMI_LIKE]] == [
        "_uses_ep_a2a enumerates 3 of 4 DeepEP-family backends; missing deepep_v2 (latent) "
        "(canonical: is_deepep_class_backend)"
    ]


@pytest.mark.asyncio
async def test_a_new_configuration_on_disk_judges_the_open_documents_again(
    editor: Editor,
) -> None:
    path = editor.root / KIMI_LIKE
    await editor.open(path)
    config = editor.root / "driftcheck.toml"
    config.write_text('ignore = ["DC001"]\n')
    editor.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            [types.FileEvent(uri=uri_of(config), type=types.FileChangeType.Created)]
        )
    )
    assert await editor.diagnostics(path) == []
    assert [m for m in editor.client.log_messages if m.type == types.MessageType.Error] == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("toml", "line", "message"),
    [
        (
            'min-overlap = "two"',
            2,
            '[tool.driftcheck] min-overlap must be a positive integer, got "two"',
        ),
        ('select = ["DC999"]', 2, "[tool.driftcheck] select: unknown rule code or prefix 'DC999'"),
        ("canonical = [", 3, "invalid TOML: "),
    ],
    ids=["wrong-type", "unknown-code", "invalid-toml"],
)
async def test_language_server_shows_a_broken_configuration_at_its_line_and_in_a_message(
    tmp_path: Path, toml: str, line: int, message: str
) -> None:
    """Issue 31 case 8: not only in the log. The error is published on the configuration
    file at the line the CLI names, and shown (``window/showMessage``) as the CLI words it."""
    root = copy_tree(tmp_path)
    config = root / "pyproject.toml"
    config.write_text(f"[tool.driftcheck]\n{toml}\n")
    async with serving(root) as session:
        assert await session.open(root / KIMI_LIKE) == []
        # published while the workspace loaded, before the document's diagnostics
        (diagnostic,) = session.latest[uri_of(config)].diagnostics
        assert (diagnostic.severity, diagnostic.range.start.line + 1, diagnostic.source) == (
            types.DiagnosticSeverity.Error,
            line,
            "driftcheck",
        )
        assert diagnostic.message.startswith(message)
        shown_to_user = [m.message for m in session.client.messages]
        assert shown_to_user == [f"driftcheck: {config}:{line}: error: {diagnostic.message}"]


@pytest.mark.asyncio
async def test_language_server_withdraws_a_fixed_configurations_diagnostic(
    tmp_path: Path,
) -> None:
    root = copy_tree(tmp_path)
    config = root / "pyproject.toml"
    config.write_text('[tool.driftcheck]\nmin-overlap = "two"\n')
    async with serving(root) as session:
        path = root / KIMI_LIKE
        assert await session.open(path) == []
        assert len(session.latest[uri_of(config)].diagnostics) == 1
        config.write_text("[tool.driftcheck]\n")
        session.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent(uri=uri_of(config), type=types.FileChangeType.Changed)]
            )
        )
        assert await session.diagnostics(config) == []
        assert [d.message for d in await session.diagnostics(path)] == [KIMI_LIKE_MESSAGE]


@pytest.mark.asyncio
async def test_language_server_publishes_nothing_on_a_valid_configuration(
    tmp_path: Path,
) -> None:
    """Negative control: the open document's findings, and no message but the load's."""
    root = copy_tree(tmp_path)
    config = root / "pyproject.toml"
    config.write_text("[tool.driftcheck]\nmin-overlap = 2\n")
    async with serving(root) as session:
        assert [d.message for d in await session.open(root / KIMI_LIKE)] == [KIMI_LIKE_MESSAGE]
        assert uri_of(config) not in session.latest
        assert session.client.messages == []


@pytest.mark.asyncio
async def test_the_baseline_setting_hides_what_the_baseline_holds(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    CliRunner().invoke(
        main, ["check", "--no-cache", "--write-baseline", str(root / "baseline.json"), str(root)]
    )
    async with serving(root, {"baseline": "baseline.json"}) as session:
        assert await session.open(root / KIMI_LIKE) == []


# -- code actions -------------------------------------------------------------------------
@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("title", "options"),
    [
        ("Add the missing members (minimal): deepep_v2: False -> True", ["--fix-style", "minimal"]),
        (
            "Add the missing members (minimal): deepep_v2, pplx: False -> True (unsafe)",
            ["--fix-style", "minimal", "--unsafe-fixes"],
        ),
        (
            "Call the helper is_deepep_class_backend(): deepep_v2, pplx: False -> True (unsafe)",
            ["--fix-style", "helper", "--unsafe-fixes"],
        ),
    ],
)
async def test_a_quick_fix_writes_what_fix_writes(
    editor: Editor, title: str, options: list[str]
) -> None:
    """Each style's safe fix, and where members are held back, the same style as
    ``--unsafe-fixes`` writes it: the minimal safe fix is the preferred one (the helper's
    safe fix is refused here: calling the helper would add the held-back member too)."""
    path = editor.root / KIMI_LIKE
    (diagnostic,) = await editor.open(path)
    actions = await editor.code_actions(path, diagnostic.range)
    action = titled(actions, title)
    assert action.kind == "quickfix"
    assert action.is_preferred == (
        True if title.startswith("Add") and "unsafe" not in title else None
    )
    assert editor.applied(path, action) == cli_fixed(editor.root, KIMI_LIKE, *options)


@pytest.mark.asyncio
async def test_fix_all_writes_what_fix_writes_for_the_whole_document(editor: Editor) -> None:
    path = editor.root / KIMI_LIKE
    await editor.open(path)
    everywhere = types.Range(types.Position(0, 0), types.Position(0, 0))
    (action,) = await editor.code_actions(path, everywhere, ["source.fixAll.driftcheck"])
    assert action.title == "Fix all driftcheck findings"
    assert action.kind == "source.fixAll.driftcheck"
    assert editor.applied(path, action) == cli_fixed(editor.root, KIMI_LIKE)


@pytest.mark.asyncio
async def test_fix_all_with_unsafe_fixes_set_writes_what_unsafe_fixes_writes(
    tmp_path: Path,
) -> None:
    root = copy_tree(tmp_path, "hostile")
    async with serving(root, {"unsafeFixes": True}) as session:
        path = root / HOSTILE_MODEL
        await session.open(path)
        everywhere = types.Range(types.Position(0, 0), types.Position(0, 0))
        (action,) = await session.code_actions(path, everywhere, ["source.fixAll.driftcheck"])
        assert session.applied(path, action) == cli_fixed(root, HOSTILE_MODEL, "--unsafe-fixes")


@pytest.mark.asyncio
async def test_a_refused_fix_says_why_and_offers_no_edit(tmp_path: Path) -> None:
    root = copy_tree(tmp_path, "hostile")
    async with serving(root) as session:
        path = root / HOSTILE_MODEL
        diagnostics = await session.open(path)
        string_form = next(d for d in diagnostics if d.code == "DC003")
        actions = await session.code_actions(path, string_form.range)
        action = titled(actions, "Call the helper")
        document = cli_json(root, "--fix-style", "helper", HOSTILE_MODEL)
        refusal = next(
            f["fix_refused"]
            for f in document["findings"]
            if f["line"] == string_form.range.start.line + 1
        )
        assert action.edit is None
        assert action.disabled == types.CodeActionDisabled(reason=refusal)


@pytest.mark.asyncio
async def test_the_suppression_action_accepts_the_missing_members_with_a_reason(
    editor: Editor,
) -> None:
    path = editor.root / KIMI_LIKE
    (diagnostic,) = await editor.open(path)
    actions = await editor.code_actions(path, diagnostic.range)
    action = titled(actions, "Suppress with # driftcheck: allow-missing[deepep_v2, pplx]")
    text = editor.applied(path, action)
    assert text.splitlines()[9] == (
        "        _a2a_backend.is_megamoe()  # driftcheck: allow-missing[deepep_v2, pplx] -- <reason>"
    )
    editor.change(path, text)
    assert await editor.diagnostics(path) == []


# -- hover --------------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_hover_on_a_finding_shows_the_canonicals_members_and_the_sites(
    editor: Editor,
) -> None:
    path = editor.root / KIMI_LIKE
    (diagnostic,) = await editor.open(path)
    hover = await editor.client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri_of(path)), diagnostic.range.start)
    )
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value == (
        "**DC001** missing-family-members (error)\n\n"
        f"{KIMI_LIKE_MESSAGE}\n\n"
        "- canonical `is_deepep_class_backend`: deepep, deepep_v2, mooncake, mori, pplx\n"
        "- this site: deepep, mooncake, mori, ascend_fuseep, megamoe, flashinfer_megamoe\n"
        "- missing: deepep_v2, pplx\n"
        "  - deepep_v2: safe: latent (becomes live when KimiLikeForCausalLM is registered via "
        "register_deepep_v2_model)\n"
        "  - pplx: held back: no same-role site lists it\n"
        "- also names: megamoe, flashinfer_megamoe, ascend_fuseep\n"
    )


@pytest.mark.asyncio
async def test_a_role_consensus_finding_points_at_its_sibling(tmp_path: Path) -> None:
    example = CATALOGUE["DC020"].INVALID[0]
    root = example_tree(tmp_path, example.code, example.siblings)
    async with serving(root) as session:
        (diagnostic,) = await session.open(root / "sglang/srt/models/example.py")
        locations = [r.location.uri for r in diagnostic.related_information]
        assert uri_of(root / "sglang/srt/models/sibling_moe.py") in locations


# -- robustness ---------------------------------------------------------------------------
@pytest.mark.asyncio
async def test_a_failing_handler_is_logged_and_the_server_goes_on(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    double = Path(__file__).parent / "doubles" / "failing_hover_server.py"
    async with serving(root, command=[sys.executable, str(double)]) as session:
        path = root / KIMI_LIKE
        (diagnostic,) = await session.open(path)
        hover = await session.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri_of(path)), diagnostic.range.start)
        )
        assert hover is None
        errors = [
            m.message for m in session.client.log_messages if m.type == types.MessageType.Error
        ]
        assert errors[0].startswith("driftcheck: textDocument/hover failed:\nTraceback")
        assert errors[0].rstrip().endswith("RuntimeError: hover broke (test double)")
        session.change(path, path.read_text().replace("or _a2a_backend.is_mori()\n", "", 1))
        assert len(await session.diagnostics(path)) == 1


# -- the command ---------------------------------------------------------------------------
def test_the_server_command_is_never_answered_from_a_run_record() -> None:
    assert not eligible(["server"])


def test_the_server_command_is_listed_in_the_help() -> None:
    help_text = subprocess.run(
        [str(DRIFTCHECK), "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "server" in help_text
