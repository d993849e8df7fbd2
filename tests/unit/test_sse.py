"""SSE framing against a literal transcription of the WHATWG algorithm, under arbitrary splits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmroute.framing.sse import SSEDataDecoder, SSEDecoder, SSEEvent
from llmroute.schema.errors import InvalidProviderOutputError


def reference(stream: bytes) -> list[tuple[str, str, str | None]]:
    """WHATWG 'event stream interpretation', written for clarity, not speed."""
    text = stream.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines: list[str] = []
    buf = ""
    i = 0
    terminated = []
    while i < len(text):
        ch = text[i]
        if ch == "\r":
            lines.append(buf)
            terminated.append(True)
            buf = ""
            if i + 1 < len(text) and text[i + 1] == "\n":
                i += 1
        elif ch == "\n":
            lines.append(buf)
            terminated.append(True)
            buf = ""
        else:
            buf += ch
        i += 1
    events: list[tuple[str, str, str | None]] = []
    data: list[str] = []
    event_type = ""
    last_id: str | None = None
    for line in lines:
        if line == "":
            if data:
                events.append((event_type or "message", "\n".join(data), last_id))
            data, event_type = [], ""
            continue
        if line.startswith(":"):
            continue
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event_type = value
        elif field == "id" and "\0" not in value:
            last_id = value
    return events


def ours(chunks: list[bytes]) -> list[tuple[str, str, str | None]]:
    decoder = SSEDecoder()
    out: list[SSEEvent] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    return [(e.event, e.data.decode("utf-8", "replace"), e.id) for e in out]


def ours_data(chunks: list[bytes]) -> list[str]:
    """``SSEDataDecoder``: the events' data only (for protocols that never read the name)."""
    decoder = SSEDataDecoder()
    out: list[bytes] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    return [d.decode("utf-8", "replace") for d in out]


def data_of(events: list[tuple[str, str, str | None]]) -> list[str]:
    return [data for _, data, _ in events]


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(data[last:p])
        last = p
    pieces.append(data[last:])
    return pieces


EOL = st.sampled_from(["\n", "\r", "\r\n"])
VALUE = st.text(alphabet=st.sampled_from(list('ab é世😀:{}" ')), max_size=12)
LINE = st.one_of(
    st.tuples(st.just("data:"), VALUE),
    st.tuples(st.just("data: "), VALUE),
    st.tuples(st.just("event: "), st.sampled_from(["", "ping", "message_start", "é"])),
    st.tuples(st.just("id: "), VALUE),
    st.tuples(st.just(": "), VALUE),
    st.tuples(st.just("retry: "), st.sampled_from(["100", "x"])),
    st.tuples(st.just("data"), st.just("")),
    st.tuples(st.just(""), st.just("")),
)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    parts: list[str] = []
    if draw(st.booleans()):
        parts.append("\ufeff")
    for field, value in draw(st.lists(LINE, max_size=20)):
        parts.append(field + value + draw(EOL))
    return "".join(parts).encode()


@settings(max_examples=400, deadline=None)
@given(streams(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_matches_whatwg_reference_under_any_split(stream: bytes, cuts: list[int]) -> None:
    assert ours(split(stream, cuts)) == reference(stream)
    assert ours_data(split(stream, cuts)) == data_of(reference(stream))


@settings(max_examples=150, deadline=None)
@given(streams())
def test_byte_by_byte_equals_whole(stream: bytes) -> None:
    assert ours([stream[i : i + 1] for i in range(len(stream))]) == ours([stream])
    assert ours_data([stream[i : i + 1] for i in range(len(stream))]) == ours_data([stream])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"data: a\n\n", [("message", "a", None)]),
        (b"data: a\r\n\r\n", [("message", "a", None)]),
        (b"data: a\r\rdata: b\r\r", [("message", "a", None), ("message", "b", None)]),
        (b"data: a\ndata: b\n\n", [("message", "a\nb", None)]),
        (b"event: x\ndata: {}\n\n", [("x", "{}", None)]),
        (b": comment\ndata: 1\n\n", [("message", "1", None)]),
        (b"\xef\xbb\xbfdata: bom\n\n", [("message", "bom", None)]),
        (b"id: 7\ndata: a\n\ndata: b\n\n", [("message", "a", "7"), ("message", "b", "7")]),
        (b"data: [DONE]\n\n", [("message", "[DONE]", None)]),
        (b"event: only\n\n", []),
        (b"data: unterminated", []),
        (b"data:no-space\n\n", [("message", "no-space", None)]),
    ],
)
def test_known_cases(raw: bytes, expected: list[tuple[str, str, str | None]]) -> None:
    assert ours([raw]) == expected
    assert ours([raw[i : i + 1] for i in range(len(raw))]) == expected
    assert ours_data([raw]) == data_of(expected)


def test_utf8_split_inside_character() -> None:
    raw = "data: 世界😀\n\n".encode()
    for cut in range(1, len(raw)):
        assert ours([raw[:cut], raw[cut:]]) == [("message", "世界😀", None)]


def test_crlf_split_across_reads() -> None:
    assert ours([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]) == [
        ("message", "a", None),
        ("message", "b", None),
    ]


@pytest.mark.parametrize("decoder_type", [SSEDecoder, SSEDataDecoder])
def test_event_size_limit_is_a_clear_error(decoder_type: type[SSEDecoder | SSEDataDecoder]) -> None:
    decoder = decoder_type(max_event_bytes=1024)
    with pytest.raises(InvalidProviderOutputError, match="1024-byte limit"):
        decoder.feed(b"data: " + b"x" * 2000)


def test_partial_flag_reports_unterminated_event() -> None:
    decoder = SSEDecoder()
    decoder.feed(b'data: {"a":')
    assert decoder.partial


@st.composite
def mostly_event_data(draw: st.DrawFn) -> bytes:
    """Anthropic/Responses-shaped streams, sometimes irregular, so both parser paths are compared."""
    parts: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        name = draw(st.sampled_from(["message_start", "ping", "", " spaced", "é"]))
        lines = [f"event: {name}", f"data: {draw(VALUE)}"]
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["data: more", ": c", "id: 1", "event: x", "data"])))
        if draw(st.integers(0, 12)) == 0:
            lines.insert(0, "")
        parts.append("\n".join(lines) + "\n\n")
    return "".join(parts).encode()


@settings(max_examples=400, deadline=None)
@given(mostly_event_data(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=6))
def test_event_data_fast_path_matches_reference(stream: bytes, cuts: list[int]) -> None:
    assert ours(split(stream, cuts)) == reference(stream)
    assert ours([stream]) == reference(stream)
    assert ours_data(split(stream, cuts)) == data_of(reference(stream))
    assert ours_data([stream]) == data_of(reference(stream))


@st.composite
def mostly_crlf(draw: st.DrawFn) -> bytes:
    """Gemini-shaped CRLF streams (kept raw by the decoder), now and then another line ending, a
    comment, an event name or a second data line, so raw and normalising paths both run."""
    parts: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=10))):
        lines = [f"data: {draw(VALUE)}"]
        if draw(st.integers(0, 9)) == 0:
            lines.insert(0, draw(st.sampled_from(["event: x", ": c", "id: 1", "data: more", "retry: 5"])))
        for line in lines:
            parts.append(line + draw(st.sampled_from(["\r\n"] * 12 + ["\n", "\r"])))
        parts.append(draw(st.sampled_from(["\r\n"] * 12 + ["\n", "\r", "\r\n\r\n"])))
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(["data: cut", "data: cut\r", "data: cut\r\n\r", "\r"])))
    return "".join(parts).encode()


@settings(max_examples=500, deadline=None)
@given(mostly_crlf(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=8))
def test_crlf_streams_match_reference_under_any_split(stream: bytes, cuts: list[int]) -> None:
    assert ours(split(stream, cuts)) == reference(stream)
    assert ours_data(split(stream, cuts)) == data_of(reference(stream))
    assert ours([stream[i : i + 1] for i in range(len(stream))]) == reference(stream)
