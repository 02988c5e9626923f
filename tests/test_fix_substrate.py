"""The fixer's rewrite substrate: libcst, given only the rewritten expression's text, and only
when a fix is planned.

How comments survive is pinned by the snapshots: a comment ending the anchor's line
(``test_minimal_comment_on_the_anchor_line_stays_with_the_anchor``), a comment line between
operands (``test_minimal_comment_line_before_an_operand_stays_above_that_operand``), a comment
after the last operand (``test_minimal_comment_after_the_last_operand_stays_on_its_line``) and
on tuple elements (``test_minimal_commented_tuple_keeps_each_comment_on_its_element``), all in
``tests/test_fix_snapshots.py``. Here: what libcst is given, when it is imported, and the
layouts the text splicer before it got wrong.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst
import pytest
from rule_harness import FIXTURES, HEADER
from test_fix_snapshots import fix, note

from driftcheck.engine import check
from driftcheck.fix.apply import apply_fixes, attach_fixes

EXAMPLE = "sglang/srt/models/example.py"


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter (this one has long imported libcst)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return done.stdout


# -- when libcst is imported -------------------------------------------------------------------
def test_checking_never_imports_libcst() -> None:
    out = run_python(
        f"""
        import sys
        from pathlib import Path
        import driftcheck.engine
        result = driftcheck.engine.check([Path({str(FIXTURES / "sglang_like")!r})], use_cache=False)
        assert result.findings, "the fixture has findings"
        print(sorted(m for m in sys.modules if m.split(".")[0] == "libcst"))
        """
    )
    assert out.strip() == "[]"


def test_the_cli_imports_libcst_only_when_it_plans_a_fix() -> None:
    out = run_python(
        f"""
        import json, sys
        from click.testing import CliRunner
        from driftcheck.cli import main
        tree = {str(FIXTURES / "sglang_like")!r}
        seen = {{}}
        result = CliRunner().invoke(main, ["--no-cache", tree])
        seen["text"] = (result.exit_code, "libcst" in sys.modules)
        clean = tree + "/sglang/srt/models/clean_like.py"
        result = CliRunner().invoke(main, ["--no-cache", "--format", "json", clean])
        seen["json-clean"] = (result.exit_code, "libcst" in sys.modules)
        result = CliRunner().invoke(main, ["--no-cache", "--diff", tree])
        seen["diff"] = (result.exit_code, "libcst" in sys.modules)
        print(json.dumps(seen))
        """
    )
    assert json.loads(out) == {
        "text": [1, False],
        "json-clean": [0, False],
        "diff": [1, True],
    }


# -- what libcst is given ----------------------------------------------------------------------
def test_libcst_parses_only_the_rewritten_expressions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    real_parse = libcst.parse_expression

    def recording_parse(source: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        parsed.append(source)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_expression", recording_parse)
    monkeypatch.setattr(libcst, "parse_module", None)  # never the whole file
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\n"
        "        b.is_deepep()  # the first one\n"
        "        or b.is_mori()\n"
        "    )\n",
    )
    assert parsed == ["(\nb.is_deepep()  # the first one\n        or b.is_mori()\n)"]
    assert result.notes == [
        note(4, "fixed DC001 (minimal): False -> True for deepep_v2, mooncake, pplx")
    ]


def test_the_helper_style_gives_libcst_the_expression_with_its_grouping_parentheses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    real_parse = libcst.parse_expression

    def recording_parse(source: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        parsed.append(source)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_expression", recording_parse)
    result = fix(
        tmp_path,
        "def f():\n"
        "    return (\n"
        "        get_moe_a2a_backend().is_deepep()\n"
        "        or get_moe_a2a_backend().is_mori()\n"
        "    )\n",
        style="helper",
    )
    assert result.text == "def f():\n    return is_deepep_class_backend()\n"
    site = "get_moe_a2a_backend().is_deepep()\n        or get_moe_a2a_backend().is_mori()"
    assert parsed == [f"(\n{site}\n)", f"(\n(\n        {site}\n    )\n)"]


# -- layouts the text splicer got wrong --------------------------------------------------------
def test_backslash_chain_with_a_comment_after_the_last_operand(tmp_path: Path) -> None:
    """The comment cannot go before a backslash continuation: it stays at the end of the
    chain's last line (the text splicer put it there and produced ``\\  # ...``)."""
    result = fix(
        tmp_path,
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    x = b.is_deepep() \\\n"
        "        or b.is_mori()  # the last one\n"
        "    return x\n",
    )
    assert result.text == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    x = b.is_deepep() \\\n"
        "        or b.is_deepep_v2() \\\n"
        "        or b.is_mooncake() \\\n"
        "        or b.is_mori() \\\n"
        "        or b.is_pplx()  # the last one\n"
        "    return x\n"
    )
    assert result.notes == [
        note(3, "fixed DC001 (minimal): False -> True for deepep_v2, mooncake, pplx")
    ]


def test_parenthesised_element_gets_its_new_sibling_outside_its_parentheses(
    tmp_path: Path,
) -> None:
    """``("deepep")`` is one element: the new one is a new element, not a tuple with it."""
    result = fix(
        tmp_path,
        'def f(cfg):\n    return cfg.moe_a2a_backend in (("deepep"), "mooncake", "mori")\n',
    )
    assert result.text == (
        "def f(cfg):\n"
        '    return cfg.moe_a2a_backend in (("deepep"), "deepep_v2", "mooncake", "mori", "pplx")\n'
    )
    assert result.notes == [note(2, "fixed DC003 (minimal): False -> True for deepep_v2, pplx")]


def test_an_expression_mixing_line_endings_is_rewritten_with_each_kept(tmp_path: Path) -> None:
    """What libcst 1.0 cannot parse (hence ``libcst>=1.1``): ``\\r\\n`` and ``\\n`` in one
    expression. A new operand copies the separator next to it, line ending included."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", root)
    path = root / EXAMPLE
    path.write_bytes(
        (
            HEADER + "def f():\n"
            "    b = get_moe_a2a_backend()\n"
            "    return (\r\n"
            "        b.is_deepep()  # c\r\n"
            "        or b.is_mooncake()\n"
            "        or b.is_mori()\r\n"
            "    )\n"
        ).encode()
    )
    result = check([path], use_cache=False)
    outcome = apply_fixes(
        result, attach_fixes(result, result.findings, "minimal", unsafe=True), write=True
    )
    assert outcome.notes == [
        f"{EXAMPLE}:11: fixed DC001 (minimal): False -> True for deepep_v2, pplx; "
        "unsafe: deepep_v2, pplx (no same-role site lists them)"
    ]
    assert path.read_bytes().decode()[len(HEADER) :] == (
        "def f():\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (\r\n"
        "        b.is_deepep()  # c\r\n"
        "        or b.is_deepep_v2()\r\n"
        "        or b.is_mooncake()\n"
        "        or b.is_mori()\n"
        "        or b.is_pplx()\r\n"
        "    )\n"
    )
