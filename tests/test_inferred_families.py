"""A tree without the canonical helper (a fork): the family is inferred from the hand-written
copies that recur across files, every message says so, and ``--create-helper`` writes the
helper beside the enum so the copies can call it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from driftcheck.cli import main
from driftcheck.engine import check

UTILS = '''\
"""The fork's backend enum (no family helper)."""

from enum import Enum


class A2ABackend(Enum):
    NONE = "none"
    DEEPEP = "deepep"
    MOONCAKE = "mooncake"
    MORI = "mori"

    def is_deepep(self) -> bool:
        return self == A2ABackend.DEEPEP

    def is_mooncake(self) -> bool:
        return self == A2ABackend.MOONCAKE

    def is_mori(self) -> bool:
        return self == A2ABackend.MORI


def get_a2a_backend() -> A2ABackend:
    return A2ABackend.NONE
'''
COPY = """\
from fork.moe.utils import get_a2a_backend


def uses_a2a() -> bool:
    b = get_a2a_backend()
    return {chain}
"""
FULL = "b.is_deepep() or b.is_mooncake() or b.is_mori()"
PARTIAL = "b.is_deepep() or b.is_mooncake()"
CONFIG = """\
[tool.driftcheck]
pack = "none"
canonical = [{ predicate = "fork.moe.utils:is_a2a_backend", label = "A2A" }]
enum = "fork.moe.utils:A2ABackend"
"""
INFERRED = "inferred from 2 complete and 1 partial hand-written copies in 3 files"
MESSAGE = (
    "uses_a2a enumerates 2 of 3 {deepep, mooncake, mori} backends; missing mori "
    f"({INFERRED}; no helper defines it: `driftcheck discover` proposes one)"
)


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    """Three copies of the family in three files; the third has not kept up (no mori)."""
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    (tmp_path / "fork/moe").mkdir(parents=True)
    (tmp_path / "fork/__init__.py").write_text("")
    (tmp_path / "fork/moe/__init__.py").write_text("")
    (tmp_path / "fork/moe/utils.py").write_text(UTILS)
    for name, chain in (("one", FULL), ("two", FULL), ("three", PARTIAL)):
        (tmp_path / f"fork/{name}.py").write_text(COPY.format(chain=chain))
    return tmp_path


def run(*args: str | Path):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_the_family_is_the_set_the_copies_agree_on_named_as_configured(fork: Path) -> None:
    result = check([fork], use_cache=False)
    [family] = result.universe.families if result.universe else ()
    assert (family.name, family.members, family.inferred) == (
        "is_a2a_backend",
        ("deepep", "mooncake", "mori"),
        True,
    )
    assert f"no helper defines {{deepep, mooncake, mori}}: {INFERRED}" in result.warnings[1]


def test_every_message_says_the_family_was_inferred_and_from_what(fork: Path) -> None:
    result = check([fork], use_cache=False)
    assert [(f.path, f.message, f.inferred) for f in result.findings] == [
        ("fork/three.py", MESSAGE, True)
    ]


def test_the_helper_style_without_a_helper_says_how_to_create_it(fork: Path) -> None:
    fixed = run(fork, "--no-cache", "--fix", "--fix-style", "helper")
    assert fixed.exit_code == 1
    assert (
        "fork/three.py:6: not fixed DC001: no helper defines {deepep, mooncake, mori} (it was "
        "inferred from the tree's copies): add --create-helper to write is_a2a_backend() beside "
        "the enum, or use --fix-style minimal"
    ) in fixed.stderr.splitlines()


def test_create_helper_writes_it_beside_the_enum_and_the_copies_call_it(fork: Path) -> None:
    fixed = run(fork, "--no-cache", "--fix", "--fix-style", "helper", "--create-helper")
    assert fixed.exit_code == 0, fixed.stderr
    utils = (fork / "fork/moe/utils.py").read_text()
    assert utils.startswith(UTILS)
    assert utils[len(UTILS) :].splitlines()[2:4] == [
        "def is_a2a_backend() -> bool:",
        '    """Whether the backend is one of deepep, mooncake, mori.',
    ]
    assert "return backend.is_deepep() or backend.is_mooncake() or backend.is_mori()" in utils
    assert (
        "from fork.moe.utils import get_a2a_backend, is_a2a_backend"
        in (fork / "fork/three.py").read_text()
    )
    again = check([fork], use_cache=False)
    assert again.findings == []
    assert not again.universe.families[0].inferred  # type: ignore[union-attr]


def test_copies_that_recur_in_no_two_files_leave_the_missing_canonical_an_error(
    fork: Path,
) -> None:
    for name in ("one", "two"):
        (fork / f"fork/{name}.py").unlink()
    result = run(fork, "--no-cache")
    assert result.exit_code == 2
    assert "nothing named is_a2a_backend" in result.stderr
    assert "no family could be inferred from the tree's copies instead" in result.stderr
