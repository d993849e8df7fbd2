"""Provider streams that break their own protocol's order (a block reopened, a call id repeated,
content after the stop, a second message inside an open one) are a typed
``InvalidProviderOutputError``, never a stream the caller cannot trust: for any sequence of
well-formed Anthropic, Bedrock Converse and Gemini events, the replay through ``Client`` either
fails typed or yields events that ``event_order_problems`` finds nothing wrong with."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmroute
from llmroute.framing.eventstream import encode_message
from llmroute.providers import anthropic, bedrock, google, openai
from llmroute.testing import (
    Cassette,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    ReplayTransport,
    event_order_problems,
)

ANTHROPIC = anthropic.configure(api_key="sk-ant-test").messages("m")
BEDROCK = bedrock.configure(region="us-east-1", api_key="test-bedrock-key").converse("m")
GEMINI = google.configure(api_key="test-key").gemini("m")
RESPONSES = openai.configure(api_key="sk-test").responses("m")
URLS = {
    "anthropic": "https://api.anthropic.com/v1/messages",
    "bedrock": "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent?alt=sse",
    "responses": "https://api.openai.com/v1/responses",
}
MODELS = {"anthropic": ANTHROPIC, "bedrock": BEDROCK, "gemini": GEMINI, "responses": RESPONSES}
TYPES = {"bedrock": "application/vnd.amazon.eventstream", "anthropic": "text/event-stream"}


def _anthropic_body(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _bedrock_body(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    headers = {":content-type": "application/json", ":message-type": "event"}
    return b"".join(
        encode_message({":event-type": kind, **headers}, json.dumps(payload).encode())
        for kind, payload in events
    )


def _gemini_body(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


async def _generate(family: str, body: bytes) -> llmroute.LLMResponse:
    response = RecordedResponse(200, {"content-type": [TYPES.get(family, "text/event-stream")]}, body)
    cassette = Cassette([Interaction(RecordedRequest("POST", URLS[family], {}, b""), response)])
    http = httpx.AsyncClient(transport=ReplayTransport(cassette))
    async with llmroute.Client(http=http, retry=llmroute.RetryPolicy.none()) as client:
        return await client.generate(llmroute.request(model=MODELS[family], prompt="x"))


def _typed_or_well_ordered(family: str, body: bytes) -> None:
    try:
        response = anyio.run(_generate, family, body)
    except llmroute.LLMError:
        return  # refused, typed
    assert event_order_problems(response.events) == []


# -- the events each protocol can send, shuffled ------------------------------------------------------

_index = st.integers(0, 2)
_anthropic_block = st.sampled_from(
    [
        {"type": "text", "text": ""},
        {"type": "thinking", "thinking": ""},
        {"type": "redacted_thinking", "data": "x"},
        {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}},
        {"type": "tool_use", "id": "toolu_b", "name": "f", "input": {}},
        {"type": "server_tool_use", "id": "srvtoolu_a", "name": "web_search", "input": {}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_a", "content": []},
    ]
)
_anthropic_delta = st.sampled_from(
    [
        {"type": "text_delta", "text": "hi"},
        {"type": "thinking_delta", "thinking": "hm"},
        {"type": "signature_delta", "signature": "sig"},
        {"type": "input_json_delta", "partial_json": '{"a":1}'},
    ]
)
_anthropic_event = st.one_of(
    st.builds(
        lambda i, b: {"type": "content_block_start", "index": i, "content_block": b}, _index, _anthropic_block
    ),
    st.builds(lambda i, d: {"type": "content_block_delta", "index": i, "delta": d}, _index, _anthropic_delta),
    st.builds(lambda i: {"type": "content_block_stop", "index": i}, _index),
    st.just({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
    st.just({"type": "message_start", "message": {"id": "m2", "usage": {"input_tokens": 1}}}),
    st.just({"type": "message_stop"}),
)
_MESSAGE_START = {"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 1}}}

_bedrock_event = st.one_of(
    st.builds(
        lambda i, s: ("contentBlockStart", {"contentBlockIndex": i, "start": s}),
        _index,
        st.sampled_from(
            [
                {"toolUse": {"toolUseId": "a", "name": "f"}},
                {"toolUse": {"toolUseId": "b", "name": "f"}},
                {"toolResult": {"toolUseId": "a", "type": "web_search_result"}},
            ]
        ),
    ),
    st.builds(
        lambda i, d: ("contentBlockDelta", {"contentBlockIndex": i, "delta": d}),
        _index,
        st.sampled_from(
            [
                {"text": "hi"},
                {"reasoningContent": {"text": "hm"}},
                {"reasoningContent": {"signature": "sig"}},
                {"toolUse": {"input": "{}"}},
            ]
        ),
    ),
    st.builds(lambda i: ("contentBlockStop", {"contentBlockIndex": i}), _index),
    st.just(("messageStop", {"stopReason": "end_turn"})),
    st.just(("metadata", {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}})),
)

_gemini_part = st.sampled_from(
    [
        {"text": "hi"},
        {"text": "hm", "thought": True},
        {"text": "", "thoughtSignature": "sig"},
        {"functionCall": {"name": "f", "args": {"a": 1}, "id": "x"}},
        {"functionCall": {"name": "f", "args": {"a": 1}}},
        {"functionCall": {"name": "g", "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "v"}], "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.b[0].c", "numberValue": 1}]}},
        {"functionCall": {}},
        {"executableCode": {"code": "print(1)", "language": "PYTHON"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
    ]
)
_gemini_chunk = st.builds(
    lambda parts, stop: {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, **({"finishReason": "STOP"} if stop else {})}
        ],
        "responseId": "r",
    },
    st.lists(_gemini_part, min_size=1, max_size=3),
    st.booleans(),
)

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(st.lists(_anthropic_event, min_size=1, max_size=8))
def test_anthropic_any_event_order_is_refused_typed_or_well_formed(events: list[dict[str, Any]]) -> None:
    _typed_or_well_ordered("anthropic", _anthropic_body([_MESSAGE_START, *events]))


@_SETTINGS
@given(st.lists(_bedrock_event, min_size=1, max_size=8))
def test_bedrock_any_event_order_is_refused_typed_or_well_formed(
    events: list[tuple[str, dict[str, Any]]],
) -> None:
    _typed_or_well_ordered("bedrock", _bedrock_body([("messageStart", {"role": "assistant"}), *events]))


@_SETTINGS
@given(st.lists(_gemini_chunk, min_size=1, max_size=6))
def test_gemini_any_part_order_is_refused_typed_or_well_formed(chunks: list[dict[str, Any]]) -> None:
    _typed_or_well_ordered("gemini", _gemini_body(chunks))


# -- each violation, named ------------------------------------------------------------------------------


def _anthropic_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


_END = [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            [
                _anthropic_start(0, {"type": "text", "text": ""}),
                _anthropic_start(0, {"type": "text", "text": ""}),
            ],
            "content_block_start for used index 0",
        ),
        (
            [
                _anthropic_start(0, {"type": "text", "text": "a"}),
                {"type": "content_block_stop", "index": 0},
                _anthropic_start(0, {"type": "thinking", "thinking": ""}),
            ],
            "content_block_start for used index 0",
        ),
        (
            [
                _anthropic_start(0, {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}}),
                _anthropic_start(1, {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}}),
            ],
            "tool use id 'toolu_a' repeated",
        ),
    ],
    ids=["open-index-reopened", "closed-index-reused", "tool-id-repeated"],
)
def test_anthropic_violations_are_typed(events: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(llmroute.InvalidProviderOutputError, match=message):
        anyio.run(_generate, "anthropic", _anthropic_body([_MESSAGE_START, *events, *_END]))


_STOP = ("messageStop", {"stopReason": "end_turn"})
_META = ("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}})


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            [_STOP, ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "late"}})],
            "contentBlockDelta after messageStop",
        ),
        ([_STOP, _STOP], "messageStop after messageStop"),
        (
            [
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "a"}}),
                ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "b"}}),
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "c"}}),
            ],
            "text block 'text-0' opened again after it ended",
        ),
        (
            [
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "a"}}}),
                ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "b"}}),
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "c"}}}),
            ],
            "reasoning block 'reasoning-0' opened again after it ended",
        ),
        (
            [
                (
                    "contentBlockStart",
                    {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "a", "name": "f"}}},
                ),
                (
                    "contentBlockStart",
                    {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "b", "name": "f"}}},
                ),
            ],
            "contentBlockStart for block 0, which already started",
        ),
        (
            [
                (
                    "contentBlockStart",
                    {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "a", "name": "f"}}},
                ),
                ("contentBlockStop", {"contentBlockIndex": 0}),
                (
                    "contentBlockStart",
                    {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "a", "name": "f"}}},
                ),
            ],
            "toolUseId 'a' repeated",
        ),
    ],
    ids=[
        "content-after-stop",
        "second-stop",
        "text-block-reopened",
        "reasoning-block-reopened",
        "tool-block-restarted",
        "tool-id-repeated",
    ],
)
def test_bedrock_violations_are_typed(events: list[tuple[str, dict[str, Any]]], message: str) -> None:
    body = _bedrock_body([("messageStart", {"role": "assistant"}), *events, _STOP, _META])
    with pytest.raises(llmroute.InvalidProviderOutputError, match=message):
        anyio.run(_generate, "bedrock", body)


def test_gemini_repeated_call_id_is_typed() -> None:
    call = {"functionCall": {"name": "f", "args": {}, "id": "x"}}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [call, call]}, "finishReason": "STOP"}]}
    with pytest.raises(llmroute.InvalidProviderOutputError, match="function call id 'x' repeated"):
        anyio.run(_generate, "gemini", _gemini_body([chunk]))


def _text(item: str, delta: str, output_index: int = 0) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": item,
        "output_index": output_index,
        "content_index": 0,
        "delta": delta,
    }


def test_responses_text_part_reopened_after_it_ended_is_typed() -> None:
    """Text for a message part whose block another part already ended: the block is not opened a
    second time (a consumer has seen it end); the stream is refused naming the part."""
    events = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        _text("msg_a", "one"),
        _text("msg_b", "two", 1),
        _text("msg_a", "three"),
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    ]
    body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    with pytest.raises(llmroute.InvalidProviderOutputError, match="text block 'msg_a:0' opened again"):
        anyio.run(_generate, "responses", body)
