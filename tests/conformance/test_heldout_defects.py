"""Defects a run on held-out recordings found (issue #21), each on a minimal stream in the shape the
provider documents and sends: every test failed before its fix."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

import llmroute
from llmroute.providers import anthropic, compatible, openai, openrouter
from llmroute.testing import Cassette, Chunking, Interaction, RecordedRequest, RecordedResponse
from llmroute.testing import event_order_problems as order_problems
from tests.helpers import replay_events, replay_generate, sse_cassette

CHAT_URL = "https://api.openai.com/v1/chat/completions"
RESPONSES_URL = "https://api.openai.com/v1/responses"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
CHUNKINGS = [Chunking.whole(), Chunking.random(7, 16), Chunking.bytewise()]


def json_cassette(url: str, body: dict[str, Any]) -> Cassette:
    response = RecordedResponse(200, {"content-type": ["application/json"]}, json.dumps(body).encode())
    return Cassette([Interaction(RecordedRequest("POST", url, {}, b""), response)])


# -- Chat: ``type`` decides whether a tool call is a function or a custom tool ----------------------

# Snowflake Cortex fills every field of a tool-call delta: a function call carries an empty
# ``custom`` object beside its ``function``.
_CORTEX_CALL = [
    {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "toolu_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                            "custom": {"input": "", "name": ""},
                        }
                    ],
                },
            }
        ]
    },
    {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "type": "function",
                            "function": {"arguments": '{"city": "Paris"}'},
                            "custom": {"input": "", "name": ""},
                        }
                    ]
                },
            }
        ]
    },
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
]


@pytest.mark.anyio
async def test_a_function_call_with_an_empty_custom_object_is_a_function_call() -> None:
    model = compatible.configure(base_url="https://api.openai.com/v1", api_key="k").model("claude-sonnet-4-5")
    request = llmroute.request(model=model, prompt="weather in Paris?")
    response, _ = await replay_generate(sse_cassette(CHAT_URL, _CORTEX_CALL), request)
    (call,) = response.tool_calls
    assert (call.id, call.name, call.input) == ("toolu_1", "get_weather", {"city": "Paris"})
    assert response.finish_reason == "tool-calls"
    # the next request sends it back as the function call it was
    follow_up = msgspec.structs.replace(request, messages=(*request.messages, response.message))
    async with llmroute.Client() as client:
        body = json.loads((await client.prepare(follow_up)).body)
    (sent,) = body["messages"][1]["tool_calls"]
    assert sent == {
        "id": "toolu_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    }


@pytest.mark.anyio
async def test_a_custom_tool_call_is_still_read_as_custom() -> None:
    chunks = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "custom",
                                "custom": {"name": "sh", "input": "ls"},
                            }
                        ]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "custom": {"input": " -l"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    model = openai.configure(api_key="k").chat("gpt-5")
    response, _ = await replay_generate(
        sse_cassette(CHAT_URL, chunks), llmroute.request(model=model, prompt="x")
    )
    (call,) = response.tool_calls
    assert (call.name, call.input) == ("sh", "ls -l")


# -- Chat: Mistral's ``magistral`` content as a list of thinking / text chunks ----------------------

MISTRAL_URL = "https://api.mistral.ai/v1/chat/completions"


def _thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


_MAGISTRAL_STREAM = [
    {
        "id": "cmpl-1",
        "model": "magistral-medium-2509",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": [_thinking("Two plus ")]}}],
    },
    {"id": "cmpl-1", "choices": [{"index": 0, "delta": {"content": [_thinking("two is four.")]}}]},
    {"id": "cmpl-1", "choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": "2 + 2 = "}]}}]},
    {"id": "cmpl-1", "choices": [{"index": 0, "delta": {"content": "4."}}]},
    {
        "id": "cmpl-1",
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 30, "total_tokens": 40},
    },
]


@pytest.mark.anyio
@pytest.mark.parametrize("chunking", CHUNKINGS, ids=["whole", "random", "bytewise"])
async def test_magistral_thinking_and_text_chunks_are_reasoning_and_text(chunking: Chunking) -> None:
    model = compatible.configure("mistral", api_key="k").model("magistral-medium-2509")
    request = llmroute.request(model=model, prompt="What is 2 + 2?")
    cassette = sse_cassette(MISTRAL_URL, _MAGISTRAL_STREAM)
    response, _ = await replay_generate(cassette, request, chunking)
    assert (response.reasoning, response.text) == ("Two plus two is four.", "2 + 2 = 4.")
    assert response.finish_reason == "stop"
    assert response.usage is not None and response.usage.output_tokens == 30
    assert order_problems(response.events) == []


@pytest.mark.anyio
async def test_a_whole_magistral_message_is_read() -> None:
    body = {
        "id": "cmpl-2",
        "object": "chat.completion",
        "model": "magistral-small-2509",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": [_thinking("Count the r's."), {"type": "text", "text": "Three."}],
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 8, "completion_tokens": 12, "total_tokens": 20},
    }
    model = compatible.configure("mistral", api_key="k").model("magistral-small-2509")
    request = llmroute.request(
        model=model, prompt="r in strawberry?", generation=llmroute.GenerationOptions(stream=False)
    )
    response, _ = await replay_generate(json_cassette(MISTRAL_URL, body), request)
    assert (response.reasoning, response.text) == ("Count the r's.", "Three.")


@pytest.mark.anyio
async def test_the_mistral_family_reads_its_key_and_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "mistral-test-key")
    model = compatible.configure("mistral").model("mistral-large-latest")
    async with llmroute.Client() as client:
        prepared = await client.prepare(llmroute.request(model=model, prompt="hi"))
    assert prepared.url == MISTRAL_URL
    assert prepared.headers["authorization"] == "Bearer mistral-test-key"
    assert "stream_options" not in json.loads(prepared.body)


# -- Responses: a reasoning item closed after the message item started (OpenRouter) -------------------


def _responses_stream(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


_RS = {"type": "reasoning", "id": "rs_1", "summary": []}
_RS_DONE = {**_RS, "summary": [{"type": "summary_text", "text": "Think."}], "encrypted_content": "gAAAA-enc"}
_MSG = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}
_TEXT_PART = {"type": "output_text", "text": "", "annotations": []}
_OPENROUTER_LATE_REASONING = [
    {
        "type": "response.created",
        "response": {"id": "gen-1", "model": "openai/gpt-5", "status": "in_progress"},
    },
    {"type": "response.output_item.added", "output_index": 0, "item": _RS},
    {
        "type": "response.reasoning_summary_part.added",
        "output_index": 0,
        "item_id": "rs_1",
        "summary_index": 0,
    },
    {
        "type": "response.reasoning_summary_text.delta",
        "output_index": 0,
        "item_id": "rs_1",
        "summary_index": 0,
        "delta": "Think.",
    },
    {"type": "response.output_item.added", "output_index": 1, "item": _MSG},
    {
        "type": "response.content_part.added",
        "output_index": 1,
        "item_id": "msg_1",
        "content_index": 0,
        "part": _TEXT_PART,
    },
    {
        "type": "response.output_text.delta",
        "output_index": 1,
        "item_id": "msg_1",
        "content_index": 0,
        "delta": "Hi",
    },
    # the reasoning item's closing events, after the message's text started
    {
        "type": "response.reasoning_summary_part.done",
        "output_index": 0,
        "item_id": "rs_1",
        "summary_index": 0,
    },
    {"type": "response.output_item.done", "output_index": 0, "item": _RS_DONE},
    {
        "type": "response.output_text.delta",
        "output_index": 1,
        "item_id": "msg_1",
        "content_index": 0,
        "delta": "!",
    },
    {
        "type": "response.content_part.done",
        "output_index": 1,
        "item_id": "msg_1",
        "content_index": 0,
        "part": {**_TEXT_PART, "text": "Hi!"},
    },
    {
        "type": "response.output_item.done",
        "output_index": 1,
        "item": {**_MSG, "status": "completed", "content": [{**_TEXT_PART, "text": "Hi!"}]},
    },
    {
        "type": "response.completed",
        "response": {
            "id": "gen-1",
            "model": "openai/gpt-5",
            "status": "completed",
            "usage": {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14},
        },
    },
]


@pytest.mark.anyio
@pytest.mark.parametrize("chunking", CHUNKINGS, ids=["whole", "random", "bytewise"])
async def test_a_reasoning_item_closed_after_the_text_started_is_one_block(chunking: Chunking) -> None:
    model = openrouter.configure(api_key="k").responses("openai/gpt-5")
    cassette = sse_cassette(
        "https://openrouter.ai/api/v1/responses", _responses_stream(_OPENROUTER_LATE_REASONING)
    )
    events = await replay_events(cassette, llmroute.request(model=model, prompt="hi"), chunking)
    assert order_problems(events) == []
    starts = [e for e in events if isinstance(e, llmroute.ReasoningStart)]
    ends = [e for e in events if isinstance(e, llmroute.ReasoningEnd)]
    assert len(starts) == len(ends) == 1
    assert ends[0].encrypted == "gAAAA-enc"  # the done item's encrypted content is kept
    text = "".join(e.text for e in events if isinstance(e, llmroute.TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, llmroute.ReasoningDelta))
    assert (text, reasoning) == ("Hi!", "Think.")
    assert len([e for e in events if isinstance(e, llmroute.TextStart)]) == 1


# -- Responses: a body that is not finished says so ---------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("status", ["queued", "in_progress", "cancelled"])
async def test_a_response_that_is_not_finished_is_a_typed_error(status: str) -> None:
    body = {"id": "resp_1", "object": "response", "model": "gpt-5", "status": status, "output": []}
    model = openai.configure(api_key="k").responses("gpt-5")
    request = llmroute.request(model=model, prompt="hi", generation=llmroute.GenerationOptions(stream=False))
    with pytest.raises(llmroute.InvalidProviderOutputError) as info:
        await replay_generate(json_cassette(RESPONSES_URL, body), request)
    assert f"is {status}, not finished" in info.value.message and "resp_1" in info.value.message
    assert info.value.code == f"response_{status}"
    assert not info.value.retryable


@pytest.mark.anyio
async def test_a_completed_response_still_finishes() -> None:
    body = {
        "id": "resp_2",
        "object": "response",
        "model": "gpt-5",
        "status": "completed",
        "output": [{**_MSG, "status": "completed", "content": [{**_TEXT_PART, "text": "Done."}]}],
    }
    model = openai.configure(api_key="k").responses("gpt-5")
    request = llmroute.request(model=model, prompt="hi", generation=llmroute.GenerationOptions(stream=False))
    response, _ = await replay_generate(json_cassette(RESPONSES_URL, body), request)
    assert (response.text, response.finish_reason, response.complete) == ("Done.", "stop", True)


# -- Anthropic: a repeated message_start -------------------------------------------------------------


def _anthropic_stream(second_id: str, *, after_content: bool = False) -> bytes:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [],
            "usage": {"input_tokens": 7, "output_tokens": 1},
        },
    }
    repeat = {**start, "message": {**start["message"], "id": second_id}}
    block = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
        {"type": "content_block_stop", "index": 0},
    ]
    events = [start, *block, repeat] if after_content else [start, repeat, *block]
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


@pytest.mark.anyio
async def test_a_duplicate_message_start_before_content_is_ignored() -> None:
    model = anthropic.configure(api_key="k").model("claude-sonnet-4-5")
    response, _ = await replay_generate(
        sse_cassette(ANTHROPIC_URL, _anthropic_stream("msg_1")), llmroute.request(model=model, prompt="hi")
    )
    assert (response.text, response.finish_reason) == ("Hello", "stop")
    assert response.usage is not None and response.usage.input_tokens == 7


@pytest.mark.anyio
@pytest.mark.parametrize(("second_id", "after_content"), [("msg_2", False), ("msg_1", True)])
async def test_another_message_start_inside_a_message_is_still_an_error(
    second_id: str, after_content: bool
) -> None:
    model = anthropic.configure(api_key="k").model("claude-sonnet-4-5")
    cassette = sse_cassette(ANTHROPIC_URL, _anthropic_stream(second_id, after_content=after_content))
    with pytest.raises(llmroute.InvalidProviderOutputError, match="message_start inside an open message"):
        await replay_generate(cassette, llmroute.request(model=model, prompt="hi"))
