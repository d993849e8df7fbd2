"""Real tool-loop recordings replayed end to end with a real Python tool.

For each recording: the model's first turn asks for ``get_weather``; our runtime runs the Python
tool, builds the second request itself, and that request must equal the recorded second request
(``json.loads`` of both: same messages, call ids, results, tools); the final text must equal the
text in the recorded second response (read from the raw bytes, independently of our parsers).
Replays whole and re-chunked at random boundaries must give identical events.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

import llmroute
from llmroute import hosted
from llmroute.providers import anthropic, bedrock, compatible, google, openai
from llmroute.schema.content import Message, ToolCallPart, ToolResultPart
from llmroute.schema.events import ToolResult
from llmroute.schema.options import GenerationOptions
from llmroute.testing import Cassette, Chunking, ReplayTransport
from llmroute.tools import execute_calls, step_count_is
from tests.helpers import CASSETTES, explicit_strict


class City(msgspec.Struct):
    city: str


@llmroute.tool(description="Get current weather for a city.")
async def get_weather(args: City) -> dict[str, Any]:
    return {"temperature": 22, "condition": "sunny"}


# -- OpenAI Chat and compatible servers -----------------------------------------------------------

_HOSTS = {"api.groq.com": "groq", "openrouter.ai": "openrouter", "api.x.ai": "xai"}


def _chat_model(cassette: Cassette) -> llmroute.Model:
    body = cassette.interactions[0].request.json()
    family = _HOSTS.get(cassette.interactions[0].request.url.split("/")[2])
    if family is None:
        return openai.configure(api_key="sk-test").chat(body["model"])
    return compatible.configure(family, api_key="test-key").model(body["model"])


def _chat_request(cassette: Cassette) -> llmroute.LLMRequest:
    body = cassette.interactions[0].request.json()
    system = [m["content"] for m in body["messages"] if m["role"] == "system"]
    user = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return llmroute.request(
        _chat_model(cassette),
        system=system,
        prompt=user[-1],
        generation=GenerationOptions(max_tokens=body.get("max_tokens"), temperature=body.get("temperature")),
    )


def _chat_final_text(cassette: Cassette) -> str:
    text: list[str] = []
    for line in cassette.interactions[-1].response.body.decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices") or []:
                text.append((choice.get("delta") or {}).get("content") or "")
    return "".join(text)


# -- the other protocols: the request is the same scenario; final text read from raw bytes --------

SYSTEM = "Use the get_weather tool, then answer in one short sentence."
PROMPT = "What is the weather in Paris?"


def _sse_json(body: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for line in body.decode().splitlines()
        if line.startswith("data:") and "{" in line
    ]


def _responses_request(cassette: Cassette) -> llmroute.LLMRequest:
    model = openai.configure(api_key="sk-test").responses("gpt-5.5")
    return llmroute.request(model, system=SYSTEM, prompt=PROMPT, generation=GenerationOptions(max_tokens=80))


def _responses_text(cassette: Cassette) -> str:
    events = _sse_json(cassette.interactions[-1].response.body)
    return "".join(e["delta"] for e in events if e.get("type") == "response.output_text.delta")


def _anthropic_request(cassette: Cassette) -> llmroute.LLMRequest:
    model = anthropic.configure(api_key="sk-ant-test").messages("claude-opus-4-7")
    return llmroute.request(model, system=SYSTEM, prompt=PROMPT, generation=GenerationOptions(max_tokens=80))


def _anthropic_text(cassette: Cassette) -> str:
    events = _sse_json(cassette.interactions[-1].response.body)
    return "".join(
        e["delta"]["text"] for e in events if e.get("type") == "content_block_delta" and "text" in e["delta"]
    )


def _gemini_request(cassette: Cassette) -> llmroute.LLMRequest:
    model = google.configure(api_key="test-key").gemini("gemini-2.5-flash")
    generation = GenerationOptions(max_tokens=80, temperature=0)
    return llmroute.request(model, system=SYSTEM, prompt=PROMPT, generation=generation)


def _gemini_text(cassette: Cassette) -> str:
    text: list[str] = []
    for chunk in _sse_json(cassette.interactions[-1].response.body):
        for candidate in chunk.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if "text" in part and not part.get("thought"):
                    text.append(part["text"])
    return "".join(text)


def _bedrock_request(cassette: Cassette) -> llmroute.LLMRequest:
    model = bedrock.configure("us-east-1", api_key="test-key").converse("us.amazon.nova-micro-v1:0")
    generation = GenerationOptions(max_tokens=80, temperature=0)
    return llmroute.request(model, system=SYSTEM, prompt=PROMPT, generation=generation)


def _bedrock_text(cassette: Cassette) -> str:
    """AWS event-stream frames read by hand: total length, headers length, prelude CRC, headers,
    payload, message CRC."""
    body, text, i = cassette.interactions[-1].response.body, [], 0
    while i < len(body):
        total, headers_len = struct.unpack(">II", body[i : i + 8])
        payload = json.loads(body[i + 12 + headers_len : i + total - 4] or b"{}")
        delta = payload.get("delta") or {}
        if "text" in delta:
            text.append(delta["text"])
        i += total
    return "".join(text)


def _normalise(protocol: str, ours: dict[str, Any], recorded: dict[str, Any]) -> None:
    """Differences that are lowering choices of a protocol module, not of the tool runtime."""
    if protocol == "openai-responses":
        explicit_strict(recorded)  # we always send strict; the recordings left it to the server
    if protocol == "openai-responses" and recorded["input"][0].get("role") == "system":
        # we send request.system as `instructions`; opencode sent a system input message
        recorded["instructions"] = recorded["input"].pop(0)["content"]
    if protocol == "gemini":
        # Gemini sends no call ids: both sides invent them (opencode "tool_0", ours per response)
        ids = [
            p["functionCall"]["id"] for c in recorded["contents"] for p in c["parts"] if "functionCall" in p
        ]
        mine = [p["functionCall"]["id"] for c in ours["contents"] for p in c["parts"] if "functionCall" in p]
        text = json.dumps(ours)
        for a, b in zip(mine, ids, strict=True):
            text = text.replace(json.dumps(a), json.dumps(b))
        ours.clear()
        ours.update(json.loads(text))
    if protocol == "bedrock-converse":
        recorded.pop("modelId", None)  # ours is in the URL path only, as Converse defines it


Case = tuple[str, Callable[[Cassette], llmroute.LLMRequest], Callable[[Cassette], str]]

CASES: list[Case] = [
    ("opencode/openai-chat/drives-a-tool-loop-end-to-end.yaml", _chat_request, _chat_final_text),
    *(
        (str(p.relative_to(CASSETTES)), _chat_request, _chat_final_text)
        for p in sorted((CASSETTES / "opencode/openai-compatible-chat").glob("*drives-a-tool-loop*.yaml"))
    ),
    ("opencode/openai-responses/gpt-5-5-drives-a-tool-loop.yaml", _responses_request, _responses_text),
    (
        "opencode/anthropic-messages/claude-opus-4-7-drives-a-tool-loop.yaml",
        _anthropic_request,
        _anthropic_text,
    ),
    ("opencode/gemini/drives-a-tool-loop.yaml", _gemini_request, _gemini_text),
    ("opencode/bedrock-converse/drives-a-tool-loop.yaml", _bedrock_request, _bedrock_text),
]


def _param(case: Case) -> Any:
    return pytest.param(*case, id="/".join(case[0].split("/")[1:])[:-5])


def _load(rel: str) -> Cassette:
    path = CASSETTES / rel
    if not Path(path).exists():
        pytest.skip(f"{rel} not present")
    return Cassette.load(path)


async def _loop(
    cassette: Cassette, request: llmroute.LLMRequest, chunking: Chunking
) -> tuple[list[llmroute.LLMEvent], ReplayTransport]:
    transport = ReplayTransport(cassette, chunking)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        stream = client.stream(request, tools=[get_weather], stop_when=step_count_is(8))
        events = [e async for e in stream]
    return events, transport


@pytest.mark.anyio
@pytest.mark.parametrize(("rel", "make_request", "final_text"), [_param(c) for c in CASES])
async def test_tool_loop_recording_replays_end_to_end(
    rel: str, make_request: Callable[[Cassette], llmroute.LLMRequest], final_text: Callable[[Cassette], str]
) -> None:
    cassette = _load(rel)
    request = make_request(cassette)
    events, transport = await _loop(cassette, request, Chunking.whole())

    assert transport.remaining == 0
    protocol = rel.split("/")[1]
    for sent, interaction in zip(transport.requests, cassette.interactions, strict=True):
        ours, recorded = json.loads(sent.content), json.loads(interaction.request.body)
        _normalise(protocol, ours, recorded)
        assert ours == recorded

    results = [e for e in events if isinstance(e, ToolResult) and not e.provider_executed]
    assert [r.result for r in results] == [{"temperature": 22, "condition": "sunny"}]
    assert [e.type for e in events].count("step-start") == 2
    assert [e.type for e in events].count("finish") == 1

    response = llmroute.ResponseBuilder()
    for event in events:
        response.add(event)
    folded = response.build()
    assert folded.text == final_text(cassette)
    assert folded.finish_reason == "stop"
    steps_usage = [s.usage for s in folded.steps if s.usage is not None]
    assert folded.usage is not None and len(steps_usage) == 2
    assert folded.usage.input_tokens == sum(u.input_tokens or 0 for u in steps_usage)

    for seed in (1, 2, 3):
        rechunked, _ = await _loop(cassette, request, Chunking.random(seed, 48))
        assert rechunked == events


@pytest.mark.anyio
async def test_continues_after_tool_result_with_a_real_tool() -> None:
    """The one-turn recording of a history that already holds the call: run the call with the
    Python tool (``execute_calls``), append its result, and send exactly the recorded request."""
    cassette = _load("opencode/openai-chat/continues-after-tool-result.yaml")
    body = cassette.interactions[0].request.json()

    @llmroute.tool(description="Get current weather for a city.")
    async def get_weather(args: City) -> dict[str, Any]:
        return {"forecast": "sunny", "temperature_c": 22}

    recorded_call = body["messages"][2]["tool_calls"][0]
    call = ToolCallPart(
        recorded_call["id"],
        recorded_call["function"]["name"],
        json.loads(recorded_call["function"]["arguments"]),
    )
    events = await execute_calls([get_weather], [llmroute.ToolCall(call.id, call.name, call.input)])
    results = tuple(
        ToolResultPart(e.id, e.name, e.result, e.is_error) for e in events if isinstance(e, ToolResult)
    )
    request = llmroute.request(
        _chat_model(cassette),
        system=body["messages"][0]["content"],
        messages=[
            llmroute.user(body["messages"][1]["content"]),
            Message("assistant", (call,)),
            Message("tool", results),
        ],
        generation=GenerationOptions(max_tokens=body["max_tokens"], temperature=body["temperature"]),
    )
    transport = ReplayTransport(cassette)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(request)
    assert json.loads(transport.requests[0].content) == body
    assert response.text == _chat_final_text(cassette)


# -- provider-executed calls on real web-search recordings ----------------------------------------

WEB_SEARCH = [
    (
        "pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml",
        lambda: anthropic.configure(api_key="sk-ant-test").messages("claude-sonnet-4-0"),
        ("server_tool_use", "web_search_tool_result"),
    ),
    (
        "pydantic-ai/test_openai_responses/test_openai_responses_model_web_search_tool_stream.yaml",
        lambda: openai.configure(api_key="sk-test").responses("gpt-5"),
        ("web_search_call",),
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("rel", "make_model", "kinds"), WEB_SEARCH, ids=["anthropic", "openai-responses"])
async def test_provider_executed_web_search_is_not_dispatched_and_stays_in_history(
    rel: str, make_model: Callable[[], llmroute.Model], kinds: tuple[str, ...]
) -> None:
    cassette = _load(rel)
    model = make_model()
    request = llmroute.request(
        model, system="You are a helpful assistant.", prompt="Search the news.", tools=[hosted.web_search()]
    )
    dispatched: list[str] = []

    @llmroute.tool(name="web_search", description="A local tool that must never run for hosted calls.")
    async def local_web_search(query: str) -> str:
        dispatched.append(query)
        return "local"

    transport = ReplayTransport(cassette.interactions[:1])
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(
            request, tools=[get_weather, local_web_search], stop_when=step_count_is(5)
        )
        hosted_calls = [c for c in response.tool_calls if c.provider_executed]
        assert hosted_calls and all(c.name == "web_search" for c in hosted_calls)
        assert dispatched == []  # same name as a local tool, still never run locally
        assert not any(e.type == "tool-error" for e in response.events)
        assert len(transport.requests) == 1  # only hosted calls: the loop does not continue
        assert response.finish_reason == "stop"

        (assistant,) = response.messages
        carried = {p.id for p in assistant.content if isinstance(p, ToolCallPart) and p.provider_executed}
        results = {p.id for p in assistant.content if isinstance(p, ToolResultPart) and p.provider_executed}
        assert carried == results == {c.id for c in hosted_calls}

        follow_up = llmroute.request(
            model,
            messages=[*request.messages, *response.messages, llmroute.user("Thanks.")],
            tools=[hosted.web_search()],
        )
        body = (await client.prepare(follow_up)).body.decode()
    for kind in kinds:
        assert f'"type":"{kind}"' in body
    for call_id in carried:
        assert call_id in body
