"""The gateway's Gemini dialect, in process: real recordings of every upstream protocol replayed
through the Client, rendered as ``streamGenerateContent`` chunks and read by the official
``google-genai`` SDK's own response type; then the answer is sent back as the next turn's history
and decoded, and what the upstream must see again (its thought signature, an Anthropic signature,
a Responses ``encrypted_content``) is back on the parts the library lowers."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest

import llmroute
from llmroute.providers.registry import PROTOCOLS
from llmroute.schema.content import ReasoningPart, ToolCallPart
from llmroute.server.dialects.gemini import decode as dialect
from llmroute.server.dialects.gemini import render
from llmroute.server.dialects.gemini.wire import GenerateRequest
from llmroute.server.upstream import Upstream
from llmroute.testing import Cassette, ReplayTransport

from ..helpers import CASSETTES

pytestmark = pytest.mark.anyio
genai_types = pytest.importorskip("google.genai.types")

CASES = {
    "anthropic-thinking": (
        "anthropic-messages",
        "vercel-ai/anthropic/anthropic-clear-thinking.1.chunks.yaml",
    ),
    "anthropic-tool-call": ("anthropic-messages", "opencode/anthropic-messages/streams-tool-call.yaml"),
    "anthropic-web-search": (
        "anthropic-messages",
        "pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml",
    ),
    "chat-tool-call": ("openai-chat", "opencode/openai-chat/streams-tool-call.yaml"),
    "responses-reasoning": (
        "openai-responses",
        "opencode/openai-responses/openai-responses-gpt-5-5-reasoning.yaml",
    ),
    "gemini-tool-call": ("gemini", "vercel-ai/google/google-tool-call.chunks.yaml"),
    "gemini-web-search": ("gemini", "pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml"),
}


def _model(protocol: str) -> Any:
    return next(e for e in PROTOCOLS if e.name == protocol).sample("http://127.0.0.1:1")


async def _response(protocol: str, rel: str) -> llmroute.LLMResponse:
    transport = ReplayTransport(Cassette.load(CASSETTES / rel), check_url=False)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        return await client.generate(llmroute.request(model=_model(protocol), prompt="hi"))


def _chunks(response: llmroute.LLMResponse) -> list[Any]:
    """The streamed answer, each chunk read by google-genai's own ``GenerateContentResponse``."""
    stream = render.Stream("gw-model", frozenset())
    out = [stream.opening()]
    for event in response.events:
        stream.event(event, out)
    out.append(stream.end(next(e for e in response.events if isinstance(e, llmroute.Finish))))
    data = b"".join(out)
    assert data.endswith(b"\r\n\r\n")
    return [
        genai_types.GenerateContentResponse.model_validate(json.loads(chunk.removeprefix(b"data: ")))
        for chunk in data.split(b"\r\n\r\n")
        if chunk
    ]


def _next_turn(parts: list[dict[str, Any]], protocol: str) -> llmroute.LLMRequest:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": parts},
            {"role": "user", "parts": [{"text": "go on"}]},
        ]
    }
    payload = msgspec.json.decode(json.dumps(body), type=GenerateRequest)
    return dialect.lower(payload, _model(protocol), Upstream([_model(protocol)])).request


@pytest.mark.parametrize("case", sorted(CASES))
async def test_google_genai_reads_every_translated_stream(case: str) -> None:
    protocol, rel = CASES[case]
    response = await _response(protocol, rel)
    chunks = _chunks(response)
    last = chunks[-1]
    assert last.candidates[0].finish_reason == genai_types.FinishReason.STOP
    assert last.usage_metadata is not None
    assert response.usage is not None
    assert last.usage_metadata.total_token_count == (response.usage.input_tokens or 0) + (
        response.usage.output_tokens or 0
    )
    parts = [p for c in chunks for p in (c.candidates[0].content.parts or [])]
    text = "".join(p.text for p in parts if p.text and not p.thought)
    assert text == response.text
    calls = [e for e in response.events if isinstance(e, llmroute.ToolCall) and not e.provider_executed]
    sent = [p.function_call for p in parts if p.function_call is not None]
    assert [(f.id, f.name, f.args) for f in sent] == [(c.id, c.name, c.input) for c in calls]
    searches = [e for e in response.events if isinstance(e, llmroute.ToolResult) and e.name == "web_search"]
    grounding = last.candidates[0].grounding_metadata
    if searches:
        assert grounding is not None and grounding.grounding_chunks
        uris = [c.web.uri for c in grounding.grounding_chunks if c.web is not None]
        assert (
            uris[: len(searches[0].result["sources"])]
            == [s["url"] for s in searches[0].result["sources"] if s["url"]][: len(uris)]
        )
        for support in grounding.grounding_supports or ():
            encoded = text.encode()
            segment = support.segment
            assert encoded[segment.start_index : segment.end_index].decode() == segment.text
    else:
        assert grounding is None

    # the next turn: what the upstream must see again comes back (gemini-cli keeps calls, drops thoughts)
    wire_parts = [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in parts]
    history = _next_turn([p for p in wire_parts if not p.get("thought")], protocol).messages[1].content
    back = [p for p in history if isinstance(p, ToolCallPart)]
    assert [(p.id, p.input, p.provider_metadata) for p in back] == [
        (c.id, c.input, c.provider_metadata) for c in calls
    ]
    if calls and protocol == "anthropic-messages":
        ends = [e for e in response.events if isinstance(e, llmroute.ReasoningEnd)]
        kept = [p for p in history if isinstance(p, ReasoningPart)]
        assert [p.signature for p in kept] == [e.signature for e in ends]
    full = _next_turn(wire_parts, protocol).messages[1].content
    reasoning = [p for p in full if isinstance(p, ReasoningPart)]
    ends = [
        e for e in response.events if isinstance(e, llmroute.ReasoningEnd) and (e.signature or e.encrypted)
    ]
    assert [(p.signature, p.encrypted) for p in reasoning if p.signature or p.encrypted] == [
        (e.signature, e.encrypted) for e in ends
    ]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_whole_response_is_what_the_stream_builds(case: str) -> None:
    response = await _response(*CASES[case])
    whole = genai_types.GenerateContentResponse.model_validate(
        render.response(response, "gw-model", frozenset())
    )
    chunks = _chunks(response)
    streamed = "".join(
        p.text for c in chunks for p in (c.candidates[0].content.parts or []) if p.text and not p.thought
    )
    assert whole.text == (streamed or None)
    assert whole.candidates[0].grounding_metadata == chunks[-1].candidates[0].grounding_metadata
    assert whole.usage_metadata == chunks[-1].usage_metadata


def test_gemini_schemas_become_json_schema() -> None:
    given = {
        "type": "OBJECT",
        "properties": {
            "city": {"type": "STRING", "nullable": True},
            "days": {"type": "ARRAY", "items": {"type": "INTEGER"}},
        },
        "required": ["city"],
        "propertyOrdering": ["city", "days"],
    }
    assert dialect.json_schema(given) == {
        "type": "object",
        "properties": {
            "city": {"type": ["string", "null"]},
            "days": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["city"],
    }


def test_function_responses_without_ids_answer_the_calls_of_their_name_in_order() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "weather in two cities"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "weather", "args": {"city": "A"}}},
                    {"functionCall": {"name": "weather", "args": {"city": "B"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "weather", "response": {"output": "sun"}}},
                    {"functionResponse": {"name": "weather", "response": {"output": "rain"}}},
                ],
            },
        ]
    }
    payload = msgspec.json.decode(json.dumps(body), type=GenerateRequest)
    model = _model("openai-chat")
    messages = dialect.lower(payload, model, Upstream([model])).request.messages
    calls = [p.id for p in messages[1].content if isinstance(p, ToolCallPart)]
    results = [(p.id, p.result) for p in messages[2].content]  # type: ignore[union-attr]
    assert results == [(calls[0], {"output": "sun"}), (calls[1], {"output": "rain"})]
