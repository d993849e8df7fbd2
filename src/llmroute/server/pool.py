"""The gateway's upstream client (``upstream_client``): ``http1.Http1Transport`` where it runs (asyncio
with httptools), else the sharded pool here: many small httpx pools (shards) instead of one big one.

httpcore scans its whole pool when each request starts and ends (and, for each idle connection,
counts every connection again), so one pool's cost per request grows with the square of its size:
at 64-256 concurrent upstream calls that scan was a quarter of the gateway's CPU, and it stayed
high after a burst because the idle connections stayed. Here a request goes to the first shard with
a free slot (``shard_size`` in flight at most), so each scan covers a few connections whatever the
concurrency, and at low concurrency only the first shards are touched: the connections a burst
left in later shards cost nothing until a burst needs them again (the upstream closes them when they
have been idle too long; the shard drops them when it is next used).
"""

from __future__ import annotations

import asyncio
import math
import os
import ssl
from collections.abc import AsyncIterator
from typing import Any

import httpx

__all__ = ["ShardedTransport", "upstream_client"]


class _Shard:
    __slots__ = ("in_flight", "transport")

    def __init__(self, transport: httpx.AsyncHTTPTransport) -> None:
        self.transport = transport
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
    """HTTP/1.1 to upstreams through shards of at most ``shard_size`` connections each, at most
    ``max_connections`` in all (requests past that wait in the least busy shard)."""

    def __init__(
        self, max_connections: int = 1000, shard_size: int = 8, keepalive_expiry: float = 5.0
    ) -> None:
        self.shard_size = shard_size
        self.max_shards = max(1, math.ceil(max_connections / shard_size))
        self.keepalive_expiry = keepalive_expiry
        self._ssl = ssl.create_default_context()  # one for all shards (each would load the CA store)
        self._shards: list[_Shard] = []

    def _new_shard(self) -> _Shard:
        limits = httpx.Limits(
            max_connections=self.shard_size,
            max_keepalive_connections=self.shard_size,
            keepalive_expiry=self.keepalive_expiry,
        )
        shard = _Shard(httpx.AsyncHTTPTransport(verify=self._ssl, limits=limits))
        self._shards.append(shard)
        return shard

    def _pick(self) -> _Shard:
        size = self.shard_size
        for shard in self._shards:
            if shard.in_flight < size:
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


def upstream_client(max_connections: int = 1000) -> httpx.AsyncClient | None:
    """The ``httpx.AsyncClient`` the gateway's ``llmroute.Client`` sends upstream calls through:
    ``http1.Http1Transport`` on asyncio with httptools, else the sharded httpcore pool; ``None``
    (the client's usual pool) when the environment names a proxy, which only httpx's own transport
    setup honours. Call it on the event loop that will use it."""
    if any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES):
        return None
    transport: httpx.AsyncBaseTransport = ShardedTransport(max_connections)
    if _on_asyncio():
        try:
            from .http1 import Http1Transport
        except ImportError:  # httptools missing: the [server] extra brings it
            pass
        else:
            transport = Http1Transport(transport, max_connections)
    return _UpstreamClient(transport=transport, timeout=None)


class _NoCookies(httpx.Cookies):
    """Always empty: a cookie one upstream response sets is not stored."""

    def extract_cookies(self, response: httpx.Response) -> None:
        pass


class _UpstreamClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` that keeps no cookies. The gateway calls upstreams for many clients,
    so a cookie one response sets (a CDN's ``__cf_bm``, say) must not ride along on everyone's next
    calls; and parsing ``Set-Cookie`` costs a tenth of a short call's client-side time."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _NoCookies()

    @cookies.setter
    def cookies(self, cookies: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        raise TypeError("the gateway's upstream client keeps no cookies")
