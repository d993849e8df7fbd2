"""The cost of one step's usage at a model's prices. Exact ``Decimal`` arithmetic, no rounding."""

from __future__ import annotations

from decimal import Decimal

from ..schema.cost import Cost
from ..schema.usage import Usage
from .info import Prices

__all__ = ["price_usage", "provider_cost"]

_MILLION = Decimal(1_000_000)
_THOUSAND = Decimal(1000)


def _tiered(prices: Prices, input_tokens: int) -> dict[str, Decimal | None]:
    """The rates that apply to a request of ``input_tokens`` input: over a tier's threshold every
    token is priced at that tier (the "cliff" Google and Anthropic publish for long context)."""
    rates: dict[str, Decimal | None] = {
        "input": prices.input,
        "output": prices.output,
        "cache_read": prices.cache_read,
        "cache_write": prices.cache_write,
        "cache_write_1h": prices.cache_write_1h,
    }
    for tier in prices.tiers:
        if input_tokens > tier.above:
            for name in rates:
                value = getattr(tier, name)
                if value is not None:
                    rates[name] = value
    return rates


def price_usage(prices: Prices, usage: Usage) -> Cost | str:
    """The catalog's cost of ``usage`` (one model call), or why it cannot be priced. Audio and image
    tokens the usage splits out take their own rates where the catalog has them (else the text
    rate, as providers that do not price them apart bill them)."""
    cache_read = usage.cache_read_tokens or 0
    cache_write = usage.cache_write_tokens or 0
    write_1h = min(usage.cache_write_1h_tokens or 0, cache_write)
    if usage.non_cached_input_tokens is not None:
        uncached = usage.non_cached_input_tokens
    else:
        uncached = (usage.input_tokens or 0) - cache_read - cache_write
    total_input = (
        usage.input_tokens if usage.input_tokens is not None else uncached + cache_read + cache_write
    )
    output = usage.output_tokens or 0
    rates = _tiered(prices, total_input)
    rate_in = rates["input"]
    rate_out = rates["output"]
    if rate_in is None and total_input:
        return "the catalog has no input price for this model"
    if rate_out is None and output:
        return "the catalog has no output price for this model"
    rate_in = rate_in or Decimal(0)
    rate_out = rate_out or Decimal(0)
    rate_read = rates["cache_read"] if rates["cache_read"] is not None else rate_in
    rate_write = rates["cache_write"] if rates["cache_write"] is not None else rate_in
    rate_write_1h = rates["cache_write_1h"] if rates["cache_write_1h"] is not None else rate_write
    tools = _tool_fees(prices, usage)
    if isinstance(tools, str):
        return tools

    # the modality parts, each within its total (a provider's split never exceeds what it splits)
    read_audio = min(usage.cache_read_audio_tokens or 0, cache_read)
    in_audio = min(max((usage.input_audio_tokens or 0) - read_audio, 0), uncached)
    in_image = min(usage.input_image_tokens or 0, uncached - in_audio)
    out_audio = min(usage.output_audio_tokens or 0, output)
    out_image = min(usage.output_image_tokens or 0, output - out_audio)
    reasoning = (
        min(usage.reasoning_tokens or 0, output - out_audio - out_image)
        if prices.reasoning is not None
        else 0
    )
    text_in = uncached - in_audio - in_image
    text_out = output - out_audio - out_image - reasoning

    cost_input = (
        text_in * rate_in
        + in_audio * _or(prices.input_audio, rate_in)
        + in_image * _or(prices.input_image, rate_in)
    ) / _MILLION
    cost_read = (
        (cache_read - read_audio) * rate_read + read_audio * _or(prices.cache_read_audio, rate_read)
    ) / _MILLION
    cost_write = ((cache_write - write_1h) * rate_write + write_1h * rate_write_1h) / _MILLION
    cost_output = (
        text_out * rate_out
        + reasoning * (prices.reasoning or 0)
        + out_audio * _or(prices.output_audio, rate_out)
        + out_image * _or(prices.output_image, rate_out)
    ) / _MILLION
    return Cost(
        total=cost_input + cost_read + cost_write + cost_output + tools,
        input=cost_input,
        cache_read=cost_read,
        cache_write=cost_write,
        output=cost_output,
        tools=tools,
        source="catalog",
    )


def _or(rate: Decimal | None, fallback: Decimal) -> Decimal:
    return fallback if rate is None else rate


def _tool_fees(prices: Prices, usage: Usage) -> Decimal | str:
    """Hosted tool fees: web searches (per search, or once per grounded prompt) and the other
    per-call tools ``usage.tool_calls`` counts; why not, when a fee the usage needs is unknown."""
    searches = usage.web_search_requests or 0
    if searches and prices.web_search is None:
        return "the catalog has no hosted web search price for this model"
    if prices.web_search_per_prompt:
        searches = min(searches, 1)  # one grounded prompt per call, however many queries it ran
    total = searches * (prices.web_search or 0) / _THOUSAND
    for kind, calls in sorted((usage.tool_calls or {}).items()):
        if not calls:
            continue
        fee = prices.tool_calls.get(kind)
        if fee is None:
            return f"the catalog has no price for hosted {kind} calls on this model"
        total += calls * fee / _THOUSAND
    return total


def provider_cost(usage: Usage) -> Cost | None:
    """The cost the provider itself reported for the call, when it did."""
    if usage.reported_cost is None:
        return None
    return Cost(total=usage.reported_cost, source="provider")
