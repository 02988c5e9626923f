"""The prefilter's anchors are searched for in groups (driftcheck.prefilter.group_anchors):
a piece the anchors of a group share is looked for first, and the answer is the one a search
for every anchor gives."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

from driftcheck.prefilter import build_prefilter, group_anchors, prefixed_patterns
from driftcheck.project import discover_project
from driftcheck.universe import load_universes

SGLANG_LIKE = Path(__file__).resolve().parent.parent / "fixtures" / "sglang_like"

ANCHORS = (b"a2a_backend", b"MoeA2ABackend", b"is_deepep_class_backend", b"Platform")


def test_anchors_sharing_a_piece_are_grouped_under_it() -> None:
    assert group_anchors(ANCHORS) == (
        (b"ackend", (b"a2a_backend", b"MoeA2ABackend", b"is_deepep_class_backend")),
        (b"Platform", (b"Platform",)),
    )


def test_pieces_shorter_than_six_bytes_group_nothing() -> None:
    assert group_anchors((b"FusedMoEConfig", b"moe_config")) == (
        (b"FusedMoEConfig", (b"FusedMoEConfig",)),
        (b"moe_config", (b"moe_config",)),
    )


def test_grouped_search_answers_as_a_search_for_every_anchor() -> None:
    project = discover_project([SGLANG_LIKE], cwd=SGLANG_LIKE)
    loaded = load_universes(project.root, project.config)
    grouped = build_prefilter([u.universe for u in loaded.universes])
    assert len(grouped.groups) < len(grouped.anchors)
    flat = dataclasses.replace(grouped, groups=tuple((a, (a,)) for a in grouped.anchors))
    words = [*grouped.anchors, b"backend", b"'deepep'", b".is_deepep()", b"x = 1"]
    texts = [b"\n".join(combo) for n in range(4) for combo in itertools.permutations(words, n)]
    assert [grouped.may_match(t) for t in texts] == [flat.may_match(t) for t in texts]
    assert any(grouped.may_match(t) for t in texts)


def test_member_names_sharing_a_prefix_make_one_pattern_that_starts_with_it() -> None:
    assert prefixed_patterns(
        r"\.", ["is_deepep", "is_mori", "is_deepep_v2", "uses_x"], r"\(\s*\)"
    ) == [
        r"\.is_(?:deepep_v2|deepep|mori)\(\s*\)",
        r"\.uses_x(?:)\(\s*\)",
    ]


def test_split_member_patterns_answer_as_one_alternation_of_them() -> None:
    project = discover_project([SGLANG_LIKE], cwd=SGLANG_LIKE)
    loaded = load_universes(project.root, project.config)
    split = build_prefilter([u.universe for u in loaded.universes])
    assert len(split.member_patterns) > 1
    assert split.value_pattern is not None
    patterns = [*split.member_patterns, split.value_pattern]
    joined = re.compile(b"|".join(p.pattern for p in patterns))
    one = dataclasses.replace(split, member_patterns=(joined,), value_pattern=None)
    words = [b"b.is_deepep()", b"b.is_mori( )", b"'deepep'", b'"mooncake"', b"MoeA2ABackend.MORI"]
    texts = [
        b"get_moe_a2a_backend()\n" + b"\n".join(combo)
        for n in range(1, 4)
        for combo in itertools.permutations(words, n)
    ]
    assert [split.hot_lines(t) for t in texts] == [one.hot_lines(t) for t in texts]
    assert [split.may_match(t) for t in texts] == [one.may_match(t) for t in texts]
    assert any(split.hot_lines(t) for t in texts)
