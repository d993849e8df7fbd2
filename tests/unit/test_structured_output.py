"""Structured output and JSON mode inside every protocol (issue #21): Anthropic and Bedrock Converse
answer through their native JSON-schema mode where the model has one, else through a forced tool
whose call comes back as the answer's *text* (never a tool call), in ``client.stream``, ``generate``,
non-streamed bodies and tool loops. The forced-tool answers replay real recordings of a forced
``get_weather`` call, read as the output tool of that name."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest

import llmroute
from llmroute.providers import anthropic, bedrock, google, openai
from llmroute.schema.request import OutputSchema
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    ReplayTransport,
)

from ..helpers import replay_events, replay_generate

pytestmark = pytest.mark.anyio

OPEN = {"type": "object", "properties": {"city": {"type": "string"}}}  # not closed: no native mode
CLOSED = {**OPEN, "required": ["city"], "additionalProperties": False}
ANTHROPIC_CALL = "opencode/anthropic-messages/streams-tool-call.yaml"
CONVERSE_CALL = "opencode/bedrock-converse/streams-a-tool-call.yaml"


def _claude(model_id: str = "claude-haiku-4-5-20251001") -> llmroute.Model:
    return anthropic.configure(api_key="sk-ant-test").messages(model_id)


def _nova() -> llmroute.Model:
    return bedrock.configure("us-east-1", api_key="test-key-0000").converse("us.amazon.nova-micro-v1:0")


async def _body(request: llmroute.LLMRequest) -> dict[str, Any]:
    async with llmroute.Client() as client:
        return msgspec.json.decode((await client.prepare(request)).body)


# -- the request side -------------------------------------------------------------------------------


async def test_anthropic_native_output_where_the_model_has_it() -> None:
    body = await _body(_with(_claude(), CLOSED))
    assert body["output_config"]["format"] == {"type": "json_schema", "schema": CLOSED}
    assert "tools" not in body and "tool_choice" not in body


async def test_anthropic_forced_tool_for_an_older_model_or_an_open_schema() -> None:
    for model, schema in ((_claude("claude-3-5-haiku-latest"), CLOSED), (_claude(), OPEN)):
        body = await _body(_with(model, schema))
        assert "output_config" not in body
        assert body["tools"][-1]["name"] == "get_weather"
        assert body["tools"][-1]["input_schema"] == schema
        assert body["tool_choice"] == {"type": "tool", "name": "get_weather"}


async def test_caller_tools_stay_callable_beside_the_output_tool() -> None:
    lookup = llmroute.ToolDefinition("lookup", "Look up.", CLOSED)
    request = msgspec.structs.replace(_with(_claude("claude-3-5-haiku-latest"), CLOSED), tools=(lookup,))
    body = await _body(request)
    assert [t["name"] for t in body["tools"]] == ["lookup", "get_weather"]
    assert body["tool_choice"] == {"type": "any"}  # a caller's tool first, or the answer


async def test_forced_tool_with_thinking_is_refused_naming_the_option() -> None:
    model = _claude("claude-3-7-sonnet-latest").with_(provider_options={"anthropic": {"thinking": 2048}})
    with pytest.raises(llmroute.InvalidRequestError, match=r"output_schema.*extended thinking"):
        await _body(_with(model, CLOSED))


async def test_json_mode_on_every_protocol() -> None:
    chat = openai.configure(api_key="sk-test").chat("gpt-4.1")
    responses = openai.configure(api_key="sk-test").responses("gpt-5")
    gemini = google.configure(api_key="test-key").gemini("gemini-2.5-flash")
    assert (await _body(_json(chat)))["response_format"] == {"type": "json_object"}
    assert (await _body(_json(responses)))["text"]["format"] == {"type": "json_object"}
    assert (await _body(_json(gemini)))["generationConfig"]["responseMimeType"] == "application/json"
    for model in (_claude(), _nova()):
        body = await _body(_json(model))
        tools = body.get("tools") or body["toolConfig"]["tools"]
        last = tools[-1].get("toolSpec", tools[-1])
        assert last["name"] == "json"
        assert (last.get("input_schema") or last["inputSchema"]["json"]) == {"type": "object"}


async def test_converse_native_output_for_claude() -> None:
    model = bedrock.configure("us-east-1", api_key="test-key-0000").converse(
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    )
    body = await _body(_with(model, CLOSED))
    spec = body["outputConfig"]["textFormat"]
    assert spec["type"] == "json_schema"
    assert json.loads(spec["structure"]["jsonSchema"]["schema"]) == CLOSED
    assert "toolConfig" not in body


def _with(model: llmroute.Model, schema: dict[str, Any]) -> llmroute.LLMRequest:
    request = llmroute.request(model, prompt="Weather in Paris?")
    return msgspec.structs.replace(request, output_schema=OutputSchema("get_weather", schema))


def _json(model: llmroute.Model) -> llmroute.LLMRequest:
    return msgspec.structs.replace(llmroute.request(model, prompt="Answer in JSON."), json_mode=True)


# -- the answer side: the forced tool's call is the answer's text --------------------------------


@pytest.mark.parametrize(
    ("cassette", "model"),
    [(ANTHROPIC_CALL, _claude), (CONVERSE_CALL, _nova)],
    ids=["anthropic", "bedrock-converse"],
)
@pytest.mark.parametrize(
    "chunking", [None, Chunking.random(7, 9), Chunking.bytewise()], ids=["whole", "random", "bytes"]
)
async def test_the_forced_tool_answers_as_text(cassette: str, model: Any, chunking: Chunking | None) -> None:
    request = _with(model(), OPEN)
    response, _ = await replay_generate(cassette, request, chunking)
    assert json.loads(response.text) == {"city": "Paris"}
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    events = await replay_events(cassette, request, chunking)
    kinds = [e.type for e in events]
    assert "tool-call" not in kinds and "tool-input-start" not in kinds
    assert kinds.count("text-start") == kinds.count("text-end") == 1


async def test_without_output_schema_the_same_bytes_are_a_tool_call() -> None:
    """The guard above is the request's output tool, not the bytes: a plain request keeps the call."""
    response, _ = await replay_generate(ANTHROPIC_CALL, llmroute.request(_claude(), prompt="hi"))
    assert [c.name for c in response.tool_calls] == ["get_weather"]
    assert response.finish_reason == "tool-calls" and response.text == ""


def _whole_cassette(url: str, body: dict[str, Any]) -> Cassette:
    return Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": ["application/json"]}, json.dumps(body).encode()),
            )
        ]
    )


async def test_non_streamed_anthropic_answer() -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-3-5-haiku-latest",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    request = _with(_claude("claude-3-5-haiku-latest"), CLOSED)
    request = msgspec.structs.replace(request, generation=llmroute.GenerationOptions(stream=False))
    cassette = _whole_cassette("https://api.anthropic.com/v1/messages", body)
    response, _ = await replay_generate(cassette, request)
    assert json.loads(response.text) == {"city": "Oslo"}
    assert response.tool_calls == () and response.finish_reason == "stop"


def _sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _turn(block: dict[str, Any], partial: str, stop: str) -> bytes:
    start = {"type": "message_start", "message": {"id": "m", "model": "c", "content": [], "usage": {}}}
    return _sse(
        [
            start,
            {"type": "content_block_start", "index": 0, "content_block": block},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": partial},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 3}},
            {"type": "message_stop"},
        ]
    )


async def test_tool_loop_runs_the_callers_tool_then_answers_as_text() -> None:
    calls: list[str] = []

    @llmroute.tool
    def lookup(city: str) -> str:
        """Look a city up."""
        calls.append(city)
        return "sunny"

    url = "https://api.anthropic.com/v1/messages"
    steps = [
        _turn(
            {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}, '{"city": "Oslo"}', "tool_use"
        ),
        _turn(
            {"type": "tool_use", "id": "t2", "name": "get_weather", "input": {}},
            '{"city": "Oslo"}',
            "tool_use",
        ),
    ]
    cassette = Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": ["text/event-stream"]}, body),
            )
            for body in steps
        ]
    )
    transport = ReplayTransport(cassette)
    request = _with(_claude("claude-3-5-haiku-latest"), OPEN)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(request, tools=[lookup])
    assert calls == ["Oslo"]
    assert json.loads(response.text) == {"city": "Oslo"}
    assert [c.name for c in response.tool_calls] == ["lookup"]
    assert response.finish_reason == "stop"
