"""Per-key limits: requests and tokens per minute, and a USD budget per calendar period, kept on
the shared-state layer (``llmroute.state``): in-process by default, in Redis with ``redisUrl`` so
every worker and instance counts against the same numbers.

A request is admitted when its key is under its token window and budget (both read) and a slot in
its request window is free (taken atomically); its tokens and cost are added when it ends, even
if the client hung up (the upstream spent them). A request already admitted is never cut short,
so one long answer can take a key somewhat past its tpm or budget; the next request is refused.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from ..state import SharedState
from .config import BudgetPeriod, Key

__all__ = ["LimitExceeded", "Limits", "period"]

_MINUTE = 60.0


class LimitExceeded(Exception):
    """Over a limit: the gateway answers 429 with ``Retry-After`` (``None``: not before the period
    ends, or never)."""

    def __init__(self, message: str, code: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.message, self.code, self.retry_after = message, code, retry_after


def period(kind: BudgetPeriod, now: datetime) -> tuple[str, float | None]:
    """The tag naming ``now``'s budget period and the seconds left in it (``None`` for ``total``)."""
    now = now.astimezone(UTC)
    if kind == "total":
        return "total", None
    if kind == "hour":
        start = now.replace(minute=0, second=0, microsecond=0)
        tag, end = start.strftime("%Y-%m-%dT%H"), start + timedelta(hours=1)
    elif kind == "day":
        start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        tag, end = start.strftime("%Y-%m-%d"), start + timedelta(days=1)
    elif kind == "week":
        start = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
        year, week, _ = start.isocalendar()
        tag, end = f"{year}-W{week:02d}", start + timedelta(weeks=1)
    else:
        start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        end = (
            start.replace(year=start.year + 1, month=1)
            if start.month == 12
            else start.replace(month=start.month + 1)
        )
        tag = start.strftime("%Y-%m")
    return tag, (end - now).total_seconds()


class Limits:
    """Admits and charges requests of keys that have limits (keys without any never get here)."""

    def __init__(self, state: SharedState, clock: type[datetime] = datetime) -> None:
        self.state = state
        self._clock = clock

    def _budget_key(self, key: Key) -> tuple[str, float | None]:
        tag, left = period(key.budget_period, self._clock.now(UTC))
        return f"gw:spend:{key.id}:{tag}", left

    async def admit(self, key: Key) -> None:
        """Raise ``LimitExceeded`` when ``key`` is over a limit; else take one request slot."""
        if key.budget_usd is not None:
            name, left = self._budget_key(key)
            spent = await self.state.incr(name, 0.0, ttl=None if left is None else left + 3600)
            if spent >= key.budget_usd:
                when = "this period" if left is not None else "in total"
                raise LimitExceeded(
                    f"key {key.id!r} has spent its budget of ${key.budget_usd:g} {when} "
                    f"({key.budget_period})",
                    "budget_exceeded",
                    left,
                )
        if key.tpm is not None:
            used = await self.state.window(f"gw:tpm:{key.id}", 0, _MINUTE)
            if used.total >= key.tpm:
                # the older bucket drains linearly over the minute: roughly the share over the limit
                wait = _MINUTE * min(1.0, (used.total - key.tpm + 1) / used.total)
                raise LimitExceeded(
                    f"key {key.id!r} is over its {key.tpm} tokens per minute", "rate_limit_exceeded", wait
                )
        if key.rpm is not None:
            slot = await self.state.window(f"gw:rpm:{key.id}", 1, _MINUTE, limit=key.rpm)
            if not slot.allowed:
                raise LimitExceeded(
                    f"key {key.id!r} is over its {key.rpm} requests per minute",
                    "rate_limit_exceeded",
                    slot.retry_after if math.isfinite(slot.retry_after) else _MINUTE,
                )

    async def charge(self, key: Key, tokens: int | None, cost: Decimal | float | None) -> None:
        """Add a finished request's tokens and cost to the key's windows."""
        if key.tpm is not None and tokens:
            await self.state.window(f"gw:tpm:{key.id}", tokens, _MINUTE)
        if key.budget_usd is not None and cost:
            name, left = self._budget_key(key)
            await self.state.incr(name, float(cost), ttl=None if left is None else left + 3600)
