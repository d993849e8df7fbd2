"""The sharded httpcore pool (``route/http_pool.py``: a Client's pool on trio or without httptools):
requests fill the first shard with a free slot, a slot is freed when the body is closed or the
request fails, connections are reused, and ``max_connections`` holds even below one shard's size,
so the work per request stays small whatever the concurrency was (the cost httpcore's single pool
grows with). On asyncio and trio."""

from __future__ import annotations

import anyio
import httpx
import pytest

from llmroute.route.http_pool import ShardedTransport

from ..reliability.server import FaultServer, Reply, Sleep

pytestmark = pytest.mark.anyio


def ok(delay: float = 0.0) -> Reply:
    parts: list[bytes | Sleep] = [Sleep(delay)] if delay else []
    return Reply(headers={"content-type": "application/json"}, parts=[*parts, b"{}"])


async def test_shards_fill_in_order_free_their_slots_and_reuse_connections(server: FaultServer) -> None:
    transport = ShardedTransport(max_connections=32, shard_size=8)
    server.add(*(ok(0.3) for _ in range(20)))
    async with httpx.AsyncClient(transport=transport) as client:
        seen: list[list[int]] = []

        async def one() -> None:
            response = await client.post(server.base_url + "/x", content=b"{}")
            assert response.status_code == 200

        async with anyio.create_task_group() as group:
            for _ in range(20):
                group.start_soon(one)
            await anyio.sleep(0.15)
            seen.append([s.in_flight for s in transport._shards])  # pyright: ignore[reportPrivateUsage]
        assert seen == [[8, 8, 4]]
        assert [s.in_flight for s in transport._shards] == [0, 0, 0]  # pyright: ignore[reportPrivateUsage]
        opened = server.connections
        server.add(*(ok() for _ in range(10)))
        for _ in range(10):  # one at a time: the first shard's idle connections serve them all
            await one()
        assert server.connections == opened
        assert len(transport._shards) == 3  # pyright: ignore[reportPrivateUsage]


async def test_a_failed_request_frees_its_slot() -> None:
    gone = FaultServer().start()
    url = gone.base_url
    gone.stop()
    transport = ShardedTransport(max_connections=8, shard_size=4)
    async with httpx.AsyncClient(transport=transport) as client:
        for _ in range(6):
            with pytest.raises(httpx.ConnectError):
                await client.post(url + "/x", content=b"{}")
        assert [s.in_flight for s in transport._shards] == [0]  # pyright: ignore[reportPrivateUsage]


async def test_past_max_connections_requests_wait_in_the_least_busy_shard(server: FaultServer) -> None:
    transport = ShardedTransport(max_connections=4, shard_size=2)
    server.add(*(ok(0.2) for _ in range(6)))
    async with httpx.AsyncClient(transport=transport) as client:

        async def one() -> None:
            assert (await client.post(server.base_url + "/x", content=b"{}")).status_code == 200

        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(one)
        assert len(transport._shards) == 2  # pyright: ignore[reportPrivateUsage]
    assert server.connections <= 4


async def test_max_connections_below_a_shards_size_holds(server: FaultServer) -> None:
    transport = ShardedTransport(max_connections=10, shard_size=8)
    server.add(*(ok(0.3) for _ in range(12)))
    async with httpx.AsyncClient(transport=transport) as client:

        async def one() -> None:
            assert (await client.post(server.base_url + "/x", content=b"{}")).status_code == 200

        async with anyio.create_task_group() as group:
            for _ in range(12):
                group.start_soon(one)
            with anyio.fail_after(5):
                while len(server.received) < 10:  # noqa: ASYNC110 - the server lives in another thread
                    await anyio.sleep(0.01)
            await anyio.sleep(0.1)
            assert len(server.received) == 10  # two wait for a slot
            assert [s.size for s in transport._shards] == [8, 2]  # pyright: ignore[reportPrivateUsage]
    assert server.connections == 10
