"""The HTTP connection pool every ``llmroute.Client`` (and the gateway's upstream client) sends
through, with a cost per request that does not grow with the pool.

``http_transport()`` picks it: ``http1.Http1Transport`` on asyncio when ``httptools`` is installed
(``llmroute[speedups]``, also in ``[server]``): idle connections in a LIFO deque per host, a C
parser, one write per request; else (trio, or no httptools) ``ShardedTransport`` here: many small
httpcore pools (shards) instead of one big one. Behind a proxy named by the environment it gives
``None``: httpx's own transport setup is the only one that honours those variables. While a test
double patches httpx's or httpcore's transport (vcrpy, pytest-recording, respx), ``Http1Transport``
sends through the sharded pool, so recording and mocking work as with a plain httpx client.

Why shards: httpcore scans its whole pool when each request starts and ends (and, for each idle
connection, counts every connection again), so one pool's cost per request grows with the square of
its size: at 32-256 concurrent calls a client spent 3-4x the CPU per call it spent at one, and it
stayed high after a burst because the idle connections stayed. Here a request goes to the first
shard with a free slot (``shard_size`` in flight at most), so each scan covers a few connections
whatever the concurrency, and at low concurrency only the first shards are touched: the connections
a burst left in later shards cost nothing until a burst needs them again (the server closes them
when they have been idle too long; the shard drops them when it is next used).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator

import httpx

__all__ = ["ShardedTransport", "http_transport"]


class _Shard:
    __slots__ = ("in_flight", "size", "transport")

    def __init__(self, transport: httpx.AsyncHTTPTransport, size: int) -> None:
        self.transport = transport
        self.size = size
        self.in_flight = 0


class _Counted(httpx.AsyncByteStream):
    """A response body that frees its shard's slot when it is closed (or fails)."""

    __slots__ = ("_done", "_shard", "_stream")

    def __init__(self, stream: httpx.AsyncByteStream, shard: _Shard) -> None:
        self._stream = stream
        self._shard = shard
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        if not self._done:
            self._done = True
            self._shard.in_flight -= 1
        await self._stream.aclose()


class ShardedTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 through shards of at most ``shard_size`` connections each, at most
    ``max_connections`` in all (requests past that wait in the least busy shard); at most
    ``max_idle`` idle connections kept (spread over the shards)."""

    def __init__(
        self,
        max_connections: int = 1000,
        shard_size: int = 8,
        keepalive_expiry: float = 5.0,
        max_idle: int | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.shard_size = min(shard_size, max_connections)
        self.max_shards = max(1, math.ceil(max_connections / self.shard_size))
        self.keepalive_expiry = keepalive_expiry
        idle = max_connections if max_idle is None else max_idle
        self._idle_per_shard = max(1, math.ceil(idle / self.max_shards))
        # one for all shards (each would load the CA store); httpx's, as a plain httpx client's
        self._ssl = httpx.create_ssl_context()
        self._shards: list[_Shard] = []

    def _new_shard(self) -> _Shard:
        size = min(self.shard_size, self.max_connections - len(self._shards) * self.shard_size)
        limits = httpx.Limits(
            max_connections=size,
            max_keepalive_connections=min(size, self._idle_per_shard),
            keepalive_expiry=self.keepalive_expiry,
        )
        shard = _Shard(httpx.AsyncHTTPTransport(verify=self._ssl, limits=limits), size)
        self._shards.append(shard)
        return shard

    def _pick(self) -> _Shard:
        for shard in self._shards:
            if shard.in_flight < shard.size:
                return shard
        if len(self._shards) < self.max_shards:
            return self._new_shard()
        return min(self._shards, key=lambda s: s.in_flight)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        shard = self._pick()
        shard.in_flight += 1
        try:
            response = await shard.transport.handle_async_request(request)
        except BaseException:
            shard.in_flight -= 1
            raise
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _Counted(stream, shard)
        return response

    async def aclose(self) -> None:
        shards, self._shards = self._shards, []
        for shard in shards:
            await shard.transport.aclose()


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # trio, or no loop
        return False
    return True


_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def http_transport(
    max_connections: int = 1000, max_idle: int | None = None
) -> httpx.AsyncBaseTransport | None:
    """The pool for an ``httpx.AsyncClient``: at most ``max_connections`` requests at once, at most
    ``max_idle`` idle connections kept per host (default: as many). ``http1.Http1Transport`` on
    asyncio with httptools, else ``ShardedTransport``; ``None`` (httpx's own pool) when the
    environment names a proxy. Call it on the event loop that will use it."""
    if any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES):
        return None
    sharded = ShardedTransport(max_connections, max_idle=max_idle)
    if _on_asyncio():
        try:
            from .http1 import Http1Transport
        except ImportError:  # httptools missing: llmroute[speedups] brings it
            pass
        else:
            idle = max_connections if max_idle is None else max_idle
            return Http1Transport(sharded, max_connections, max_idle=idle)
    return sharded
