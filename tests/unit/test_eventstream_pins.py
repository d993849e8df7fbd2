"""framing/eventstream.py pinned at its edges: a header whose declared length overruns its header block
is rejected (never truncated), fixed-width values cut short, the error excerpt's size, and the
encoder's integer widths at each boundary."""

from __future__ import annotations

import struct
import zlib

import pytest

from llmroute.framing.eventstream import EventStreamDecoder, encode_message
from llmroute.schema.errors import InvalidProviderOutputError


def raw_frame(block: bytes, payload: bytes = b"{}") -> bytes:
    """A frame with valid CRCs around any header block (so only the header parse can object)."""
    total = 16 + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + block + payload
    return body + struct.pack(">I", zlib.crc32(body))


def header(name: bytes, kind: int, value: bytes) -> bytes:
    return bytes([len(name)]) + name + bytes([kind]) + value


@pytest.mark.parametrize("kind", [6, 7])  # byte array, string
def test_a_declared_length_past_the_header_block_is_rejected_not_truncated(kind: int) -> None:
    # declares 10 bytes, 3 follow in the block; the payload right after must not be read as the rest
    block = header(b":event-type", kind, struct.pack(">H", 10) + b"abc")
    with pytest.raises(InvalidProviderOutputError, match="header ':event-type' runs past the header block"):
        EventStreamDecoder().feed(raw_frame(block, payload=b"0123456789"))


@pytest.mark.parametrize("kind", [6, 7])
def test_a_declared_length_that_exactly_fills_the_block_is_read(kind: int) -> None:
    block = header(b"x", kind, struct.pack(">H", 3) + b"abc") + header(b"y", 0, b"")
    (message,) = EventStreamDecoder().feed(raw_frame(block))
    assert dict(message.headers) == {"x": b"abc" if kind == 6 else "abc", "y": True}


@pytest.mark.parametrize(
    ("kind", "value"),
    [(2, b""), (3, b"\x01"), (4, b"\x01\x02"), (5, b"\x01" * 7), (8, b"\x01" * 7), (9, b"\x01" * 15), (7, b"\x00")],
)
def test_a_fixed_width_value_cut_short_is_malformed(kind: int, value: bytes) -> None:
    with pytest.raises(InvalidProviderOutputError, match=r"malformed headers|runs past the header block"):
        EventStreamDecoder().feed(raw_frame(header(b"n", kind, value)))


def test_an_unknown_header_type_names_it() -> None:
    with pytest.raises(InvalidProviderOutputError, match="unknown header value type 10 for header 'n'"):
        EventStreamDecoder().feed(raw_frame(header(b"n", 10, b"")))


def test_the_error_carries_a_64_byte_hex_excerpt() -> None:
    body = raw_frame(b"", payload=b"x" * 100)
    corrupt = body[:-1] + bytes([body[-1] ^ 1])
    with pytest.raises(InvalidProviderOutputError, match="message checksum mismatch") as info:
        EventStreamDecoder().feed(corrupt)
    assert info.value.raw == corrupt[:64].hex()
    with pytest.raises(InvalidProviderOutputError) as info:
        EventStreamDecoder().feed(raw_frame(header(b"n", 10, b"")))
    assert info.value.raw is None  # an unknown type is reported without an excerpt


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (-(2**7), 2), (2**7 - 1, 2), (2**7, 3), (-(2**7) - 1, 3),
        (-(2**15), 3), (2**15 - 1, 3), (2**15, 4), (-(2**15) - 1, 4),
        (-(2**31), 4), (2**31 - 1, 4), (2**31, 5), (-(2**31) - 1, 5),
    ],
)  # fmt: skip
def test_integers_use_the_narrowest_type(value: int, kind: int) -> None:
    encoded = encode_message({"n": value}, b"")
    assert encoded[12 + 2] == kind  # prelude, name length, "n", then the type byte
    (message,) = EventStreamDecoder().feed(encoded)
    assert message.headers["n"] == value
