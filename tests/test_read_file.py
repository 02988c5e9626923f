"""Files are read with plain descriptor reads (driftcheck.scan.read_file): the size the walk
saw is only a hint, so a file that changed size since is still read whole; its encoding is read
from its first two lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftcheck.scan import first_lines, read_file

TEXT = b"x = 1\n" * 20_000  # 120 kB: more than one read of 64 kB


def test_a_file_is_read_whole_when_its_size_is_known(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(TEXT)
    assert read_file(str(path), len(TEXT)) == TEXT


def test_a_file_larger_than_the_hint_is_read_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(TEXT)
    assert read_file(str(path), 10) == TEXT


def test_a_file_without_a_hint_or_empty_is_read(tmp_path: Path) -> None:
    path, empty = tmp_path / "m.py", tmp_path / "empty.py"
    path.write_bytes(TEXT)
    empty.write_bytes(b"")
    assert (read_file(str(path)), read_file(str(empty), 0)) == (TEXT, b"")


@pytest.mark.parametrize(
    "data",
    [b"", b"a", b"a\n", b"a\r\nb\rc\n", b"\n\n\n", b"x\ry", b"a\r", b"# coding: latin-1\r\n"],
)
def test_the_first_two_lines_are_split_as_python_splits_them(data: bytes) -> None:
    """A coding line is looked for in them (\\r\\n, \\r or \\n end a line), without splitting
    the rest of the file."""
    assert first_lines(data, 2) == data.splitlines(keepends=True)[:2]
