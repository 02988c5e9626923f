"""A copy whose only effect is attributes nothing reads decides nothing today: its finding is
a warning that says so. Reads count in the site's own file (``self.x``, a layer's
``self.mlp.x``) and in the classes related to its class by inheritance in other files."""

from __future__ import annotations

from pathlib import Path

from rule_harness import run_example

BLOCK = (
    "class Block:\n"
    "    def __init__(self):\n"
    "        b = get_moe_a2a_backend()\n"
    "        if b.is_deepep() or b.is_mooncake():\n"
    "            self.top_k = 2\n"
)
UNREAD = (
    "condition in Block.__init__ enumerates 2 of 5 DeepEP-family backends; missing "
    "deepep_v2 (held back), mori (held back), pplx (held back: no same-role site lists them) "
    "(canonical: is_deepep_class_backend); nothing reads top_k: "
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
