"""The tool loop on a scripted model: every failure path, concurrency, stop conditions, cancellation,
provider-executed calls and what the next request carries.

The scripted model is a real Route whose protocol reads canonical ``LLMEvent`` JSON from SSE frames
and whose request body is the canonical request (messages, tools, tool choice, output schema) as
JSON, served by ``ReplayTransport`` like any recording. It lets each test state exactly what the
"model" says and inspect exactly what the runtime sent back.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import anyio
import httpx
import msgspec
import pytest

import llmroute
from llmroute.framing.sse import SSEEvent, SSEFraming
from llmroute.route.auth import NoAuth
from llmroute.route.endpoint import Endpoint
from llmroute.route.model import Model, Route
from llmroute.route.protocol import Protocol, StreamState
from llmroute.schema.content import ReasoningPart, ToolCallPart, ToolResultPart
from llmroute.schema.events import (
    Finish,
    LLMEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolError,
    ToolResult,
)
from llmroute.schema.tools import HostedTool, ToolDefinition
from llmroute.schema.usage import Usage
from llmroute.testing import Interaction, ReplayTransport
from llmroute.testing.cassette import RecordedRequest, RecordedResponse
from llmroute.tools import ToolFailure, execute_calls, has_tool_call, step_count_is, tool

# -- the scripted model ---------------------------------------------------------------------------

URL = "http://scripted.test/v1/turn"
_event_decoder = msgspec.json.Decoder(LLMEvent)


def _body(request: llmroute.LLMRequest, _model: Any) -> dict[str, Any]:
    return {
        "messages": msgspec.to_builtins(request.messages),
        "tools": msgspec.to_builtins(request.tools),
        "tool_choice": msgspec.to_builtins(request.tool_choice),
        "output_schema": msgspec.to_builtins(request.output_schema),
    }


def _step(state: StreamState, frame: SSEEvent, out: list[LLMEvent]) -> None:
    event = _event_decoder.decode(frame.data)
    if isinstance(event, Finish):
        state.reason, state.usage, state.done = event.reason, event.usage, True
    else:
        out.append(event)


def _halt(state: StreamState, _out: list[LLMEvent]) -> None:
    if not state.done:
        raise llmroute.InvalidProviderOutputError("scripted stream ended without finish")


def scripted_model(native_output_schema: bool = False) -> Model:
    protocol = Protocol(
        name="scripted",
        build_body=_body,
        new_state=lambda _r: StreamState(),
        step=_step,
        on_halt=_halt,
        native_output_schema=native_output_schema,
        hosted_kinds=frozenset({"web_search"}),  # the scripted server "runs" its web search
    )
    route = Route("scripted", protocol, Endpoint("http://scripted.test", "/v1/turn"), NoAuth(), SSEFraming())
    return Model("scripted-1", route, "scripted")


def turn(*events: LLMEvent) -> Interaction:
    """One model call answering with ``events`` (end with a ``Finish`` for reason and usage)."""
    body = b"".join(b"data: " + msgspec.json.encode(e) + b"\n\n" for e in events)
    return Interaction(
        RecordedRequest("POST", URL, {}, b""),
        RecordedResponse(200, {"content-type": ["text/event-stream"]}, body),
    )


def calls_turn(*calls: ToolCall, usage: int = 10) -> Interaction:
    return turn(*calls, Finish("tool-calls", Usage(input_tokens=usage, output_tokens=1)))


def text_turn(text: str, usage: int = 20) -> Interaction:
    return turn(
        TextStart("t"),
        TextDelta("t", text),
        TextEnd("t"),
        Finish("stop", Usage(input_tokens=usage, output_tokens=2)),
    )


def sent(transport: ReplayTransport, i: int) -> dict[str, Any]:
    return msgspec.json.decode(transport.requests[i].content)


def new_request(**kwargs: Any) -> llmroute.LLMRequest:
    return llmroute.request(scripted_model(), prompt="What is the weather in Paris?", **kwargs)


async def run(
    interactions: list[Interaction], request: llmroute.LLMRequest | None = None, **kwargs: Any
) -> tuple[list[LLMEvent], ReplayTransport]:
    transport = ReplayTransport(interactions)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        events = [e async for e in client.stream(request or new_request(), **kwargs)]
    return events, transport


def of(events: list[LLMEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


# -- tools ----------------------------------------------------------------------------------------


class City(msgspec.Struct):
    city: str
    unit: Literal["c", "f"] = "c"


@tool(description="Get current weather for a city.")
async def get_weather(args: City) -> dict[str, Any]:
    if args.city == "Atlantis":
        raise ToolFailure("no weather station in Atlantis")
    if args.city == "Crash":
        raise RuntimeError("handler bug")
    return {"city": args.city, "temperature": 22 if args.unit == "c" else 72}


def call(id: str, city: Any = "Paris", name: str = "get_weather", **extra: Any) -> ToolCall:
    return ToolCall(id, name, {"city": city, **extra})


# -- the happy path -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_loop_runs_tool_and_continues_with_history() -> None:
    events, transport = await run(
        [calls_turn(call("c1")), text_turn("Sunny, 22C.")], tools=[get_weather], stop_when=step_count_is(5)
    )
    types = [e.type for e in events]
    assert types == [
        "step-start", "tool-call", "tool-result", "step-finish",
        "step-start", "text-start", "text-delta", "text-end", "step-finish",
        "finish",
    ]  # fmt: skip
    assert of(events, ToolResult) == [ToolResult("c1", "get_weather", {"city": "Paris", "temperature": 22})]
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "stop"
    assert finish.usage is not None and finish.usage.input_tokens == 30 and finish.usage.output_tokens == 3
    second = sent(transport, 1)["messages"]
    assert second[1] == {
        "role": "assistant",
        "content": [{"type": "tool-call", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}],
    }
    assert second[2] == {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "id": "c1",
                "name": "get_weather",
                "result": {"city": "Paris", "temperature": 22},
            }
        ],
    }
    assert sent(transport, 0)["tools"][0]["name"] == "get_weather"


@pytest.mark.anyio
async def test_generate_folds_every_step() -> None:
    transport = ReplayTransport([calls_turn(call("c1")), text_turn("Sunny.")])
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(new_request(), tools=[get_weather], stop_when=step_count_is(3))
    assert response.text == "Sunny."
    assert len(response.steps) == 2
    assert [m.role for m in response.messages] == ["assistant", "tool", "assistant"]
    assert response.steps[0].tool_results[0].result == {"city": "Paris", "temperature": 22}
    assert response.usage is not None and response.usage.input_tokens == 30


@pytest.mark.anyio
async def test_default_loops_until_the_model_stops_calling_tools() -> None:
    events, transport = await run(
        [calls_turn(call("c1")), calls_turn(call("c2")), text_turn("Sunny.")], tools=[get_weather]
    )
    assert transport.remaining == 0
    assert len(of(events, llmroute.StepStart)) == 3 and len(of(events, ToolResult)) == 2
    assert events[-1] == Finish("stop", Usage(input_tokens=40, output_tokens=4))


@pytest.mark.anyio
async def test_default_step_cap() -> None:
    from llmroute.tools.runtime import DEFAULT_MAX_STEPS

    assert DEFAULT_MAX_STEPS == 20
    script = [calls_turn(call(f"c{i}")) for i in range(DEFAULT_MAX_STEPS + 2)]
    events, transport = await run(script, tools=[get_weather])
    assert len(transport.requests) == DEFAULT_MAX_STEPS and transport.remaining == 2
    assert len(of(events, ToolResult)) == DEFAULT_MAX_STEPS  # the last step's tools still ran
    assert events[-1].type == "finish" and events[-1].reason == "tool-calls"


@pytest.mark.anyio
async def test_step_count_is_one_runs_tools_without_calling_the_model_again() -> None:
    events, transport = await run(
        [calls_turn(call("c1")), text_turn("unused")], tools=[get_weather], stop_when=step_count_is(1)
    )
    assert transport.remaining == 1
    assert [e.type for e in events][-3:] == ["tool-result", "step-finish", "finish"]
    assert events[-1] == Finish("tool-calls", Usage(input_tokens=10, output_tokens=1))


@pytest.mark.anyio
async def test_loop_stops_when_a_step_has_no_local_calls() -> None:
    events, transport = await run(
        [calls_turn(call("c1")), text_turn("done"), text_turn("unused")],
        tools=[get_weather],
        stop_when=step_count_is(10),
    )
    assert transport.remaining == 1
    assert len(of(events, llmroute.StepStart)) == 2


@pytest.mark.anyio
async def test_step_count_is_caps_the_loop() -> None:
    script = [calls_turn(call(f"c{i}")) for i in range(5)]
    events, transport = await run(script, tools=[get_weather], stop_when=step_count_is(3))
    assert len(transport.requests) == 3 and transport.remaining == 2
    assert len(of(events, ToolResult)) == 3
    finish = events[-1]
    assert isinstance(finish, Finish) and finish.reason == "tool-calls"
    assert finish.usage is not None and finish.usage.input_tokens == 30


@pytest.mark.anyio
async def test_has_tool_call_and_custom_conditions() -> None:
    @tool
    def final_answer(answer: str) -> str:
        """Give the final answer."""
        return answer

    script = [
        calls_turn(call("c1")),
        calls_turn(ToolCall("c2", "final_answer", {"answer": "sunny"})),
        text_turn("x"),
    ]
    events, transport = await run(
        script,
        tools=[get_weather, final_answer],
        stop_when=[step_count_is(10), has_tool_call("final_answer")],
    )
    assert transport.remaining == 1
    assert of(events, ToolResult)[-1].result == "sunny"  # the stopping step's tools still run

    seen: list[int] = []

    def after_two(step: llmroute.StepResult) -> bool:
        seen.append(step.index)
        return step.index >= 1

    script = [calls_turn(call(f"c{i}")) for i in range(4)]
    _, transport = await run(script, tools=[get_weather], stop_when=after_two)
    assert seen == [0, 1] and transport.remaining == 2


@pytest.mark.anyio
async def test_runtime_tools_replace_same_named_request_tools() -> None:
    stale = ToolDefinition("get_weather", "old", {"type": "object"})
    keep = ToolDefinition("other", "kept")
    request = new_request(tools=[stale, keep])
    _, transport = await run([text_turn("hi")], request, tools=[get_weather])
    tools = sent(transport, 0)["tools"]
    assert [t["name"] for t in tools] == ["other", "get_weather"]
    assert tools[1]["description"] == "Get current weather for a city."


# -- recoverable failures -------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        (ToolCall("c1", "get_forecast", {"city": "Paris"}), "Unknown tool: get_forecast"),
        (ToolCall("c1", "get_weather", {"city": 3}), "Expected `str`, got `int` - at `$.city`"),
        (ToolCall("c1", "get_weather", {"city": "Paris", "unit": "k"}), "at `$.unit`"),
        (ToolCall("c1", "get_weather", {}), "missing required field `city`"),
        (ToolCall("c1", "get_weather", '{"city": "Par'), 'not valid JSON: {"city": "Par'),
        (call("c1", "Atlantis"), "no weather station in Atlantis"),
    ],
    ids=["unknown", "wrong-type", "bad-literal", "missing", "not-json", "tool-failure"],
)
async def test_recoverable_failures_reach_the_model(bad: ToolCall, needle: str) -> None:
    events, transport = await run(
        [calls_turn(bad), text_turn("sorry")], tools=[get_weather], stop_when=step_count_is(3)
    )
    (error,) = of(events, ToolError)
    (result,) = of(events, ToolResult)
    assert needle in error.message
    assert result == ToolResult("c1", bad.name, error.message, is_error=True)
    assert events.index(error) + 1 == events.index(result)
    tool_message = sent(transport, 1)["messages"][2]
    assert tool_message["content"][0]["is_error"] is True
    assert needle in tool_message["content"][0]["result"]
    assert events[-1].type == "finish"


@pytest.mark.anyio
async def test_handler_exception_reaches_the_model_as_a_tool_error() -> None:
    script = [calls_turn(call("c1", "Crash"), call("c2")), text_turn("Sorry, one lookup failed.")]
    transport = ReplayTransport(script)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(new_request(), tools=[get_weather])
    (error,) = response.tool_errors
    assert error.message == "Tool get_weather failed: RuntimeError: handler bug"
    assert isinstance(error.exception, RuntimeError) and str(error.exception) == "handler bug"
    # The sibling call still ran; the model read the error and answered.
    assert [r.is_error for r in response.steps[0].tool_results] == [True, False]
    tool_message = sent(transport, 1)["messages"][2]["content"]
    assert tool_message[0] == {
        "type": "tool-result",
        "id": "c1",
        "name": "get_weather",
        "result": "Tool get_weather failed: RuntimeError: handler bug",
        "is_error": True,
    }
    assert response.text == "Sorry, one lookup failed."
    # The exception is for the caller only: the event still encodes once it is dropped.
    msgspec.json.encode(msgspec.structs.replace(error, exception=None))


@pytest.mark.anyio
async def test_handler_exception_text_is_redacted() -> None:
    @tool
    def leaky(city: str) -> str:
        raise ValueError("upstream said: invalid key sk-live-0123456789abcdefghij")

    events, _ = await run(
        [calls_turn(ToolCall("c1", "leaky", {"city": "x"}))], tools=[leaky], stop_when=step_count_is(1)
    )
    (error,) = of(events, ToolError)
    assert "sk-live" not in error.message and "[REDACTED]" in error.message


@pytest.mark.anyio
async def test_tool_errors_raise_fails_the_stream_and_cancels_siblings() -> None:
    cancelled: list[str] = []

    @tool
    async def slow(city: str) -> str:
        try:
            await anyio.sleep(5)
        finally:
            cancelled.append(city)
        return city

    script = [calls_turn(ToolCall("c1", "slow", {"city": "x"}), call("c2", "Crash"))]
    start = time.monotonic()
    with pytest.raises(
        llmroute.ToolExecutionError, match="tool get_weather raised RuntimeError: handler bug"
    ) as info:
        await run(script, tools=[get_weather, slow], tool_errors="raise")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert time.monotonic() - start < 2
    assert cancelled == ["x"]


@pytest.mark.anyio
async def test_tool_errors_raise_in_a_single_call() -> None:
    with pytest.raises(llmroute.ToolExecutionError) as info:
        await run([calls_turn(call("c1", "Crash"))], tools=[get_weather], tool_errors="raise")
    assert type(info.value.__cause__) is RuntimeError


# -- concurrency ----------------------------------------------------------------------------------

DELAY = 0.3


@tool
async def slow_a(city: str) -> str:
    await anyio.sleep(DELAY)
    return f"a:{city}"


@tool
async def slow_b(city: str) -> str:
    await anyio.sleep(DELAY / 3)  # finishes first; results still come in call order
    return f"b:{city}"


@tool
async def slow_c(city: str) -> str:
    await anyio.sleep(DELAY)
    return f"c:{city}"


def _three_calls() -> list[Interaction]:
    return [
        calls_turn(
            ToolCall("1", "slow_a", {"city": "x"}),
            ToolCall("2", "slow_b", {"city": "y"}),
            ToolCall("3", "slow_c", {"city": "z"}),
        )
    ]


@pytest.mark.anyio
async def test_calls_of_a_step_run_concurrently_results_in_call_order() -> None:
    start = time.monotonic()
    events, _ = await run(_three_calls(), tools=[slow_a, slow_b, slow_c], stop_when=step_count_is(1))
    elapsed = time.monotonic() - start
    assert [r.result for r in of(events, ToolResult)] == ["a:x", "b:y", "c:z"]
    assert elapsed < DELAY * 1.7, elapsed  # serial would be 2.33x


@pytest.mark.anyio
async def test_max_concurrency_limits_parallelism() -> None:
    start = time.monotonic()
    events, _ = await run(
        _three_calls(), tools=[slow_a, slow_b, slow_c], max_concurrency=1, stop_when=step_count_is(1)
    )
    elapsed = time.monotonic() - start
    assert [r.result for r in of(events, ToolResult)] == ["a:x", "b:y", "c:z"]
    assert elapsed >= DELAY * 2.2, elapsed


@pytest.mark.anyio
async def test_sync_tools_run_in_threads_concurrently() -> None:
    @tool
    def blocking(n: int) -> int:
        time.sleep(DELAY)
        return n * 2

    script = [calls_turn(ToolCall("1", "blocking", {"n": 1}), ToolCall("2", "blocking", {"n": 2}))]
    start = time.monotonic()
    events, _ = await run(script, tools=[blocking], stop_when=step_count_is(1))
    assert [r.result for r in of(events, ToolResult)] == [2, 4]
    assert time.monotonic() - start < DELAY * 1.7


# -- cancellation (asyncio and trio) --------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_cancelling_during_a_tool_run_cancels_tools_and_closes_stream(anyio_backend: str) -> None:
    state: dict[str, Any] = {}

    @tool
    async def forever(city: str) -> str:
        state["started"] = True
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            state["cancelled"] = True
            raise
        return city

    transport = ReplayTransport(
        [calls_turn(ToolCall("1", "forever", {"city": "x"}), ToolCall("2", "forever", {}))]
    )
    seen: list[str] = []
    start = time.monotonic()
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        stream = client.stream(new_request(), tools=[forever], stop_when=step_count_is(5))
        with anyio.move_on_after(0.2) as scope:
            async for event in stream:
                seen.append(event.type)
        assert scope.cancelled_caught
        await stream.aclose()
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()
    assert time.monotonic() - start < 2
    assert state == {"started": True, "cancelled": True}
    assert seen[-1] == "tool-call" and "tool-result" not in seen
    assert transport.open_streams == 0


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_closing_the_stream_between_steps_closes_everything(anyio_backend: str) -> None:
    transport = ReplayTransport([calls_turn(call("c1")), text_turn("unused")])
    client = llmroute.Client(http=httpx.AsyncClient(transport=transport))
    async with (
        client,
        client.stream(new_request(), tools=[get_weather], stop_when=step_count_is(5)) as stream,
    ):
        async for event in stream:
            if event.type == "tool-result":
                break
    assert transport.remaining == 1 and transport.open_streams == 0


# -- provider-executed calls, tool_execution="none", schema-only tools ----------------------------


@pytest.mark.anyio
async def test_provider_executed_calls_are_never_dispatched_and_stay_in_history() -> None:
    search = ToolCall("ws_1", "web_search", {"query": "Paris weather"}, provider_executed=True)
    search_result = ToolResult(
        "ws_1", "web_search", [{"url": "https://meteo.example"}], provider_executed=True
    )
    script = [
        turn(
            search,
            search_result,
            TextStart("t"),
            TextDelta("t", "Checking."),
            TextEnd("t"),
            call("c1"),
            Finish("tool-calls"),
        ),
        text_turn("Sunny."),
    ]
    request = new_request(tools=[HostedTool("web_search")])
    events, transport = await run(script, request, tools=[get_weather], stop_when=step_count_is(4))
    assert of(events, ToolError) == []
    assert [r.id for r in of(events, ToolResult)] == ["ws_1", "c1"]
    assistant = sent(transport, 1)["messages"][1]
    assert [p["type"] for p in assistant["content"]] == ["tool-call", "tool-result", "text", "tool-call"]
    assert assistant["content"][0]["provider_executed"] is True
    assert assistant["content"][1] == {
        "type": "tool-result",
        "id": "ws_1",
        "name": "web_search",
        "result": [{"url": "https://meteo.example"}],
        "provider_executed": True,
    }
    tool_message = sent(transport, 1)["messages"][2]
    assert [p["id"] for p in tool_message["content"]] == ["c1"]
    assert sent(transport, 0)["tools"][0]["kind"] == "web_search"


@pytest.mark.anyio
async def test_only_provider_executed_calls_end_the_loop() -> None:
    search = ToolCall("ws_1", "web_search", {"query": "q"}, provider_executed=True)
    script = [turn(search, ToolResult("ws_1", "web_search", "r", provider_executed=True), Finish("stop"))]
    events, transport = await run(script, tools=[get_weather], stop_when=step_count_is(4))
    assert transport.remaining == 0 and of(events, ToolError) == []


@pytest.mark.anyio
async def test_tool_execution_none_sends_schemas_but_runs_nothing() -> None:
    ran: list[str] = []

    @tool
    async def spy(city: str) -> str:
        ran.append(city)
        return city

    events, transport = await run(
        [calls_turn(ToolCall("c1", "spy", {"city": "x"})), text_turn("unused")],
        tools=[spy],
        stop_when=step_count_is(5),
        tool_execution="none",
    )
    assert ran == [] and of(events, ToolResult) == [] and transport.remaining == 1
    assert sent(transport, 0)["tools"][0]["name"] == "spy"
    assert events[-1] == Finish("tool-calls", Usage(input_tokens=10, output_tokens=1))


@pytest.mark.anyio
async def test_schema_only_tool_calls_are_left_to_the_caller() -> None:
    ask_user = ToolDefinition("ask_user", "Ask the user.", {"type": "object", "properties": {}})
    script = [calls_turn(call("c1"), ToolCall("c2", "ask_user", {})), text_turn("unused")]
    events, transport = await run(script, tools=[get_weather, ask_user], stop_when=step_count_is(5))
    assert [r.id for r in of(events, ToolResult)] == ["c1"]  # the runnable call still ran
    assert of(events, ToolError) == []
    assert transport.remaining == 1


# -- what the next request carries ---------------------------------------------------------------


@pytest.mark.anyio
async def test_reasoning_signature_and_metadata_round_trip_into_the_next_request() -> None:
    script = [
        turn(
            ReasoningStart("r", {"scripted": {"item": "rs_1"}}),
            ReasoningDelta("r", "Need the weather."),
            ReasoningEnd("r", signature="sig-abc", encrypted="enc-xyz"),
            TextStart("t"),
            TextDelta("t", "Let me check."),
            TextEnd("t"),
            ToolCall(
                "c1", "get_weather", {"city": "Paris"}, provider_metadata={"scripted": {"item": "fc_1"}}
            ),
            Finish("tool-calls"),
        ),
        text_turn("Sunny."),
    ]
    events, transport = await run(script, tools=[get_weather], stop_when=step_count_is(3))
    parts = sent(transport, 1)["messages"][1]["content"]
    reasoning = msgspec.convert(parts[0], ReasoningPart)
    assert reasoning == ReasoningPart(
        "Need the weather.", "sig-abc", "enc-xyz", {"scripted": {"item": "rs_1"}}
    )
    assert parts[1] == {"type": "text", "text": "Let me check."}
    tool_call = msgspec.convert(parts[2], ToolCallPart)
    assert tool_call == ToolCallPart(
        "c1", "get_weather", {"city": "Paris"}, False, {"scripted": {"item": "fc_1"}}
    )
    (result,) = of(events, ToolResult)
    assert result.provider_metadata == {"scripted": {"item": "fc_1"}}


@pytest.mark.anyio
async def test_execute_calls_outside_the_loop() -> None:
    events = await execute_calls(
        [get_weather],
        [
            call("a"),
            ToolCall("s", "web_search", {}, provider_executed=True),
            ToolCall("b", "nope", {}),
        ],
    )
    results = of(events, ToolResult)
    assert [(r.id, r.is_error) for r in results] == [("a", False), ("b", True)]
    part = ToolResultPart(results[0].id, results[0].name, results[0].result)
    assert part.result == {"city": "Paris", "temperature": 22}
