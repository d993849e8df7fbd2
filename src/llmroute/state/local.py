"""``LocalState``: the shared-state contract inside one process (the default)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from .base import WindowCount, window_estimate, window_retry_after

__all__ = ["LocalState"]

_SWEEP_EVERY = 1024  # writes between sweeps of expired keys (reads drop what they find expired)


class LocalState:
    """Dictionaries and a clock. Calls never suspend, so each is atomic under asyncio and trio.

    ``clock`` returns wall-clock seconds (``time.time``); inject one in tests to move time."""

    __slots__ = ("_clock", "_expires", "_values", "_window_until", "_windows", "_writes")

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock: Callable[[], float] = clock or time.time
        self._values: dict[str, str | float] = {}
        self._expires: dict[str, float] = {}
        self._windows: dict[str, dict[int, float]] = {}
        self._window_until: dict[str, float] = {}  # when a window's newest bucket stops counting
        self._writes = 0

    @property
    def kind(self) -> str:
        return "local"

    def __repr__(self) -> str:
        return f"LocalState({len(self._values)} keys, {len(self._windows)} windows)"

    # --- expiry ---

    def _live(self, key: str) -> str | float | None:
        value = self._values.get(key)
        if value is None:
            return None
        at = self._expires.get(key)
        if at is not None and at <= self._clock():
            del self._values[key]
            del self._expires[key]
            return None
        return value

    def _wrote(self) -> None:
        self._writes += 1
        if self._writes % _SWEEP_EVERY == 0:
            now = self._clock()
            for key in [k for k, at in self._expires.items() if at <= now]:
                del self._expires[key]
                self._values.pop(key, None)
            for key in [k for k, at in self._window_until.items() if at <= now]:
                del self._window_until[key]
                self._windows.pop(key, None)

    def _store(self, key: str, value: str | float, ttl: float | None) -> None:
        self._values[key] = value
        if ttl is None:
            self._expires.pop(key, None)
        else:
            self._expires[key] = self._clock() + ttl
        self._wrote()

    def live(self) -> list[tuple[str, str, float | None]]:
        """Every live value (not windows) with its seconds left (``None``: no expiry); what
        ``RedisState`` writes back after an outage."""
        now = self._clock()
        out: list[tuple[str, str, float | None]] = []
        for key, value in self._values.items():
            at = self._expires.get(key)
            if at is None or at > now:
                out.append(
                    (key, value if isinstance(value, str) else repr(value), None if at is None else at - now)
                )
        return out

    # --- the contract ---

    def _text(self, key: str) -> str | None:
        value = self._live(key)
        return value if value is None or isinstance(value, str) else repr(value)

    async def get(self, key: str) -> str | None:
        return self._text(key)

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        return [self._text(key) for key in keys]  # no await per key: a router reads this every call

    async def set(self, key: str, value: str, ttl: float | None = None) -> None:
        self._store(key, value, ttl)

    async def set_if_absent(self, key: str, value: str, ttl: float | None = None) -> bool:
        if self._live(key) is not None:
            return False
        self._store(key, value, ttl)
        return True

    async def delete(self, *keys: str) -> None:
        for key in keys:
            self._values.pop(key, None)
            self._expires.pop(key, None)
            self._windows.pop(key, None)
            self._window_until.pop(key, None)

    async def incr(self, key: str, amount: float = 1.0, ttl: float | None = None) -> float:
        old = self._live(key)
        if old is None:
            self._store(key, amount, ttl)
            return amount
        total = float(old) + amount
        self._values[key] = total  # the expiry set at creation stays
        return total

    async def window(
        self, key: str, amount: float, seconds: float, limit: float | None = None
    ) -> WindowCount:
        now = self._clock()
        bucket = math.floor(now / seconds)
        elapsed = now / seconds - bucket
        buckets = self._windows.get(key)
        if buckets is None:
            buckets = self._windows[key] = {}
            self._wrote()
        elif len(buckets) > 2 or (buckets and min(buckets) < bucket - 1):
            for old in [b for b in buckets if b < bucket - 1]:
                del buckets[old]
        previous = buckets.get(bucket - 1, 0.0)
        current = buckets.get(bucket, 0.0)
        total = window_estimate(previous, current, elapsed)
        if limit is not None and amount > 0 and total + amount > limit:
            wait = window_retry_after(previous, current, elapsed, seconds, amount, limit)
            return WindowCount(False, total, wait)
        if amount:
            buckets[bucket] = current + amount
            self._window_until[key] = now + 2 * seconds
        return WindowCount(True, total + amount)

    async def ewma(self, key: str, sample: float, alpha: float = 0.3, ttl: float | None = None) -> float:
        old = self._live(key)
        mean = sample if old is None else alpha * sample + (1.0 - alpha) * float(old)
        self._store(key, mean, ttl)
        return mean

    async def aclose(self) -> None:
        return None
