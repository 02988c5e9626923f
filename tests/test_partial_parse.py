"""Only the pieces of a module that can hold a site are parsed (driftcheck.partial): top-level
definitions holding a hot line, and of a class only those methods; what a later question
needs (a read of an attribute, a call of a function) is parsed when asked. The sites, and
everything they record, are those of the whole file parsed."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

import driftcheck.scan
from driftcheck.engine import check
from driftcheck.partial import parse_for_sites

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MODEL = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


class Block:
    def __init__(self):
        b = get_moe_a2a_backend()
        self._a2a = b.is_deepep() or b.is_mooncake()

    def unrelated(self, x):
        return x + 1

    def forward(self, x):
        if self._a2a:
            return self.forward_deepep(x)
        return self.forward_normal(x)

    def forward_deepep(self, x):
        return x

    def forward_normal(self, x):
        return x


def helper(x):
    return x * 2
"""
NOTE = '''
NOTE = """
def not_code():
    pass
"""
'''
HOT = [1, 6, 7]  # the import and the two lines testing the backend


def sites_of(tree: Path, monkeypatch: pytest.MonkeyPatch, whole: bool) -> list[dict]:
    if whole:
        original = driftcheck.scan.parse_for_sites
        monkeypatch.setattr(
            driftcheck.scan,
            "parse_for_sites",
            lambda source, path, hot, defining=None: original(source, path, None),
        )
    result = check([tree], use_cache=False, jobs=1)
    monkeypatch.undo()
    return [
        s.to_dict()
        for scan in sorted(result.scans.values(), key=lambda s: s.path)
        for s in scan.sites
    ]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    target = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", target)
    (target / "sglang/srt/models/block_like.py").write_text(MODEL)
    return target


def test_sites_are_those_of_the_whole_file(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sites_of(tree, monkeypatch, whole=False) == sites_of(tree, monkeypatch, whole=True)


def test_a_read_in_a_method_not_parsed_is_found_when_asked(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [site] = [
        s for s in sites_of(tree, monkeypatch, whole=False) if s["path"].endswith("block_like.py")
    ]
    assert "call:forward_deepep" in {reach["key"] for reach in site["role"]["reaches"]}


def test_a_class_keeps_only_its_hot_methods_and_spans_all_of_them() -> None:
    module = parse_for_sites(MODEL, "block_like.py", HOT)
    [cls] = [s for s in module.tree.body if isinstance(s, ast.ClassDef)]
    assert [m.name for m in cls.body] == ["__init__"]
    assert (cls.lineno, cls.end_lineno) == (4, 21)


def test_asking_for_a_line_parses_its_method_into_the_class() -> None:
    module = parse_for_sites(MODEL, "block_like.py", HOT)
    assert module.parse_lines({13})
    [cls] = [s for s in module.tree.body if isinstance(s, ast.ClassDef)]
    assert [m.name for m in cls.body] == ["__init__", "forward"]
    assert cls.body[1].lineno == 12


def test_methods_parsed_when_asked_are_those_of_the_whole_parse() -> None:
    """Asked-for methods are parsed on their own, not with the rest of their class again;
    their trees (lines and columns included) are the whole file's."""
    module = parse_for_sites(MODEL, "block_like.py", HOT)
    assert module.parse_lines({13, 20})
    [cls] = [s for s in module.tree.body if isinstance(s, ast.ClassDef)]
    [whole] = [s for s in ast.parse(MODEL).body if isinstance(s, ast.ClassDef)]
    wanted = [m for m in whole.body if m.name in ("__init__", "forward", "forward_normal")]
    assert [ast.dump(m, include_attributes=True) for m in cls.body] == [
        ast.dump(m, include_attributes=True) for m in wanted
    ]


STRING_WITH_A_DEF = '''class A:
    def hot(self):
        return self.use_x
    doc = """
    def fake(self):
        return self.use_x
    end"""
    def cold(self):
        return 3
'''


def test_a_def_inside_a_string_at_the_method_indent_is_no_method() -> None:
    """The method search takes ``def fake`` for a method; the parse shows it lies inside
    ``doc``'s string, so those lines are parsed as they are: the string keeps its text and
    asking for them adds nothing."""
    module = parse_for_sites(STRING_WITH_A_DEF, "a.py", [3])
    [cls] = module.tree.body
    assert module.parse_lines({6}) == []
    [whole] = ast.parse(STRING_WITH_A_DEF).body
    assert [ast.dump(s) for s in cls.body] == [ast.dump(s) for s in whole.body[:2]]


def test_a_definition_inside_a_string_at_column_zero_makes_the_whole_file_parsed() -> None:
    """The cut would fall inside the string; the pieces do not parse, so the file is parsed
    whole (the answer never depends on the shortcut)."""
    module = parse_for_sites(MODEL + NOTE, "block_like.py", HOT)
    assert module.whole
    assert [s.name for s in module.tree.body if isinstance(s, ast.FunctionDef)] == ["helper"]


def test_a_function_no_question_needs_is_not_parsed() -> None:
    module = parse_for_sites(MODEL, "block_like.py", HOT)
    assert not any(isinstance(s, ast.FunctionDef) for s in module.tree.body)
    assert module.parse_lines({26})
    assert [s.name for s in module.tree.body if isinstance(s, ast.FunctionDef)] == ["helper"]


def test_carriage_return_lines_are_parsed_whole() -> None:
    module = parse_for_sites(MODEL.replace("\n", "\r"), "block_like.py", HOT)
    assert module.whole


DECORATED = """\
import triton


@triton.jit
@triton.heuristics(
    {"BLOCK": lambda args: 64},
)
def kernel(x):
    return x


@dataclass
class Settings:
    size: int = 1


def backend():
    return current_platform.is_rocm()
"""


def test_a_decorated_definition_no_question_needs_is_not_parsed() -> None:
    """Its decorators start the piece and its ``def``/``class`` line is part of it, not top-level
    code after it (that made every decorated kernel and dataclass parsed on every scan)."""
    module = parse_for_sites(DECORATED, "kernels.py", [19])
    assert [type(s).__name__ for s in module.tree.body] == ["Import", "FunctionDef"]
    assert module.parse_lines({9})
    assert [getattr(s, "name", "") for s in module.tree.body] == ["", "kernel", "backend"]
