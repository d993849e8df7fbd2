"""Retry and deadline settings, per client and per request.

Set defaults on the client (``Client(retry=RetryPolicy(max_retries=4), timeouts=Timeouts(idle=30))``)
and override them per call (``client.stream(request, timeouts=Timeouts(total=60), retry=RetryPolicy.none())``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from typing import cast

import msgspec

from ..schema.errors import InvalidRequestError

__all__ = ["RETRY_STATUSES", "RetryPolicy", "Timeouts"]

# 408 request timeout, 409 conflict (lock contention), 429 rate limit (never quota), 5xx transient
# server states and Anthropic's 529 overloaded.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def _number(owner: str, field: str, value: object, *, low: float, above: bool, optional: bool) -> None:
    """A real number (not a bool, not NaN) above ``low`` (``above``) or at least ``low``."""
    if value is None and optional:
        return
    number = isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
    if number and (value > low or (not above and value == low)):  # type: ignore[operator]
        return
    want = f"a number {'>' if above else '>='} {low:g}" + (" or None" if optional else "")
    raise InvalidRequestError(f"{owner}.{field}: must be {want}, got {value!r}", param=f"{owner}.{field}")


class Timeouts(msgspec.Struct, frozen=True, omit_defaults=True):
    """Deadlines in seconds; each raises ``llmroute.TimeoutError`` whose ``deadline`` names it."""

    connect: float = 10.0
    """Opening the TCP/TLS connection."""
    first_byte: float = 600.0
    """From sending the request to the first body byte; long, because reasoning models think
    before they speak."""
    idle: float = 120.0
    """The longest gap between two body chunks once bytes flow."""
    total: float | None = None
    """The whole call, retries and backoff included (``None``: unbounded)."""
    pool: float | None = None
    """Waiting for a free connection while all of the client's ``max_connections`` are busy
    (``None``: as long as ``first_byte`` and ``total`` allow; a queue of streams is normal load,
    not a failure to connect)."""

    def __post_init__(self) -> None:
        for field in ("connect", "first_byte", "idle"):
            _number("Timeouts", field, getattr(self, field), low=0, above=True, optional=False)
        _number("Timeouts", "total", self.total, low=0, above=True, optional=True)
        _number("Timeouts", "pool", self.pool, low=0, above=True, optional=True)

    def replace(
        self,
        *,
        connect: float | None = None,
        first_byte: float | None = None,
        idle: float | None = None,
        total: float | None = None,
        pool: float | None = None,
    ) -> Timeouts:
        """A copy with the given deadlines changed (``None`` keeps the current value)."""
        return Timeouts(
            connect if connect is not None else self.connect,
            first_byte if first_byte is not None else self.first_byte,
            idle if idle is not None else self.idle,
            total if total is not None else self.total,
            pool if pool is not None else self.pool,
        )


class RetryPolicy(msgspec.Struct, frozen=True, omit_defaults=True):
    """Retries happen only before any event reached the caller.

    Retried: an HTTP status in ``statuses`` (a 429 that means quota exhaustion is not), a connection
    failure that provably never delivered the request (when ``retry_connect``), and a 200 stream
    whose first event is an overloaded / rate-limit error. The wait is the provider's
    ``retry-after-ms`` / ``Retry-After`` when it sends one, else exponential backoff (see
    ``delay``)."""

    max_retries: int = 2
    """Retries after the first attempt (``0``: never retry; ``RetryPolicy.none()``)."""
    initial_backoff: float = 0.5
    """Seconds before the first retry when the provider gives no hint."""
    max_backoff: float = 30.0
    """Cap in seconds on the computed backoff (``initial_backoff * multiplier**n``)."""
    multiplier: float = 2.0
    """Growth of the backoff per retry (at least 1)."""
    jitter: float = 0.25
    """Spread, a fraction between 0 and 1: a computed backoff moves by +/- this much of itself; a
    provider's hint only grows, by up to this much of it, so many callers told "retry in 1 s" do not
    all come back in the same millisecond."""
    max_retry_after: float = 60.0
    """Cap in seconds on a provider's ``retry-after-ms`` / ``Retry-After`` hint."""
    statuses: frozenset[int] = RETRY_STATUSES
    """HTTP statuses that are retried (default: 408, 409, 429, 500, 502, 503, 504, 529); a
    rate-limit error inside a 200 stream counts as a 429."""
    retry_connect: bool = True
    """Retry a connection failure that provably never delivered the request; a reset after the
    whole request was sent only when it carries an ``Idempotency-Key`` header, since the provider
    may already be generating."""

    def __post_init__(self) -> None:
        retries = cast(object, self.max_retries)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InvalidRequestError(
                f"RetryPolicy.max_retries: must be an int >= 0, got {retries!r}",
                param="RetryPolicy.max_retries",
            )
        for field in ("initial_backoff", "max_backoff", "max_retry_after"):
            _number("RetryPolicy", field, getattr(self, field), low=0, above=False, optional=False)
        _number("RetryPolicy", "multiplier", self.multiplier, low=1, above=False, optional=False)
        _number("RetryPolicy", "jitter", self.jitter, low=0, above=False, optional=False)
        if self.jitter > 1:
            raise InvalidRequestError(
                f"RetryPolicy.jitter: must be between 0 and 1, got {self.jitter!r}",
                param="RetryPolicy.jitter",
            )
        statuses = cast(object, self.statuses)
        items = cast("Iterable[object]", statuses) if isinstance(statuses, frozenset | set) else None
        if items is None or not all(isinstance(s, int) and not isinstance(s, bool) for s in items):
            raise InvalidRequestError(
                "RetryPolicy.statuses: must be a frozenset of HTTP status ints", param="RetryPolicy.statuses"
            )

    @classmethod
    def none(cls) -> RetryPolicy:
        """Never retry."""
        return cls(max_retries=0)

    def delay(
        self, retry: int, retry_after: float | None = None, rand: Callable[[], float] = random.random
    ) -> float:
        """Seconds to wait before retry number ``retry`` (1-based). A provider's hint is a floor:
        jitter only adds to it (up to ``jitter`` of it), so many callers told "retry in 1 s" do
        not all come back in the same millisecond."""
        if retry_after is not None:
            wait = min(max(0.0, retry_after), self.max_retry_after)
            if self.jitter:
                wait = min(wait * (1.0 + self.jitter * rand()), self.max_retry_after)
            return wait
        try:
            # float: an int multiplier (``multiplier=2``) would build a huge int that overflows later
            growth = float(self.multiplier) ** max(0, retry - 1)
        except OverflowError:  # max_retries in the thousands: the cap applies long before
            growth = math.inf
        base = min(self.max_backoff, self.initial_backoff * growth)
        if self.jitter:
            base *= 1.0 + self.jitter * (2.0 * rand() - 1.0)
        return max(0.0, min(base, self.max_backoff))
