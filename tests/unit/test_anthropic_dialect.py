"""The gateway's Anthropic Messages dialect, in process: real recordings of every upstream protocol
(Anthropic, OpenAI Chat, Responses, Gemini) replayed through the Client, the events rendered as
Anthropic SSE, and that stream read by the official ``anthropic`` SDK's own accumulator
(``accumulate_event``, what ``client.messages.stream(...).get_final_message()`` runs). Then the
accumulated message is sent back as the next turn's history and decoded: what the upstream must
see again (a Gemini thought signature, a Responses ``encrypted_content``, an Anthropic signature)
comes back on the parts the library lowers.

LiteLLM's "claude code" failures are checked on every stream: one ``message_start``, carrying
usage; no delta of one kind inside a block of another; a signature on every signed thinking block."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest

import llmroute
from llmroute.providers.registry import PROTOCOLS
from llmroute.schema.content import ReasoningPart, ToolCallPart, ToolResultPart
from llmroute.server import carry
from llmroute.server.dialects.anthropic_messages import decode as dialect
from llmroute.server.dialects.anthropic_messages import render
from llmroute.server.dialects.anthropic_messages.wire import MessagesRequest
from llmroute.server.upstream import Upstream
from llmroute.testing import Cassette, ReplayTransport

from ..helpers import CASSETTES

pytestmark = pytest.mark.anyio
anthropic = pytest.importorskip("anthropic")

# delta type -> the block type it may land in
_DELTA_BLOCK = {
    "text_delta": {"text"},
    "thinking_delta": {"thinking"},
    "signature_delta": {"thinking"},
    "input_json_delta": {"tool_use", "server_tool_use", "mcp_tool_use"},
    "citations_delta": {"text"},
}

CASES = {
    "anthropic-thinking": (
        "anthropic-messages",
        "vercel-ai/anthropic/anthropic-clear-thinking.1.chunks.yaml",
    ),
    "anthropic-web-search": (
        "anthropic-messages",
        "pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml",
    ),
    "anthropic-tool-call": ("anthropic-messages", "opencode/anthropic-messages/streams-tool-call.yaml"),
    "chat-tool-call": ("openai-chat", "opencode/openai-chat/streams-tool-call.yaml"),
    "responses-reasoning": (
        "openai-responses",
        "opencode/openai-responses/openai-responses-gpt-5-5-reasoning.yaml",
    ),
    "responses-web-search": (
        "openai-responses",
        "pydantic-ai/test_openai_responses/test_openai_responses_model_web_search_tool_stream.yaml",
    ),
    "gemini-tool-call": ("gemini", "vercel-ai/google/google-tool-call.chunks.yaml"),
    "gemini-web-search": ("gemini", "pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml"),
}


def _model(protocol: str) -> Any:
    return next(e for e in PROTOCOLS if e.name == protocol).sample("http://127.0.0.1:1")


async def _events(protocol: str, rel: str) -> list[llmroute.LLMEvent]:
    cassette = Cassette.load(CASSETTES / rel)
    transport = ReplayTransport(cassette, check_url=False)
    request = llmroute.request(model=_model(protocol), prompt="hi")
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        return [event async for event in client.stream(request)]


def _render(events: list[llmroute.LLMEvent]) -> bytes:
    stream = render.Stream("gw-model", frozenset())
    out = [stream.opening()]
    finish = None
    for event in events:
        if isinstance(event, llmroute.Finish):
            finish = event
        stream.event(event, out)
    out.append(stream.end(finish))
    return b"".join(out)


def _sse(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    for chunk in data.split(b"\n\n"):
        if not chunk.strip():
            continue
        lines = dict(line.split(b": ", 1) for line in chunk.split(b"\n"))
        body = json.loads(lines[b"data"])
        assert lines[b"event"].decode() == body["type"]
        events.append((body["type"], body))
    return events


def _sdk_http() -> Any:
    """``httpx``, or ``httpx2`` for the anthropic releases built on it."""
    import anthropic._base_client as base

    return getattr(base, "httpx2", None) or base.httpx


def _accumulate(data: bytes) -> Any:
    """The SDK's own stream helper over the bytes (``messages.stream(...).get_final_message()``),
    after checking what the SDK does not check itself."""
    kinds: dict[int, str] = {}
    open_index: int | None = None
    events = _sse(data)
    assert [t for t, _ in events].count("message_start") == 1
    assert events[0][0] == "message_start" and "usage" in events[0][1]["message"]
    assert events[-1][0] == "message_stop"
    for kind, body in events:
        if kind == "content_block_start":
            assert open_index is None, "a block opened inside another"
            assert body["index"] == len(kinds), "blocks numbered from 0 in order"
            kinds[body["index"]] = body["content_block"]["type"]
            open_index = body["index"]
        elif kind == "content_block_delta":
            assert body["index"] == open_index
            assert kinds[body["index"]] in _DELTA_BLOCK[body["delta"]["type"]], body
        elif kind == "content_block_stop":
            assert body["index"] == open_index
            open_index = None
    assert open_index is None

    wire: Any = _sdk_http()  # the HTTP package this anthropic release is built on

    def answer(_request: Any) -> Any:
        return wire.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    http = wire.Client(transport=wire.MockTransport(answer))
    client = anthropic.Anthropic(api_key="k", base_url="http://gateway.test", http_client=http)
    with client.messages.stream(
        model="gw-model", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        return stream.get_final_message()


def _next_turn(message: Any, protocol: str) -> llmroute.LLMRequest:
    """The accumulated message sent back as history (with a user turn after it), decoded."""
    content = [block.to_dict() for block in message.content]
    body = {
        "model": "gw-model",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": content},
            {"role": "user", "content": "go on"},
        ],
    }
    payload = msgspec.json.decode(json.dumps(body), type=MessagesRequest)
    return dialect.lower(payload, _model(protocol), Upstream([_model(protocol)])).request


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_sdk_accumulates_every_translated_stream(case: str) -> None:
    protocol, rel = CASES[case]
    events = await _events(protocol, rel)
    message = _accumulate(_render(events))
    finish = next(e for e in events if isinstance(e, llmroute.Finish))
    assert finish.usage is not None and finish.usage.output_tokens
    assert message.usage.output_tokens == finish.usage.output_tokens
    texts = "".join(e.text for e in events if isinstance(e, llmroute.TextDelta))
    assert "".join(b.text for b in message.content if b.type == "text") == texts
    calls = [e for e in events if isinstance(e, llmroute.ToolCall) and not e.provider_executed]
    uses = [b for b in message.content if b.type == "tool_use"]
    assert [(u.id, u.name, u.input) for u in uses] == [(c.id, c.name, c.input) for c in calls]
    assert message.stop_reason == ("tool_use" if calls else "end_turn")
    searches = [e for e in events if isinstance(e, llmroute.ToolCall) and e.provider_executed]
    shown = [b for b in message.content if b.type == "server_tool_use"]
    assert [b.id for b in shown] == [c.id for c in searches]
    results = [b for b in message.content if b.type == "web_search_tool_result"]
    assert len(results) == len(searches)
    for result, event in zip(
        results, (e for e in events if isinstance(e, llmroute.ToolResult)), strict=False
    ):
        urls = [s["url"] for s in event.result["sources"] if s["url"]]
        assert [r.url for r in result.content] == urls

    # the next turn gives the upstream back what it must see again
    history = _next_turn(message, protocol).messages[1].content
    ends = [e for e in events if isinstance(e, llmroute.ReasoningEnd)]
    kept = [p for p in history if isinstance(p, ReasoningPart)]
    if protocol == "anthropic-messages":
        assert [p.signature for p in kept] == [e.signature for e in ends]
    elif protocol == "openai-responses":
        assert [p.encrypted for p in kept] == [e.encrypted for e in ends]
        assert [p.provider_metadata for p in kept] == [e.provider_metadata for e in ends]
    back = [p for p in history if isinstance(p, ToolCallPart) and not p.provider_executed]
    assert [(p.id, p.input, p.provider_metadata) for p in back] == [
        (c.id, c.input, c.provider_metadata) for c in calls
    ]


async def test_a_gemini_thought_signature_rides_a_thinking_block_and_comes_back() -> None:
    events = await _events(*CASES["gemini-tool-call"])
    call = next(e for e in events if isinstance(e, llmroute.ToolCall))
    assert call.provider_metadata and call.provider_metadata["google"]["thoughtSignature"]
    message = _accumulate(_render(events))
    carrier = next(b for b in message.content if b.type == "thinking")
    packed = carry.unpack(carrier.signature)
    assert packed is not None and packed.call == call.id
    part = next(p for p in _next_turn(message, "gemini").messages[1].content if isinstance(p, ToolCallPart))
    assert part.provider_metadata == call.provider_metadata


def _kept(value: Any) -> Any:
    """``value`` without null fields (the SDK's models add them, the wire leaves them out)."""
    if isinstance(value, dict):
        return {k: _kept(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_kept(v) for v in value]
    return value


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_whole_message_is_what_the_stream_builds(case: str) -> None:
    protocol, rel = CASES[case]
    transport = ReplayTransport(Cassette.load(CASSETTES / rel), check_url=False)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(llmroute.request(model=_model(protocol), prompt="hi"))
    whole = render.message(response, "gw-model", frozenset())
    streamed = _accumulate(_render(list(response.events))).to_dict()
    assert _kept(whole["content"]) == _kept(streamed["content"])
    assert whole["stop_reason"] == streamed["stop_reason"]
    assert whole["usage"] == _kept(streamed["usage"])


def test_the_gateway_search_comes_back_as_the_call_and_result_the_upstream_saw() -> None:
    search = llmroute.ToolCall("call_1", "web_search", {"query": "news"})
    result = llmroute.ToolResult(
        "call_1",
        "web_search",
        {"summary": "S", "hits": [{"url": "https://a", "title": "A"}], "engine": "glm"},
    )
    events: list[llmroute.LLMEvent] = [
        search,
        result,
        llmroute.TextStart("t"),
        llmroute.TextDelta("t", "done"),
        llmroute.TextEnd("t"),
        llmroute.Finish("stop", llmroute.Usage(10, 2)),
    ]
    stream = render.Stream("gw", frozenset({"web_search"}))
    out = [stream.opening()]
    for event in events:
        stream.event(event, out)
    out.append(stream.end(llmroute.Finish("stop", llmroute.Usage(10, 2))))
    message = _accumulate(b"".join(out))
    assert [b.type for b in message.content] == ["server_tool_use", "web_search_tool_result", "text"]
    assert message.content[1].content[0].url == "https://a"
    history = _next_turn(message, "openai-chat").messages
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant", "user"]
    assert history[1].content == (ToolCallPart(message.content[0].id, "web_search", {"query": "news"}),)
    sent = history[2].content[0]
    assert isinstance(sent, ToolResultPart) and sent.result == result.result
