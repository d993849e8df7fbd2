# ruff: noqa: RUF001  (real provider text: full-width punctuation and typographic quotes are intended)
"""OpenRouter, Groq, Z.ai (GLM) and xAI facades on their real recorded bytes, under re-chunking.

Recordings: ``cassettes/pydantic-ai/test_openrouter|test_groq|test_zai`` and the opencode
openai-compatible-chat files for openrouter and xai.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest

import llmroute
from llmroute import hosted
from llmroute.providers import compatible, glm, openrouter, xai
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedResponse,
    ReplayTransport,
    event_order_problems,
)
from tests.helpers import load

OR = "pydantic-ai/test_openrouter/"
GROQ = "pydantic-ai/test_groq/"
ZAI = "pydantic-ai/test_zai/"
OC = "opencode/openai-compatible-chat/"

SEEDS = (1, 2, 3)


def chunkings(size: int) -> list[Chunking]:
    out = [Chunking.random(seed, max_size) for seed in SEEDS for max_size in (7, 300)]
    out.append(Chunking.fixed(4096))
    if size < 12_000:
        out.append(Chunking.bytewise())
    return out


async def run(
    cassette: Cassette, request: llmroute.LLMRequest, chunking: Chunking | None = None
) -> tuple[list[llmroute.LLMEvent], ReplayTransport]:
    transport = ReplayTransport(cassette, chunking)
    client = llmroute.Client(http=httpx.AsyncClient(transport=transport), retry=llmroute.RetryPolicy.none())
    async with client:
        events = [event async for event in client.stream(request)]
    return events, transport


async def replay_invariant(cassette: Cassette, request: llmroute.LLMRequest) -> list[llmroute.LLMEvent]:
    """Events from the whole body; identical under every re-chunking; well ordered; and the request
    we sent has the recorded URL path (checked by the replay transport)."""
    reference, _ = await run(cassette, request)
    size = len(cassette.interactions[0].response.body)
    for chunking in chunkings(size):
        events, _ = await run(cassette, request, chunking)
        assert events == reference, chunking
    assert event_order_problems(reference) == []
    return reference


async def prepared_body(request: llmroute.LLMRequest) -> Any:
    async with llmroute.Client() as client:
        return (await client.prepare(request)).json()


def single(path: str, index: int = 0) -> Cassette:
    return Cassette([load(path).interactions[index]])


def fold(events: list[llmroute.LLMEvent]) -> llmroute.LLMResponse:
    builder = llmroute.ResponseBuilder()
    for event in events:
        builder.add(event)
    return builder.build()


def finish_of(events: list[llmroute.LLMEvent]) -> llmroute.Finish:
    finish = events[-1]
    assert isinstance(finish, llmroute.Finish)
    return finish


OPENROUTER = openrouter.configure("test-key")


# -- OpenRouter ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_openrouter_web_search_annotations_stream() -> None:
    path = OR + "test_openrouter_web_search_annotations_stream.yaml"
    cassette = single(path)
    request = llmroute.request(
        OPENROUTER.chat("deepseek/deepseek-chat"),
        prompt="Use web search to find Pydantic AI's GitHub repository and answer with its URL only.",
        tools=[hosted.web_search(max_uses=1, search_context_size="medium")],
    )
    assert await prepared_body(request) == cassette.interactions[0].request.json()
    events = await replay_invariant(cassette, request)
    response = fold(events)
    assert response.text.endswith("https://github.com/pydantic/pydantic-ai")
    urls = [c.url for c in response.citations]
    assert urls == [
        "https://github.com/pydantic/pydantic-ai",
        "https://pydantic.dev/pydantic-ai",
        "https://github.com/pydantic/pydantic-ai/releases/tag/v2.0.0",
        "https://pydantic.dev/docs/ai/overview/",
        "https://github.com/pydantic/pydantic-ai/tree/refs/tags/v1.44.0",
    ]
    text_blocks = {e.id for e in events if isinstance(e, llmroute.TextStart)}
    for cite in response.citations:
        # sources arrived before any text with 0..0 offsets: bound to the answer block, no span
        assert cite.block_id in text_blocks
        assert cite.start is None and cite.end is None
        assert cite.cited_text  # the page excerpt OpenRouter returns
    assert response.citations[0].url in response.text  # the answer is the first source's URL
    # the plugin reports no call: the search its annotations show is reported at the end of the step
    (call,), (result,) = response.tool_calls, response.tool_results
    assert (call.name, call.provider_executed, result.id) == ("web_search", True, call.id)
    assert result.result == {
        "sources": [{"url": c.url, "title": c.title} for c in response.citations],
        "queries": [],
    }
    assert response.citations[0].title == "AI Agent Framework, the Pydantic way - GitHub"
    usage = finish_of(events).usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.web_search_requests) == (2317, 53, 1)
    assert usage.provider_metadata is not None and usage.provider_metadata["cost"] == pytest.approx(
        0.0076509169
    )


@pytest.mark.anyio
async def test_openrouter_web_search_tool_usage_stream() -> None:
    cassette = single(OR + "test_openrouter_web_search_tool_usage_stream.yaml")
    request = llmroute.request(
        OPENROUTER.chat("openai/gpt-4.1-mini"),
        prompt="Use web search to find Pydantic AI's GitHub repository and answer with its URL only.",
        tools=[hosted.web_search(max_uses=1, search_context_size="medium")],
    )
    assert await prepared_body(request) == cassette.interactions[0].request.json()
    events = await replay_invariant(cassette, request)
    assert fold(events).text == "https://github.com/pydantic/pydantic-ai "
    usage = finish_of(events).usage
    assert usage is not None and usage.web_search_requests == 1 and usage.input_tokens == 8174
    assert finish_of(events).reason == "stop"


@pytest.mark.anyio
async def test_openrouter_encrypted_reasoning_round_trips() -> None:
    cassette = single(OR + "test_openrouter_stream_with_reasoning.yaml")
    model = OPENROUTER.chat("openai/o3")
    request = llmroute.request(model, prompt="Who are you")
    assert await prepared_body(request) == cassette.interactions[0].request.json()
    events = await replay_invariant(cassette, request)
    response = fold(events)
    assert response.text.startswith("I’m ChatGPT, a large-language-model assistant created by OpenAI")
    (end,) = [e for e in events if isinstance(e, llmroute.ReasoningEnd)]
    assert end.encrypted is not None and end.encrypted.startswith("gAAAAABpCCSI")
    assert end.provider_metadata is not None
    (detail,) = end.provider_metadata["reasoning_details"]
    assert detail["type"] == "reasoning.encrypted" and detail["data"] == end.encrypted
    assert detail["id"] == "rs_0aa4f2c435e6d1dc0169082486816c8193a029b5fc4ef1764f"
    # the next turn sends the encrypted reasoning back exactly as received
    follow = llmroute.request(
        model, messages=[llmroute.user("Who are you"), *response.messages, llmroute.user("And?")]
    )
    assistant = (await prepared_body(follow))["messages"][1]
    assert assistant["reasoning_details"] == [detail]
    assert assistant["content"] == response.text


@pytest.mark.anyio
async def test_openrouter_claude_reasoning_with_signature() -> None:
    cassette = single(OR + "test_openrouter_streaming_reasoning.yaml")
    request = llmroute.request(
        OPENROUTER.chat("anthropic/claude-sonnet-4.5", reasoning={"enabled": True}), prompt="What is 2+2?"
    )
    assert await prepared_body(request) == cassette.interactions[0].request.json()
    events = await replay_invariant(cassette, request)
    response = fold(events)
    assert response.reasoning == "This is a simple arithmetic question. 2+2 equals 4."
    assert response.text == "2 + 2 = 4"
    (end,) = [e for e in events if isinstance(e, llmroute.ReasoningEnd)]
    assert end.signature is not None and end.signature.startswith("Et0BCkgIChACGAIqQA2s")
    assert end.provider_metadata == {
        "reasoning_details": [
            {
                "type": "reasoning.text",
                "text": "This is a simple arithmetic question. 2+2 equals 4.",
                "format": "anthropic-claude-v1",
                "index": 0,
                "signature": end.signature,
            }
        ]
    }
    usage = finish_of(events).usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (
        43,
        36,
        13,
    )


@pytest.mark.anyio
async def test_openrouter_error_chunk_after_200_is_a_typed_error() -> None:
    cassette = single(OR + "test_openrouter_stream_error.yaml")
    request = llmroute.request(OPENROUTER.chat("minimax/minimax-m2:free"), prompt="Hello there")
    size = len(cassette.interactions[0].response.body)
    for chunking in [Chunking.whole(), *chunkings(size)]:
        with pytest.raises(llmroute.InvalidRequestError, match="Token limit reached") as info:
            await run(cassette, request, chunking)
        assert info.value.provider == "openrouter"
        assert not info.value.retryable


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["openrouter-streams-text", "openrouter-streams-tool-call"])
async def test_opencode_openrouter_recordings(name: str) -> None:
    cassette = load(OC + name + ".yaml")
    recorded = cassette.interactions[0].request.json()
    request = request_from_recorded(recorded, OPENROUTER.chat(recorded["model"]))
    assert await prepared_body(request) == recorded
    events = await replay_invariant(cassette, request)
    check_opencode(name, events)


# -- xAI -------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["xai-streams-text", "xai-streams-tool-call"])
async def test_opencode_xai_recordings(name: str) -> None:
    cassette = load(OC + name + ".yaml")
    recorded = cassette.interactions[0].request.json()
    request = request_from_recorded(recorded, xai.configure("test-key").chat(recorded["model"]))
    ours = await prepared_body(request)
    if "stream_options" not in recorded:
        del ours["stream_options"]  # opencode left usage off for this one recording; we always ask for it
    assert ours == recorded
    events = await replay_invariant(cassette, request)
    response = fold(events)
    assert response.reasoning.startswith("First, the user says")  # grok-3-mini's reasoning_content
    check_opencode(name, events)


def request_from_recorded(body: dict[str, Any], model: llmroute.Model) -> llmroute.LLMRequest:
    system = [m["content"] for m in body["messages"] if m["role"] == "system"]
    prompt = [m["content"] for m in body["messages"] if m["role"] == "user"]
    tools = [
        llmroute.ToolDefinition(
            t["function"]["name"], t["function"]["description"], t["function"]["parameters"]
        )
        for t in body.get("tools", ())
    ]
    choice = body.get("tool_choice")
    return llmroute.request(
        model,
        system=system,
        prompt=prompt[0],
        tools=tools,
        tool_choice=llmroute.ToolChoice("tool", choice["function"]["name"]) if choice else None,
        generation=llmroute.GenerationOptions(max_tokens=body["max_tokens"], temperature=body["temperature"]),
    )


def check_opencode(name: str, events: list[llmroute.LLMEvent]) -> None:
    response = fold(events)
    if name.endswith("streams-text"):
        assert response.text == "Hello!"
        assert response.finish_reason == "stop"
    else:
        assert [(c.name, c.input) for c in response.tool_calls] == [("get_weather", {"city": "Paris"})]
        assert response.finish_reason == "tool-calls"


# -- Groq ------------------------------------------------------------------------------------------


GROQ_MODELS = compatible.configure("groq", api_key="test-key")


@pytest.mark.anyio
async def test_groq_compound_executed_search_is_a_hosted_call_and_result() -> None:
    cassette = single(GROQ + "test_groq_model_web_search_tool_stream.yaml")
    request = llmroute.request(
        GROQ_MODELS.chat("compound-beta"), prompt="What is the weather in San Francisco today?"
    )
    events = await replay_invariant(cassette, request)
    (call,) = [e for e in events if isinstance(e, llmroute.ToolCall)]
    (result,) = [e for e in events if isinstance(e, llmroute.ToolResult)]
    assert call.provider_executed and result.provider_executed
    assert (call.name, call.input) == ("web_search", {"query": "What is the weather in San Francisco today?"})
    assert result.id == call.id and result.name == "web_search"
    sources = result.result["sources"]
    assert set(result.result) == {"sources", "queries"}
    assert result.result["queries"] == ["What is the weather in San Francisco today?"]
    raw = result.provider_metadata["groq"]["search_results"]["results"]
    assert len(raw) == 16 and {"content", "score"} <= set(raw[0])  # the hits as sent ride along
    first_title: dict[str, str] = {}
    for hit in raw:
        first_title.setdefault(hit["url"], hit["title"])
    assert sources == [{"url": u, "title": t} for u, t in first_title.items()]  # by URL, provider order
    assert sources[0] == {"url": "https://www.weatherapi.com/", "title": "Weather in San Francisco"}
    assert result.provider_metadata["groq"]["output"].startswith(
        "Title: Weather in San Francisco\nURL: https://www.weatherapi.com/"
    )
    response = fold(events)
    assert response.text.startswith("The weather in San Francisco today")
    assert response.finish_reason == "stop"
    usage = finish_of(events).usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (5003, 359)
    # the hosted call and result stay in the history but are not replayed to the Chat API
    kinds = [type(p).__name__ for p in response.message.content]
    assert "ToolCallPart" in kinds and "ToolResultPart" in kinds
    follow = llmroute.request(
        request.model, messages=[llmroute.user("q"), *response.messages, llmroute.user("more")]
    )
    assert "tool_calls" not in (await prepared_body(follow))["messages"][1]


@pytest.mark.anyio
async def test_groq_tool_use_failed_error_then_recovery() -> None:
    path = GROQ + "test_tool_use_failed_error_streaming.yaml"
    recorded = load(path)
    model = GROQ_MODELS.chat("openai/gpt-oss-120b")
    tool = llmroute.ToolDefinition(
        "get_something_by_name",
        "",
        {
            "additionalProperties": False,
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "type": "object",
        },
    )
    request = llmroute.request(
        model,
        system="Be concise. Never use pretty double quotes, just regular ones.",
        prompt='Please call the "get_something_by_name" tool with non-existent parameters to test error '
        "handling; on the second try you can use valid args",
        tools=[tool],
        tool_choice="auto",
    )
    first = Cassette([recorded.interactions[0]])
    for chunking in [Chunking.whole(), *chunkings(len(first.interactions[0].response.body))]:
        with pytest.raises(llmroute.InvalidRequestError, match="Tool call validation failed") as info:
            await run(first, request, chunking)
        assert info.value.provider == "groq" and info.value.code == "invalid_request_error"
    # the retried call (pydantic-ai fed the validation error back) streams a valid tool call
    events = await replay_invariant(Cassette([recorded.interactions[1]]), request)
    response = fold(events)
    assert [(c.name, c.input) for c in response.tool_calls] == [
        ("get_something_by_name", {"name": "example"})
    ]
    assert response.finish_reason == "tool-calls"
    assert response.reasoning  # gpt-oss streams ``reasoning``
    usage = finish_of(events).usage
    assert usage is not None and usage.reasoning_tokens == 23
    events = await replay_invariant(Cassette([recorded.interactions[2]]), request)
    assert fold(events).text == "The tool returned the expected result for the valid call."


# -- Z.ai (GLM) ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_zai_thinking_stream() -> None:
    cassette = single(ZAI + "test_zai_thinking_stream.yaml")
    model = glm.configure("test-key", region="intl").chat(
        "glm-4.7", thinking={"clear_thinking": False, "type": "enabled"}
    )
    request = llmroute.request(model, prompt="What is 2 + 2?")
    assert await prepared_body(request) == cassette.interactions[0].request.json()
    events = await replay_invariant(cassette, request)
    response = fold(events)
    assert response.reasoning.startswith("\n1.  **Analyze the User's Request:**")
    assert response.text == "4"
    blocks = [type(e).__name__ for e in events if isinstance(e, llmroute.ReasoningStart | llmroute.TextStart)]
    assert blocks == ["ReasoningStart", "TextStart"]
    usage = finish_of(events).usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (
        13,
        564,
        561,
    )


# -- non-streamed (stream=False) ----------------------------------------------------------------------

WHOLE = llmroute.GenerationOptions(stream=False)
ZAI_MODELS = glm.configure("test-key", region="intl")
NON_STREAMED = {
    # recording -> (model, request options that reproduce the recorded body)
    OR + "test_openrouter_web_search_annotations.yaml": (
        OPENROUTER.chat("deepseek/deepseek-chat"),
        {"tools": [hosted.web_search(max_uses=1, search_context_size="medium")]},
    ),
    GROQ + "test_groq_model_web_search_tool.yaml": (GROQ_MODELS.chat("compound-beta", n=1), {}),
    ZAI + "test_zai_model_simple.yaml": (ZAI_MODELS.chat("glm-4.7", thinking={"clear_thinking": False}), {}),
}


def completion_fold(body: dict[str, Any]) -> dict[str, Any]:
    """What a chat.completion says, written out from its JSON."""
    message = body["choices"][0]["message"]
    annotations = [a["url_citation"] for a in message.get("annotations") or []]
    executed = [t for t in message.get("executed_tools") or [] if t["type"] == "search"]
    return {
        "text": message.get("content") or "",
        "reasoning": message.get("reasoning_content") or message.get("reasoning") or "",
        "citations": [a["url"] for a in annotations],
        "searches": [json.loads(t["arguments"])["query"] for t in executed]
        or ([None] if annotations else []),
        "usage": (body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"]),
        "finish": {"stop": "stop", "tool_calls": "tool-calls"}[body["choices"][0]["finish_reason"]],
    }


def our_fold(response: llmroute.LLMResponse) -> dict[str, Any]:
    searches = [r.result["queries"] for r in response.tool_results if r.name == "web_search"]
    return {
        "text": response.text,
        "reasoning": response.reasoning,
        "citations": [c.url for c in response.citations],
        "searches": [q[0] if q else None for q in searches],
        "usage": (response.usage.input_tokens, response.usage.output_tokens) if response.usage else None,
        "finish": response.finish_reason,
    }


@pytest.mark.anyio
@pytest.mark.parametrize("path", NON_STREAMED, ids=lambda p: p.split("/")[-1])
async def test_non_streamed_recording_replays_with_stream_false(path: str) -> None:
    """``stream: false`` without ``stream_options`` is the recorded body; the completion folds to
    what its message says (OpenRouter's annotations also report the search they imply)."""
    cassette = single(path)
    interaction = cassette.interactions[0]
    recorded = interaction.request.json()
    model, extra = NON_STREAMED[path]
    prompt = recorded["messages"][-1]["content"]
    request = llmroute.request(model, prompt=prompt, generation=WHOLE, **extra)
    async with llmroute.Client() as client:
        prepared = await client.prepare(request)
    assert prepared.json() == recorded
    assert prepared.headers["accept"] == "application/json"
    events, transport = await run(cassette, request)
    assert event_order_problems(events) == []
    assert transport.requests[0].url.path == httpx.URL(interaction.request.url).path
    assert our_fold(fold(events)) == completion_fold(json.loads(interaction.response.body))


def merged_completion(body: bytes) -> bytes:
    """The chat.completion a stream of chunks adds up to: content and reasoning concatenated,
    tool calls merged by index, the last finish_reason, usage and service_tier, every annotation and
    reasoning detail."""
    message: dict[str, Any] = {"role": "assistant"}
    calls: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {}
    finish = None
    for line in body.decode().replace("\r\n", "\n").split("\n"):
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        chunk = json.loads(line[5:])
        out.update({k: chunk[k] for k in ("id", "model", "service_tier") if k in chunk})
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            for key in ("content", "reasoning_content", "reasoning"):
                if delta.get(key):
                    message[key] = message.get(key, "") + delta[key]
            message.setdefault("reasoning_details", []).extend(delta.get("reasoning_details") or [])
            for ann in delta.get("annotations") or choice.get("annotations") or []:
                message.setdefault("annotations", []).append(ann)
            for call in delta.get("tool_calls") or []:
                into = calls.setdefault(
                    call.get("index", 0), {"type": "function", "function": {"arguments": ""}}
                )
                into.update({k: call[k] for k in ("id",) if call.get(k)})
                fn = call.get("function") or {}
                if fn.get("name"):
                    into["function"]["name"] = fn["name"]
                into["function"]["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return json.dumps(
        {**out, "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    ).encode()


AGREE = [
    (OR + "test_openrouter_web_search_annotations_stream.yaml", OPENROUTER.chat("deepseek/deepseek-chat")),
    (OR + "test_openrouter_streaming_reasoning.yaml", OPENROUTER.chat("m")),
    (OC + "groq-streams-tool-call.yaml", GROQ_MODELS.chat("m")),
    (OC + "xai-streams-tool-call.yaml", xai.configure("test-key").chat("m")),
    (ZAI + "test_zai_thinking_stream.yaml", ZAI_MODELS.chat("m")),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "model"), AGREE, ids=[p.split("/")[-1] for p, _ in AGREE])
async def test_streamed_and_non_streamed_forms_of_a_recording_agree(path: str, model: llmroute.Model) -> None:
    interaction = load(path).interactions[0]
    whole = Interaction(
        interaction.request,
        RecordedResponse(
            200, {"content-type": ["application/json"]}, merged_completion(interaction.response.body)
        ),
    )
    request = llmroute.request(model, prompt="x")
    streamed = fold((await run(Cassette([interaction]), request))[0])
    unstreamed = fold((await run(Cassette([whole]), msgspec.structs.replace(request, generation=WHOLE)))[0])
    for field in ("message", "citations", "tool_results", "usage", "finish_reason"):
        assert getattr(unstreamed, field) == getattr(streamed, field), field
