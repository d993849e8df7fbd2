"""``RedisState``: the shared-state contract in Redis (``redis.asyncio``), one round trip per call.

Multi-step operations are Lua scripts (atomic on the server; ``EVALSHA``, loaded on first use).
Time inside scripts is the server's (``TIME``), so processes with skewed clocks still share windows.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .base import WindowCount, check_url, window_retry_after
from .local import LocalState

__all__ = ["RedisState", "check_url"]

log = logging.getLogger("llmroute.state")

_T = TypeVar("_T")
# What an unreachable or dying server raises; anything else (a wrong-type key) is a bug and raises.
_OUTAGE = (RedisConnectionError, RedisTimeoutError, OSError)

_INCR = """
local created = redis.call('EXISTS', KEYS[1]) == 0
local total = redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])
if created and ARGV[2] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return total
"""

_WINDOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local seconds = tonumber(ARGV[2])
local bucket = math.floor(now / seconds)
local elapsed = now / seconds - bucket
local amount = tonumber(ARGV[1])
local prev = tonumber(redis.call('HGET', KEYS[1], tostring(bucket - 1)) or '0')
local cur = tonumber(redis.call('HGET', KEYS[1], tostring(bucket)) or '0')
local total = prev * (1 - elapsed) + cur
if ARGV[3] ~= '' and amount > 0 and total + amount > tonumber(ARGV[3]) then
  return {0, tostring(total), tostring(prev), tostring(cur), tostring(elapsed)}
end
if amount ~= 0 then
  redis.call('HINCRBYFLOAT', KEYS[1], tostring(bucket), amount)
  if redis.call('HLEN', KEYS[1]) > 2 then
    for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
      if tonumber(f) < bucket - 1 then redis.call('HDEL', KEYS[1], f) end
    end
  end
  redis.call('PEXPIRE', KEYS[1], math.ceil(seconds * 2000))
end
return {1, tostring(total + amount), tostring(prev), tostring(cur), tostring(elapsed)}
"""

_EWMA = """
local old = redis.call('GET', KEYS[1])
local mean = tonumber(ARGV[1])
if old then mean = tonumber(ARGV[2]) * mean + (1 - tonumber(ARGV[2])) * tonumber(old) end
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[1], tostring(mean), 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], tostring(mean))
end
return tostring(mean)
"""


def _ms(ttl: float | None) -> str:
    return "" if ttl is None else str(max(1, math.ceil(ttl * 1000)))


def _where(url: str) -> str:
    """host:port only: the URL may carry a password."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path
    return f"{parts.hostname or '127.0.0.1'}:{parts.port or 6379}"


class RedisState:
    """The contract on a Redis server at ``url``; keys are prefixed with ``namespace``.

    ``timeout`` bounds connecting and each command (seconds): past it the call is served locally.
    After a failure Redis is tried again every ``retry_interval`` seconds; meanwhile a private
    ``LocalState`` answers. Pass ``client`` to share a ``redis.asyncio.Redis`` you own (it is
    then not closed by ``aclose``)."""

    __slots__ = (
        "_client",
        "_down_until",
        "_ewma",
        "_incr",
        "_local",
        "_owns",
        "_window",
        "namespace",
        "retry_interval",
        "where",
    )

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        namespace: str = "llmroute:",
        timeout: float = 0.5,
        retry_interval: float = 5.0,
        client: Any = None,
    ) -> None:
        check_url(url)
        self.namespace = namespace
        self.retry_interval = retry_interval
        self.where = _where(url)
        self._owns = client is None
        redis_client: Any = client
        if redis_client is None:
            redis_client = aioredis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
                url,
                decode_responses=True,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                health_check_interval=30,
                # one immediate retry (a pooled connection gone stale across a server restart);
                # the library default backs off for seconds, and a down server is our fallback's job
                retry=Retry(NoBackoff(), 1),
            )
        self._client: Any = redis_client
        self._incr: Any = redis_client.register_script(_INCR)
        self._window: Any = redis_client.register_script(_WINDOW)
        self._ewma: Any = redis_client.register_script(_EWMA)
        self._local = LocalState()
        self._down_until = 0.0  # monotonic time before which Redis is not tried again

    @property
    def kind(self) -> str:
        return "redis"

    @property
    def available(self) -> bool:
        """False while calls are being served locally after a Redis failure."""
        return self._down_until == 0.0

    def __repr__(self) -> str:
        state = "" if self.available else ", unreachable: serving locally"
        return f"RedisState({self.where}, namespace={self.namespace!r}{state})"

    async def _call(self, remote: Callable[[], Awaitable[_T]], local: Callable[[], Awaitable[_T]]) -> _T:
        down = self._down_until
        if down and time.monotonic() < down:
            return await local()
        try:
            result = await remote()
        except _OUTAGE as exc:
            if not down:
                log.warning(
                    "llmroute: Redis at %s unreachable (%s); shared state is local to this process "
                    "until it is back (retried every %gs)",
                    self.where,
                    type(exc).__name__,
                    self.retry_interval,
                )
            self._down_until = time.monotonic() + self.retry_interval
            return await local()
        if down:
            self._down_until = 0.0
            log.info("llmroute: Redis at %s is back; shared state is shared again", self.where)
        return result

    def _key(self, key: str) -> str:
        return self.namespace + key

    async def get(self, key: str) -> str | None:
        async def remote() -> str | None:
            return await self._client.get(self._key(key))

        return await self._call(remote, lambda: self._local.get(key))

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        if not keys:
            return []

        async def remote() -> list[str | None]:
            return list(await self._client.mget([self._key(k) for k in keys]))

        return await self._call(remote, lambda: self._local.get_many(keys))

    async def set(self, key: str, value: str, ttl: float | None = None) -> None:
        async def remote() -> None:
            await self._client.set(self._key(key), value, px=None if ttl is None else int(_ms(ttl)))

        await self._call(remote, lambda: self._local.set(key, value, ttl))

    async def set_if_absent(self, key: str, value: str, ttl: float | None = None) -> bool:
        async def remote() -> bool:
            px = None if ttl is None else int(_ms(ttl))
            return bool(await self._client.set(self._key(key), value, px=px, nx=True))

        return await self._call(remote, lambda: self._local.set_if_absent(key, value, ttl))

    async def delete(self, *keys: str) -> None:
        if not keys:
            return

        async def remote() -> None:
            await self._client.delete(*(self._key(k) for k in keys))

        await self._call(remote, lambda: self._local.delete(*keys))

    async def incr(self, key: str, amount: float = 1.0, ttl: float | None = None) -> float:
        async def remote() -> float:
            return float(await self._incr(keys=[self._key(key)], args=[repr(float(amount)), _ms(ttl)]))

        return await self._call(remote, lambda: self._local.incr(key, amount, ttl))

    async def window(
        self, key: str, amount: float, seconds: float, limit: float | None = None
    ) -> WindowCount:
        async def remote() -> WindowCount:
            args = [repr(float(amount)), repr(float(seconds)), "" if limit is None else repr(float(limit))]
            ok, total, prev, cur, elapsed = await self._window(keys=[self._key(key)], args=args)
            if int(ok):
                return WindowCount(True, float(total))
            assert limit is not None
            wait = window_retry_after(float(prev), float(cur), float(elapsed), seconds, amount, limit)
            return WindowCount(False, float(total), wait)

        return await self._call(remote, lambda: self._local.window(key, amount, seconds, limit))

    async def ewma(self, key: str, sample: float, alpha: float = 0.3, ttl: float | None = None) -> float:
        async def remote() -> float:
            args = [repr(float(sample)), repr(float(alpha)), _ms(ttl)]
            return float(await self._ewma(keys=[self._key(key)], args=args))

        return await self._call(remote, lambda: self._local.ewma(key, sample, alpha, ttl))

    async def aclose(self) -> None:
        if self._owns:
            await self._client.aclose()
