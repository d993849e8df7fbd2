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
    input_audio_tokens: int | None = None
    """Of ``input_tokens``, audio (cached audio included): OpenAI ``prompt_tokens_details.audio_tokens``,
    Gemini ``promptTokensDetails`` ``AUDIO``."""
    cache_read_audio_tokens: int | None = None
    """Of ``cache_read_tokens`` (and of ``input_audio_tokens``), audio read from the cache."""
    input_image_tokens: int | None = None
    """Of ``input_tokens``, image (cached images included) where the provider prices them apart."""
    output_audio_tokens: int | None = None
    """Of ``output_tokens``, audio the model produced."""
    output_image_tokens: int | None = None
    """Of ``output_tokens``, images the model produced (Gemini image models, ``gpt-image``)."""
    tool_calls: dict[str, int] | None = None
    """Provider-hosted tool calls billed per call, by kind, apart from web searches (which are
    ``web_search_requests``): ``{"file_search": 2, "x_search": 1, "code_execution": 1}``."""
    speed: str | None = None
    """The speed mode the provider says served the call (Anthropic ``usage.speed``: ``"fast"``)."""
    model: str | None = None
    """The model the provider says produced these tokens (the response's ``model``; an Anthropic
    ``usage.iterations`` entry's own). Costs price this model when the catalog knows it."""
    iterations: tuple[Usage, ...] = ()
    """The sampling iterations one call ran, each with its own model and counts (Anthropic
    ``usage.iterations``: compaction, advisor, fallback). When present the call's cost is their sum;
    the totals above stay as the provider reported them."""

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        calls = None
        if self.tool_calls or other.tool_calls:
            calls = dict(self.tool_calls or {})
            for kind, n in (other.tool_calls or {}).items():
                calls[kind] = calls.get(kind, 0) + n
        iterations: tuple[Usage, ...] = ()
        if self.iterations or other.iterations:  # a sum priced whole is priced part by part
            iterations = (*(self.iterations or (self,)), *(other.iterations or (other,)))
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
            input_audio_tokens=add(self.input_audio_tokens, other.input_audio_tokens),
            cache_read_audio_tokens=add(self.cache_read_audio_tokens, other.cache_read_audio_tokens),
            input_image_tokens=add(self.input_image_tokens, other.input_image_tokens),
            output_audio_tokens=add(self.output_audio_tokens, other.output_audio_tokens),
            output_image_tokens=add(self.output_image_tokens, other.output_image_tokens),
            tool_calls=calls,
            speed=self.speed if self.speed == other.speed else None,
            model=self.model if self.model == other.model else None,
            iterations=iterations,
        )
