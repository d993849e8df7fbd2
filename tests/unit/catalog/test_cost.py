"""The hard cases of cost, each from the provider's published prices (the source in a comment)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

import llmroute
from llmroute import catalog
from llmroute.catalog import Catalog, ModelInfo
from llmroute.providers import anthropic, openai
from llmroute.schema.cost import Cost
from llmroute.schema.usage_read import usage_from_cached, usage_from_uncached
from llmroute.testing import Cassette, Interaction, RecordedRequest, RecordedResponse
from tests.helpers import load, replay_generate

AT = datetime(2026, 11, 1, tzinfo=UTC)  # prices as published on this date
M = Decimal(1_000_000)


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _anthropic_stream(usage_start: dict[str, Any], output_tokens: int) -> Cassette:
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [],
                "stop_reason": None,
                "usage": usage_start,
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]
    request = RecordedRequest("POST", "https://api.anthropic.com/v1/messages", {}, b"{}")
    response = RecordedResponse(200, {"content-type": ["text/event-stream"]}, _sse(events))
    return Cassette([Interaction(request, response)])


@pytest.mark.anyio
async def test_anthropic_cache_writes_priced_by_ttl() -> None:
    # Claude Sonnet 4.5 (docs.anthropic.com/en/docs/about-claude/pricing): $3/MTok input, 5-minute
    # cache writes $3.75 (1.25x), 1-hour cache writes $6 (2x), cache reads $0.30 (0.1x), output $15.
    cassette = _anthropic_stream(
        {
            "input_tokens": 1000,
            "cache_creation_input_tokens": 6000,
            "cache_read_input_tokens": 10_000,
            "cache_creation": {"ephemeral_5m_input_tokens": 2000, "ephemeral_1h_input_tokens": 4000},
            "output_tokens": 1,
        },
        500,
    )
    model = anthropic.configure(api_key="k").messages("claude-sonnet-4-5-20250929")
    response, _ = await replay_generate(cassette, llmroute.request(model, prompt="hi"))
    usage = response.usage
    assert usage is not None
    # the breakdown invariants hold, and the TTL split is a part of cache_write
    assert (usage.input_tokens, usage.non_cached_input_tokens) == (17_000, 1000)
    assert (usage.cache_write_tokens, usage.cache_write_1h_tokens, usage.cache_read_tokens) == (
        6000,
        4000,
        10_000,
    )
    cost = response.cost
    assert cost is not None and cost.source == "catalog"
    assert cost.input == 1000 * Decimal(3) / M
    assert cost.cache_write == (2000 * Decimal("3.75") + 4000 * Decimal(6)) / M
    assert cost.cache_read == 10_000 * Decimal("0.3") / M
    assert cost.output == 500 * Decimal(15) / M
    assert cost.total == Decimal("0.045") == cost.input + cost.cache_write + cost.cache_read + cost.output


def test_cache_reads_at_each_providers_discount() -> None:
    # GPT-4.1 (platform.openai.com/docs/pricing): $2 input, $0.50 cached input (75% off), $8 output.
    usage = usage_from_cached(input_tokens=10_000, output_tokens=1000, cache_read=8000)
    cost = catalog.cost("openai", "gpt-4.1", usage, at=AT)
    assert cost is not None
    assert (cost.input, cost.cache_read, cost.output) == (
        Decimal("0.004"),
        Decimal("0.004"),
        Decimal("0.008"),
    )
    # Claude Haiku 4.5 (docs.anthropic.com pricing): $1 input, cache reads $0.10 (0.1x).
    usage = usage_from_uncached(uncached_input=0, output_tokens=0, cache_read=1_000_000)
    cost = catalog.cost("anthropic", "claude-haiku-4-5", usage, at=AT)
    assert cost is not None and cost.total == Decimal("0.1")


def test_long_context_tier_prices_every_token_at_the_higher_rate() -> None:
    # Gemini 2.5 Pro (ai.google.dev/gemini-api/docs/pricing): prompts <= 200k tokens $1.25 input /
    # $10 output; prompts > 200k $2.50 / $15, for the whole request.
    at_threshold = catalog.cost(
        "google", "gemini-2.5-pro", llmroute.Usage(input_tokens=200_000, output_tokens=1000), at=AT
    )
    assert at_threshold is not None and at_threshold.total == Decimal("0.25") + Decimal("0.01")
    over = catalog.cost(
        "google", "gemini-2.5-pro", llmroute.Usage(input_tokens=250_000, output_tokens=1000), at=AT
    )
    assert over is not None and over.input == Decimal("0.625") and over.output == Decimal("0.015")


def test_long_context_tier_is_per_call_in_a_summed_response() -> None:
    # Two steps of 150k input each are two calls under the threshold, not one of 300k.
    model = llmroute.Model(id="gemini-2.5-pro", route=None, provider="google")  # type: ignore[arg-type]
    builder = llmroute.ResponseBuilder(provider=model.provider, model_id=model.id)
    step_usage = llmroute.Usage(input_tokens=150_000, output_tokens=100)
    builder.add(llmroute.StepFinish(0, "tool-calls", step_usage))
    builder.add(llmroute.StepFinish(1, "stop", step_usage))
    builder.add(llmroute.Finish("stop", step_usage + step_usage))
    response = builder.build()
    one = catalog.cost("google", "gemini-2.5-pro", step_usage)
    assert one is not None and one.input == 150_000 * Decimal("1.25") / M
    assert response.cost == one + one
    assert [s.cost for s in response.steps] == [one, one]


@pytest.mark.anyio
async def test_reasoning_priced_as_output_and_service_tier_from_the_response() -> None:
    # A real gpt-5 Responses stream served on the flex tier ("service_tier": "flex" in
    # response.completed): 53 input, 469 output of which 448 reasoning. GPT-5 flex
    # (platform.openai.com/docs/pricing, Flex): $0.625 input, $5 output - half the standard $1.25/$10.
    cassette = load("pydantic-ai/test_openai_responses/test_openai_responses_streaming_usage.yaml")
    model = openai.configure(api_key="k").responses("gpt-5")
    response, _ = await replay_generate(cassette, llmroute.request(model, prompt="Calculate 100 * 200 / 3"))
    usage = response.usage
    assert usage is not None and usage.service_tier == "flex" and usage.reasoning_tokens == 448
    cost = response.cost
    assert cost is not None
    assert cost.input == 53 * Decimal("0.625") / M
    assert cost.output == 469 * Decimal(5) / M  # reasoning included, at the output price
    standard = catalog.cost("openai", "gpt-5", msgspec_replace(usage, service_tier=None), at=AT)
    assert standard is not None and standard.total == 53 * Decimal("1.25") / M + 469 * Decimal(10) / M
    # priority: $2.50 / $20
    priority = catalog.cost("openai", "gpt-5", msgspec_replace(usage, service_tier="priority"), at=AT)
    assert priority is not None and priority.total == 2 * standard.total


def msgspec_replace(usage: llmroute.Usage, **changes: Any) -> llmroute.Usage:
    import msgspec

    return msgspec.structs.replace(usage, **changes)


def test_bedrock_cross_region_profiles() -> None:
    # aws.amazon.com/bedrock/pricing (Anthropic): Claude Sonnet 4.5 through a global cross-region
    # profile $3 / $15; through a geographic (us./eu./apac.) profile or in-region, 10% more: $3.30 / $16.50.
    usage = llmroute.Usage(input_tokens=1_000_000, output_tokens=100_000)
    regional = catalog.cost("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", usage, at=AT)
    arn = catalog.cost(
        "bedrock",
        "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
        usage,
        at=AT,
    )
    global_ = catalog.cost("bedrock", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", usage, at=AT)
    assert regional is not None and regional.total == Decimal("3.3") + Decimal("1.65")
    assert arn == regional
    assert global_ is not None and global_.total == Decimal(3) + Decimal("1.5")


@pytest.mark.anyio
async def test_hosted_web_search_fee() -> None:
    # A real Claude Sonnet 4 stream with 2 web searches. docs.anthropic.com pricing: $3 input, $15
    # output, web search $10 per 1,000 searches.
    cassette = load("pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml")
    model = anthropic.configure(api_key="k").messages("claude-sonnet-4-0")
    response, _ = await replay_generate(cassette, llmroute.request(model, prompt="news?"))
    usage = response.usage
    assert usage is not None and usage.web_search_requests == 2
    cost = response.cost
    assert cost is not None
    assert cost.tools == Decimal("0.02")
    assert cost.total == 31_772 * Decimal(3) / M + 644 * Decimal(15) / M + Decimal("0.02")


def test_server_side_web_search_backend_cost_apart_and_in_the_total() -> None:
    main = llmroute.Usage(input_tokens=1000, output_tokens=100)
    builder = llmroute.ResponseBuilder(provider="openai", model_id="gpt-4.1")
    builder.add(
        llmroute.ToolResult(
            "c1",
            "web_search",
            {"summary": "s"},
            provider_metadata={"web_search": {"engine": "glm", "cost": "0.0042"}},
        )
    )
    builder.add(llmroute.StepFinish(0, "tool-calls", main))
    builder.add(llmroute.StepFinish(1, "stop", main))
    builder.add(llmroute.Finish("stop", main + main))
    cost = builder.build().cost
    model_only = catalog.cost("openai", "gpt-4.1", main)
    assert cost is not None and model_only is not None
    assert cost.search == Decimal("0.0042")
    assert cost.total == 2 * model_only.total + Decimal("0.0042")
    # an unknown backend cost makes the total unknown, not smaller
    builder = llmroute.ResponseBuilder(provider="openai", model_id="gpt-4.1")
    builder.add(llmroute.ToolResult("c1", "web_search", {}, provider_metadata={"web_search": {"cost": None}}))
    builder.add(llmroute.Finish("stop", main))
    assert builder.build().cost is None


def test_unknown_model_or_price_is_none_with_a_reason() -> None:
    usage = llmroute.Usage(input_tokens=10, output_tokens=10)
    assert catalog.cost("openai", "gpt-imaginary", usage) is None
    assert catalog.cost_reason("openai", "gpt-imaginary", usage) == "unknown model 'gpt-imaginary' on openai"
    cat = Catalog()
    cat.register(ModelInfo(provider="acme", id="private-1", context_window=8192))
    assert cat.cost("acme", "private-1", usage) is None
    assert cat.cost_reason("acme", "private-1", usage) == "the registered model has no prices"
    # a model known without a hosted search price: the fee is unknown, so the cost is
    searched = llmroute.Usage(input_tokens=10, output_tokens=10, web_search_requests=1)
    assert catalog.cost("openrouter", "openai/gpt-4.1-mini", searched) is None
    assert "web search" in (catalog.cost_reason("openrouter", "openai/gpt-4.1-mini", searched) or "")
    # no usage, no cost (never 0)
    assert llmroute.ResponseBuilder(provider="openai", model_id="gpt-4.1").build().cost is None


def test_cost_is_exact_decimal_and_sums() -> None:
    a = Cost(
        total=Decimal("0.1"),
        input=Decimal("0.1"),
        cache_read=Decimal(0),
        cache_write=Decimal(0),
        output=Decimal(0),
        tools=Decimal(0),
    )
    b = Cost(total=Decimal("0.2"), source="provider")
    assert (a + a).total == Decimal("0.2") and (a + a).source == "catalog"
    mixed = a + b
    assert mixed.total == Decimal("0.3") and mixed.source == "mixed" and mixed.input is None
