"""stream=False and max_response_bytes against a real HTTP server on 127.0.0.1, on asyncio and trio:
whole bodies go through the same retries, deadlines and connection handling as streams, and an
oversized body closes the connection at once with a typed error."""

from __future__ import annotations

import json
from typing import Any

import anyio
import msgspec
import pytest

import llmroute
from llmroute import Timeouts
from llmroute.route import executor
from llmroute.tools import step_count_is

from .server import FaultServer, Reply, Sleep, Stall, chat_chunk
from .test_faults import BOUND, JSON, chat_request, client_for, settled

pytestmark = pytest.mark.anyio

WHOLE = llmroute.GenerationOptions(stream=False)


def completion(content: str | None = None, calls: list[dict[str, Any]] | None = None) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    body = {
        "id": "chatcmpl-1",
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3},
    }
    return json.dumps(body).encode()


def whole_request(server: FaultServer) -> llmroute.LLMRequest:
    return msgspec.structs.replace(chat_request(server), generation=WHOLE)


def json_reply(body: bytes, *, drip: float = 0.0, status: int = 200) -> Reply:
    """The body in 64-byte chunks (with ``drip`` seconds between them)."""
    parts: list[Any] = []
    for i in range(0, len(body), 64):
        parts += [body[i : i + 64], *([Sleep(drip)] if drip else [])]
    return Reply(status=status, headers=JSON, parts=parts)


async def test_whole_body_arriving_in_pieces_is_one_response(server: FaultServer) -> None:
    server.add(json_reply(completion("Hello there"), drip=0.01))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            events = [e async for e in client.stream(whole_request(server))]
    assert llmroute.testing.event_order_problems(events) == []
    assert "".join(e.text for e in events if isinstance(e, llmroute.TextDelta)) == "Hello there"
    sent = server.received[0]
    assert sent.headers["accept"] == "application/json"
    assert json.loads(sent.body)["stream"] is False and "stream_options" not in json.loads(sent.body)


async def test_overloaded_then_whole_body_is_retried(server: FaultServer) -> None:
    server.add(json_reply(b'{"error": {"message": "overloaded", "type": "overloaded_error"}}', status=529))
    server.add(json_reply(completion("ok")))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            response = await client.generate(whole_request(server))
    assert response.text == "ok" and len(server.received) == 2 and len(sleeps) == 1


async def test_a_stalled_whole_body_hits_the_idle_deadline_and_closes(server: FaultServer) -> None:
    body = completion("never finished")
    server.add(Reply(headers=JSON, parts=[body[:40], Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server, timeouts=Timeouts(idle=0.3)) as (client, _):
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(whole_request(server))
    assert caught.value.deadline == "idle" and len(server.received) == 1


async def test_tool_loop_runs_non_streamed_end_to_end(server: FaultServer) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
    server.add(json_reply(completion(None, [call])), json_reply(completion("5")))

    @llmroute.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            response = await client.generate(whole_request(server), tools=[add], stop_when=step_count_is(5))
    assert response.text == "5" and len(response.steps) == 2
    second = json.loads(server.received[1].body)
    assert second["stream"] is False
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}


async def test_stream_over_max_response_bytes_closes_the_connection_at_once(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("x" * 200) for _ in range(50)] + [Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server, max_response_bytes=2_000) as (client, _):
            with pytest.raises(llmroute.ResponseTooLargeError) as caught:
                await client.generate(chat_request(server))
            await settled(server)  # closed by us while the server still had more to send
    error = caught.value
    assert isinstance(error, llmroute.InvalidProviderOutputError)
    assert (error.code, error.limit, error.retryable, error.attempts) == (
        "response_too_large",
        2_000,
        False,
        1,
    )
    assert error.partial is not None and error.partial.text.startswith("x")  # what arrived is kept
    assert len(server.received) == 1


async def test_whole_bodies_have_a_default_cap_and_calls_can_override(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor, "DEFAULT_MAX_WHOLE_BODY_BYTES", 300)
    body = completion("y" * 1000)
    server.add(json_reply(body), json_reply(body), Reply(parts=[chat_chunk("y" * 1000), b"data: [DONE]\n\n"]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            with pytest.raises(llmroute.ResponseTooLargeError):
                await client.generate(whole_request(server))
            raised = await client.generate(whole_request(server), max_response_bytes=len(body))
            streamed = await client.generate(chat_request(server))  # streams stay unbounded by default
    assert raised.text == "y" * 1000 and streamed.text == "y" * 1000
