"""The per-event fast paths change speed, never events: property tests against the general paths."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmroute
from llmroute.framing.sse import SSEDecoder, SSEEvent
from llmroute.protocols import openai_chat
from llmroute.providers import openai
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


def _run(frames: list[bytes]) -> tuple[list[Any], Any]:
    protocol = REQUEST.model.route.protocol  # type: ignore[union-attr]
    state = protocol.new_state(REQUEST)
    out: list[Any] = []
    try:
        for data in frames:
            protocol.step(state, SSEEvent(data), out)
    except LLMError as exc:
        out.append(("error", type(exc).__name__, str(exc)))
    return out, (state.text_len, state.text_starts, state.usage, state.finish_reason, state.done)


@settings(max_examples=300, deadline=None)
@given(chunks)
def test_chat_text_fast_path_gives_the_general_paths_events(stream: list[dict[str, Any]]) -> None:
    frames = [json.dumps(c, ensure_ascii=False).encode() for c in stream] + [b"[DONE]"]
    fast = _run(frames)
    mp = pytest.MonkeyPatch()
    mp.setattr(openai_chat, "_text_decoder", _NeverDecodes())
    try:
        general = _run(frames)
    finally:
        mp.undo()
    assert fast == general


class _General(SSEDecoder):
    def _fast(self, region: bytes) -> None:
        return None


def _general_only(region: bytes) -> list[SSEEvent]:
    return _General().feed(region + b"\n\n")


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
