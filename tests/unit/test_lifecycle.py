"""Client and stream lifecycle: a closed client and a finished stream say so instead of hanging or
silently yielding nothing; llmroute's TimeoutError is also the built-in one."""

from __future__ import annotations

import builtins

import httpx
import pytest

import llmroute
from llmroute.providers import openai
from llmroute.testing import ReplayTransport
from tests.unit.test_tools_runtime import new_request, text_turn


def _client(*turns: object) -> llmroute.Client:
    return llmroute.Client(http=httpx.AsyncClient(transport=ReplayTransport(list(turns))))  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_closed_client_raises_clear_error() -> None:
    client = llmroute.Client()
    async with client:
        pass
    assert client.closed
    request = llmroute.request(openai.configure(api_key="sk-test-0123456789abcdef").chat("m"), prompt="hi")
    for use in (client.prepare(request), client.generate(request)):
        with pytest.raises(llmroute.ClientClosedError, match="closed"):
            await use
    with pytest.raises(llmroute.ClientClosedError):
        async for _ in client.stream(request):
            pass
    with pytest.raises(llmroute.ClientClosedError):
        async with client:
            pass
    await client.aclose()  # idempotent


@pytest.mark.anyio
async def test_stream_iterated_twice_raises() -> None:
    async with _client(text_turn("hello")) as client:
        stream = client.stream(new_request())
        events = [e async for e in stream]
        assert events[-1].type == "finish"
        with pytest.raises(llmroute.StreamConsumedError, match="already ended"):
            async for _ in stream:
                pass
        with pytest.raises(llmroute.StreamConsumedError):
            await stream.response()


@pytest.mark.anyio
async def test_response_twice_and_after_close_raise() -> None:
    async with _client(text_turn("hello"), text_turn("again")) as client:
        stream = client.stream(new_request())
        assert (await stream.response()).text == "hello"
        with pytest.raises(llmroute.StreamConsumedError):
            await stream.response()
        closed = client.stream(new_request())
        await closed.aclose()
        with pytest.raises(llmroute.StreamConsumedError):
            async for _ in closed:
                pass


@pytest.mark.anyio
async def test_break_then_continue_is_allowed() -> None:
    async with _client(text_turn("hello")) as client:
        stream = client.stream(new_request())
        async for event in stream:
            if event.type == "step-start":
                break
        rest = [e.type async for e in stream]
        assert rest[-1] == "finish"


def test_timeout_error_is_the_builtin_too() -> None:
    err = llmroute.TimeoutError("idle deadline passed", deadline="idle")
    assert isinstance(err, builtins.TimeoutError) and isinstance(err, llmroute.TransportError)
    assert err.retryable and err.deadline == "idle"
    with pytest.raises(builtins.TimeoutError):
        raise err
