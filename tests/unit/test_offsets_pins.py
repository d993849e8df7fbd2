"""protocols/_offsets.py pinned at its edges: clamping, spans across several pieces (the end offset
rebased to its piece, each piece's base), and UTF-16 units at the BMP boundary (U+FFFF is one
unit, U+10000 two)."""

from __future__ import annotations

import pytest

from llmroute.protocols._offsets import byte_span_in, byte_span_to_str, utf16_to_index, utf16_units


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (-5, 2, (0, 2)),  # a negative start clamps to 0
        (2, 99, (2, 5)),  # an end past the text clamps to its length
        (99, 120, (5, 5)),  # both past the end
        (3, 1, (3, 3)),  # an end before the start is an empty span at the start
        (1, 1, (1, 1)),
        (0, 5, (0, 5)),
        (-3, -1, (0, 0)),
    ],
)
def test_byte_span_clamps(start: int, end: int, expected: tuple[int, int]) -> None:
    assert byte_span_to_str(b"hello", start, end) == expected


def test_byte_span_snaps_inside_a_character() -> None:
    data = "aé€b".encode()  # a(1) é(2) €(3) b(1)
    assert byte_span_to_str(data, 2, 4) == (1, 2)  # start inside é snaps to é, end inside € back to €
    assert byte_span_to_str(data, 1, 6) == (1, 3)
    assert byte_span_to_str(data, 2, 2) == (1, 1)


def test_spans_across_pieces_rebase_start_and_end() -> None:
    pieces = [b"abc", "déf".encode(), b"ghij"]  # bytes 0-2, 3-6 (d, é=2 bytes, f), 7-10
    assert byte_span_in(pieces, 0, 2) == (0, 0, 2)
    assert byte_span_in(pieces, 3, 7) == (1, 0, 3)  # the end rebased to the second piece
    assert byte_span_in(pieces, 4, 6) == (1, 1, 2)
    assert byte_span_in(pieces, 7, 9) == (2, 0, 2)
    assert byte_span_in(pieces, 8, 11) == (2, 1, 4)
    assert byte_span_in(pieces, 2, 5) == (0, 2, 3)  # starts in the first piece: clipped to it
    assert byte_span_in(pieces, 50, 60) == (2, 4, 4)  # past them all: the last piece, clamped
    assert byte_span_in([b"", b"xy"], 0, 1) == (1, 0, 1)  # an empty piece holds no start


def test_no_pieces_is_an_error() -> None:
    with pytest.raises(ValueError, match="no pieces"):
        byte_span_in([], 0, 1)


@pytest.mark.parametrize(
    ("text", "units", "index"),
    [
        ("a\uffffb", 1, 1),
        ("a\uffffb", 2, 2),  # U+FFFF is one unit
        ("\uffff\uffffb", 2, 2),
        ("a\U00010000b", 1, 1),
        ("a\U00010000b", 2, 2),  # inside the surrogate pair: snaps forward
        ("a\U00010000b", 3, 2),  # U+10000 is two units
        ("a\U00010000b", 4, 3),
        ("ab", 0, 0),
        ("ab", 9, 2),
    ],
)
def test_utf16_to_index(text: str, units: int, index: int) -> None:
    assert utf16_to_index(text, units) == index


@pytest.mark.parametrize(
    ("text", "units"), [("a\uffff", 2), ("a\U00010000", 3), ("\U0010ffff\ufffe", 3), ("", 0)]
)
def test_utf16_units(text: str, units: int) -> None:
    assert utf16_units(text) == units
