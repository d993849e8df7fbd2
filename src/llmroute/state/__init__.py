"""Shared state: the one small store behind router health and gateway limits.

``SharedState`` is the interface; ``LocalState`` keeps everything in this process (the default) and
``RedisState`` keeps it in Redis (``pip install 'llmroute[redis]'``) so several processes -- gateway
workers, gateway instances, library users -- agree on cooldowns, rate-limit memory, per-key
request/token windows and spend. ``open_state(url)`` picks one from a URL (``None`` -> local).

Contract (the same for both implementations; a test runs it against each):

- Keys are plain strings; ``RedisState`` prefixes them with its ``namespace`` (``"llmroute:"``).
  Values are strings (``get``/``set``) or numbers (``incr``/``window``/``ewma``); keep the two kinds
  on different keys.
- Durations are seconds (floats). ``ttl=None`` keeps a key until it is deleted. Expiry is the
  store's own (Redis ``PEXPIRE``; wall-clock time locally), so a TTL set by one process expires for all.
- Every method is one atomic step and, on Redis, one round trip (a Lua script or one command): two
  processes adding to the same window or sum never lose an update, and ``window(..., limit=)``
  admits at most ``limit`` across all of them.
- ``incr(key, amount, ttl)``: add (floats allowed, negative too) and return the new total; the TTL
  is set when the key is created and never extended, so ``incr("spend:k1:2026-11-27", usd,
  ttl=86400)`` is a per-period sum (name the period in the key) and ``incr("fails:t", 1, ttl=600)``
  a streak that resets on ``delete``.
- ``window(key, amount, seconds, limit=None)``: a sliding window (two fixed buckets, the older one
  weighted by how much of it still overlaps the window; within a few percent of an exact log and
  O(1) memory). ``amount=0`` reads. With ``limit``, the amount is added only when the total
  stays at or under it; ``WindowCount.allowed`` says whether it was, ``total`` is the window's total
  afterwards (or as it stands, when refused) and ``retry_after`` how long until it would fit
  (``inf`` when ``amount`` alone is over ``limit``). rpm: ``window("rpm:k1", 1, 60, limit=rpm)``;
  tpm: read with ``amount=0`` before the call, add the usage after it.
- ``set_if_absent`` is the lock primitive (one half-open probe at a time); ``ewma`` folds a sample
  into an exponentially weighted mean (latency).
- Redis unreachable: ``RedisState`` serves every call from a ``LocalState`` of its own, which
  mirrors what Redis last answered and what was written through it (so the outage starts from the
  last known state, not an empty one), logs one warning (and one info line when Redis is back; it
  is retried every ``retry_interval`` seconds), and never raises for it. When Redis answers again,
  the outage's writes go back first (values as they stand, sums as the amounts added, deletes),
  and values known before it that Redis lost (a restart) are restored; windows counted during the
  outage stay local.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import SharedState, WindowCount
from .local import LocalState

if TYPE_CHECKING:
    from .redis_state import RedisState

__all__ = ["LocalState", "RedisState", "SharedState", "WindowCount", "open_state"]


def open_state(url: str | None = None, **options: Any) -> SharedState:
    """``LocalState()`` for ``None``; ``RedisState(url, **options)`` for ``redis://`` / ``rediss://`` /
    ``unix://`` URLs. Anything else is an ``InvalidRequestError`` naming ``redis_url``."""
    if url is None:
        return LocalState()
    from .redis_state import RedisState, check_url

    check_url(url)
    return RedisState(url, **options)


def __getattr__(name: str) -> Any:
    if name == "RedisState":  # imports redis.asyncio: only when asked for
        from .redis_state import RedisState

        return RedisState
    raise AttributeError(f"module 'llmroute.state' has no attribute {name!r}")
