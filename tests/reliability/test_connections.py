"""Connections on a real 127.0.0.1 server: keep-alive reuse across calls on one ``Client``, closing
on break/cancel/error, the pool limit and its typed wait deadline, and no leaked iterators."""

from __future__ import annotations

import gc
import warnings

import anyio
import pytest

import llmroute
from llmroute import RetryPolicy, Timeouts
from llmroute.route.executor import DRAIN_BYTES

from ..routes import PROTOCOLS
from .server import DONE, FaultServer, Reply, Stall, chat_chunk, chat_stream

pytestmark = pytest.mark.anyio

BOUND = 10.0


def origin(server: FaultServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def chat(server: FaultServer) -> llmroute.LLMRequest:
    return PROTOCOLS["openai-chat"].request(origin(server))


async def settled(server: FaultServer) -> None:
    with anyio.fail_after(3.0):
        while server.open_connections:  # noqa: ASYNC110 - the server lives in another thread
            await anyio.sleep(0.005)


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "content-length"])
async def test_sequential_calls_reuse_one_connection(server: FaultServer, chunked: bool) -> None:
    for i in range(5):
        server.add(Reply(parts=chat_stream(f"r{i}"), chunked=chunked))
    with anyio.fail_after(BOUND):
        async with llmroute.Client() as client:
            texts = [(await client.generate(chat(server))).text for _ in range(5)]
            assert server.open_connections == 1  # still pooled, not closed
        await settled(server)
    assert texts == [f"r{i}" for i in range(5)]
    assert server.connections == 1
    assert len(server.received) == 5


@pytest.mark.parametrize("name", list(PROTOCOLS))
async def test_recorded_streams_reuse_the_connection(server: FaultServer, name: str) -> None:
    case = PROTOCOLS[name]
    for _ in range(3):
        server.add(Reply(headers=case.headers, parts=[case.body()]))
    with anyio.fail_after(BOUND):
        async with llmroute.Client() as client:
            for _ in range(3):
                response = await client.generate(case.request(origin(server)))
                assert response.complete and response.tool_calls
    assert server.connections == 1


async def test_break_closes_and_the_next_call_opens_a_new_connection(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("a"), Stall()]), Reply(parts=chat_stream("b")))
    with anyio.fail_after(BOUND):
        async with llmroute.Client() as client:
            async with client.stream(chat(server)) as stream:
                async for event in stream:
                    if isinstance(event, llmroute.TextDelta):
                        break
            assert (await client.generate(chat(server))).text == "b"
    assert server.connections == 2
    assert server.client_disconnects == 1


async def test_stream_left_open_after_done_is_dropped_not_reused(server: FaultServer) -> None:
    # A server that keeps talking after [DONE]: drained up to the byte bound, then dropped.
    junk = b": keep-alive padding " + b"x" * (DRAIN_BYTES + 1024) + b"\n\n"
    server.add(Reply(parts=[*chat_stream("a"), junk, Stall()]), Reply(parts=chat_stream("b")))
    with anyio.fail_after(BOUND):
        async with llmroute.Client() as client:
            assert (await client.generate(chat(server))).text == "a"
            assert (await client.generate(chat(server))).text == "b"
    assert server.connections == 2


async def test_slow_trailer_after_done_is_bounded(server: FaultServer) -> None:
    # [DONE] then nothing (no chunked terminator): the drain waits at most DRAIN_SECONDS.
    server.add(Reply(parts=[*chat_stream("a"), Stall()]))
    with anyio.fail_after(BOUND):
        async with llmroute.Client() as client:
            started = anyio.current_time()
            assert (await client.generate(chat(server))).text == "a"
            assert anyio.current_time() - started < 2.0
        await settled(server)


async def test_pool_exhaustion_is_a_pool_deadline_naming_the_size(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("a"), Stall()]))
    with anyio.fail_after(BOUND):
        async with (
            llmroute.Client(
                max_connections=1, timeouts=Timeouts(pool=0.3), retry=RetryPolicy.none()
            ) as client,
            client.stream(chat(server)) as holding,
        ):
            await holding.__anext__()  # the only connection is busy
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(chat(server))
    err = caught.value
    assert err.deadline == "pool"
    assert "all 1 connections" in str(err) and "never sent" in str(err)
    assert len(server.received) == 1  # the second request never reached the server


async def test_max_connections_must_be_positive() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="max_connections"):
        llmroute.Client(max_connections=0)


async def test_completed_streams_leave_no_resource_warnings(server: FaultServer) -> None:
    for _ in range(3):
        server.add(Reply(parts=[*chat_stream("a")[:-1], DONE]))
    gc.collect()  # earlier tests' garbage warns on collection: not this test's to judge
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with anyio.fail_after(BOUND):
            async with llmroute.Client() as client:
                for _ in range(3):
                    async with client.stream(chat(server)) as stream:
                        async for _event in stream:
                            pass
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
