"""The connection pool under load, on a real socket: more streams than connections queue for a slot
(bounded by the first_byte / total deadlines, never by connect), and the default pool is sized like
the vendor SDKs' so one Client holds hundreds of long streams at once."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import llmroute
from llmroute import Timeouts
from llmroute.client import DEFAULT_MAX_CONNECTIONS
from llmroute.route.http1 import Http1Transport
from llmroute.route.http_pool import ShardedTransport

from .server import FaultServer, Reply, Sleep, chat_stream
from .test_faults import BOUND, chat_request, settled

pytestmark = pytest.mark.anyio


def slow(*texts: str, seconds: float) -> Reply:
    """A stream that holds its connection for ``seconds`` before finishing."""
    parts = chat_stream(*texts)
    return Reply(parts=[parts[0], Sleep(seconds), *parts[1:]])


class PeakOpen:
    """Samples the server's open connections while the body runs."""

    def __init__(self, server: FaultServer) -> None:
        self.server = server
        self.peak = 0

    async def watch(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self.peak = max(self.peak, self.server.open_connections)
            await anyio.sleep(0.005)


async def test_default_pool_holds_more_streams_than_a_small_pool(server: FaultServer) -> None:
    # 150 streams that outlast the connect deadline: the old default (100 connections, queue bounded
    # by connect) failed 50 of them with a pool timeout. (connect=2 s: 150 connections at once may
    # overflow the server's accept backlog, and a dropped SYN is resent after 1 s.)
    n = 150
    server.add(*(slow("a", "b", seconds=2.5) for _ in range(n)))
    texts: list[str] = []
    peak = PeakOpen(server)
    with anyio.fail_after(BOUND * 2):
        async with llmroute.Client(timeouts=Timeouts(connect=2.0)) as client:
            assert client.max_connections == DEFAULT_MAX_CONNECTIONS == 1000

            async def one() -> None:
                texts.append((await client.generate(chat_request(server))).text)

            async with anyio.create_task_group() as tg:
                await tg.start(peak.watch)
                async with anyio.create_task_group() as streams:
                    for _ in range(n):
                        streams.start_soon(one)
                tg.cancel_scope.cancel()
        await settled(server)
    assert texts == ["ab"] * n
    assert peak.peak > 100  # ran side by side, not in waves of the old pool size


async def test_queued_request_waits_past_the_connect_deadline(server: FaultServer) -> None:
    server.add(slow("first", seconds=0.5), slow("second", seconds=0.1))
    peak = PeakOpen(server)
    texts: list[str] = []
    with anyio.fail_after(BOUND):
        async with llmroute.Client(max_connections=1, timeouts=Timeouts(connect=0.05)) as client:

            async def one() -> None:
                texts.append((await client.generate(chat_request(server))).text)

            async with anyio.create_task_group() as tg:
                await tg.start(peak.watch)
                async with anyio.create_task_group() as streams:
                    streams.start_soon(one)
                    streams.start_soon(one)
                tg.cancel_scope.cancel()
        await settled(server)
    assert sorted(texts) == ["first", "second"]
    assert peak.peak == 1 and len(server.received) == 2


async def _first_has_the_connection(server: FaultServer) -> None:
    """Wait until the first request reached the server (a fixed sleep lost that race on a loaded
    machine: the second request then found the connection free)."""
    for _ in range(1000):
        if server.received:
            return
        await anyio.sleep(0.01)
    raise AssertionError("the first request never reached the server")


async def test_total_deadline_bounds_the_wait_for_a_connection(server: FaultServer) -> None:
    server.add(slow("holds the only connection", seconds=1.5))
    with anyio.fail_after(BOUND):
        async with llmroute.Client(max_connections=1) as client, anyio.create_task_group() as tg:
            tg.start_soon(client.generate, chat_request(server))
            await _first_has_the_connection(server)
            started = anyio.current_time()
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(chat_request(server), timeouts=Timeouts(total=0.3))
            waited = anyio.current_time() - started
            assert len(server.received) == 1  # the queued request never reached the server
        await settled(server)
    assert caught.value.deadline == "total"
    assert 0.25 < waited < 1.2


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_max_connections_is_checked() -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        with pytest.raises(llmroute.InvalidRequestError, match=r"limits on your httpx\.AsyncClient"):
            llmroute.Client(http=http, max_connections=10)
    with pytest.raises(llmroute.InvalidRequestError, match="at least 1"):
        llmroute.Client(max_connections=0)
    async with llmroute.Client(max_connections=7) as client:
        pool = client.http._transport  # pyright: ignore[reportPrivateUsage]
        assert isinstance(pool, Http1Transport | ShardedTransport)
        assert pool.max_connections == 7


async def test_a_pool_deadline_bounds_the_queue_when_set(server: FaultServer) -> None:
    server.add(slow("holds the only connection", seconds=1.5))
    with anyio.fail_after(BOUND):
        async with llmroute.Client(max_connections=1) as client, anyio.create_task_group() as tg:
            tg.start_soon(client.generate, chat_request(server))
            await _first_has_the_connection(server)
            started = anyio.current_time()
            with pytest.raises(llmroute.TimeoutError) as caught:
                await client.generate(chat_request(server), timeouts=Timeouts(pool=0.2))
            waited = anyio.current_time() - started
            assert len(server.received) == 1
        await settled(server)
    assert caught.value.deadline == "pool" and caught.value.attempts == 1  # never retried
    assert 0.15 < waited < 1.2
