"""The ``SharedState`` interface and the sliding-window arithmetic both stores share."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol
from urllib.parse import urlsplit

import msgspec

from ..schema.errors import InvalidRequestError

__all__ = ["SharedState", "WindowCount", "check_url", "window_estimate"]


class WindowCount(msgspec.Struct, frozen=True):
    """The outcome of ``SharedState.window``."""

    allowed: bool
    """The amount was added (always true without a ``limit``)."""
    total: float
    """The window's total after the call (as it stands, when refused)."""
    retry_after: float = 0.0
    """Seconds until ``amount`` would fit under ``limit`` (0 when allowed; ``inf`` if it never will)."""


class SharedState(Protocol):
    """Atomic key/value, counter, window and mean primitives (contract: ``llmroute.state``)."""

    @property
    def kind(self) -> str:
        """``"local"`` or ``"redis"`` (``"redis"`` stays the answer during an outage)."""
        ...

    async def get(self, key: str) -> str | None:
        """The value, or ``None`` when unset or expired."""
        ...

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """``get`` for several keys in one round trip, in order."""
        ...

    async def set(self, key: str, value: str, ttl: float | None = None) -> None:
        """Store ``value``, expiring after ``ttl`` seconds (``None``: never)."""
        ...

    async def set_if_absent(self, key: str, value: str, ttl: float | None = None) -> bool:
        """Store ``value`` only when ``key`` is unset; true when it was stored (a lock with a lease)."""
        ...

    async def delete(self, *keys: str) -> None:
        """Remove the keys (missing ones are ignored)."""
        ...

    async def incr(self, key: str, amount: float = 1.0, ttl: float | None = None) -> float:
        """Add ``amount`` and return the new total; ``ttl`` applies when this call creates the key."""
        ...

    async def window(
        self, key: str, amount: float, seconds: float, limit: float | None = None
    ) -> WindowCount:
        """Add ``amount`` to the sliding window of ``seconds`` (only if it fits ``limit``)."""
        ...

    async def ewma(self, key: str, sample: float, alpha: float = 0.3, ttl: float | None = None) -> float:
        """Fold ``sample`` into the mean (the first sample is the mean) and return it."""
        ...

    async def aclose(self) -> None:
        """Release connections (idempotent)."""
        ...


def window_estimate(previous: float, current: float, elapsed: float) -> float:
    """The sliding total: all of the current bucket plus the part of the previous one still in the
    window (``elapsed``: the fraction of the current bucket gone, 0..1)."""
    return previous * (1.0 - elapsed) + current


def window_retry_after(
    previous: float, current: float, elapsed: float, seconds: float, amount: float, limit: float
) -> float:
    """How long, with no further adds, until ``amount`` fits under ``limit``."""
    if amount > limit:
        return math.inf
    total = window_estimate(previous, current, elapsed)
    need = total + amount - limit
    if need <= 0:
        return 0.0
    left = (1.0 - elapsed) * seconds  # until the current bucket ends
    if previous > 0 and previous * (1.0 - elapsed) >= need:
        return need / (previous / seconds)
    need_next = current + amount - limit  # after the boundary the current bucket is the older one
    if need_next <= 0 or current <= 0:
        return left
    return min(left + need_next / (current / seconds), left + seconds)


_SCHEMES = ("redis", "rediss", "unix")


def check_url(url: object) -> None:
    """A Redis URL, or ``InvalidRequestError`` naming ``redis_url`` (never echoing a password)."""
    if not isinstance(url, str):
        raise InvalidRequestError(
            f"redis_url: expected a redis:// URL string, got {type(url).__name__}", param="redis_url"
        )
    try:
        parts = urlsplit(url)
        scheme = parts.scheme
        _ = parts.port  # a port that is not a number raises here (its text is not echoed)
    except ValueError:
        raise InvalidRequestError(
            "redis_url: not a valid URL (check the host and port)", param="redis_url"
        ) from None
    if scheme not in _SCHEMES:
        shown = f"{scheme}://..." if scheme else "a URL without a scheme"
        raise InvalidRequestError(
            f"redis_url: expected redis://, rediss:// or unix://, got {shown}", param="redis_url"
        )
    db = parts.path.strip("/")
    if scheme != "unix" and db and not db.isdigit():
        raise InvalidRequestError(
            "redis_url: the path must be a database number (redis://host:6379/0)", param="redis_url"
        )
