"""The per-event fast paths change speed, never events: property tests against the general paths."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmroute
from llmroute.framing.sse import SSEDataDecoder, SSEDecoder, SSEEvent
from llmroute.protocols import anthropic_messages, openai_chat
from llmroute.providers import anthropic, openai
from llmroute.schema.errors import LLMError

TEXT = st.text(alphabet=st.sampled_from(["a", "é", "世", "😀", " ", "\n", '"', "\\"]), max_size=6)


def _chunk(draw: Any) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    for field in ("content", "refusal", "reasoning_content", "reasoning"):
        kind = draw(
            st.sampled_from(
                ["absent", "null", "text", "text"]
                if field == "content"
                else ["absent"] * 3 + ["null", "text"]
            )
        )
        if kind != "absent":
            delta[field] = None if kind == "null" else draw(TEXT)
    if draw(st.integers(0, 9)) == 0:
        delta["tool_calls"] = [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}]
    choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None}
    choice["finish_reason"] = draw(st.sampled_from([None] * 8 + ["stop", "length"]))
    chunk: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    chunk["choices"] = [choice] * draw(st.sampled_from([1] * 8 + [0, 2]))
    if draw(st.integers(0, 9)) == 0:
        chunk["usage"] = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    if draw(st.booleans()):
        chunk["obfuscation"] = "x" * draw(st.integers(0, 8))  # unknown fields are ignored either way
    return chunk


chunks = st.lists(st.composite(lambda draw: _chunk(draw))(), min_size=1, max_size=25)


class _NeverDecodes:
    def decode(self, data: bytes) -> Any:
        raise msgspec.DecodeError("the general path only")


REQUEST = llmroute.request(model=openai.configure(api_key="sk-test").chat("gpt-4o-mini"), prompt="hi")


def _run(frames: list[bytes], as_events: bool = True) -> tuple[list[Any], Any]:
    protocol = REQUEST.model.route.protocol  # type: ignore[union-attr]
    state = protocol.new_state(REQUEST)
    out: list[Any] = []
    try:
        for data in frames:  # the route's SSEDataFraming hands over bytes; envelopes an SSEEvent
            protocol.step(state, SSEEvent(data) if as_events else data, out)
    except LLMError as exc:
        out.append(("error", type(exc).__name__, str(exc)))
    return out, (state.text_len, state.text_starts, state.usage, state.finish_reason, state.done)


@settings(max_examples=300, deadline=None)
@given(chunks, st.booleans())
def test_chat_text_fast_path_gives_the_general_paths_events(
    stream: list[dict[str, Any]], as_events: bool
) -> None:
    frames = [json.dumps(c, ensure_ascii=False).encode() for c in stream] + [b"[DONE]"]
    fast = _run(frames, as_events)
    mp = pytest.MonkeyPatch()
    mp.setattr(openai_chat.parse, "_text_decoder", _NeverDecodes())
    try:
        general = _run(frames, not as_events)
    finally:
        mp.undo()
    assert fast == general


class _General(SSEDecoder):
    def _fast(self, region: bytes) -> None:
        return None


def _general_only(region: bytes) -> list[SSEEvent]:
    return _General().feed(region + b"\n\n")


class _GeneralData(SSEDataDecoder):
    def _fast_data(self, region: bytes) -> None:
        return None


def _same_data(region: bytes) -> None:
    """The data-only decoder's fast path gives the general parser's data, event for event."""
    general = _GeneralData().feed(region + b"\n\n")
    assert SSEDataDecoder().feed(region + b"\n\n") == general == [e.data for e in _general_only(region)]


LINE = st.sampled_from(
    [
        b"event: content_block_delta",
        b"event: ping",
        b"event:x",
        b"data: {}",
        b"data:{}",
        b"data: [1]",
        b"id: 7",
        b": comment",
        b"",
        b"retry: 5",
        b"data: event: a",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(LINE, min_size=1, max_size=12))
def test_sse_event_data_fast_path_matches_the_general_parser(lines: list[bytes]) -> None:
    region = b"\n".join(lines)
    assert SSEDecoder().feed(region + b"\n\n") == _general_only(region)
    _same_data(region)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"event: a\ndata: 1", b"event: b\ndata: {}", b"event: a\ndata: x\ndata: y"]),
        min_size=1,
        max_size=10,
    )
)
def test_sse_event_data_blocks_match_the_general_parser(blocks: list[bytes]) -> None:
    region = b"\n\n".join(blocks)
    assert SSEDecoder().feed(region + b"\n\n") == _general_only(region)
    _same_data(region)


TRIPLE = st.tuples(
    st.sampled_from([b"event: a", b"event: b", b"event:", b"data: h"]),
    st.sampled_from([b"data: 1", b"data: {}", b"data:{}", b"event: c"]),
    st.sampled_from([b"", b"", b"", b"data: z", b"event: q", b": c", b"id: 1"]),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(TRIPLE, min_size=1, max_size=8))
def test_sse_near_misses_of_the_event_data_shape_match_the_general_parser(
    triples: list[tuple[bytes, bytes, bytes]],
) -> None:
    lines = [line for triple in triples for line in triple][:-1]  # a region ends before its last blank
    region = b"\n".join(lines)
    assert SSEDecoder().feed(region + b"\n\n") == _general_only(region)
    _same_data(region)


# --- Anthropic: the text_delta lean path against the general one ------------------------------------

ANTHROPIC = llmroute.request(
    model=anthropic.configure(api_key="sk-ant-test").messages("claude-haiku-4-5"), prompt="hi"
)


def _anthropic_delta(draw: Any, index: int) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(["text_delta"] * 6 + ["thinking_delta", "citations_delta", "input_json_delta"])
    )
    delta: dict[str, Any] = {"type": kind}
    if kind == "text_delta":
        if draw(st.integers(0, 9)):
            delta["text"] = draw(TEXT)
        if draw(st.integers(0, 9)) == 0:  # a null, a field of another delta, an unknown field
            delta[draw(st.sampled_from(["citation", "thinking", "partial_json", "extra"]))] = draw(
                st.sampled_from([None, "x", {"url": "u"}])
            )
    elif kind == "thinking_delta":
        delta["thinking"] = draw(TEXT)
    elif kind == "citations_delta":
        delta["citation"] = {
            "type": "web_search_result_location",
            "url": "https://e.example",
            "cited_text": "c",
        }
    else:
        delta["partial_json"] = '{"a":'
    event: dict[str, Any] = {"type": "content_block_delta", "delta": delta}
    if draw(st.integers(0, 9)):
        event["index"] = index if draw(st.integers(0, 9)) else index + 1  # sometimes another block's
    if draw(st.integers(0, 19)) == 0:
        event["usage"] = None
    return event


@st.composite
def anthropic_streams(draw: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 1}}}
    ]
    for index in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["text", "text", "thinking", "tool_use"]))
        block: dict[str, Any] = {"type": kind}
        if kind == "text":
            block["text"] = ""
        elif kind == "thinking":
            block["thinking"] = ""
        else:
            block.update(id=f"toolu_{index}", name="f", input={})
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events += [_anthropic_delta(draw, index) for _ in range(draw(st.integers(0, 8)))]
        if draw(st.integers(0, 5)):
            events.append({"type": "content_block_stop", "index": index})
        if draw(st.integers(0, 9)) == 0:
            events.append({"type": "ping"})
    events.append(
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}
    )
    events.append({"type": "message_stop"})
    return events


def _run_anthropic(frames: list[bytes], as_events: bool) -> tuple[list[Any], Any]:
    protocol = anthropic_messages.PROTOCOL
    state = protocol.new_state(ANTHROPIC)
    out: list[Any] = []
    try:
        for data in frames:
            protocol.step(state, SSEEvent(data) if as_events else data, out)
        protocol.on_halt(state, out)
    except LLMError as exc:
        out.append(("error", type(exc).__name__, str(exc)))
    return out, (state.usage, state.reason, state.done, state.metadata)


@settings(max_examples=300, deadline=None)
@given(anthropic_streams(), st.booleans())
def test_anthropic_text_delta_lean_path_gives_the_general_paths_events(
    stream: list[dict[str, Any]], as_events: bool
) -> None:
    frames = [json.dumps(e, ensure_ascii=False).encode() + b" " * (i % 3) for i, e in enumerate(stream)]
    lean = _run_anthropic(frames, as_events)
    mp = pytest.MonkeyPatch()
    mp.setattr(anthropic_messages.parse, "_text_decode", _NeverDecodes().decode)
    try:
        general = _run_anthropic(frames, as_events)
    finally:
        mp.undo()
    assert lean == general


@pytest.mark.parametrize(
    "rel", ["opencode/openai-chat/streams-text.yaml", "opencode/openai-chat/continues-after-tool-result.yaml"]
)
def test_chat_text_fast_path_takes_every_recorded_text_chunk(rel: str) -> None:
    """Real OpenAI text chunks (with ``service_tier``, ``system_fingerprint``, ``obfuscation``) fit
    the lean decoder; a field added to ``_Chunk`` that they carry would silently send every chunk
    down the general path (twice the instructions per event) with all events still equal."""
    from tests.helpers import load

    body = load(rel).interactions[0].response.body
    texts = 0
    for line in body.split(b"\n"):
        if not line.startswith(b"data: {"):
            continue
        data = line[len(b"data: ") :]
        choices = json.loads(data)["choices"]
        delta = choices[0]["delta"] if choices else {}
        if set(delta) == {"content"} and delta["content"]:
            texts += 1
            assert openai_chat.parse._text_decoder.decode(data).choices[0].delta.content == delta["content"]  # pyright: ignore[reportPrivateUsage]
    assert texts >= 2
