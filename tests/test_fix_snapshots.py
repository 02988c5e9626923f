"""The exact text ``--fix`` writes, form by form and style by style (fixture universe: family
deepep, deepep_v2, mooncake, mori, pplx; other members none, nixl, ascend_fuseep, flashinfer,
megamoe, flashinfer_megamoe)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from rule_harness import EXAMPLE_PATH, FIXTURES, HEADER

from driftcheck.engine import check
from driftcheck.fix.apply import FixOutcome, apply_fixes, attach_fixes
from driftcheck.model import Finding


@dataclass
class Fixed:
    """The example file after one ``--fix`` pass, and what the pass said."""

    text: str
    notes: list[str]
    outcome: FixOutcome
    findings: list[Finding]


def fix(
    tmp_path: Path,
    snippet: str,
    style: str = "minimal",
    header: str = HEADER,
    config: str | None = None,
    newline: str = "\n",
    utils_tail: str = "",
) -> Fixed:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    if config is not None:
        (root / "pyproject.toml").write_text(config)
    if utils_tail:
        utils = root / "sglang/srt/layers/moe/utils.py"
        utils.write_text(utils.read_text() + utils_tail)
    path = root / EXAMPLE_PATH
    path.write_bytes((header + snippet).replace("\n", newline).encode())
    result = check([path], use_cache=False)
    assert not result.problems, result.problems
    findings = attach_fixes(result, result.findings, style, unsafe=True)
    outcome = apply_fixes(result, findings, write=True)
    text = path.read_bytes().decode()
    head = header.replace("\n", newline)
    return Fixed(
        text[len(head) :] if text.startswith(head) else text,
        [without_applicability(n) for n in outcome.notes],
        outcome,
        findings,
    )


def without_applicability(text: str) -> str:
    """A note without what it says of the members' applicability (``; unsafe: pplx (...)``):
    these are the rewrites' specifications, every member added (``--unsafe-fixes``);
    ``test_fix_applicability.py`` specifies the applicability."""
    return text.split("; unsafe: ", 1)[0]


def note(line: int, text: str) -> str:
    """A note for snippet line ``line`` (the header takes 7 lines)."""
    return f"{EXAMPLE_PATH}:{line + 7}: {text}"


# -- minimal style: or-chains ----------------------------------------------------------------
def test_minimal_inline_or_chain_in_assignment(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    uses = b.is_deepep() or b.is_mori()\n"
        "    return uses\n",
    )
    assert result.text == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    uses = (\n"
        "        b.is_deepep()\n"
        "        or b.is_deepep_v2()\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "        or b.is_pplx()\n"
        "    )\n"
        "    return uses\n"
    )
    assert result.notes == [
        note(3, "fixed DC001 (minimal): False -> True for deepep_v2, mooncake, pplx")
    ]


def test_minimal_one_operand_per_line_in_return_follows_the_canonical_order(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def uses_ep_a2a() -> bool:\n"
        "    _a2a_backend = get_moe_a2a_backend()\n"
        "    return (\n"
        "        _a2a_backend.is_megamoe()\n"
        "        or _a2a_backend.is_flashinfer_megamoe()\n"
        "        or _a2a_backend.is_deepep()\n"
        "        or _a2a_backend.is_mooncake()\n"
        "        or _a2a_backend.is_ascend_fuseep()\n"
        "        or _a2a_backend.is_mori()\n"
        "    )\n",
    )
    assert result.text == (
        "def uses_ep_a2a() -> bool:\n"
        "    _a2a_backend = get_moe_a2a_backend()\n"
        "    return (\n"
        "        _a2a_backend.is_megamoe()\n"
        "        or _a2a_backend.is_flashinfer_megamoe()\n"
        "        or _a2a_backend.is_deepep()\n"
        "        or _a2a_backend.is_deepep_v2()\n"
        "        or _a2a_backend.is_mooncake()\n"
        "        or _a2a_backend.is_ascend_fuseep()\n"
        "        or _a2a_backend.is_mori()\n"
        "        or _a2a_backend.is_pplx()\n"
        "    )\n"
    )


def test_minimal_member_without_a_present_predecessor_goes_before_the_first_family_operand(
    tmp_path: Path,
) -> None:
    result = fix(
        tmp_path,
        "def f(x):\n"
        "    if get_moe_a2a_backend().is_megamoe() or get_moe_a2a_backend().is_mooncake() or get_moe_a2a_backend().is_mori():\n"
        "        return x\n",
    )
    assert result.text == (
        "def f(x):\n"
        "    if (\n"
        "        get_moe_a2a_backend().is_megamoe()\n"
        "        or get_moe_a2a_backend().is_deepep()\n"
        "        or get_moe_a2a_backend().is_deepep_v2()\n"
        "        or get_moe_a2a_backend().is_mooncake()\n"
        "        or get_moe_a2a_backend().is_mori()\n"
        "        or get_moe_a2a_backend().is_pplx()\n"
        "    ):\n"
        "        return x\n"
    )


def test_minimal_first_operand_of_the_chain_gets_its_predecessors_in_front(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "    )\n",
    )
    assert result.text == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()\n"
        "        or b.is_deepep_v2()\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "        or b.is_pplx()\n"
        "    )\n"
    )


def test_minimal_trailing_operator_layout(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (b.is_deepep() or\n"
        "            b.is_mooncake() or\n"
        "            b.is_mori())\n",
    )
    assert result.text == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (b.is_deepep() or\n"
        "            b.is_deepep_v2() or\n"
        "            b.is_mooncake() or\n"
        "            b.is_mori() or\n"
        "            b.is_pplx())\n"
    )


def test_minimal_keeps_unrelated_conditions_and_counts_flips_for_some_setting(
    tmp_path: Path,
) -> None:
    result = fix(
        tmp_path,
        "class Layer:\n"
        "    def __init__(self, is_moe):\n"
        "        self._is_moe_layer = is_moe\n"
        "        _a2a_backend = get_moe_a2a_backend()\n"
        "        self._sp_moe = (\n"
        "            (\n"
        "                _a2a_backend.is_megamoe()\n"
        "                or _a2a_backend.is_deepep()\n"
        "                or _a2a_backend.is_mooncake()\n"
        "                or _a2a_backend.is_mori()\n"
        "            )\n"
        "            and self._is_moe_layer\n"
        "        )\n\n"
        "    def forward(self, x):\n"
        "        return x if self._sp_moe else -x\n",
    )
    assert result.text == (
        "class Layer:\n"
        "    def __init__(self, is_moe):\n"
        "        self._is_moe_layer = is_moe\n"
        "        _a2a_backend = get_moe_a2a_backend()\n"
        "        self._sp_moe = (\n"
        "            (\n"
        "                _a2a_backend.is_megamoe()\n"
        "                or _a2a_backend.is_deepep()\n"
        "                or _a2a_backend.is_deepep_v2()\n"
        "                or _a2a_backend.is_mooncake()\n"
        "                or _a2a_backend.is_mori()\n"
        "                or _a2a_backend.is_pplx()\n"
        "            )\n"
        "            and self._is_moe_layer\n"
        "        )\n\n"
        "    def forward(self, x):\n"
        "        return x if self._sp_moe else -x\n"
    )
    assert result.notes == [note(7, "fixed DC001 (minimal): False -> True for deepep_v2, pplx")]


def test_minimal_other_terms_inside_the_chain_stay_in_place(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f(flag):\n"
        "    b = get_moe_a2a_backend()\n"
        "    return flag or b.is_deepep() or b.is_mori()\n",
    )
    assert result.text == (
        "def f(flag):\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        flag\n"
        "        or b.is_deepep()\n"
        "        or b.is_deepep_v2()\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "        or b.is_pplx()\n"
        "    )\n"
    )
    assert result.notes == [
        note(3, "fixed DC001 (minimal): False -> True for deepep_v2, mooncake, pplx")
    ]


# -- minimal style: comments -----------------------------------------------------------------
def test_minimal_comment_on_the_anchor_line_stays_with_the_anchor(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()  # the first one\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "    )\n",
    )
    assert result.text == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()  # the first one\n"
        "        or b.is_deepep_v2()\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "        or b.is_pplx()\n"
        "    )\n"
    )


def test_minimal_comment_line_before_an_operand_stays_above_that_operand(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()\n"
        "        # mooncake shares the DeepEP dispatcher\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "        or b.is_pplx()\n"
        "    )\n",
    )
    assert result.text == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()\n"
        "        or b.is_deepep_v2()\n"
        "        # mooncake shares the DeepEP dispatcher\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "        or b.is_pplx()\n"
        "    )\n"
    )


def test_minimal_comment_after_the_last_operand_stays_on_its_line(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()\n"
        "        or b.is_deepep_v2()\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()  # last one\n"
        "    )\n",
    )
    assert result.text == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()\n"
        "        or b.is_deepep_v2()\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()  # last one\n"
        "        or b.is_pplx()\n"
        "    )\n"
    )


# -- minimal style: negated forms ------------------------------------------------------------
def test_minimal_not_or(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if not (b.is_deepep() or b.is_mooncake() or b.is_mori()):\n"
        "        return x\n",
    )
    assert result.text == (
        "def f(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if not (\n"
        "        b.is_deepep()\n"
        "        or b.is_deepep_v2()\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "        or b.is_pplx()\n"
        "    ):\n"
        "        return x\n"
    )
    assert result.notes == [note(3, "fixed DC001 (minimal): True -> False for deepep_v2, pplx")]


def test_minimal_and_not(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if (\n"
        "        not b.is_deepep()\n"
        "        and not b.is_mooncake()\n"
        "        and not b.is_mori()\n"
        "    ):\n"
        "        return x\n",
    )
    assert result.text == (
        "def f(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if (\n"
        "        not b.is_deepep()\n"
        "        and not b.is_deepep_v2()\n"
        "        and not b.is_mooncake()\n"
        "        and not b.is_mori()\n"
        "        and not b.is_pplx()\n"
        "    ):\n"
        "        return x\n"
    )
    assert result.notes == [note(4, "fixed DC001 (minimal): True -> False for deepep_v2, pplx")]


# -- minimal style: values -------------------------------------------------------------------
def test_minimal_string_tuple_one_per_line_with_trailing_comma(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def runs_locally(cfg) -> bool:\n"
        "    return cfg.moe_a2a_backend not in (\n"
        "        'deepep',\n"
        "        'megamoe',\n"
        "        'mooncake',\n"
        "        'mori',\n"
        "    )\n",
    )
    assert result.text == (
        "def runs_locally(cfg) -> bool:\n"
        "    return cfg.moe_a2a_backend not in (\n"
        "        'deepep',\n"
        "        'deepep_v2',\n"
        "        'megamoe',\n"
        "        'mooncake',\n"
        "        'mori',\n"
        "        'pplx',\n"
        "    )\n"
    )
    assert result.notes == [note(2, "fixed DC003 (minimal): True -> False for deepep_v2, pplx")]


def test_minimal_string_list(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        'def f(server_args):\n    return server_args.moe_a2a_backend in ["mooncake", "mori"]\n',
    )
    assert result.text == (
        "def f(server_args):\n"
        "    return server_args.moe_a2a_backend in [\n"
        '        "deepep",\n'
        '        "deepep_v2",\n'
        '        "mooncake",\n'
        '        "mori",\n'
        '        "pplx",\n'
        "    ]\n"
    )


def test_minimal_string_set_in_frozenset_call(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f(server_args):\n"
        '    return server_args.moe_a2a_backend in frozenset({"deepep", "mori"})\n',
    )
    assert result.text == (
        "def f(server_args):\n"
        "    return server_args.moe_a2a_backend in frozenset(\n"
        '        {"deepep", "deepep_v2", "mooncake", "mori", "pplx"}\n'
        "    )\n"
    )


def test_minimal_enum_member_tuple(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f() -> bool:\n"
        "    return get_moe_a2a_backend() in (\n"
        "        MoeA2ABackend.DEEPEP,\n"
        "        MoeA2ABackend.MORI,\n"
        "    )\n",
    )
    assert result.text == (
        "def f() -> bool:\n"
        "    return get_moe_a2a_backend() in (\n"
        "        MoeA2ABackend.DEEPEP,\n"
        "        MoeA2ABackend.DEEPEP_V2,\n"
        "        MoeA2ABackend.MOONCAKE,\n"
        "        MoeA2ABackend.MORI,\n"
        "        MoeA2ABackend.PPLX,\n"
        "    )\n"
    )


def test_minimal_eq_chain(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f(cfg) -> bool:\n"
        "    return cfg.moe_a2a_backend == 'deepep' or cfg.moe_a2a_backend == 'mooncake' or cfg.moe_a2a_backend == 'mori'\n",
    )
    assert result.text == (
        "def f(cfg) -> bool:\n"
        "    return (\n"
        "        cfg.moe_a2a_backend == 'deepep'\n"
        "        or cfg.moe_a2a_backend == 'deepep_v2'\n"
        "        or cfg.moe_a2a_backend == 'mooncake'\n"
        "        or cfg.moe_a2a_backend == 'mori'\n"
        "        or cfg.moe_a2a_backend == 'pplx'\n"
        "    )\n"
    )


def test_minimal_ne_chain(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def runs_locally(cfg) -> bool:\n"
        "    return cfg.moe_a2a_backend != 'deepep' and cfg.moe_a2a_backend != 'mooncake' and cfg.moe_a2a_backend != 'mori'\n",
    )
    assert result.text == (
        "def runs_locally(cfg) -> bool:\n"
        "    return (\n"
        "        cfg.moe_a2a_backend != 'deepep'\n"
        "        and cfg.moe_a2a_backend != 'deepep_v2'\n"
        "        and cfg.moe_a2a_backend != 'mooncake'\n"
        "        and cfg.moe_a2a_backend != 'mori'\n"
        "        and cfg.moe_a2a_backend != 'pplx'\n"
        "    )\n"
    )
    assert result.notes == [note(2, "fixed DC003 (minimal): True -> False for deepep_v2, pplx")]


# -- minimal style: constants ----------------------------------------------------------------
def test_minimal_module_constant_used_once_is_edited(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "_A2A_BACKENDS = (\n"
        '    "deepep",\n'
        '    "mooncake",\n'
        ")\n"
        "\n"
        "\n"
        "def spans_ep(view) -> bool:\n"
        "    return view.moe_a2a_backend in _A2A_BACKENDS\n",
    )
    assert result.text == (
        "_A2A_BACKENDS = (\n"
        '    "deepep",\n'
        '    "deepep_v2",\n'
        '    "mooncake",\n'
        '    "mori",\n'
        '    "pplx",\n'
        ")\n"
        "\n"
        "\n"
        "def spans_ep(view) -> bool:\n"
        "    return view.moe_a2a_backend in _A2A_BACKENDS\n"
    )
    assert result.notes == [
        note(8, "fixed DC003 (minimal): False -> True for deepep_v2, mori, pplx")
    ]


def test_minimal_function_constant_used_once_is_edited(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def runs_locally(cfg) -> bool:\n"
        '    remote = ("none", "deepep", "megamoe", "mori")\n'
        "    return cfg.moe_a2a_backend not in remote\n",
    )
    assert result.text == (
        "def runs_locally(cfg) -> bool:\n"
        '    remote = ("none", "deepep", "deepep_v2", "mooncake", "megamoe", "mori", "pplx")\n'
        "    return cfg.moe_a2a_backend not in remote\n"
    )


def test_minimal_constant_used_elsewhere_is_refused(tmp_path: Path) -> None:
    snippet = (
        "def runs_locally(cfg) -> bool:\n"
        '    remote = ("none", "deepep", "megamoe", "mori")\n'
        "    local = cfg.moe_a2a_backend not in remote\n"
        '    print(f"remote: {remote}")\n'
        "    return local\n"
    )
    result = fix(tmp_path, snippet)
    assert result.text == snippet
    assert result.notes == [
        note(
            3,
            "not fixed DC003: constant remote is also used at line 11; editing it would change "
            "that use too, so add the members by hand",
        )
    ]
    assert [f.code for f in result.outcome.remaining] == ["DC003"]


# -- suppressions ----------------------------------------------------------------------------
def test_allowed_missing_member_is_never_added(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def uses_ep_a2a() -> bool:\n"
        "    _a2a_backend = get_moe_a2a_backend()\n"
        "    return (  # driftcheck: allow-missing[pplx] -- not validated here\n"
        "        _a2a_backend.is_deepep()\n"
        "        or _a2a_backend.is_mooncake()\n"
        "        or _a2a_backend.is_mori()\n"
        "    )\n",
    )
    assert result.text == (
        "def uses_ep_a2a() -> bool:\n"
        "    _a2a_backend = get_moe_a2a_backend()\n"
        "    return (  # driftcheck: allow-missing[pplx] -- not validated here\n"
        "        _a2a_backend.is_deepep()\n"
        "        or _a2a_backend.is_deepep_v2()\n"
        "        or _a2a_backend.is_mooncake()\n"
        "        or _a2a_backend.is_mori()\n"
        "    )\n"
    )
    assert result.notes == [note(4, "fixed DC001 (minimal): False -> True for deepep_v2")]


# -- helper style ----------------------------------------------------------------------------
def test_helper_keeps_the_extras_after_the_helper(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def uses_ep_a2a() -> bool:\n"
        "    _a2a_backend = get_moe_a2a_backend()\n"
        "    return (\n"
        "        _a2a_backend.is_megamoe()\n"
        "        or _a2a_backend.is_flashinfer_megamoe()\n"
        "        or _a2a_backend.is_deepep()\n"
        "        or _a2a_backend.is_mooncake()\n"
        "        or _a2a_backend.is_ascend_fuseep()\n"
        "        or _a2a_backend.is_mori()\n"
        "    )\n",
        style="helper",
    )
    assert result.text == (
        "def uses_ep_a2a() -> bool:\n"
        "    _a2a_backend = get_moe_a2a_backend()\n"
        "    return (\n"
        "        is_deepep_class_backend()\n"
        "        or _a2a_backend.is_megamoe()\n"
        "        or _a2a_backend.is_flashinfer_megamoe()\n"
        "        or _a2a_backend.is_ascend_fuseep()\n"
        "    )\n"
    )
    assert result.notes == [note(4, "fixed DC001 (helper): False -> True for deepep_v2, pplx")]


def test_helper_inline_with_extras(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b.is_megamoe() or b.is_deepep() or b.is_mori() or b.is_ascend_fuseep()\n",
        style="helper",
    )
    assert result.text == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return is_deepep_class_backend() or b.is_megamoe() or b.is_ascend_fuseep()\n"
    )


def test_helper_removes_the_receiver_left_unused_and_the_grouping_parentheses(
    tmp_path: Path,
) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    # the backend in use\n"
        "    backend = get_moe_a2a_backend()\n"
        "    return (\n"
        "        backend.is_deepep()\n"
        "        or backend.is_mori()\n"
        "    )\n",
        style="helper",
    )
    assert result.text == (
        "def f():\n    # the backend in use\n    return is_deepep_class_backend()\n"
    )


def test_helper_not_or_becomes_not_helper(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f(x):\n"
        "    if not (get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()):\n"
        "        return x\n",
        style="helper",
    )
    assert result.text == "def f(x):\n    if not is_deepep_class_backend():\n        return x\n"
    assert result.notes == [
        note(2, "fixed DC001 (helper): True -> False for deepep_v2, mooncake, pplx")
    ]


def test_helper_and_not_keeps_the_negated_extras(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if not b.is_deepep() and not b.is_mooncake() and not b.is_ascend_fuseep():\n"
        "        return x\n",
        style="helper",
    )
    assert result.text == (
        "def f(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if not is_deepep_class_backend() and not b.is_ascend_fuseep():\n"
        "        return x\n"
    )


def test_helper_and_not_inside_a_comparison_keeps_its_grouping_parentheses(
    tmp_path: Path,
) -> None:
    """``x == not is_x()`` would not compile: a lone negation keeps the parentheses its place
    needs (a whole condition or value loses them, as above)."""
    result = fix(
        tmp_path,
        "def f(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    return x == (not b.is_deepep() and not b.is_mori())\n",
        style="helper",
    )
    assert result.text == "def f(x):\n    return x == (not is_deepep_class_backend())\n"


def test_helper_import_is_merged_one_name_per_line_in_sort_order(tmp_path: Path) -> None:
    header = (
        "from sglang.srt.layers.moe.utils import (\n"
        "    MoeA2ABackend,\n"
        "    get_moe_a2a_backend,\n"
        "    uses_per_rank_shared_slots,\n"
        ")\n\n\n"
    )
    result = fix(
        tmp_path,
        "def f():\n    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n",
        style="helper",
        header=header,
    )
    assert result.text == (
        "from sglang.srt.layers.moe.utils import (\n"
        "    MoeA2ABackend,\n"
        "    get_moe_a2a_backend,\n"
        "    is_deepep_class_backend,\n"
        "    uses_per_rank_shared_slots,\n"
        ")\n\n\n"
        "def f():\n    return is_deepep_class_backend()\n"
    )
    fix_object = next(f.fix for f in result.findings if f.fix)
    assert (
        fix_object.import_line == "from sglang.srt.layers.moe.utils import is_deepep_class_backend"
    )


def test_helper_import_is_merged_inline(tmp_path: Path) -> None:
    header = "from sglang.srt.layers.moe.utils import MoeA2ABackend, get_moe_a2a_backend\n\n\n"
    result = fix(
        tmp_path,
        "def f():\n    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n",
        style="helper",
        header=header,
    )
    assert result.text == (
        "from sglang.srt.layers.moe.utils import (\n"
        "    MoeA2ABackend,\n"
        "    get_moe_a2a_backend,\n"
        "    is_deepep_class_backend,\n"
        ")\n\n\n"
        "def f():\n    return is_deepep_class_backend()\n"
    )


def test_helper_import_is_added_after_the_package_import(tmp_path: Path) -> None:
    header = "import os\n\nfrom sglang.srt.layers.moe import get_moe_a2a_backend\n\n\n"
    result = fix(
        tmp_path,
        "def f():\n    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n",
        style="helper",
        header=header,
    )
    assert result.text == (
        "import os\n\n"
        "from sglang.srt.layers.moe import get_moe_a2a_backend\n"
        "from sglang.srt.layers.moe.utils import is_deepep_class_backend\n\n\n"
        "def f():\n    return is_deepep_class_backend()\n"
    )


def test_helper_is_called_directly_inside_its_own_module(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    utils = root / "sglang/srt/layers/moe/utils.py"
    original = utils.read_text()
    utils.write_text(
        original + "\n\ndef uses_a2a() -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b.is_deepep() or b.is_mori()\n"
    )
    result = check([utils], use_cache=False)
    outcome = apply_fixes(
        result, attach_fixes(result, result.findings, "helper", unsafe=True), write=True
    )
    assert (
        utils.read_text()
        == original + "\n\ndef uses_a2a() -> bool:\n    return is_deepep_class_backend()\n"
    )
    notes = [without_applicability(n) for n in outcome.notes]
    assert [n for n in notes if n.startswith("sglang/srt/layers/moe/utils.py")] == [
        f"sglang/srt/layers/moe/utils.py:{len(original.splitlines()) + 5}: fixed DC001 (helper): "
        "False -> True for deepep_v2, mooncake, pplx"
    ]


def test_helper_is_refused_for_value_comparisons(tmp_path: Path) -> None:
    snippet = "def f(server_args):\n    return server_args.moe_a2a_backend in ('deepep', 'mori')\n"
    result = fix(tmp_path, snippet, style="helper")
    assert result.text == snippet
    assert result.notes == [
        note(
            2,
            "not fixed DC003: helper style is not offered for value comparisons: they usually run "
            "on server arguments, before the runtime backend that is_deepep_class_backend() reads "
            "is set; use --fix-style minimal",
        )
    ]


def test_helper_is_refused_where_a_member_is_deliberately_left_out(tmp_path: Path) -> None:
    snippet = (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    # driftcheck: allow-missing[pplx] -- not validated here\n"
        "    return b.is_deepep() or b.is_mooncake() or b.is_mori()\n"
    )
    result = fix(tmp_path, snippet, style="helper")
    assert result.text == snippet
    assert result.notes == [
        note(
            4,
            "not fixed DC001: the site deliberately leaves out pplx; is_deepep_class_backend() "
            "would add it (use --fix-style minimal)",
        )
    ]


def test_helper_is_refused_for_a_receiver_that_is_a_parameter(tmp_path: Path) -> None:
    snippet = (
        "def f(backend: MoeA2ABackend) -> bool:\n"
        "    return backend.is_deepep() or backend.is_mori()\n"
    )
    result = fix(tmp_path, snippet, style="helper")
    assert result.text == snippet
    assert result.notes == [
        note(
            2,
            "not fixed DC001: 'backend' is not known to be get_moe_a2a_backend(): "
            "is_deepep_class_backend() reads the global backend instead (use --fix-style minimal)",
        )
    ]


def test_helper_is_refused_when_comments_sit_between_the_operands(tmp_path: Path) -> None:
    snippet = (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()  # first\n"
        "        or b.is_mori()\n"
        "    )\n"
    )
    result = fix(tmp_path, snippet, style="helper")
    assert result.text == snippet
    assert result.notes == [
        note(
            4,
            "not fixed DC001: comments between the operands would be moved or dropped by the "
            "helper style; use --fix-style minimal or rewrite by hand",
        )
    ]


def test_per_site_policy_fix_style_overrides_the_run_style(tmp_path: Path) -> None:
    config = (
        "[tool.driftcheck]\n"
        "[[tool.driftcheck.policies]]\n"
        'path = "sglang/srt/models/example.py"\n'
        'symbol = "f"\n'
        'fix-style = "helper"\n'
    )
    result = fix(
        tmp_path,
        "def f():\n    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n",
        config=config,
    )
    assert result.text == "def f():\n    return is_deepep_class_backend()\n"


# -- helper style with a canonical constant --------------------------------------------------
CONSTANT_CONFIG = (
    "[tool.driftcheck]\ncanonical = [{ predicate = "
    '"sglang.srt.layers.moe.utils:A2A_FAMILY", label = "A2A" }]\n'
)
A2A_MEMBERS = "MoeA2ABackend.DEEPEP, MoeA2ABackend.MOONCAKE, MoeA2ABackend.MORI"
CONSTANT_HEADER = HEADER.replace("(\n", "(\n    A2A_FAMILY,\n", 1)


def fix_against_constant(
    tmp_path: Path, snippet: str, literal: str = f"({A2A_MEMBERS})", header: str = CONSTANT_HEADER
) -> Fixed:
    """``--fix-style helper`` with the canonical ``A2A_FAMILY = <literal>`` (deepep, mooncake,
    mori) defined at the end of the fixture's utils module."""
    return fix(
        tmp_path,
        snippet,
        style="helper",
        header=header,
        config=CONSTANT_CONFIG,
        utils_tail=f"\n\nA2A_FAMILY = {literal}\n",
    )


def constant_note(line: int, text: str) -> str:
    """A note for snippet line ``line`` under :data:`CONSTANT_HEADER` (8 lines)."""
    return note(line + 1, text)


def test_helper_with_a_constant_tests_the_receiver_against_it_and_imports_it(
    tmp_path: Path,
) -> None:
    result = fix_against_constant(
        tmp_path,
        "def f():\n    b = get_moe_a2a_backend()\n    return b.is_deepep() or b.is_mooncake()\n",
        header=HEADER,
    )
    assert result.text == CONSTANT_HEADER + (
        "def f():\n    b = get_moe_a2a_backend()\n    return b in A2A_FAMILY\n"
    )
    assert result.notes == [note(3, "fixed DC001 (helper): False -> True for mori")]


def test_helper_with_a_constant_negative_forms_become_not_in(tmp_path: Path) -> None:
    result = fix_against_constant(
        tmp_path,
        "def f():\n"
        "    return not (get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mooncake())\n"
        "\n"
        "\n"
        "def g():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return not b.is_deepep() and not b.is_nixl() and not b.is_mooncake()\n",
        literal=f"frozenset({{{A2A_MEMBERS}}})",
    )
    assert result.text == (
        "def f():\n"
        "    return get_moe_a2a_backend() not in A2A_FAMILY\n"
        "\n"
        "\n"
        "def g():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b not in A2A_FAMILY and not b.is_nixl()\n"
    )
    assert result.notes == [
        constant_note(2, "fixed DC001 (helper): True -> False for mori"),
        constant_note(7, "fixed DC001 (helper): True -> False for mori"),
    ]


def test_helper_with_a_constant_keeps_the_parentheses_a_comparison_needs(tmp_path: Path) -> None:
    result = fix_against_constant(
        tmp_path,
        "def f(x):\n"
        "    return x == (get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mooncake())\n",
    )
    assert result.text == "def f(x):\n    return x == (get_moe_a2a_backend() in A2A_FAMILY)\n"


def test_helper_with_a_constant_accepts_a_parameter_annotated_with_the_enum(
    tmp_path: Path,
) -> None:
    """Unlike a helper function, the constant reads no global backend: the parameter's own
    member is tested."""
    result = fix_against_constant(
        tmp_path,
        "def f(backend: MoeA2ABackend) -> bool:\n"
        "    return backend.is_deepep() or backend.is_mooncake()\n",
    )
    assert (
        result.text == "def f(backend: MoeA2ABackend) -> bool:\n    return backend in A2A_FAMILY\n"
    )


def test_helper_with_a_constant_is_refused_for_a_receiver_not_known_to_be_a_member(
    tmp_path: Path,
) -> None:
    snippet = (
        "def f(a2a_backend) -> bool:\n"
        "    return a2a_backend.is_deepep() or a2a_backend.is_mooncake()\n"
    )
    result = fix_against_constant(tmp_path, snippet)
    assert result.text == snippet
    assert result.notes == [
        constant_note(
            2,
            "not fixed DC001: 'a2a_backend' is not known to be a MoeA2ABackend member, which "
            "'a2a_backend in A2A_FAMILY' needs (use --fix-style minimal)",
        )
    ]


def test_helper_with_a_constant_of_strings_is_refused(tmp_path: Path) -> None:
    snippet = (
        "def f():\n    b = get_moe_a2a_backend()\n    return b.is_deepep() or b.is_mooncake()\n"
    )
    result = fix_against_constant(tmp_path, snippet, literal='("deepep", "mooncake", "mori")')
    assert result.text == snippet
    assert result.notes == [
        constant_note(
            3,
            "not fixed DC001: A2A_FAMILY lists members as strings and 'b' is a MoeA2ABackend "
            "member, so 'b in A2A_FAMILY' may be false for every one (use --fix-style minimal)",
        )
    ]


# -- bytes outside the rewrite ---------------------------------------------------------------
def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "    )\n",
        newline="\r\n",
    )
    assert result.text == (
        "def f():\r\n"
        "    b = get_moe_a2a_backend()\r\n"
        "    return (\r\n"
        "        b.is_deepep()\r\n"
        "        or b.is_deepep_v2()\r\n"
        "        or b.is_mooncake()\r\n"
        "        or b.is_mori()\r\n"
        "        or b.is_pplx()\r\n"
        "    )\r\n"
    )


def test_tab_indentation_is_kept(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "\tb = get_moe_a2a_backend()\n"
        "\treturn (\n"
        "\t\tb.is_deepep()\n"
        "\t\tor b.is_mooncake()\n"
        "\t\tor b.is_mori()\n"
        "\t)\n",
    )
    assert result.text == (
        "def f():\n"
        "\tb = get_moe_a2a_backend()\n"
        "\treturn (\n"
        "\t\tb.is_deepep()\n"
        "\t\tor b.is_deepep_v2()\n"
        "\t\tor b.is_mooncake()\n"
        "\t\tor b.is_mori()\n"
        "\t\tor b.is_pplx()\n"
        "\t)\n"
    )


def test_non_ascii_text_before_the_site_on_its_line(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        '    label = "Größe"; uses = b.is_deepep() or b.is_mooncake() or b.is_mori()  # ü\n'
        "    return label, uses\n",
    )
    assert result.text == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        '    label = "Größe"; uses = b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or b.is_pplx()  # ü\n'
        "    return label, uses\n"
    )


def test_several_sites_in_one_file_are_fixed_in_one_pass(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
        "\n"
        "\n"
        "def g(cfg):\n"
        "    return cfg.moe_a2a_backend in ('mooncake', 'mori', 'pplx')\n",
    )
    assert result.text == (
        "def f():\n"
        "    return (\n"
        "        get_moe_a2a_backend().is_deepep()\n"
        "        or get_moe_a2a_backend().is_deepep_v2()\n"
        "        or get_moe_a2a_backend().is_mooncake()\n"
        "        or get_moe_a2a_backend().is_mori()\n"
        "        or get_moe_a2a_backend().is_pplx()\n"
        "    )\n"
        "\n"
        "\n"
        "def g(cfg):\n"
        "    return cfg.moe_a2a_backend in ('deepep', 'deepep_v2', 'mooncake', 'mori', 'pplx')\n"
    )
    assert result.notes == [
        note(2, "fixed DC001 (minimal): False -> True for deepep_v2, mooncake, pplx"),
        note(6, "fixed DC003 (minimal): False -> True for deepep, deepep_v2"),
    ]


def test_minimal_commented_tuple_keeps_each_comment_on_its_element(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def uses_a2a(cfg) -> bool:\n"
        "    return cfg.moe_a2a_backend in (\n"
        '        "deepep",  # the first dispatcher\n'
        '        "mooncake",  # shares it\n'
        "    )\n",
    )
    assert result.text == (
        "def uses_a2a(cfg) -> bool:\n"
        "    return cfg.moe_a2a_backend in (\n"
        '        "deepep",  # the first dispatcher\n'
        '        "deepep_v2",\n'
        '        "mooncake",  # shares it\n'
        '        "mori",\n'
        '        "pplx",\n'
        "    )\n"
    )


def test_helper_import_is_merged_into_the_functions_own_import(tmp_path: Path) -> None:
    result = fix(
        tmp_path,
        "def f():\n"
        "    from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n"
        "\n"
        "    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n",
        style="helper",
        header="",
    )
    assert result.text == (
        "def f():\n"
        "    from sglang.srt.layers.moe.utils import get_moe_a2a_backend, is_deepep_class_backend\n"
        "\n"
        "    return is_deepep_class_backend()\n"
    )


def test_helper_import_goes_last_in_an_unsorted_import_list(tmp_path: Path) -> None:
    header = "from sglang.srt.layers.moe.utils import get_moe_a2a_backend, MoeA2ABackend\n\n\n"
    result = fix(
        tmp_path,
        "def f():\n    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n",
        style="helper",
        header=header,
    )
    assert result.text.splitlines()[:5] == [
        "from sglang.srt.layers.moe.utils import (",
        "    get_moe_a2a_backend,",
        "    MoeA2ABackend,",
        "    is_deepep_class_backend,",
        ")",
    ]


def test_helper_is_refused_where_the_module_is_only_imported_inside_functions(
    tmp_path: Path,
) -> None:
    snippet = (
        "def backend():\n"
        "    from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n"
        "\n"
        "    return get_moe_a2a_backend()\n"
        "\n"
        "\n"
        "def f():\n"
        "    return get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n"
    )
    result = fix(tmp_path, snippet, style="helper", header="")
    assert result.text == snippet
    assert result.notes == [
        "sglang/srt/models/example.py:8: not fixed DC001: the file imports neither "
        "sglang.srt.layers.moe.utils nor sglang.srt.layers.moe at module level (perhaps to avoid "
        "an import cycle); import is_deepep_class_backend by hand"
    ]
