"""Retry and deadline settings, per client and per request."""

from __future__ import annotations

import msgspec

__all__ = ["RetryPolicy", "Timeouts"]


class Timeouts(msgspec.Struct, frozen=True, omit_defaults=True):
    """Seconds. ``first_byte`` is long because reasoning models think before they speak; ``idle`` is
    the longest gap between two body chunks; ``total`` bounds the whole call (``None``: unbounded)."""

    connect: float = 10.0
    first_byte: float = 600.0
    idle: float = 120.0
    total: float | None = None


class RetryPolicy(msgspec.Struct, frozen=True, omit_defaults=True):
    """Retries happen only before any event reached the caller."""

    max_retries: int = 2
    initial_backoff: float = 0.5
    max_backoff: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
