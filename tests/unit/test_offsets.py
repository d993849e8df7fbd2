"""Provider offsets -> ``str`` indices (``protocols/_offsets.py``)."""

from __future__ import annotations

from llmroute.protocols._offsets import byte_span_in, utf16_to_index, utf16_units


def test_utf16_units_count_astral_characters_twice() -> None:
    assert utf16_units("a😀é") == 4
    assert utf16_units("") == 0


def test_utf16_offsets_map_to_code_points() -> None:
    text = "😀ab😀c"
    assert [utf16_to_index(text, u) for u in range(8)] == [0, 1, 1, 2, 3, 4, 4, 5]
    assert utf16_to_index(text, 99) == len(text)


def test_byte_span_in_finds_the_piece_and_clips_to_it() -> None:
    pieces = ["héllo".encode(), "東京".encode()]
    assert byte_span_in(pieces, 0, 6) == (0, 0, 5)
    assert byte_span_in(pieces, 6, 12) == (1, 0, 2)
    assert byte_span_in(pieces, 3, 9) == (0, 2, 5)  # clipped to the piece it starts in
    assert byte_span_in(pieces, 50, 60) == (1, 2, 2)  # past the end: the last piece, empty
