"""Fault injection against a real HTTP server on 127.0.0.1, on asyncio and trio.

Every scenario must end in the right result (a successful retry or the right typed error) within
its bound, leave no connection open on the server, and keep what arrived before a failure.
"""

from __future__ import annotations

import email.utils
import json
import logging
import socket
import struct
import time
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest

import llmroute
from llmroute import RetryPolicy, Timeouts
from llmroute.framing.sse import SSEFraming
from llmroute.providers import compatible
from llmroute.testing import Cassette
from tests import routes
from tests.helpers import CASSETTES

from .server import Close, FaultServer, Reply, Reset, Sleep, Stall, chat_chunk, chat_error, chat_stream

pytestmark = pytest.mark.anyio

BOUND = 10.0  # no scenario may take longer than this
JSON = {"content-type": "application/json"}


# plumbing ----------------------------------------------------------------------------------------


class Sleeps(list[float]):
    """The injected backoff sleep: records the delays, waits for nothing."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


@asynccontextmanager
async def client_for(server: FaultServer, **kwargs: Any) -> AsyncIterator[tuple[llmroute.Client, Sleeps]]:
    sleeps = Sleeps()
    kwargs.setdefault("retry", RetryPolicy(jitter=0.0))
    async with llmroute.Client(sleep=sleeps, **kwargs) as client:
        yield client, sleeps
    await settled(server)  # the pool is closed: nothing may stay open


async def settled(server: FaultServer, within: float = 3.0) -> None:
    """Wait until the server has no open connection (fails the test after ``within`` seconds)."""
    with anyio.fail_after(within):
        while server.open_connections:  # noqa: ASYNC110 - the server lives in another thread
            await anyio.sleep(0.005)


def chat_request(server: FaultServer, **route_changes: Any) -> llmroute.LLMRequest:
    provider = compatible.configure(base_url=server.base_url, api_key="test")
    model = provider.model("test-model")
    if route_changes:
        model = model.with_(route=model.route.with_(**route_changes))
    return llmroute.request(model=model, prompt="hi")


def ok(*texts: str) -> Reply:
    return Reply(parts=chat_stream(*texts))


def body_of(rel: str) -> bytes:
    return Cassette.load(CASSETTES / rel).interactions[0].response.body


# happy path under stress -------------------------------------------------------------------------


async def test_slow_drip_completes(server: FaultServer) -> None:
    parts: list[Any] = []
    for part in chat_stream("a", "b", "c", "d", "e"):
        parts += [part, Sleep(0.03)]
    server.add(Reply(parts=parts))
    with anyio.fail_after(BOUND):
        async with client_for(server, timeouts=Timeouts(idle=1.0, first_byte=1.0)) as (client, _):
            response = await client.generate(chat_request(server))
    assert response.text == "abcde"
    assert response.finish_reason == "stop"
    assert response.usage is not None and response.usage.output_tokens == 5
    assert server.received[0].headers["authorization"] == "Bearer test"


# deadlines ---------------------------------------------------------------------------------------


async def test_stall_mid_stream_hits_idle_deadline(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("Hel"), chat_chunk("lo"), Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server, timeouts=Timeouts(idle=0.3)) as (client, _):
            started = anyio.current_time()
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(chat_request(server))
            assert anyio.current_time() - started < 2.0
            await settled(server)  # closed by the deadline, not by the client's shutdown
    err = caught.value
    assert err.deadline == "idle"
    assert "idle deadline" in str(err)
    assert err.partial is not None and err.partial.text == "Hello" and not err.partial.complete
    assert server.client_disconnects == 1
    assert len(server.received) == 1  # a deadline is never retried


async def test_drip_slower_than_idle_deadline(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("a"), Sleep(0.05), chat_chunk("b"), Sleep(2.0), *chat_stream("c")]))
    with anyio.fail_after(BOUND):
        async with client_for(server, timeouts=Timeouts(idle=0.3)) as (client, _):
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(chat_request(server))
    assert caught.value.deadline == "idle"
    assert caught.value.partial.text == "ab"


@pytest.mark.parametrize("where", ["before-headers", "after-headers"])
async def test_first_byte_deadline(server: FaultServer, where: str) -> None:
    reply = Reply(before=[Stall()]) if where == "before-headers" else Reply(parts=[Stall()])
    server.add(reply)
    with anyio.fail_after(BOUND):
        async with client_for(server, timeouts=Timeouts(first_byte=0.3, idle=5.0)) as (client, sleeps):
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(chat_request(server))
            await settled(server)
    assert caught.value.deadline == "first_byte"
    assert sleeps == [] and len(server.received) == 1


async def test_total_deadline(server: FaultServer) -> None:
    parts: list[Any] = []
    for i in range(40):
        parts += [chat_chunk(str(i % 10)), Sleep(0.05)]
    server.add(Reply(parts=[*parts, *chat_stream()]))
    with anyio.fail_after(BOUND):
        async with client_for(server, timeouts=Timeouts(idle=1.0, total=0.5)) as (client, _):
            started = anyio.current_time()
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(chat_request(server))
            assert anyio.current_time() - started < 1.5
            await settled(server)
    assert caught.value.deadline == "total"
    assert 0 < len(caught.value.partial.text) < 40


async def test_partial_keeps_usage_when_known(server: FaultServer) -> None:
    # finish and usage arrived, then the stream stalled before [DONE]
    server.add(Reply(parts=[*chat_stream("done")[:-1], Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server, timeouts=Timeouts(idle=0.3)) as (client, _):
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(chat_request(server))
    partial = caught.value.partial
    assert partial.text == "done"
    assert partial.usage is not None and partial.usage.input_tokens == 5


async def test_per_request_timeouts_override_client(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("x"), Sleep(0.5), *chat_stream("y")]))
    server.add(Reply(parts=[chat_chunk("x"), Sleep(0.5), *chat_stream("y")]))
    with anyio.fail_after(BOUND):
        async with client_for(server, timeouts=Timeouts(idle=0.2)) as (client, _):
            response = await client.generate(chat_request(server), timeouts=Timeouts(idle=2.0))
            assert response.text == "xy"
            with pytest.raises(llmroute.TimeoutError):
                await client.generate(chat_request(server))


# broken connections and bodies --------------------------------------------------------------------


async def test_reset_mid_stream_is_typed_and_not_retried(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("par"), chat_chunk("tial"), Sleep(0.05), Reset()]), ok("never"))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            with pytest.raises(llmroute.TransportError) as caught:
                await client.generate(chat_request(server))
    err = caught.value
    assert not isinstance(err, llmroute.TimeoutError)
    assert err.partial.text == "partial"
    assert sleeps == [] and len(server.received) == 1 and err.attempts == 1


async def test_reset_after_the_request_was_read_is_not_resent(server: FaultServer) -> None:
    # The server read the whole request, then reset: it may already be generating (and billing).
    server.add(Reply(before=[Reset()]), ok("never"))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            with pytest.raises(llmroute.TransportError) as caught:
                await client.generate(chat_request(server))
    assert caught.value.attempts == 1 and sleeps == []
    assert len(server.received) == 1


async def test_reset_before_any_byte_is_retried_with_an_idempotency_key(
    server: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(Reply(before=[Reset()]), ok("fine"))
    caplog.set_level(logging.INFO, logger="llmroute")
    request = msgspec.structs.replace(
        chat_request(server), http=llmroute.HttpOverlay(headers={"Idempotency-Key": "req-123"})
    )
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            response = await client.generate(request)
    assert response.text == "fine"
    assert len(server.received) == 2 and sleeps == [0.5]
    assert [r.headers["idempotency-key"] for r in server.received] == ["req-123", "req-123"]
    retries = [r for r in caplog.records if r.name.startswith("llmroute") and r.levelno == logging.INFO]
    assert len(retries) == 1 and "attempt 1 failed" in retries[0].getMessage()


async def test_connection_refused_is_retried_then_typed() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = compatible.configure(base_url=f"http://127.0.0.1:{port}/v1", api_key="test").model("m")
    sleeps = Sleeps()
    with anyio.fail_after(BOUND):
        async with llmroute.Client(sleep=sleeps, retry=RetryPolicy(jitter=0.0)) as client:
            with pytest.raises(llmroute.TransportError) as caught:
                await client.generate(llmroute.request(model=model, prompt="hi"))
    assert caught.value.code == "ConnectError"
    assert caught.value.attempts == 3 and sleeps == [0.5, 1.0]


async def test_truncated_body_without_terminal_event(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("cut "), chat_chunk("short")]))  # clean end, no finish, no [DONE]
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            with pytest.raises(llmroute.InvalidProviderOutputError) as caught:
                await client.generate(chat_request(server))
    assert "ended before" in str(caught.value)
    assert caught.value.partial.text == "cut short"
    assert sleeps == []


async def test_connection_closed_inside_chunked_body(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("so far"), Close()]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            with pytest.raises(llmroute.TransportError) as caught:
                await client.generate(chat_request(server))
    assert caught.value.partial.text == "so far"
    assert len(server.received) == 1


async def test_malformed_json_is_typed_not_retried(server: FaultServer) -> None:
    server.add(Reply(parts=[b'data: {"id": "x", "choices": [oops\n\n']), ok("never"))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            with pytest.raises(llmroute.InvalidProviderOutputError) as caught:
                await client.generate(chat_request(server))
            await settled(server)
    assert caught.value.raw is not None and "oops" in caught.value.raw
    assert len(server.received) == 1


# retries on status codes -------------------------------------------------------------------------

_RATE_BODY = json.dumps(
    {
        "error": {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }
).encode()


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "3600"}, 60.0),  # capped by RetryPolicy.max_retry_after
        ({}, 0.5),  # no hint: exponential backoff from initial_backoff
    ],
)
async def test_429_honours_retry_after_then_succeeds(
    server: FaultServer, headers: dict[str, str], expected: float
) -> None:
    server.add(Reply(429, {**JSON, **headers}, [_RATE_BODY], chunked=False), ok("after", " wait"))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            response = await client.generate(chat_request(server))
    assert response.text == "after wait"
    assert sleeps == [expected]
    assert len(server.received) == 2


async def test_429_retry_after_http_date(server: FaultServer) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.add(Reply(429, {**JSON, "retry-after": when}, [_RATE_BODY], chunked=False), ok("ok"))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            assert (await client.generate(chat_request(server))).text == "ok"
    assert len(sleeps) == 1 and 25.0 <= sleeps[0] <= 31.0


async def test_529_overloaded_then_succeeds(server: FaultServer) -> None:
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    server.add(Reply(529, {**JSON, "retry-after": "1"}, [body], chunked=False), ok("up again"))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            assert (await client.generate(chat_request(server))).text == "up again"
    assert sleeps == [1.0]


async def test_html_502_retried_until_exhausted(
    server: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    html = b"<html><head><title>502 Bad Gateway</title></head><body><center>nginx</center></body></html>"
    for _ in range(3):
        server.add(
            Reply(502, {"content-type": "text/html", "x-request-id": "req_502"}, [html], chunked=False)
        )
    caplog.set_level(logging.INFO, logger="llmroute")
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            with pytest.raises(llmroute.ProviderInternalError) as caught:
                await client.generate(chat_request(server))
    err = caught.value
    assert err.attempts == 3 and "after 3 attempts" in str(err)
    assert err.http is not None and err.http.status == 502 and err.http.request_id == "req_502"
    assert "502 Bad Gateway (HTML error page)" in err.message
    assert sleeps == [0.5, 1.0]
    assert (
        len([r for r in caplog.records if r.name.startswith("llmroute") and r.levelno == logging.INFO]) == 2
    )


async def test_quota_429_is_not_retried(server: FaultServer) -> None:
    body = json.dumps(
        {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
        }
    ).encode()
    server.add(Reply(429, JSON, [body], chunked=False), ok("never"))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            with pytest.raises(llmroute.QuotaExceededError):
                await client.generate(chat_request(server))
    assert sleeps == [] and len(server.received) == 1


async def test_retry_policy_per_request_and_per_client(server: FaultServer) -> None:
    body = b'{"error": {"message": "upstream unavailable", "type": "server_error"}}'
    server.add(*(Reply(503, JSON, [body], chunked=False) for _ in range(6)))
    with anyio.fail_after(BOUND):
        async with client_for(server, retry=RetryPolicy(max_retries=4, jitter=0.0)) as (client, sleeps):
            with pytest.raises(llmroute.ProviderInternalError) as caught:
                await client.generate(chat_request(server), retry=RetryPolicy.none())
            assert caught.value.attempts == 1 and len(server.received) == 1
            with pytest.raises(llmroute.ProviderInternalError) as caught:
                await client.generate(chat_request(server))
            assert caught.value.attempts == 5
    assert sleeps == [0.5, 1.0, 2.0, 4.0]


async def test_oversized_error_body_is_capped_and_dropped(server: FaultServer) -> None:
    big = b"<html><body>" + b"x" * (2 * 1024 * 1024) + b"</body></html>"
    server.add(Reply(500, {"content-type": "text/html"}, [big], chunked=False))
    with anyio.fail_after(BOUND):
        async with client_for(server, max_error_bytes=4096, retry=RetryPolicy.none()) as (client, _):
            with pytest.raises(llmroute.ProviderInternalError) as caught:
                await client.generate(chat_request(server))
            await settled(server)  # the client hung up instead of draining 2 MiB
    assert caught.value.http is not None
    assert caught.value.http.body is not None and len(caught.value.http.body) <= 2000


# errors inside a 200 stream ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        (chat_error("The server is overloaded", "server_error"), "internal"),
        (chat_error("Rate limit reached", "rate_limit_error", "rate_limit_exceeded"), "rate"),
    ],
)
async def test_error_event_first_is_retried(server: FaultServer, event: bytes, kind: str) -> None:
    server.add(Reply(parts=[event]), ok("second", " try"))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            events = [e async for e in client.stream(chat_request(server))]
    text = "".join(e.text for e in events if isinstance(e, llmroute.TextDelta))
    assert text == "second try"
    assert [e.type for e in events].count("step-start") == 1  # the failed attempt left no trace
    assert len(server.received) == 2 and len(sleeps) == 1


async def test_error_event_after_text_is_not_retried(server: FaultServer) -> None:
    server.add(
        Reply(parts=[chat_chunk("half "), Sleep(0.05), chat_error("overloaded", "server_error")]), ok("never")
    )
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            with pytest.raises(llmroute.ProviderInternalError) as caught:
                await client.generate(chat_request(server))
    assert caught.value.partial.text == "half "
    assert caught.value.attempts == 1 and sleeps == [] and len(server.received) == 1


async def test_sse_event_over_the_size_limit(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("ok"), b"data: " + b"A" * 8192, Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            request = chat_request(server, framing=SSEFraming(max_event_bytes=4096))
            with pytest.raises(llmroute.InvalidProviderOutputError) as caught:
                await client.generate(request)
            await settled(server)
    assert "4096-byte limit" in str(caught.value)
    assert caught.value.partial.text == "ok"


# cancellation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["break", "aclose", "cancel", "async-with"])
async def test_consumer_stopping_closes_the_connection(server: FaultServer, how: str) -> None:
    server.add(Reply(parts=[chat_chunk("one"), chat_chunk("two"), Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            request = chat_request(server)
            if how == "break":
                async for event in client.stream(request):
                    if isinstance(event, llmroute.TextDelta):
                        break
            elif how == "aclose":
                stream = client.stream(request)
                async for event in stream:
                    if isinstance(event, llmroute.TextDelta):
                        break
                await stream.aclose()
            elif how == "async-with":
                async with client.stream(request) as stream:
                    async for event in stream:
                        if isinstance(event, llmroute.TextDelta):
                            break
            else:
                seen = anyio.Event()

                async def consume() -> None:
                    async for event in client.stream(request):
                        if isinstance(event, llmroute.TextDelta):
                            seen.set()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(consume)
                    await seen.wait()
                    tg.cancel_scope.cancel()
            await settled(server, within=2.0)  # while the client (and its pool) is still open
            assert server.client_disconnects == 1


# other routes ------------------------------------------------------------------------------------


def _anthropic_request(server: FaultServer) -> llmroute.LLMRequest:
    from llmroute.providers import anthropic

    model = anthropic.configure(api_key="test", base_url=server.base_url).messages("claude-haiku-4-5")
    return llmroute.request(model=model, prompt="hi")


async def test_anthropic_overloaded_after_200_is_retried(server: FaultServer) -> None:
    text_body = body_of("opencode/anthropic-messages/streams-text.yaml")
    start = text_body.split(b"\n\n")[0] + b"\n\n"  # the real message_start
    overloaded = (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    server.add(Reply(parts=[start, Sleep(0.02), b"event: ping\ndata: {}\n\n", overloaded]))
    server.add(Reply(parts=[text_body]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            response = await client.generate(_anthropic_request(server))
    expected = Cassette.load(CASSETTES / "opencode/anthropic-messages/streams-text.yaml")
    assert response.complete and response.text
    assert len(server.received) == 2 and len(sleeps) == 1
    assert server.received[1].headers["x-api-key"] == "test"
    assert expected.interactions[0].response.status == 200


async def test_anthropic_stall_keeps_tool_call_in_partial(server: FaultServer) -> None:
    body = body_of("opencode/anthropic-messages/streams-tool-call.yaml")
    cut = body.index(b"event: message_delta")
    server.add(Reply(parts=[body[:cut], Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server, timeouts=Timeouts(idle=0.3)) as (client, _):
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(_anthropic_request(server))
    partial = caught.value.partial
    assert [(c.name, c.input) for c in partial.tool_calls] == [("get_weather", {"city": "Paris"})]


def _bedrock_request(server: FaultServer) -> llmroute.LLMRequest:
    from llmroute.providers import bedrock

    provider = bedrock.configure(
        region="us-east-1", api_key="test", base_url=f"http://127.0.0.1:{server.port}"
    )
    return llmroute.request(model=provider.converse("us.amazon.nova-micro-v1:0"), prompt="hi")


async def test_bedrock_throttling_first_frame_is_retried(server: FaultServer) -> None:
    from llmroute.framing.eventstream import encode_message

    throttled = encode_message(
        {
            ":message-type": "exception",
            ":exception-type": "throttlingException",
            ":content-type": "application/json",
        },
        b'{"message":"Too many requests, please wait before trying again."}',
    )
    es = {"content-type": "application/vnd.amazon.eventstream"}
    body = body_of("opencode/bedrock-converse/streams-text.yaml")
    server.add(Reply(headers=es, parts=[throttled]), Reply(headers=es, parts=routes.frames(body)))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            response = await client.generate(_bedrock_request(server))
    assert response.complete and response.text
    assert len(server.received) == 2 and len(sleeps) == 1
    assert server.received[0].path == "/model/us.amazon.nova-micro-v1%3A0/converse-stream"


@pytest.mark.parametrize("fault", ["bad-crc", "huge-length"])
async def test_bedrock_corrupt_frame(server: FaultServer, fault: str) -> None:
    frames = routes.frames(body_of("opencode/bedrock-converse/streams-text.yaml"))
    good, bad = frames[:2], bytearray(frames[2])
    if fault == "bad-crc":
        bad[-1] ^= 0xFF  # payload corrupted in flight
        expected = "message checksum mismatch"
    else:  # a valid prelude declaring ~2 GiB: refused at once, nothing is buffered
        prelude = struct.pack(">II", 0x7FFFFFF0, struct.unpack(">I", bad[4:8])[0])
        bad = bytearray(prelude + struct.pack(">I", zlib.crc32(prelude))) + bad[12:]
        expected = "over the 16777216-byte limit"
    es = {"content-type": "application/vnd.amazon.eventstream"}
    server.add(Reply(headers=es, parts=[*good, bytes(bad), Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, sleeps):
            with pytest.raises(llmroute.InvalidProviderOutputError) as caught:
                await client.generate(_bedrock_request(server))
            await settled(server)
    assert expected in str(caught.value)
    assert caught.value.partial.text == "Hello"  # the frames before the bad one were kept
    assert sleeps == []
