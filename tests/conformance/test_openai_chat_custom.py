"""Custom tools (``client_tools.custom``: the model's free text as the call input) on OpenAI Chat.

Wire shapes from OpenAI's API reference: the tool and the forced choice nest under ``custom``; a
call is ``{"id", "type": "custom", "custom": {"name", "input"}}``, streamed as ``delta.tool_calls``
fragments whose ``custom.input`` arrives in pieces. The events must be the ones the Responses
protocol emits for the same call, so the tool runtime runs both the same way."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmroute
from llmroute import client_tools
from llmroute.protocols import openai_chat
from llmroute.providers import openai
from llmroute.schema.content import Message, ToolCallPart, ToolResultPart
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    ReplayTransport,
    event_order_problems,
)
from llmroute.tools import step_count_is
from llmroute.tools.runtime import dispatch
from tests.helpers import CASSETTES, replay_events, sse_cassette

OPENAI = openai.configure(api_key="sk-test")
CHAT = OPENAI.chat("gpt-5.1")
URL = "https://api.openai.com/v1/chat/completions"
SQL = "SELECT * FROM users WHERE age > 25"
GRAMMAR = "start: /SELECT .*/"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-5.1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def custom_call_chunks(pieces: list[str], call_id: str = "call_sql_1") -> list[dict[str, Any]]:
    """A streamed custom call: the name (and no input) first, then the text piece by piece."""
    first = {"index": 0, "id": call_id, "type": "custom", "custom": {"name": "write_sql", "input": ""}}
    out = [chunk({"role": "assistant", "content": None, "tool_calls": [first]})]
    out += [chunk({"tool_calls": [{"index": 0, "custom": {"input": piece}}]}) for piece in pieces]
    out.append(chunk({}, "tool_calls"))
    return out


SQL_STREAM = custom_call_chunks(["SELECT * ", "FROM users ", "WHERE age > 25"])


async def body_of(request: llmroute.LLMRequest) -> dict[str, Any]:
    return json.loads((await llmroute.Client().prepare(request)).body)


def calls_of(events: list[llmroute.LLMEvent]) -> list[llmroute.ToolCall]:
    return [e for e in events if isinstance(e, llmroute.ToolCall)]


# -- request side ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_custom_tool_is_lowered_nested_with_its_grammar_nested_too() -> None:
    tools = [
        client_tools.custom("write_sql", "SQL only", grammar=GRAMMAR),
        client_tools.custom("pattern", syntax="regex", grammar=r"\d+"),
        client_tools.custom("note"),
    ]
    body = await body_of(llmroute.request(model=CHAT, prompt="x", tools=tools))
    assert body["tools"] == [
        {
            "type": "custom",
            "custom": {
                "name": "write_sql",
                "description": "SQL only",
                "format": {"type": "grammar", "grammar": {"syntax": "lark", "definition": GRAMMAR}},
            },
        },
        {
            "type": "custom",
            "custom": {
                "name": "pattern",
                "format": {"type": "grammar", "grammar": {"syntax": "regex", "definition": r"\d+"}},
            },
        },
        {"type": "custom", "custom": {"name": "note"}},
    ]
    assert "custom" in openai_chat.PROTOCOL.tool_kinds
    assert "custom" in openai_chat.make_protocol(openai_chat.ChatQuirks(include_usage=False)).tool_kinds


@pytest.mark.anyio
async def test_a_format_given_in_the_chat_shape_or_as_text_passes_as_is() -> None:
    nested = {"type": "grammar", "grammar": {"syntax": "regex", "definition": "a+"}}
    tools = [
        llmroute.ToolDefinition("a", "", {}, kind="custom", options={"format": nested}),
        llmroute.ToolDefinition("b", "", {}, kind="custom", options={"format": {"type": "text"}}),
    ]
    body = await body_of(llmroute.request(model=CHAT, prompt="x", tools=tools))
    assert [t["custom"]["format"] for t in body["tools"]] == [nested, {"type": "text"}]


@pytest.mark.anyio
async def test_tool_choice_names_a_custom_tool_as_custom_and_a_function_as_function() -> None:
    @llmroute.tool(description="Weather.")
    def weather(city: str) -> str:
        return "sunny"

    tools = [client_tools.custom("write_sql"), weather]
    custom = await body_of(llmroute.request(model=CHAT, prompt="x", tools=tools, tool_choice="write_sql"))
    assert custom["tool_choice"] == {"type": "custom", "custom": {"name": "write_sql"}}
    function = await body_of(llmroute.request(model=CHAT, prompt="x", tools=tools, tool_choice="weather"))
    assert function["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    assert function["tools"][1]["type"] == "function"


@pytest.mark.anyio
async def test_other_client_built_ins_are_still_refused_by_name() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="'shell' tools"):
        await body_of(llmroute.request(model=CHAT, prompt="x", tools=[client_tools.shell()]))


# -- response side ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_streamed_custom_call_gives_the_events_responses_gives() -> None:
    events = await replay_events(sse_cassette(URL, SQL_STREAM), llmroute.request(model=CHAT, prompt="x"))
    tool_events = [e for e in events if e.type.startswith("tool-")]
    assert [type(e).__name__ for e in tool_events] == [
        "ToolInputStart",
        "ToolInputDelta",
        "ToolInputDelta",
        "ToolInputDelta",
        "ToolInputEnd",
        "ToolCall",
    ]
    assert "".join(e.text for e in tool_events if isinstance(e, llmroute.ToolInputDelta)) == SQL
    (call,) = calls_of(events)
    assert (call.id, call.name, call.input, call.provider_executed) == ("call_sql_1", "write_sql", SQL, False)
    # the mark Responses puts on a custom call (its item id aside: Chat has none)
    assert call.provider_metadata == {"openai": {"item_type": "custom_tool_call"}}
    (finish,) = [e for e in events if isinstance(e, llmroute.StepFinish)]
    assert finish.reason == "tool-calls"
    assert event_order_problems(events) == []


@pytest.mark.anyio
async def test_the_tool_events_equal_those_of_the_recorded_responses_custom_call() -> None:
    """The same call (id, name, the same three pieces) recorded on Responses: same events, same
    input; only the Responses item id in the metadata is Responses' own."""
    recorded = Cassette.load(CASSETTES / "vercel-ai/openai/responses/openai-custom-tool.1.chunks.yaml")
    responses = await replay_events(
        Cassette(recorded.interactions[:1]), llmroute.request(model=OPENAI.responses("gpt-5.1"), prompt="x")
    )
    chat_stream = custom_call_chunks(["SELECT * ", "FROM users ", "WHERE age > 25"], "call_custom_sql_001")
    chat = await replay_events(sse_cassette(URL, chat_stream), llmroute.request(model=CHAT, prompt="x"))

    def tool_events(events: list[llmroute.LLMEvent]) -> list[llmroute.LLMEvent]:
        return [
            msgspec.structs.replace(e, provider_metadata=None) if isinstance(e, llmroute.ToolCall) else e
            for e in events
            if e.type.startswith("tool-")
        ]

    assert tool_events(chat) == tool_events(responses)
    (ours,), (theirs,) = calls_of(chat), calls_of(responses)
    assert ours.provider_metadata is not None and theirs.provider_metadata is not None
    assert ours.provider_metadata["openai"]["item_type"] == theirs.provider_metadata["openai"]["item_type"]


@pytest.mark.anyio
async def test_custom_input_is_free_text_even_when_it_looks_like_json_and_functions_stay_json() -> None:
    function = {
        "index": 1,
        "id": "call_fn",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
    }
    stream = [
        *custom_call_chunks(['{"a": ', "1}"])[:-1],
        chunk({"tool_calls": [function]}),
        chunk({}, "tool_calls"),
    ]
    events = await replay_events(sse_cassette(URL, stream), llmroute.request(model=CHAT, prompt="x"))
    assert [(c.name, c.input, c.provider_metadata) for c in calls_of(events)] == [
        ("write_sql", '{"a": 1}', {"openai": {"item_type": "custom_tool_call"}}),
        ("weather", {"city": "Paris"}, None),
    ]


@pytest.mark.anyio
async def test_a_custom_call_without_index_or_type_keyed_by_id() -> None:
    """Servers that key fragments by id and only say ``custom`` (no ``type``) still give text."""
    first = {"id": "c1", "custom": {"name": "write_sql"}}
    stream = [chunk({"tool_calls": [first]}), chunk({"tool_calls": [{"id": "c1", "custom": {"input": SQL}}]})]
    stream.append(chunk({}, "tool_calls"))
    events = await replay_events(sse_cassette(URL, stream), llmroute.request(model=CHAT, prompt="x"))
    assert [(c.id, c.input) for c in calls_of(events)] == [("c1", SQL)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=6),
    seed=st.integers(0, 10_000),
    size=st.integers(1, 40),
)
def test_custom_call_events_do_not_depend_on_chunking(pieces: list[str], seed: int, size: int) -> None:
    import anyio

    cassette = sse_cassette(URL, custom_call_chunks(pieces))
    request = llmroute.request(model=CHAT, prompt="x")

    async def both() -> tuple[list[llmroute.LLMEvent], list[llmroute.LLMEvent]]:
        whole = await replay_events(cassette, request, Chunking.whole())
        return whole, await replay_events(cassette, request, Chunking.random(seed, max_size=size))

    whole, rechunked = anyio.run(both)
    assert rechunked == whole
    (call,) = calls_of(whole)
    assert call.input == "".join(pieces)


@pytest.mark.anyio
async def test_a_whole_completion_with_a_custom_call() -> None:
    completion = {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "model": "gpt-5.1",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_w", "type": "custom", "custom": {"name": "write_sql", "input": SQL}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    response_body = json.dumps(completion).encode()
    interaction = Interaction(
        RecordedRequest("POST", URL, {}, b""),
        RecordedResponse(200, {"content-type": ["application/json"]}, response_body),
    )
    request = llmroute.request(model=CHAT, prompt="x", generation=llmroute.GenerationOptions(stream=False))
    transport = ReplayTransport(Cassette([interaction]))
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(request)
    (call,) = response.tool_calls
    assert (call.id, call.name, call.input) == ("call_w", "write_sql", SQL)
    assert call.provider_metadata == {"openai": {"item_type": "custom_tool_call"}}
    assert response.finish_reason == "tool-calls"


# -- history ---------------------------------------------------------------------------------------


def history(call: ToolCallPart) -> list[Message]:
    return [
        Message("user", (llmroute.TextPart("users over 25?"),)),
        Message("assistant", (call,)),
        Message("tool", (ToolResultPart(call.id, call.name, "3 rows"),)),
    ]


WIRE_CALL = {"id": "call_sql_1", "type": "custom", "custom": {"name": "write_sql", "input": SQL}}


@pytest.mark.anyio
async def test_a_streamed_custom_call_round_trips_in_the_history() -> None:
    events = await replay_events(sse_cassette(URL, SQL_STREAM), llmroute.request(model=CHAT, prompt="x"))
    (call,) = calls_of(events)
    part = ToolCallPart(call.id, call.name, call.input, call.provider_executed, call.provider_metadata)
    # the tool is no longer declared: the parser's mark alone makes it a custom call
    body = await body_of(llmroute.request(model=CHAT, messages=history(part)))
    assert body["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [WIRE_CALL]},
        {"role": "tool", "tool_call_id": "call_sql_1", "content": "3 rows"},
    ]


@pytest.mark.anyio
async def test_a_hand_written_call_of_a_declared_custom_tool_is_custom() -> None:
    part = ToolCallPart("call_sql_1", "write_sql", SQL)
    request = llmroute.request(model=CHAT, messages=history(part), tools=[client_tools.custom("write_sql")])
    body = await body_of(request)
    assert body["messages"][1]["tool_calls"] == [WIRE_CALL]
    plain = await body_of(llmroute.request(model=CHAT, messages=history(part)))
    assert plain["messages"][1]["tool_calls"][0]["type"] == "function"  # undeclared, unmarked: a function


@pytest.mark.anyio
async def test_a_hand_written_call_of_a_declared_custom_tool_goes_to_responses_as_custom() -> None:
    # issue #42: Responses looked only at provider_metadata, so this went out as a function_call
    # whose "arguments" were the raw SQL (not JSON)
    part = ToolCallPart("call_sql_1", "write_sql", SQL)
    model = OPENAI.responses("gpt-5.1")
    body = await body_of(
        llmroute.request(model=model, messages=history(part), tools=[client_tools.custom("write_sql")])
    )
    items = [i for i in body["input"] if i.get("type", "").endswith(("call", "call_output"))]
    assert items == [
        {"type": "custom_tool_call", "call_id": "call_sql_1", "name": "write_sql", "input": SQL},
        {"type": "custom_tool_call_output", "call_id": "call_sql_1", "output": "3 rows"},
    ]
    plain = await body_of(llmroute.request(model=model, messages=history(part)))
    assert [i["type"] for i in plain["input"] if "call" in i.get("type", "")] == [
        "function_call",
        "function_call_output",
    ]  # undeclared, unmarked: a function


@pytest.mark.anyio
async def test_a_custom_call_moves_between_responses_and_chat_histories() -> None:
    from_responses = ToolCallPart(
        "call_sql_1",
        "write_sql",
        SQL,
        provider_metadata={"openai": {"item_id": "ct_1", "item_type": "custom_tool_call"}},
    )
    chat = await body_of(llmroute.request(model=CHAT, messages=history(from_responses)))
    assert chat["messages"][1]["tool_calls"] == [WIRE_CALL]

    events = await replay_events(sse_cassette(URL, SQL_STREAM), llmroute.request(model=CHAT, prompt="x"))
    (call,) = calls_of(events)
    from_chat = ToolCallPart(call.id, call.name, call.input, False, call.provider_metadata)
    responses = await body_of(
        llmroute.request(model=OPENAI.responses("gpt-5.1"), messages=history(from_chat))
    )
    items = [i for i in responses["input"] if i.get("type", "").startswith("custom_tool_call")]
    assert items == [
        {"type": "custom_tool_call", "call_id": "call_sql_1", "name": "write_sql", "input": SQL},
        {"type": "custom_tool_call_output", "call_id": "call_sql_1", "output": "3 rows"},
    ]


# -- the tool runtime ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_runtime_runs_a_chat_custom_call_on_the_free_text() -> None:
    events = await replay_events(sse_cassette(URL, SQL_STREAM), llmroute.request(model=CHAT, prompt="x"))
    (call,) = calls_of(events)
    seen: list[Any] = []

    def run_sql(query: Any) -> str:
        seen.append(query)
        return "3 rows"

    results = await dispatch({"write_sql": llmroute.Tool(client_tools.custom("write_sql"), run_sql)}, call)
    assert seen == [SQL]
    (result,) = [e for e in results if isinstance(e, llmroute.ToolResult)]
    assert (result.id, result.result) == ("call_sql_1", "3 rows")


@pytest.mark.anyio
async def test_a_tool_loop_with_a_custom_tool_end_to_end() -> None:
    answer = [chunk({"role": "assistant", "content": "Three users."}), chunk({}, "stop")]
    first, second = sse_cassette(URL, SQL_STREAM), sse_cassette(URL, answer)
    cassette = Cassette([*first.interactions, *second.interactions])
    seen: list[Any] = []

    def run_sql(query: Any) -> str:
        seen.append(query)
        return "3 rows"

    sql = llmroute.Tool(client_tools.custom("write_sql", "SQL only", grammar=GRAMMAR), run_sql)
    request = llmroute.request(model=CHAT, prompt="users over 25?")
    transport = ReplayTransport(cassette, Chunking.random(3, 17))
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        events = [e async for e in client.stream(request, tools=[sql], stop_when=step_count_is(4))]
    assert seen == [SQL]
    assert transport.remaining == 0
    sent = [json.loads(r.content) for r in transport.requests]
    assert sent[0]["tools"][0]["type"] == "custom"
    assert sent[1]["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [WIRE_CALL]},
        {"role": "tool", "tool_call_id": "call_sql_1", "content": "3 rows"},
    ]
    folded = llmroute.ResponseBuilder()
    for event in events:
        folded.add(event)
    assert folded.build().text == "Three users."
