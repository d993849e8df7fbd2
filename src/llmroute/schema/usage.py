"""Token usage."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

__all__ = ["Usage"]


class Usage(msgspec.Struct, frozen=True, omit_defaults=True):
    """Token counts for one step (or a sum of steps).

    ``input_tokens`` and ``output_tokens`` are inclusive totals. The breakdown never overlaps:
    ``non_cached_input_tokens + cache_read_tokens + cache_write_tokens == input_tokens`` whenever the
    provider reports caching, and ``reasoning_tokens`` is the part of ``output_tokens`` spent thinking.
    ``cache_write_1h_tokens`` is the part of ``cache_write_tokens`` written with a 1-hour TTL (the rest
    used the 5-minute default). Raw provider usage stays in ``provider_metadata``.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    non_cached_input_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    web_search_requests: int | None = None
    provider_metadata: dict[str, Any] | None = None
    cache_write_1h_tokens: int | None = None
    """Of ``cache_write_tokens``, those written with a 1-hour TTL (Anthropic ``usage.cache_creation``)."""
    service_tier: str | None = None
    """The service tier the provider says served the call (OpenAI ``flex``/``priority``/``default``)."""
    reported_cost: Decimal | None = None
    """The call's cost in USD as the provider reported it (OpenRouter ``usage.cost``, xAI
    ``cost_in_usd_ticks``); ``None`` when it did not."""

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            input_tokens=add(self.input_tokens, other.input_tokens),
            output_tokens=add(self.output_tokens, other.output_tokens),
            non_cached_input_tokens=add(self.non_cached_input_tokens, other.non_cached_input_tokens),
            cache_read_tokens=add(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=add(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens=add(self.reasoning_tokens, other.reasoning_tokens),
            web_search_requests=add(self.web_search_requests, other.web_search_requests),
            cache_write_1h_tokens=add(self.cache_write_1h_tokens, other.cache_write_1h_tokens),
            service_tier=self.service_tier if self.service_tier == other.service_tier else None,
            # a sum is only reported when every part was
            reported_cost=None
            if self.reported_cost is None or other.reported_cost is None
            else self.reported_cost + other.reported_cost,
        )

    @classmethod
    def from_uncached(
        cls,
        *,
        uncached_input: int | None,
        output_tokens: int | None,
        cache_read: int | None = None,
        cache_write: int | None = None,
        reasoning: int | None = None,
        web_search_requests: int | None = None,
        raw: dict[str, Any] | None = None,
        cache_write_1h: int | None = None,
    ) -> Usage:
        """Build from an input count that excludes cached tokens (Anthropic / Bedrock accounting)."""
        _counters(
            uncached_input,
            output_tokens,
            cache_read,
            cache_write,
            reasoning,
            web_search_requests,
            cache_write_1h,
        )
        parts = [t for t in (uncached_input, cache_read, cache_write) if t is not None]
        return cls(
            input_tokens=sum(parts) if parts else None,
            output_tokens=output_tokens,
            non_cached_input_tokens=uncached_input,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=reasoning,
            web_search_requests=web_search_requests,
            provider_metadata=raw,
            cache_write_1h_tokens=cache_write_1h,
        )

    @classmethod
    def from_cached(
        cls,
        *,
        input_tokens: int | None,
        output_tokens: int | None,
        cache_read: int | None = None,
        cache_write: int | None = None,
        reasoning: int | None = None,
        web_search_requests: int | None = None,
        raw: dict[str, Any] | None = None,
        cache_write_1h: int | None = None,
    ) -> Usage:
        """Build from an inclusive input total and its cached parts (OpenAI-style accounting)."""
        _counters(
            input_tokens,
            output_tokens,
            cache_read,
            cache_write,
            reasoning,
            web_search_requests,
            cache_write_1h,
        )
        non_cached = None
        if input_tokens is not None:
            non_cached = input_tokens - (cache_read or 0) - (cache_write or 0)
        return cls(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            non_cached_input_tokens=non_cached,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            reasoning_tokens=reasoning,
            web_search_requests=web_search_requests,
            provider_metadata=raw,
            cache_write_1h_tokens=cache_write_1h,
        )


def _counters(*values: object) -> None:
    """Provider counters are integers; a string or object in their place is malformed output (the
    executor reports the ``TypeError`` as ``InvalidProviderOutputError``), never a silent value."""
    for value in values:
        if value is not None and (type(value) is not int):
            raise TypeError(f"usage counter is {type(value).__name__}, not int")
