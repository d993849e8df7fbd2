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
    [
        (2, b""),
        (3, b"\x01"),
        (4, b"\x01\x02"),
        (5, b"\x01" * 7),
        (8, b"\x01" * 7),
        (9, b"\x01" * 15),
        (7, b"\x00"),
    ],
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


def test_error_excerpts_are_the_prelude_or_the_frame_start() -> None:
    good = raw_frame(b"", payload=b"x" * 100)
    bad_prelude = good[:8] + bytes([good[8] ^ 1]) + good[9:]
    with pytest.raises(InvalidProviderOutputError, match="prelude checksum mismatch") as info:
        EventStreamDecoder().feed(b"" + bad_prelude)
    assert info.value.raw == bad_prelude[:12].hex()
    second = raw_frame(b"") + bad_prelude  # the excerpt is taken where the bad frame starts
    with pytest.raises(InvalidProviderOutputError, match="prelude checksum mismatch") as info:
        EventStreamDecoder().feed(second)
    assert info.value.raw == bad_prelude[:12].hex()
    short = raw_frame(b"", payload=b"y")
    short = short[:-1] + bytes([short[-1] ^ 1])
    with pytest.raises(InvalidProviderOutputError, match="message checksum mismatch") as info:
        EventStreamDecoder().feed(raw_frame(b"") + short)
    assert info.value.raw == short.hex()  # shorter than 64 bytes: all of it


def _prelude(total: int, hlen: int) -> bytes:
    prelude = struct.pack(">II", total, hlen)
    return prelude + struct.pack(">I", zlib.crc32(prelude))


def test_size_limits_are_inclusive() -> None:
    frame = raw_frame(b"", payload=b"z" * 4)  # 20 bytes
    assert len(EventStreamDecoder(max_frame_bytes=20).feed(frame)) == 1
    with pytest.raises(
        InvalidProviderOutputError, match="frame declares 20 bytes, over the 19-byte limit"
    ) as info:
        EventStreamDecoder(max_frame_bytes=19).feed(frame)
    assert info.value.raw == frame[:12].hex()
    (empty,) = EventStreamDecoder().feed(raw_frame(b"", payload=b""))  # 16 bytes: the smallest frame
    assert (dict(empty.headers), empty.payload, empty.message_type) == ({}, b"", "event")
    for total, hlen in ((15, 0), (20, 5)):
        bad = _prelude(total, hlen)
        with pytest.raises(
            InvalidProviderOutputError, match=rf"invalid frame lengths \(total {total}, headers {hlen}\)"
        ) as info:
            EventStreamDecoder().feed(bad + b"\0" * 8)
        assert info.value.raw == bad.hex()
    assert len(EventStreamDecoder().feed(raw_frame(b"\x01n\x00"))) == 1  # headers filling the frame


def test_a_failed_decoder_stays_failed_and_close_clears() -> None:
    d = EventStreamDecoder()
    d.feed(raw_frame(b"")[:10])
    assert d.pending == 10
    with pytest.raises(InvalidProviderOutputError, match=r"stream ended inside a frame \(10 bytes"):
        d.close()
    assert d.pending == 0
    assert d.close() == []
    with pytest.raises(InvalidProviderOutputError, match="decoder already failed on earlier input"):
        d.feed(raw_frame(b""))


def test_frames_split_mid_prelude_and_mid_body() -> None:
    frames = raw_frame(header(b"a", 0, b"")) + raw_frame(b"", payload=b"p" * 30)
    for cut in (5, 12, 20, 25, len(frames) - 3):
        d = EventStreamDecoder()
        out = d.feed(frames[:cut]) + d.feed(frames[cut:]) + d.close()
        assert [(dict(m.headers), m.payload) for m in out] == [({"a": True}, b"{}"), ({}, b"p" * 30)]


def test_a_malformed_header_block_is_quoted_up_to_64_bytes() -> None:
    block = header(b"s", 7, struct.pack(">H", 80) + b"v" * 80) + header(b"n", 4, b"\x01")  # int32 cut short
    with pytest.raises(InvalidProviderOutputError, match=r"malformed headers \(error\)") as info:
        EventStreamDecoder().feed(raw_frame(block))
    assert info.value.raw == block[:64].hex()


def test_every_header_type_followed_by_another_header() -> None:
    import datetime as dt
    import uuid

    values: list[object] = [True, False, 5, 300, 70_000, 2**40, b"\x00\x01", "s", uuid.UUID(int=7),
                            dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)]  # fmt: skip
    for value in values:
        (message,) = EventStreamDecoder().feed(encode_message({"v": value, "after": "x"}, b""))  # type: ignore[dict-item]
        assert dict(message.headers) == {"v": value, "after": "x"}
