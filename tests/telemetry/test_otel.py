"""``llmroute.telemetry`` with the real OpenTelemetry SDK (in-memory exporter and metric reader)
against fake providers on 127.0.0.1 speaking each wire protocol's recorded bytes, on asyncio and trio.

Every exit path (finish, retry, error, ``break``, cancellation) must end exactly one span per attempt;
attributes are checked against the usage and response metadata the stream itself reported."""

from __future__ import annotations

import gc
import json
import time
from typing import Any

import anyio
import msgspec
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

import llmroute
from llmroute import RetryPolicy, Timeouts
from tests import routes
from tests.reliability.server import FaultServer, Reply, Sleep, Stall, chat_chunk
from tests.reliability.test_faults import BOUND, JSON, chat_request, client_for, ok
from tests.routes import frames

from .conftest import Otel

pytestmark = pytest.mark.anyio

PROVIDER_NAME = {
    "openai-chat": "compatible",  # an OpenAI-compatible endpoint: recorded under its own name
    "openai-responses": "openai",
    "anthropic-messages": "anthropic",
    "gemini": "gcp.gemini",
    "bedrock-converse": "aws.bedrock",
}


def serve(server: FaultServer, case: routes.WireCase) -> None:
    body = case.body()
    parts = (
        frames(body)
        if case.name == "bedrock-converse"
        else [body[i : i + 512] for i in range(0, len(body), 512)]
    )
    server.add(Reply(headers=case.headers, parts=parts))


def finish_of(events: list[llmroute.LLMEvent]) -> llmroute.Finish:
    finish = [e for e in events if isinstance(e, llmroute.Finish)]
    assert len(finish) == 1
    return finish[0]


def traceparent(span: Any) -> str:
    ctx = span.context
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


@pytest.mark.parametrize("name", sorted(routes.PROTOCOLS))
async def test_streamed_call_span_and_metrics(server: FaultServer, otel: Otel, name: str) -> None:
    case = routes.PROTOCOLS[name]
    serve(server, case)
    request = case.request(f"http://127.0.0.1:{server.port}")
    request = msgspec.structs.replace(
        request,
        generation=llmroute.GenerationOptions(max_tokens=64, temperature=0.2, top_p=0.9, stop=("END",)),
    )
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            began = time.monotonic()
            events = [e async for e in client.stream(request)]
            elapsed = time.monotonic() - began
    finish = finish_of(events)
    usage = finish.usage
    assert usage is not None and usage.input_tokens and usage.output_tokens

    [span] = otel.spans()
    operation = "generate_content" if name == "gemini" else "chat"
    assert span.name == f"{operation} {request.model.id}"
    assert span.kind == SpanKind.CLIENT
    assert span.status.status_code == StatusCode.UNSET
    attrs = dict(span.attributes or {})
    expected: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": PROVIDER_NAME[name],
        "gen_ai.request.model": request.model.id,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.stop_sequences": ("END",),
        "gen_ai.request.stream": True,
        "gen_ai.response.finish_reasons": ("tool_call",),
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "server.address": "127.0.0.1",
        "server.port": server.port,
        "llmroute.attempt": 1,
    }
    breakdown = {
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
        "gen_ai.usage.reasoning.output_tokens": usage.reasoning_tokens,
    }
    expected.update({k: v for k, v in breakdown.items() if v is not None})
    meta = finish.provider_metadata or {}
    if meta.get("id"):
        expected["gen_ai.response.id"] = meta["id"]
    if meta.get("model"):
        expected["gen_ai.response.model"] = meta["model"]
    assert {k: attrs.get(k) for k in expected} == expected
    assert "error.type" not in attrs
    assert 0 < attrs["gen_ai.response.time_to_first_chunk"] <= elapsed
    # the span's context went upstream
    assert server.received[0].headers["traceparent"] == traceparent(span)
    otel.all_ended_once()

    [duration] = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 1 and duration.attributes["gen_ai.provider.name"] == PROVIDER_NAME[name]
    assert list(otel.metric("gen_ai.client.operation.duration").data.data_points[0].explicit_bounds)[:3] == [
        0.01,
        0.02,
        0.04,
    ]
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in otel.points("gen_ai.client.token.usage")}
    assert tokens == {"input": usage.input_tokens, "output": usage.output_tokens}
    assert otel.metric("gen_ai.client.token.usage").unit == "{token}"
    [ttfc] = otel.points("gen_ai.client.operation.time_to_first_chunk")
    assert ttfc.count == 1


# Whole (stream=False) bodies, one per protocol.
WHOLE_BODIES: dict[str, dict[str, Any]] = {
    "openai-chat": {
        "id": "chatcmpl-w1",
        "model": "test-model-0613",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3},
    },
    "openai-responses": {
        "id": "resp_w1",
        "object": "response",
        "model": "gpt-5.5-2026",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "hi", "annotations": []}],
            }
        ],
        "usage": {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14},
    },
    "anthropic-messages": {
        "id": "msg_w1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 11, "output_tokens": 3},
    },
    "gemini": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 3, "totalTokenCount": 14},
        "modelVersion": "gemini-2.5-flash-001",
        "responseId": "gem_w1",
    },
    "bedrock-converse": {
        "output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 11, "outputTokens": 3, "totalTokens": 14},
    },
}


@pytest.mark.parametrize("name", sorted(routes.PROTOCOLS))
async def test_whole_body_call_span(server: FaultServer, otel: Otel, name: str) -> None:
    case = routes.PROTOCOLS[name]
    body = WHOLE_BODIES[name]
    server.add(Reply(headers=JSON, parts=[json.dumps(body).encode()], chunked=False))
    request = msgspec.structs.replace(
        case.request(f"http://127.0.0.1:{server.port}"), generation=llmroute.GenerationOptions(stream=False)
    )
    async with client_for(server) as (client, _):
        response = await client.generate(request)
    assert response.text == "hi"
    [span] = otel.spans()
    attrs = dict(span.attributes or {})
    assert "gen_ai.request.stream" not in attrs  # set if and only if the request streams
    assert "gen_ai.response.time_to_first_chunk" not in attrs
    assert attrs["gen_ai.usage.input_tokens"] == 11 and attrs["gen_ai.usage.output_tokens"] == 3
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    served = body.get("model") or body.get("modelVersion")
    if served:
        assert attrs["gen_ai.response.model"] == served
    rid = body.get("id") or body.get("responseId")
    if rid:
        assert attrs["gen_ai.response.id"] == rid
    assert otel.points("gen_ai.client.operation.time_to_first_chunk") == []  # streaming calls only
    otel.all_ended_once()


async def test_spans_are_children_of_the_callers_span(server: FaultServer, otel: Otel) -> None:
    server.add(ok("hi"))
    tracer = otel.tracer_provider.get_tracer("app")
    async with client_for(server) as (client, _):
        with tracer.start_as_current_span("handler") as parent:
            await client.generate(chat_request(server))
    chat = otel.only("chat ")[0]
    assert chat.parent is not None and chat.parent.span_id == parent.get_span_context().span_id
    assert chat.context.trace_id == parent.get_span_context().trace_id


async def test_retry_is_two_attempt_spans(server: FaultServer, otel: Otel) -> None:
    rate = json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}}).encode()
    server.add(Reply(429, {**JSON, "retry-after": "1"}, [rate], chunked=False), ok("ok"))
    async with client_for(server) as (client, _):
        assert (await client.generate(chat_request(server))).text == "ok"
    first, second = sorted(otel.only("chat "), key=lambda s: s.start_time or 0)
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes["llmroute.attempt"] == 1 and second.attributes["llmroute.attempt"] == 2
    assert first.attributes["error.type"] == "RateLimitError"
    assert first.attributes["http.response.status_code"] == 429
    assert first.status.status_code == StatusCode.ERROR
    assert second.status.status_code == StatusCode.UNSET and "error.type" not in second.attributes
    # each attempt sent its own span's context
    assert [r.headers["traceparent"] for r in server.received] == [traceparent(first), traceparent(second)]
    durations = {
        p.attributes.get("error.type"): p.count for p in otel.points("gen_ai.client.operation.duration")
    }
    assert durations == {"RateLimitError": 1, None: 1}
    otel.all_ended_once()


async def test_error_mid_stream_ends_the_span_with_what_arrived(server: FaultServer, otel: Otel) -> None:
    usage = {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}
    server.add(Reply(parts=[chat_chunk("part"), chat_chunk(usage=usage), Sleep(5)]))
    async with client_for(server, timeouts=Timeouts(idle=0.2)) as (client, _):
        with pytest.raises(llmroute.TimeoutError):
            await client.generate(chat_request(server))
    [span] = otel.spans()
    assert span.attributes is not None
    assert span.attributes["error.type"] == "TimeoutError"
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["gen_ai.usage.input_tokens"] == 9  # usage reported before the stall
    assert span.attributes["gen_ai.response.id"] == "chatcmpl-1"
    assert "gen_ai.response.finish_reasons" not in span.attributes
    otel.all_ended_once()


async def test_break_then_close_ends_the_span_once(server: FaultServer, otel: Otel) -> None:
    server.add(Reply(parts=[chat_chunk("first"), Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            async with client.stream(chat_request(server)) as stream:
                async for event in stream:
                    if event.type == "text-delta":
                        break
                assert otel.spans() == []  # after a break the stream can still be resumed
            # leaving ``async with`` closed the stream: the span ended then, the client is still open
            assert len(otel.spans()) == 1
    [span] = otel.spans()
    assert span.attributes is not None and span.attributes["llmroute.closed_early"] is True
    assert span.status.status_code == StatusCode.UNSET and "error.type" not in span.attributes
    assert span.attributes["gen_ai.response.id"] == "chatcmpl-1"
    otel.all_ended_once()


async def test_a_dropped_stream_ends_its_span(server: FaultServer, otel: Otel) -> None:
    server.add(Reply(parts=[chat_chunk("first"), Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            stream = client.stream(chat_request(server))
            async for event in stream:
                if event.type == "text-delta":
                    break
            del stream, event
            gc.collect()  # the event loop's async-generator finalizer closes the call
            while not otel.spans():  # noqa: ASYNC110 - the finalizer runs as its own task
                await anyio.sleep(0.01)
    [span] = otel.spans()
    assert span.attributes is not None and span.attributes["llmroute.closed_early"] is True
    otel.all_ended_once()


async def test_cancellation_ends_the_span_once(server: FaultServer, otel: Otel) -> None:
    server.add(Reply(parts=[chat_chunk("first"), Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            with anyio.move_on_after(0.3):
                await client.generate(chat_request(server))
    [span] = otel.spans()
    assert span.attributes is not None and span.attributes["error.type"] == "cancelled"
    assert span.status.status_code == StatusCode.ERROR
    otel.all_ended_once()


@llmroute.tool(description="Add two numbers.")
def add(a: int, b: int) -> int:
    return a + b


@llmroute.tool
def explode(x: int) -> int:
    raise ValueError("tool broke")


def tool_call_stream(name: str, arguments: str) -> list[bytes]:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    return [
        chat_chunk(tool=call),
        chat_chunk(finish="tool_calls"),
        chat_chunk(usage={"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11}),
        b"data: [DONE]\n\n",
    ]


async def test_tool_loop_parent_span_with_calls_and_tool_runs(server: FaultServer, otel: Otel) -> None:
    server.add(Reply(parts=tool_call_stream("add", '{"a":2,"b":3}')), ok("5"))
    async with client_for(server) as (client, _):
        response = await client.generate(chat_request(server), tools=[add])
    assert response.text == "5"
    [loop] = otel.only("invoke_agent")
    chats = sorted(otel.only("chat "), key=lambda s: s.start_time or 0)
    [tool] = otel.only("execute_tool ")
    assert len(chats) == 2
    assert loop.kind == SpanKind.INTERNAL and loop.parent is None
    assert loop.attributes is not None and loop.attributes["gen_ai.operation.name"] == "invoke_agent"
    for child in (*chats, tool):
        assert child.parent is not None and child.parent.span_id == loop.context.span_id
    assert tool.name == "execute_tool add" and tool.kind == SpanKind.INTERNAL
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool.attributes["gen_ai.tool.description"] == "Add two numbers."
    assert "gen_ai.tool.call.arguments" not in tool.attributes  # content is opt-in
    # the tool ran between the two model calls
    assert chats[0].end_time <= tool.start_time and tool.end_time <= chats[1].start_time
    assert response.usage is not None
    assert loop.attributes["gen_ai.usage.input_tokens"] == response.usage.input_tokens
    assert loop.attributes["gen_ai.usage.output_tokens"] == response.usage.output_tokens
    otel.all_ended_once()


async def test_failing_tool_span_has_error_type(server: FaultServer, otel: Otel) -> None:
    server.add(Reply(parts=tool_call_stream("explode", '{"x":1}')), ok("sorry"))
    async with client_for(server) as (client, _):
        await client.generate(chat_request(server), tools=[explode])
    [tool] = otel.only("execute_tool ")
    assert tool.attributes is not None and tool.attributes["error.type"] == "ValueError"
    assert tool.status.status_code == StatusCode.ERROR
    otel.all_ended_once()


async def test_break_inside_a_tool_loop_ends_call_then_loop(server: FaultServer, otel: Otel) -> None:
    server.add(
        Reply(parts=tool_call_stream("add", '{"a":1,"b":1}')), Reply(parts=[chat_chunk("tw"), Stall()])
    )
    with anyio.fail_after(BOUND):
        async with (
            client_for(server) as (client, _),
            client.stream(chat_request(server), tools=[add]) as stream,
        ):
            async for event in stream:
                if event.type == "text-delta":
                    break
    [loop] = otel.only("invoke_agent")
    assert loop.attributes is not None and loop.attributes["llmroute.closed_early"] is True
    assert len(otel.only("chat ")) == 2
    otel.all_ended_once()


async def test_uninstrument_stops_tracing(server: FaultServer, otel: Otel) -> None:
    from llmroute import telemetry

    telemetry.uninstrument()
    server.add(ok("quiet"))
    async with client_for(server) as (client, _):
        await client.generate(chat_request(server))
    assert otel.spans() == []
    assert "traceparent" not in server.received[0].headers


async def test_no_traceparent_header_beyond_w3c(server: FaultServer, otel: Otel) -> None:
    from opentelemetry import baggage, context

    server.add(ok("hi"))
    token = context.attach(baggage.set_baggage("user.email", "someone@example.com"))
    try:
        async with client_for(server) as (client, _):
            await client.generate(chat_request(server))
    finally:
        context.detach(token)
    headers = server.received[0].headers
    assert "traceparent" in headers and "baggage" not in headers


def test_a_sync_client_is_traced(server: FaultServer, otel: Otel) -> None:
    server.add(ok("sync"))
    with llmroute.SyncClient(retry=RetryPolicy(max_retries=0)) as client:
        assert client.generate(chat_request(server)).text == "sync"
    assert [s.name for s in otel.spans()] == ["chat test-model"]
    assert trace.get_current_span().get_span_context().is_valid is False


async def test_cost_is_an_attribute_when_the_catalog_knows_the_model(server: FaultServer, otel: Otel) -> None:
    from llmroute import catalog
    from llmroute.providers import openai

    server.add(ok("priced"))
    model = openai.configure(api_key="sk-test-0123456789abcdef", base_url=server.base_url).chat("gpt-4o-mini")
    async with client_for(server) as (client, _):
        response = await client.generate(llmroute.request(model=model, prompt="hi"))
    assert response.usage is not None
    expected = catalog.cost("openai", "gpt-4o-mini", response.usage)
    assert expected is not None and expected.total > 0
    [span] = otel.spans()
    assert dict(span.attributes or {})["llmroute.cost.usd"] == pytest.approx(float(expected.total))
