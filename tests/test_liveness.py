"""A copy whose only effect is attributes nothing reads decides nothing today: its finding is
a warning that says so. Reads count in the site's own file (``self.x``, a layer's
``self.mlp.x``) and in the classes related to its class by inheritance in other files."""

from __future__ import annotations

from pathlib import Path

import pytest
from rule_harness import run_example

from driftcheck.liveness import LocalReads

BLOCK = (
    "class Block:\n"
    "    def __init__(self):\n"
    "        b = get_moe_a2a_backend()\n"
    "        if b.is_deepep() or b.is_mooncake():\n"
    "            self.top_k = 2\n"
)
UNREAD = (  # a dead copy rates no member: its fix deletes it (issue 30)
    "condition in Block.__init__ enumerates 2 of 5 DeepEP-family backends; missing "
    "deepep_v2, mori, pplx (canonical: is_deepep_class_backend); nothing reads top_k: "
    "delete it rather than widen it"
)
READ = (
    "condition in Block.__init__ enumerates 2 of 5 DeepEP-family backends; missing "
    "deepep_v2 (held back), mori (held back), pplx (held back: no same-role site lists them) "
    "(canonical: is_deepep_class_backend)"
)


def reported(tmp_path: Path, code: str, siblings: dict[str, str] | None = None) -> list[tuple]:
    result = run_example(tmp_path, code, siblings=siblings)
    assert not result.problems, result.problems
    return [(f.code, f.severity, f.message) for f in result.findings]


def test_a_copy_nothing_reads_is_a_warning_that_says_so(tmp_path: Path) -> None:
    assert reported(tmp_path, BLOCK) == [("DC001", "warning", UNREAD)]


def test_a_copy_whose_value_is_a_call_is_a_warning_when_nothing_reads_it(tmp_path: Path) -> None:
    """The call computing what a branch sets is part of setting it, not an effect of its own
    (forks spell their EP setup ``self.ep_size = get_moe_expert_parallel_world_size()``)."""
    code = BLOCK.replace("self.top_k = 2", "self.top_k = get_moe_expert_parallel_world_size()")
    assert reported(tmp_path, code) == [("DC001", "warning", UNREAD)]


def test_a_branch_that_calls_something_besides_setting_is_an_error(tmp_path: Path) -> None:
    code = BLOCK + "            self.register()\n"
    assert reported(tmp_path, code) == [("DC001", "error", READ)]


def test_a_read_in_another_method_makes_it_an_error(tmp_path: Path) -> None:
    code = BLOCK + "\n    def route(self, x):\n        return x[: self.top_k]\n"
    assert reported(tmp_path, code) == [("DC001", "error", READ)]


def test_a_layer_reading_its_blocks_attribute_is_a_read(tmp_path: Path) -> None:
    code = BLOCK + (
        "\n\nclass Layer:\n"
        "    def __init__(self):\n"
        "        self.mlp = Block()\n\n"
        "    def forward(self, x):\n"
        "        return x[: self.mlp.top_k]\n"
    )
    assert reported(tmp_path, code) == [("DC001", "error", READ)]


def test_another_objects_attribute_of_the_same_name_is_no_read(tmp_path: Path) -> None:
    code = BLOCK + "\n    def route(self, x):\n        return x[: self.config.top_k]\n"
    assert reported(tmp_path, code) == [("DC001", "warning", UNREAD)]


def test_a_subclass_in_another_model_file_reading_it_makes_it_an_error(tmp_path: Path) -> None:
    """Related classes are looked for in the files the run scans: model files and files
    that test a backend."""
    subclass = (
        "from sglang.srt.models.example import Block\n\n\n"
        "class FastBlock(Block):\n"
        "    def forward(self, x):\n"
        "        return x[: self.top_k]\n\n\n"
        "EntryClass = FastBlock\n"
    )
    assert reported(tmp_path, BLOCK, {"fast_block.py": subclass}) == [("DC001", "error", READ)]


def many_copies(count: int, read: set[int]) -> str:
    """A block whose ``__init__`` holds ``count`` copies, each setting its own attribute;
    ``forward`` reads those in ``read``."""
    lines = ["class Block:", "    def __init__(self):", "        b = get_moe_a2a_backend()"]
    for index in range(count):
        lines += ["        if b.is_deepep() or b.is_mooncake():", f"            self.a{index} = 2"]
    lines += ["", "    def forward(self, x):"]
    lines += [f"        x = x + self.a{index}" for index in sorted(read)]
    return "\n".join([*lines, "        return x", ""])


def test_a_file_with_many_copies_reads_each_attribute_as_a_file_with_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past a few attributes the file's reads are indexed in one pass (a file's sites cost
    time linear in their number); the answers are those of a search per attribute."""
    code = many_copies(40, read=set(range(0, 40, 3)))
    indexed = reported(tmp_path / "indexed", code)
    monkeypatch.setattr(LocalReads, "SEARCHES", 10**9)
    assert reported(tmp_path / "searched", code) == indexed
    unread = [message for _, severity, message in indexed if severity == "warning"]
    assert len(indexed) == 40
    assert [m.rsplit("nothing reads ", 1)[1] for m in unread] == [
        f"a{index}: delete it rather than widen it" for index in range(40) if index % 3
    ]
