"""OpenAI Chat and OpenAI-compatible servers on their real recorded bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

import llmroute
from llmroute.protocols.openai_chat import ChatQuirks
from llmroute.providers import compatible, openai
from llmroute.testing import Cassette, Chunking, event_order_problems
from tests.helpers import CASSETTES, replay_events, replay_generate, sse_cassette

CHAT_URL = "https://api.openai.com/v1/chat/completions"
CHAT = sorted((CASSETTES / "opencode").glob("openai-c*/*.yaml"))
HOSTS = {
    "api.deepseek.com": "deepseek",
    "api.groq.com": "groq",
    "openrouter.ai": "openrouter",
    "api.together.xyz": "togetherai",
    "api.x.ai": "xai",
}

# name -> (text, [(tool name, input)], finish reason, input tokens, output tokens, reasoning tokens)
EXPECTED: dict[str, tuple[str | None, list[tuple[str, Any]], str, int | None, int | None, int | None]] = {
    "continues-after-tool-result": (None, [], "stop", 59, 14, 0),
    "drives-a-tool-loop-end-to-end": ("", [("get_weather", {"city": "Paris"})], "tool-calls", 64, 14, 0),
    "streams-text": ("Hello!", [], "stop", 22, 2, 0),
    "streams-tool-call": ("", [("get_weather", {"city": "Paris"})], "tool-calls", 67, 5, 0),
    "deepseek-streams-text": ("Hello!", [], "stop", 14, 2, None),
    "groq-llama-3-3-70b-drives-a-tool-loop": (
        "",
        [("get_weather", {"city": "Paris"})],
        "tool-calls",
        237,
        14,
        None,
    ),
    "groq-streams-text": ("Hello!", [], "stop", 45, 3, None),
    "groq-streams-tool-call": ("", [("get_weather", {"city": "Paris"})], "tool-calls", 249, 10, None),
    "openrouter-claude-opus-4-7-drives-a-tool-loop": (
        "",
        [("get_weather", {"city": "Paris"})],
        "tool-calls",
        802,
        66,
        0,
    ),
    "openrouter-gpt-4o-mini-drives-a-tool-loop": (
        "",
        [("get_weather", {"city": "Paris"})],
        "tool-calls",
        66,
        14,
        0,
    ),
    "openrouter-gpt-5-5-drives-a-tool-loop": (
        "",
        [("get_weather", {"city": "Paris"})],
        "tool-calls",
        69,
        18,
        0,
    ),
    "openrouter-streams-text": ("Hello!", [], "stop", 21, 3, 0),
    "openrouter-streams-tool-call": ("", [("get_weather", {"city": "Paris"})], "tool-calls", 67, 5, 0),
    "togetherai-streams-text": ("Hello!", [], "stop", 45, 3, None),
    "togetherai-streams-tool-call": ("", [("get_weather", {"city": "Paris"})], "tool-calls", 194, 19, None),
    "xai-grok-4-3-drives-a-tool-loop": (
        "",
        [("get_weather", {"city": "Paris"})],
        "tool-calls",
        250,
        233,
        222,
    ),
    "xai-streams-text": ("Hello!", [], "stop", 21, 286, 284),
    "xai-streams-tool-call": (" ", [("get_weather", {"city": "Paris"})], "tool-calls", None, None, None),
}


def model_for(cassette: Cassette) -> llmroute.Model:
    host = cassette.interactions[0].request.url.split("/")[2]
    family = HOSTS.get(host)
    if family is None:
        return openai.configure(api_key="sk-test").chat("gpt-4o-mini")
    return compatible.configure(family, api_key="test-key").model("recorded-model")


def request_from_body(body: dict[str, Any], model: llmroute.Model) -> llmroute.LLMRequest:
    """Our request for a recorded Chat body: the inverse of the lowering, written independently."""
    system: list[str] = []
    messages: list[llmroute.Message] = []
    names: dict[str, str] = {}
    for m in body["messages"]:
        if m["role"] == "system":
            system.append(m["content"])
        elif m["role"] == "user":
            messages.append(llmroute.user(m["content"]))
        elif m["role"] == "assistant":
            parts: list[Any] = [llmroute.TextPart(m["content"])] if m.get("content") else []
            for call in m.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                parts.append(
                    llmroute.ToolCallPart(
                        call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])
                    )
                )
            messages.append(llmroute.Message("assistant", tuple(parts)))
        elif m["role"] == "tool":
            result = llmroute.ToolResultPart(
                m["tool_call_id"], names[m["tool_call_id"]], json.loads(m["content"])
            )
            messages.append(llmroute.tool_message(result))
    tools = [
        llmroute.ToolDefinition(
            t["function"]["name"], t["function"]["description"], t["function"]["parameters"]
        )
        for t in body.get("tools") or []
    ]
    choice = body.get("tool_choice")
    return llmroute.request(
        model=model.with_(id=body["model"]),
        system=system or None,
        messages=messages,
        tools=tools,
        tool_choice=choice["function"]["name"] if isinstance(choice, dict) else choice,
        generation=llmroute.GenerationOptions(
            max_tokens=body.get("max_tokens"), temperature=body.get("temperature")
        ),
    )


@pytest.mark.anyio
@pytest.mark.parametrize("path", CHAT, ids=lambda p: p.stem)
async def test_recording_parses_to_expected_response(path: Any) -> None:
    cassette = Cassette.load(path)
    model = model_for(cassette)
    request = request_from_body(cassette.interactions[0].request.json(), model)
    response, _ = await replay_generate(cassette, request)
    text, calls, reason, input_tokens, output_tokens, reasoning_tokens = EXPECTED[path.stem]
    if text is not None:
        assert response.text == text
    else:
        assert response.text.startswith("The weather in Paris is sunny")
    assert [(c.name, c.input) for c in response.tool_calls] == calls
    assert all(c.id for c in response.tool_calls)
    assert response.finish_reason == reason
    usage = response.usage
    if input_tokens is None:
        assert usage is None
    else:
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (
            input_tokens,
            output_tokens,
            reasoning_tokens,
        )
        assert usage.provider_metadata is not None  # raw usage kept
    assert event_order_problems(response.events) == []
    if "xai" in path.stem:
        assert response.reasoning  # reasoning_content surfaced as reasoning blocks


@pytest.mark.anyio
@pytest.mark.parametrize("path", CHAT, ids=lambda p: p.stem)
async def test_lowering_reproduces_every_recorded_request(path: Any) -> None:
    cassette = Cassette.load(path)
    model = model_for(cassette)
    for interaction in cassette.interactions:
        recorded = interaction.request.json()
        if "stream_options" not in recorded:
            # This older recording predates stream_options on xAI: the declared quirk reproduces it.
            model = compatible.configure("xai", api_key="k", quirks=ChatQuirks(include_usage=False)).model(
                "m"
            )
        prepared = await llmroute.Client().prepare(request_from_body(recorded, model))
        assert prepared.url == interaction.request.url
        assert json.loads(prepared.body) == recorded


@pytest.mark.anyio
@pytest.mark.parametrize("path", CHAT, ids=lambda p: p.stem)
@pytest.mark.parametrize("seed", range(4))
async def test_events_do_not_depend_on_chunk_boundaries(path: Any, seed: int) -> None:
    cassette = Cassette.load(path)
    request = request_from_body(cassette.interactions[0].request.json(), model_for(cassette))
    whole = await replay_events(cassette, request, Chunking.whole())
    assert await replay_events(cassette, request, Chunking.random(seed, max_size=1 + 7 * seed)) == whole
    if seed == 0 and len(cassette.interactions[0].response.body) < 20_000:
        assert await replay_events(cassette, request, Chunking.bytewise()) == whole


@pytest.mark.anyio
async def test_malformed_chunk_is_a_typed_error_with_the_raw_frame() -> None:
    body = (CASSETTES / "opencode/openai-chat-fixtures/malformed.sse").read_bytes()
    cassette = sse_cassette(CHAT_URL, body)
    request = llmroute.request(model=openai.configure(api_key="sk-test").chat("gpt-4o-mini"), prompt="hi")
    with pytest.raises(llmroute.InvalidProviderOutputError) as info:
        await replay_generate(cassette, request)
    assert info.value.raw is not None and "123" in info.value.raw
    assert info.value.partial is not None  # what arrived before the bad frame is kept


@pytest.mark.anyio
async def test_a_text_chunk_that_also_carries_a_tool_call_and_citation_loses_nothing() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "See "}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "content": "here.",
                        "annotations": [
                            {
                                "type": "url_citation",
                                "url_citation": {
                                    "url": "https://x.test",
                                    "title": "X",
                                    "start_index": 4,
                                    "end_index": 9,
                                },
                            }
                        ],
                        "tool_calls": [
                            {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}
                        ],
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    cassette = sse_cassette(CHAT_URL, chunks)
    request = llmroute.request(model=openai.configure(api_key="sk-test").chat("gpt-4o-mini"), prompt="hi")
    response, _ = await replay_generate(cassette, request)
    assert response.text == "See here."
    assert [(c.name, c.input, c.provider_executed) for c in response.tool_calls] == [
        ("f", {}, False),
        ("web_search", {}, True),  # the search only the annotation shows, reported once at the end
    ]
    (search,) = response.tool_results
    assert search.result == {"sources": [{"url": "https://x.test", "title": "X"}], "queries": []}
    assert search.provider_metadata == {"llmroute": {"synthesized": "url_citation annotations"}}
    (citation,) = response.citations
    assert response.text_blocks[citation.block_id][citation.start : citation.end] == "here."


@pytest.mark.anyio
async def test_a_refusal_finishes_as_content_filter_even_when_the_server_says_stop() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I can't help with that."}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    cassette = sse_cassette(CHAT_URL, chunks)
    request = llmroute.request(model=openai.configure(api_key="sk-test").chat("gpt-4o-mini"), prompt="hi")
    response, _ = await replay_generate(cassette, request)
    assert response.text == "I can't help with that."
    assert response.finish_reason == "content-filter"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("flag", "output"),
    [(None, 2 + 284), (False, 2 + 284), (True, 2)],  # xAI's total: 21 + 2 + 284 = 307
)
async def test_completion_has_reasoning_decides_inclusive_output(flag: bool | None, output: int) -> None:
    """xAI leaves reasoning out of ``completion_tokens``: ``None`` reads that from the server's own
    ``total_tokens``, ``False`` adds reasoning always, ``True`` (OpenAI's accounting) never."""
    cassette = Cassette.load(CASSETTES / "opencode/openai-compatible-chat/xai-streams-text.yaml")
    quirks = ChatQuirks(completion_has_reasoning=flag)
    model = compatible.configure(base_url="https://api.x.ai/v1", api_key="k", quirks=quirks).model("m")
    request = request_from_body(cassette.interactions[0].request.json(), model)
    response, _ = await replay_generate(cassette, request)
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (21, output)
    assert response.usage.reasoning_tokens == 284
