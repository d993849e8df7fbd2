"""Token usage."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

__all__ = ["Usage"]


class Usage(msgspec.Struct, frozen=True, omit_defaults=True):
    """Token counts for one step (or a sum of steps); ``None`` where the provider reported nothing.

    ``input_tokens`` and ``output_tokens`` are inclusive totals. The breakdown never overlaps:
    ``non_cached_input_tokens + cache_read_tokens + cache_write_tokens == input_tokens`` whenever the
    provider reports caching, and ``reasoning_tokens`` is the part of ``output_tokens`` spent thinking.
    """

    input_tokens: int | None = None
    """All input (prompt) tokens, cached ones included."""
    output_tokens: int | None = None
    """All generated tokens, reasoning included."""
    non_cached_input_tokens: int | None = None
    """Of ``input_tokens``, those neither read from nor written to the prompt cache."""
    cache_read_tokens: int | None = None
    """Of ``input_tokens``, those read from the prompt cache."""
    cache_write_tokens: int | None = None
    """Of ``input_tokens``, those written to the prompt cache."""
    reasoning_tokens: int | None = None
    """Of ``output_tokens``, those spent thinking."""
    web_search_requests: int | None = None
    """Searches a provider-hosted web search ran (billed per search by most providers)."""
    provider_metadata: dict[str, Any] | None = None
    """The provider's raw usage object, as reported."""
    cache_write_1h_tokens: int | None = None
    """Of ``cache_write_tokens``, those written with a 1-hour TTL (Anthropic ``usage.cache_creation``);
    the rest used the 5-minute default."""
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
