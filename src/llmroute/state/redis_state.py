"""``RedisState``: the shared-state contract in Redis (``redis.asyncio``), one round trip per call.

Multi-step operations are Lua scripts (atomic on the server; ``EVALSHA``, loaded on first use).
Time inside scripts is the server's (``TIME``), so processes with skewed clocks still share windows.

What Redis answered and what was written through this store is kept in a ``LocalState`` mirror
(values with their remaining TTLs), so when Redis becomes unreachable the calls served locally start
from the last known state (a router keeps skipping the targets it knew were cooling down) instead
of an empty one. Writes made during the outage (``set``, ``set_if_absent``, ``delete``, ``incr``,
``ewma``; windows stay local) are written back when Redis answers again, before anything else is
sent: a value as it stands locally, a sum as the amount added meanwhile (so other processes' adds
are kept).
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

_READ = """
local out = {}
for i, key in ipairs(KEYS) do
  out[2 * i - 1] = redis.call('GET', key)
  out[2 * i] = redis.call('PTTL', key)
end
return out
"""

# After an outage, per key (ARGV in fours: op, value, ms to live or '', amount added): "set" and
# "delete" as written during it; "incr" adds the amount to a sum Redis still holds, else sets the
# total known here; "keep" (known, not written during it) restores a value Redis lost.
_RESTORE = """
for i, key in ipairs(KEYS) do
  local op, value, px, amount = ARGV[4 * i - 3], ARGV[4 * i - 2], ARGV[4 * i - 1], ARGV[4 * i]
  if op == 'delete' then
    redis.call('DEL', key)
  elseif op == 'incr' and redis.call('EXISTS', key) == 1 then
    redis.call('INCRBYFLOAT', key, amount)
  elseif op == 'keep' then
    if px ~= '' then redis.call('SET', key, value, 'PX', px, 'NX') else redis.call('SET', key, value, 'NX') end
  else
    if px ~= '' then redis.call('SET', key, value, 'PX', px) else redis.call('SET', key, value) end
  end
end
return #KEYS
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
        "_pending",
        "_read",
        "_restore",
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
        self._read: Any = redis_client.register_script(_READ)
        self._restore: Any = redis_client.register_script(_RESTORE)
        self._local = LocalState()  # the mirror: the last known state, and the outage's store
        # writes served locally while Redis was unreachable, to write back: key -> (op, value, expiry)
        self._pending: dict[str, tuple[str, float | str | None, float | None]] = {}
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
            if down:
                await self._write_back()
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

    def _wrote(
        self,
        key: str,
        op: str,
        value: float | str | None = None,
        ttl: float | None = None,
        now: str | None = None,
    ) -> None:
        """A write served locally during an outage, kept to write back: ``op`` is ``set``,
        ``delete`` or ``incr`` (``value`` the amount added, ``now`` the local total after it)."""
        expiry = None if ttl is None else time.monotonic() + ttl
        before = self._pending.get(key)
        if op == "incr" and before is not None:
            if before[0] == "incr":
                value, expiry = float(before[1] or 0) + float(value or 0), before[2]
            else:  # added to a value written meanwhile: the value is what to write back
                op, value = "set", now
                expiry = before[2] if before[0] == "set" else expiry
        self._pending[key] = (op, value, expiry)

    async def _write_back(self) -> None:
        """After an outage, in one round trip: what it wrote locally, and what was known before it
        that Redis lost (a restarted server). Raises an outage error while Redis is still down
        (the writes are kept for the next try)."""
        pending = self._pending
        now = time.monotonic()
        keys: list[str] = []
        args: list[str] = []
        for key, value, left in self._local.live():
            op, amount = "keep", "0"
            written = pending.get(key)
            if written is not None:
                op = written[0]
                if op == "incr":
                    amount = repr(float(written[1] or 0))
            keys.append(self._key(key))
            args += [op, value, _ms(left), amount]
        live = {k for k in keys}
        for key, (op, _, expiry) in pending.items():
            if op == "delete" and self._key(key) not in live and (expiry is None or expiry > now):
                keys.append(self._key(key))
                args += ["delete", "", "", "0"]
        if keys:
            await self._restore(keys=keys, args=args)
            log.info(
                "llmroute: Redis at %s: %d keys known while it was down written back", self.where, len(keys)
            )
        self._pending = {}

    def _key(self, key: str) -> str:
        return self.namespace + key

    async def _remote_read(self, keys: Sequence[str]) -> list[str | None]:
        """The values (mirrored locally with their remaining TTLs), in one round trip."""
        flat: list[Any] = await self._read(keys=[self._key(k) for k in keys], args=[])
        local = self._local
        values: list[str | None] = []
        for i, key in enumerate(keys):
            value, pttl = flat[2 * i], int(flat[2 * i + 1])
            values.append(value)
            if value is None:
                await local.delete(key)
            else:
                await local.set(key, value, ttl=None if pttl < 0 else pttl / 1000)
        return values

    async def get(self, key: str) -> str | None:
        async def remote() -> str | None:
            return (await self._remote_read([key]))[0]

        return await self._call(remote, lambda: self._local.get(key))

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        if not keys:
            return []

        async def remote() -> list[str | None]:
            return await self._remote_read(keys)

        return await self._call(remote, lambda: self._local.get_many(keys))

    async def set(self, key: str, value: str, ttl: float | None = None) -> None:
        async def remote() -> None:
            await self._client.set(self._key(key), value, px=None if ttl is None else int(_ms(ttl)))
            await self._local.set(key, value, ttl)

        async def local() -> None:
            await self._local.set(key, value, ttl)
            self._wrote(key, "set", value, ttl)

        await self._call(remote, local)

    async def set_if_absent(self, key: str, value: str, ttl: float | None = None) -> bool:
        async def remote() -> bool:
            px = None if ttl is None else int(_ms(ttl))
            stored = bool(await self._client.set(self._key(key), value, px=px, nx=True))
            if stored:
                await self._local.set(key, value, ttl)
            return stored

        async def local() -> bool:
            stored = await self._local.set_if_absent(key, value, ttl)
            if stored:
                self._wrote(key, "set", value, ttl)
            return stored

        return await self._call(remote, local)

    async def delete(self, *keys: str) -> None:
        if not keys:
            return

        async def remote() -> None:
            await self._client.delete(*(self._key(k) for k in keys))
            await self._local.delete(*keys)

        async def local() -> None:
            await self._local.delete(*keys)
            for key in keys:
                self._wrote(key, "delete")

        await self._call(remote, local)

    async def incr(self, key: str, amount: float = 1.0, ttl: float | None = None) -> float:
        async def remote() -> float:
            total = float(await self._incr(keys=[self._key(key)], args=[repr(float(amount)), _ms(ttl)]))
            await self._local.set(key, repr(total), ttl)
            return total

        async def local() -> float:
            total = await self._local.incr(key, amount, ttl)
            self._wrote(key, "incr", amount, ttl, repr(total))
            return total

        return await self._call(remote, local)

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
            mean = float(await self._ewma(keys=[self._key(key)], args=args))
            await self._local.set(key, repr(mean), ttl)
            return mean

        async def local() -> float:
            mean = await self._local.ewma(key, sample, alpha, ttl)
            self._wrote(key, "set", repr(mean), ttl)
            return mean

        return await self._call(remote, local)

    async def aclose(self) -> None:
        if self._owns:
            await self._client.aclose()
