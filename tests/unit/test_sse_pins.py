"""framing/sse.py pinned deterministically: a corpus of streams covering every path (the LF and CRLF
fast paths, the ``event:``+``data:`` shape, the general parser, switching from CRLF to other line
endings, BOM, retry, ids) decoded whole, split at every byte and fed byte by byte, by both decoders,
against the WHATWG reference parser; plus ``retry``, the size limit and end-of-input handling."""

from __future__ import annotations

import pytest

from llmroute.framing.sse import SSEDataDecoder, SSEDataFraming, SSEDecoder, SSEFraming
from llmroute.schema.errors import InvalidProviderOutputError
from tests.unit.test_sse import ours, ours_data, reference

CORPUS = {
    "data lines lf": b"data: a\n\ndata: b\n\ndata: c\n\n",
    "data lines crlf (gemini)": b"data: a\r\n\r\ndata: b\r\n\r\n",
    "data lines cr": b"data: a\r\rdata: b\r\r",
    "crlf then lf": b"data: a\r\n\r\ndata: b\n\ndata: c\n\n",
    "crlf then lone cr": b"data: a\r\n\r\ndata: b\r\rdata: c\r\n\r\n",
    "crlf stream with a second line": b"data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
    "crlf stream with an event line": b"event: e\r\ndata: a\r\n\r\ndata: b\r\n\r\n",
    "crlf stream ending in lf blank": b"data: a\r\n\r\ndata: b\r\n\n",
    "event+data lf (anthropic)": b"event: x\ndata: 1\n\nevent: y\ndata: 2\n\nevent: x\ndata: 3\n\n",
    "event+data with empty name": b"event: \ndata: 1\n\nevent: y\ndata: 2\n\n",
    "event+data then a comment": b"event: x\ndata: 1\n\n: ping\n\nevent: y\ndata: 2\n\n",
    "event line then two data lines": b"event: x\ndata: 1\ndata: 2\n\nevent: y\ndata: 3\n\n",
    "event without a data line": b"event: x\n\ndata: 1\n\n",
    "data then event": b"data: 1\nevent: late\n\ndata: 2\n\n",
    "multi-line data": b"data: a\ndata: b\n\ndata:c\ndata\n\n",
    "ids": b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: x\0y\ndata: d\n\n",
    "id then event": b"id: 7\nevent: e\ndata: a\n\nevent: f\ndata: b\n\n",
    "comments and unknown fields": b": hi\nfoo: bar\ndata: a\n\n:\n\ndata: b\n\n",
    "no space after colon": b"data:a\n\nevent:e\ndata:b\n\n",
    "two spaces after colon": b"data:  a\n\n",
    "bom": b"\xef\xbb\xbfdata: a\n\n",
    "bom then crlf": b"\xef\xbb\xbfdata: a\r\n\r\ndata: b\r\n\r\n",
    "not quite a bom": b"\xef\xbbdata: a\n\n",
    "unterminated last event": b"data: a\n\ndata: b",
    "unterminated crlf": b"data: a\r\n\r\ndata: b\r\n",
    "crlf ending in cr": b"data: a\r\n\r\ndata: b\r\n\r",
    "blank lines only": b"\n\n\r\n\r\r\n",
    "empty data": b"data:\n\ndata: \n\n",
    "utf-8 across splits": "data: héllo — 東京\n\n".encode(),
    "data: prefix in the value": b"data: data: x\n\ndata: y\n\n",
    "event named data": b"event: data\ndata: 1\n\n",
    "field with a value that starts with data": b"event: x\ndata: 1\nretry: 5\n\n",
}


def _chunkings(stream: bytes) -> list[list[bytes]]:
    out = [[stream], [bytes([b]) for b in stream]]
    out += [[stream[:cut], stream[cut:]] for cut in range(1, len(stream))]
    return out


@pytest.mark.parametrize("stream", list(CORPUS.values()), ids=list(CORPUS))
def test_corpus_matches_the_reference_under_every_split(stream: bytes) -> None:
    expected = reference(stream)
    for chunks in _chunkings(stream):
        assert ours(chunks) == expected, chunks
        assert ours_data(chunks) == [data for _, data, _ in expected], chunks


def test_corpus_concatenated_in_one_stream() -> None:
    stream = b"".join(s for s in CORPUS.values() if not s.startswith(b"\xef"))
    for chunks in ([stream], [stream[i : i + 7] for i in range(0, len(stream), 7)]):
        assert ours(chunks) == reference(stream)


def _events(stream: bytes) -> list[tuple[str, bytes, str | None, int | None]]:
    decoder = SSEDecoder()
    events = decoder.feed(stream) + decoder.close()
    return [(e.event, e.data, e.id, e.retry) for e in events]


def test_retry_is_kept_when_all_digits() -> None:
    assert _events(b"retry: 1500\ndata: a\n\ndata: b\n\n") == [
        ("message", b"a", None, 1500),
        ("message", b"b", None, 1500),
    ]
    assert _events(b"retry: 15x\ndata: a\n\n") == [("message", b"a", None, None)]
    assert _events(b"retry:\ndata: a\n\n") == [("message", b"a", None, None)]
    assert _events(b"retry: 5\n\nevent: e\ndata: a\n\n") == [("e", b"a", None, 5)]


def test_event_names_and_ids_on_the_fast_shapes() -> None:
    assert _events(b"event: e\ndata: a\n\n") == [("e", b"a", None, None)]
    assert _events(b"id: 3\n\ndata: a\n\nevent: e\ndata: b\n\n") == [
        ("message", b"a", "3", None),
        ("e", b"b", "3", None),
    ]
    assert _events(b"event: e\n\ndata: a\n\n") == [("message", b"a", None, None)]


@pytest.mark.parametrize("decoder", [SSEDecoder, SSEDataDecoder])
def test_an_event_over_the_limit_is_refused_and_reported(
    decoder: type[SSEDecoder] | type[SSEDataDecoder],
) -> None:
    d = decoder(max_event_bytes=16)
    d.feed(b"data: 0123")
    with pytest.raises(InvalidProviderOutputError, match="SSE event exceeds the 16-byte limit") as info:
        d.feed(b"456789abcdef")
    assert info.value.raw == "data: 0123"
    ok = decoder(max_event_bytes=16)
    assert ok.feed(b"data: 0123456789") == []  # exactly at the limit: still waiting
    assert len(ok.feed(b"\n\n")) == 1


def test_partial_tells_whether_an_event_is_pending() -> None:
    d = SSEDecoder()
    assert not d.partial
    d.feed(b"data: a")
    assert d.partial
    d.feed(b"\n\n")
    assert not d.partial
    d.feed(b"\r\n")
    assert not d.partial


def test_framings_name_and_limit() -> None:
    for framing in (SSEFraming(), SSEDataFraming(max_event_bytes=5)):
        assert framing.name == "sse"
    assert SSEDataFraming(max_event_bytes=5).decoder()._max == 5  # pyright: ignore[reportPrivateUsage]
    assert isinstance(SSEFraming().decoder(), SSEDecoder)


def test_the_default_limit_is_32_mib() -> None:
    limit = 32 * 1024 * 1024
    d = SSEDataDecoder()
    assert d.feed(b"data: " + b"x" * (limit - 6)) == []  # exactly at the limit: held
    with pytest.raises(InvalidProviderOutputError, match=f"exceeds the {limit}-byte limit"):
        d.feed(b"x")


def _delivered(decoder: SSEDecoder | SSEDataDecoder, chunk: bytes) -> list[str]:
    out = decoder.feed(chunk)
    return [(e if isinstance(e, bytes) else e.data).decode("utf-8", "replace") for e in out]


@pytest.mark.parametrize("stream", list(CORPUS.values()), ids=list(CORPUS))
def test_an_event_is_delivered_by_the_read_that_ends_it(stream: bytes) -> None:
    """Nothing complete is held back: after any prefix, the events returned so far are those the
    prefix ends (a prefix ending in CR may wait for the next read to tell CR from CRLF)."""
    for cut in range(len(stream) + 1):
        prefix = stream[:cut]
        done = [data for _, data, _ in reference(prefix)]
        before_cr = [data for _, data, _ in reference(prefix[:-1])] if prefix.endswith(b"\r") else done
        for decoder in (SSEDecoder(), SSEDataDecoder()):
            got = _delivered(decoder, prefix)
            assert got in (done, before_cr), (cut, prefix)
            # and the rest arrives with the next read
            assert got + _delivered(decoder, stream[cut:]) + [
                (e if isinstance(e, bytes) else e.data).decode("utf-8", "replace") for e in decoder.close()
            ] == [data for _, data, _ in reference(stream)]


# -- the fast shapes broken in one place: each fast path must either decode the stream exactly or
# hand it to the general parser; a deterministic sweep (seeded) against the reference

_SHAPES = {
    "data lf": (b"data: a%d\n\n", b"\n"),
    "data crlf": (b"data: a%d\r\n\r\n", b"\r\n"),
    "event+data lf": (b"event: e%d\ndata: a\n\n", b"\n"),
    "event+data crlf": (b"event: e%d\r\ndata: a\r\n\r\n", b"\r\n"),
    "event+data one name": (b"event: e\ndata: a%d\n\n", b"\n"),
}
_BREAKS = (
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"\r\r",
    b"\r\n\r\n",
    b"data: x",
    b"data:x",
    b"data",
    b"event: y",
    b"event:",
    b"event: ",
    b"id: 7",
    b"id",
    b"retry: 5",
    b": c",
    b"x",
    b"e",
    b"d",
    b" ",
    b"\xef\xbb\xbf",
)


def _broken_streams() -> list[bytes]:
    import random

    rng = random.Random(26)
    out: list[bytes] = []
    for template, eol in _SHAPES.values():
        clean = b"".join(template % i for i in range(4))
        out.append(clean)
        for _ in range(60):
            s = bytearray(clean)
            for _ in range(rng.choice((1, 1, 2))):
                at = rng.randrange(len(s) + 1)
                piece = rng.choice(_BREAKS)
                if rng.random() < 0.5:
                    piece += eol
                if rng.random() < 0.3 and at < len(s):
                    del s[at]
                s[at:at] = piece
            out.append(bytes(s))
    return out


_BROKEN = [
    *_broken_streams(),
    b"event: a\ndata: 1\n\ndata: 2\n\n",  # the event+data shape, then a lone data line
    b"event: a\ndata: 1\n\nevent: b\ndata: 2\nx\nevent: c\ndata: 3\n\n",  # one blank missing
    b"event: a\ndata: 1\n\nevent: b\nx\n\nevent: c\ndata: 3\n\n",  # a data line missing
    b"event: x\nxdata: 1\n\ndata: 2\n\n",  # not a data line: no event
    b"event: a\ndata: 1\n\nevent: b\ndata: 2\n\nevent: c\ndata: 3\n\ndata: 4\n\n",  # 10 lines
]


def test_fast_shapes_broken_in_one_place_match_the_reference() -> None:
    import random

    rng = random.Random(27)
    for stream in _BROKEN:
        expected = reference(stream)
        cuts = sorted(rng.sample(range(1, len(stream)), min(3, len(stream) - 1)))
        pieces = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        for chunks in ([stream], pieces, [stream[:1], stream[1:]], [stream[:-1], stream[-1:]]):
            assert ours(chunks) == expected, chunks
            assert ours_data(chunks) == [data for _, data, _ in expected], chunks


def test_fast_shapes_broken_in_one_place_are_delivered_by_the_read_that_ends_them() -> None:
    import random

    rng = random.Random(28)
    for stream in _BROKEN:
        for cut in rng.sample(range(len(stream) + 1), 4):
            prefix = stream[:cut]
            done = [data for _, data, _ in reference(prefix)]
            before_cr = [data for _, data, _ in reference(prefix[:-1])] if prefix.endswith(b"\r") else done
            for decoder in (SSEDecoder(), SSEDataDecoder()):
                assert _delivered(decoder, prefix) in (done, before_cr), prefix
            at = rng.randrange(len(prefix) + 1)  # the same prefix in two reads
            for decoder in (SSEDecoder(), SSEDataDecoder()):
                got = _delivered(decoder, prefix[:at]) + _delivered(decoder, prefix[at:])
                assert got in (done, before_cr), (prefix[:at], prefix[at:])


@pytest.mark.parametrize("decoder_type", [SSEDecoder, SSEDataDecoder])
def test_a_bom_alone_or_a_closed_stream_leaves_nothing_pending(
    decoder_type: type[SSEDecoder | SSEDataDecoder],
) -> None:
    d = decoder_type()
    d.feed(b"\xef\xbb\xbf")
    assert not d.partial  # the BOM is consumed, not held as the start of an event
    d = decoder_type()
    d.feed(b"\xef\xbb")
    assert d.partial  # may still become a BOM: held
    for tail in (b"data: a\n\ndata: b", b"data: a\r\n\r\ndata: b\r\n"):
        d = decoder_type()
        for byte in tail:  # read by read, so more than one read is held
            d.feed(bytes([byte]))
        assert d.partial
        d.close()
        assert not d.partial


def test_an_id_or_retry_carries_into_later_reads_of_the_fast_shape() -> None:
    d = SSEDecoder()
    d.feed(b"id: 1\ndata: a\n\n")
    assert [(e.data, e.id) for e in d.feed(b"data: b\n\ndata: c\n\n")] == [(b"b", "1"), (b"c", "1")]
    d = SSEDecoder()
    d.feed(b"retry: 5\ndata: a\n\n")
    assert [(e.data, e.retry) for e in d.feed(b"event: x\ndata: b\n\n")] == [(b"b", 5)]


@pytest.mark.parametrize("decoder_type", [SSEDecoder, SSEDataDecoder])
@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
def test_the_size_limit_is_per_event_not_per_stream(
    decoder_type: type[SSEDecoder | SSEDataDecoder], eol: bytes
) -> None:
    d = decoder_type(max_event_bytes=16)
    for _ in range(10):  # each event held, then ended by the next read: 7 bytes pending at most
        assert d.feed(b"data: a") == []
        assert len(d.feed(eol + eol)) == 1


@pytest.mark.parametrize("decoder_type", [SSEDecoder, SSEDataDecoder])
def test_an_event_over_the_limit_is_dropped_whole(decoder_type: type[SSEDecoder | SSEDataDecoder]) -> None:
    d = decoder_type(max_event_bytes=16)
    d.feed(b"data: " + b"x" * 10)  # held: exactly 16 bytes
    with pytest.raises(InvalidProviderOutputError):
        d.feed(b"xxxxx")
    assert not d.partial
    assert d.feed(b"data: " + b"y" * 10) == []  # the count starts again: exactly at the limit
    got = d.feed(b"\n\n")
    assert [e if isinstance(e, bytes) else e.data for e in got] == [b"y" * 10]


def test_retry_carries_into_later_reads_of_the_crlf_shape() -> None:
    d = SSEDecoder()
    d.feed(b"retry: 5\r\ndata: a\r\n\r\n")
    assert [(e.data, e.retry) for e in d.feed(b"data: b\r\n\r\ndata: c\r\n\r\n")] == [(b"b", 5), (b"c", 5)]


@pytest.mark.parametrize("decoder_type", [SSEDecoder, SSEDataDecoder])
def test_a_lone_cr_after_a_held_cr_ends_the_event_in_that_read(
    decoder_type: type[SSEDecoder | SSEDataDecoder],
) -> None:
    d = decoder_type()
    assert _delivered(d, b"data: a\r\n\r\ndata: b\r") == ["a"]
    assert _delivered(d, b"\rdata: c\r\n") == ["b"]  # CR CR: a blank line, not half a CRLF
    d = decoder_type()
    assert _delivered(d, b"data: a\r\n\r\ndata: b\r") == ["a"]
    assert _delivered(d, b"\r\ndata: c\r\n") == ["b"]  # CR then CRLF: a blank line too


@pytest.mark.parametrize("decoder_type", [SSEDecoder, SSEDataDecoder])
@pytest.mark.parametrize("first", [b"data: a\n", b"data: a\r"])
def test_a_crlf_after_another_line_ending_does_not_hold_the_event_back(
    decoder_type: type[SSEDecoder | SSEDataDecoder], first: bytes
) -> None:
    d = decoder_type()
    assert _delivered(d, first) == []
    assert _delivered(d, b"\r\ndata: b\r\n") == ["a"]  # the stream is not a CRLF one: no raw holding
