"""The language server's pure parts: positions in the client's units, titles, settings."""

from __future__ import annotations

import pytest
from lsprotocol import types

from driftcheck.server.actions import flips_title
from driftcheck.server.positions import LineMap, text_edits
from driftcheck.server.settings import Settings, SettingsError

UTF8, UTF16, UTF32 = (
    types.PositionEncodingKind.Utf8,
    types.PositionEncodingKind.Utf16,
    types.PositionEncodingKind.Utf32,
)


@pytest.mark.parametrize(("encoding", "character"), [(UTF8, 12), (UTF16, 9), (UTF32, 8)])
def test_a_byte_column_after_non_ascii_text_is_counted_in_the_clients_units(
    encoding: str, character: int
) -> None:
    # byte 12 is after the closing quote: the emoji is 4 bytes, 2 UTF-16 units, 1 code
    # point; é is 2, 1, 1
    lines = LineMap("pass\nx = '😋é' or b\n", encoding)
    assert lines.position(2, 12) == types.Position(line=1, character=character)
    assert lines.engine_position(types.Position(line=1, character=character)) == (2, 12)


def test_edits_replace_whole_changed_lines() -> None:
    edits = text_edits("a\nb\nc\nd\n", "a\nB\nc\nD\n", UTF16)
    assert [(e.range, e.new_text) for e in edits] == [
        (types.Range(types.Position(1, 0), types.Position(2, 0)), "B\n"),
        (types.Range(types.Position(3, 0), types.Position(4, 0)), "D\n"),
    ]


def test_an_edit_of_the_last_line_without_a_newline_ends_at_its_last_character() -> None:
    (edit,) = text_edits("a\nb", "a\nbé", UTF16)
    assert (edit.range, edit.new_text) == (
        types.Range(types.Position(1, 0), types.Position(1, 1)),
        "bé",
    )


def test_a_title_names_the_flipped_backends_before_the_change() -> None:
    assert flips_title("False -> True for deepep_v2, pplx") == "deepep_v2, pplx: False -> True"
    assert flips_title("no backend changes") == "no backend changes"


def test_settings_read_the_clients_camel_case_keys() -> None:
    settings = Settings.read(
        {"driftcheck": {"select": "dc0", "extendSelect": ["DC010"], "debounceMs": 20}}
    )
    assert (settings.select, settings.extend_select, settings.debounce_ms) == (
        ("DC0",),
        ("DC010",),
        20,
    )


def test_a_setting_of_the_wrong_kind_is_named() -> None:
    with pytest.raises(SettingsError, match="fixStyle: expected one of minimal, helper"):
        Settings.read({"fixStyle": "maximal"})
