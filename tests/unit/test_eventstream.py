"""The AWS event-stream decoder: CRCs, headers, frame cap, truncation, chunk-boundary invariance,
exception messages -> typed errors. Checked against botocore's own decoder on real recordings."""

from __future__ import annotations

import datetime as dt
import json
import struct
import uuid
import zlib

import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

from llmroute.framing.eventstream import (
    DEFAULT_MAX_FRAME_BYTES,
    EventStreamDecoder,
    EventStreamFraming,
    EventStreamMessage,
    encode_message,
)
from llmroute.route.classify import from_exception_frame
from llmroute.schema.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidProviderOutputError,
    InvalidRequestError,
    ProviderInternalError,
    RateLimitError,
)
from tests.helpers import load

EVENT = {":event-type": "contentBlockDelta", ":content-type": "application/json", ":message-type": "event"}


def frame(payload: object, headers: dict[str, object] | None = None) -> bytes:
    return encode_message(headers or EVENT, json.dumps(payload).encode())  # type: ignore[arg-type]


def decode_all(chunks: list[bytes]) -> list[EventStreamMessage]:
    decoder = EventStreamDecoder()
    out: list[EventStreamMessage] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    return out


def as_tuples(messages: list[EventStreamMessage]) -> list[tuple[dict[str, object], bytes]]:
    return [(dict(m.headers), m.payload) for m in messages]


def recorded_body(rel: str, index: int = 0) -> bytes:
    return load(rel).interactions[index].response.body


RECORDED = [
    ("opencode/bedrock-converse/drives-a-tool-loop.yaml", 0),
    ("opencode/bedrock-converse/streams-text.yaml", 0),
    ("pydantic-ai/test_bedrock/test_bedrock_model_thinking_part_stream.yaml", 0),
    ("pydantic-ai/test_bedrock/test_bedrock_model_code_execution_tool_stream.yaml", 0),
]


# --- headers -------------------------------------------------------------------------------------


def test_every_header_type_round_trips_and_matches_botocore() -> None:
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    headers: dict[str, object] = {
        "t": True,
        "f": False,
        "byte": -5,
        "short": 300,
        "int": 70000,
        "long": 2**40,
        "bytes": b"\x00\xffraw",
        "string": "héllo",
        "ts": when,
        "id": ident,
    }
    body = encode_message(headers, b"payload")  # type: ignore[arg-type]
    [message] = decode_all([body])
    assert dict(message.headers) == headers
    assert message.payload == b"payload"
    # botocore decodes the same bytes to the same values (timestamps as ms, uuids as bytes)
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    [theirs] = list(buffer)
    expected = {**headers, "ts": int(when.timestamp() * 1000), "id": ident.bytes}
    assert theirs.headers == expected
    assert theirs.payload == b"payload"


def test_common_headers_are_attributes_and_headers_are_read_only() -> None:
    exc = {
        ":message-type": "exception",
        ":exception-type": "throttlingException",
        ":content-type": "application/json",
    }
    first, second, third = decode_all([frame({"a": 1}), frame({"a": 2}), frame({"message": "slow"}, exc)])
    assert (first.message_type, first.event_type, first.headers[":content-type"]) == (
        "event",
        "contentBlockDelta",
        "application/json",
    )
    assert first.message_type == "event" and third.message_type != "event"
    assert (third.message_type, third.exception_type, third.event_type) == (
        "exception",
        "throttlingException",
        None,
    )
    assert first.headers is second.headers  # identical header blocks are parsed once
    with pytest.raises(TypeError):
        first.headers[":event-type"] = "x"  # type: ignore[index]


# --- integrity -----------------------------------------------------------------------------------


def test_bad_prelude_crc() -> None:
    body = bytearray(frame({"a": 1}))
    body[9] ^= 0x01  # inside the prelude CRC
    with pytest.raises(InvalidProviderOutputError, match="prelude checksum mismatch"):
        EventStreamDecoder().feed(bytes(body))


def test_corrupted_length_is_caught_by_the_prelude_crc() -> None:
    body = bytearray(frame({"a": 1}))
    body[3] ^= 0x04  # total length
    with pytest.raises(InvalidProviderOutputError, match="prelude checksum mismatch"):
        EventStreamDecoder().feed(bytes(body))


def test_bad_message_crc_flipped_payload_bit() -> None:
    good = frame({"a": 1})
    body = bytearray(good + frame({"b": 2}))
    body[len(good) + 40] ^= 0x10  # a payload byte of the second frame
    decoder = EventStreamDecoder()
    with pytest.raises(InvalidProviderOutputError, match="message checksum mismatch"):
        decoder.feed(bytes(body))
    with pytest.raises(InvalidProviderOutputError, match="already failed"):
        decoder.feed(good)  # a failed stream stays failed


def test_huge_declared_length_fails_as_soon_as_the_prelude_arrives() -> None:
    total = DEFAULT_MAX_FRAME_BYTES + 1
    prelude = struct.pack(">II", total, 0)
    prelude += struct.pack(">I", zlib.crc32(prelude))
    decoder = EventStreamDecoder()
    assert decoder.feed(prelude[:11]) == []  # not a whole prelude yet
    with pytest.raises(
        InvalidProviderOutputError, match=r"declares 16777217 bytes, over the 16777216-byte limit"
    ):
        decoder.feed(prelude[11:])  # no payload sent: the error does not wait for 16 MiB


def test_frame_cap_is_configurable() -> None:
    body = frame({"text": "x" * 200})
    assert len(decode_all([body])) == 1
    with pytest.raises(InvalidProviderOutputError, match="over the 100-byte limit"):
        EventStreamFraming(max_frame_bytes=100).decoder().feed(body)


def test_impossible_lengths() -> None:
    prelude = struct.pack(">II", 12, 0)
    prelude += struct.pack(">I", zlib.crc32(prelude))
    with pytest.raises(InvalidProviderOutputError, match="invalid frame lengths"):
        EventStreamDecoder().feed(prelude + b"\0" * 8)
    prelude = struct.pack(">II", 20, 10)  # headers longer than the frame allows
    prelude += struct.pack(">I", zlib.crc32(prelude))
    with pytest.raises(InvalidProviderOutputError, match="invalid frame lengths"):
        EventStreamDecoder().feed(prelude + b"\0" * 8)


def test_truncated_stream_fails_on_close() -> None:
    second = frame({"b": 2})
    body = frame({"a": 1}) + second
    decoder = EventStreamDecoder()
    assert len(decoder.feed(body[:-1])) == 1
    assert decoder.pending == len(second) - 1
    with pytest.raises(InvalidProviderOutputError, match="stream ended inside a frame"):
        decoder.close()
    clean = EventStreamDecoder()
    assert len(clean.feed(body)) == 2
    assert clean.close() == []


def test_malformed_header_block() -> None:
    # header name length runs past the block; CRCs are valid so only the header parse can object
    block = b"\x09:bad"
    total = 16 + len(block)
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + block
    body += struct.pack(">I", zlib.crc32(body))
    with pytest.raises(InvalidProviderOutputError, match="header"):
        EventStreamDecoder().feed(body)


# --- chunk boundaries ----------------------------------------------------------------------------


def test_split_at_every_byte_boundary() -> None:
    body = frame({"a": "héllo"}) + frame({"b": 2}, {":message-type": "event", ":event-type": "x", "n": 7})
    whole = as_tuples(decode_all([body]))
    assert len(whole) == 2
    for i in range(len(body) + 1):
        assert as_tuples(decode_all([body[:i], body[i:]])) == whole, i
    assert as_tuples(decode_all([body[i : i + 1] for i in range(len(body))])) == whole


@pytest.mark.parametrize(("rel", "index"), RECORDED)
def test_recordings_decode_like_botocore(rel: str, index: int) -> None:
    body = recorded_body(rel, index)
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    theirs = [(dict(m.headers), m.payload) for m in buffer]
    assert theirs and as_tuples(decode_all([body])) == theirs
    assert as_tuples(decode_all([body[i : i + 1] for i in range(len(body))])) == theirs


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_rechunking_gives_identical_messages(data: st.DataObject) -> None:
    rel, index = data.draw(st.sampled_from(RECORDED))
    body = recorded_body(rel, index)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=40)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert as_tuples(decode_all(chunks)) == as_tuples(decode_all([body]))


def test_accepts_bytearray_and_memoryview_chunks() -> None:
    body = frame({"a": 1}) + frame({"b": 2})
    got = decode_all([bytearray(body[:7]), memoryview(body)[7:30], body[30:]])  # type: ignore[list-item]
    assert as_tuples(got) == as_tuples(decode_all([body]))


def test_one_big_chunk_keeps_no_copy_of_consumed_frames() -> None:
    body = b"".join(frame({"i": i}) for i in range(2000))
    decoder = EventStreamDecoder()
    assert len(decoder.feed(body + body[:5])) == 2000
    assert decoder.pending == 5  # only the unfinished tail is held


# --- exception messages -> typed errors ----------------------------------------------------------


def _exception(kind: str, message: str) -> EventStreamMessage:
    headers = {":message-type": "exception", ":exception-type": kind, ":content-type": "application/json"}
    [msg] = decode_all([frame({"message": message}, headers)])  # type: ignore[arg-type]
    return msg


@pytest.mark.parametrize(
    ("kind", "message", "cls", "retryable"),
    [
        ("throttlingException", "Too many requests, please wait", RateLimitError, True),
        ("modelStreamErrorException", "The model stream failed", ProviderInternalError, True),
        ("internalServerException", "Internal failure", ProviderInternalError, True),
        ("serviceUnavailableException", "Service unavailable", ProviderInternalError, True),
        ("validationException", "messages.0: bad content", InvalidRequestError, False),
        ("validationException", "Input is too long for requested model.", ContextOverflowError, False),
        ("accessDeniedException", "You don't have access to the model", AuthenticationError, False),
    ],
)
def test_exception_messages_map_to_typed_errors(
    kind: str, message: str, cls: type[Exception], retryable: bool
) -> None:
    error = from_exception_frame(_exception(kind, message))
    assert type(error) is cls
    assert error.retryable is retryable
    assert error.code == kind
    assert message in str(error) and kind in str(error)


def test_error_message_type_uses_error_code_headers() -> None:
    headers = {
        ":message-type": "error",
        ":error-code": "ThrottlingException",
        ":error-message": "Rate exceeded",
    }
    [msg] = decode_all([encode_message(headers, b"")])
    error = from_exception_frame(msg)
    assert isinstance(error, RateLimitError)
    assert "Rate exceeded" in str(error)


@pytest.mark.parametrize(
    "payload",
    [
        b'{"Message": "Too many tokens, please wait"}',  # AWS's capitalised field
        b"Too many tokens, please wait",  # not JSON: the payload's text
    ],
)
def test_exception_text_from_a_capitalised_message_or_a_raw_payload(payload: bytes) -> None:
    headers = {":message-type": "exception", ":exception-type": "throttlingException"}
    [msg] = decode_all([encode_message(headers, payload)])
    error = from_exception_frame(msg)
    assert isinstance(error, RateLimitError)
    assert "throttlingException: Too many tokens, please wait" in str(error)
