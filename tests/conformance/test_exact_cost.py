"""Costs exact in the hard cases held-out recordings showed (issue #42): priced at the call's time and
on the model that served it, each Anthropic iteration on its own model, the audio and image tokens a
usage splits out at their own rates, and the hosted tool fees each provider publishes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec
import pytest

import llmroute
from llmroute import catalog
from llmroute.providers import anthropic, compatible, google, openai, xai
from llmroute.schema import clock
from llmroute.testing import Cassette, Interaction, RecordedRequest, RecordedResponse
from tests.helpers import load, replay_generate

MILLION = Decimal(1_000_000)


def _set_clock(monkeypatch: pytest.MonkeyPatch, when: datetime) -> None:
    monkeypatch.setattr(clock, "now", lambda: when)


def _json(url: str, body: dict[str, Any]) -> Cassette:
    response = RecordedResponse(200, {"content-type": ["application/json"]}, json.dumps(body).encode())
    return Cassette([Interaction(RecordedRequest("POST", url, {}, b""), response)])


def _whole(model: llmroute.Model) -> llmroute.LLMRequest:
    return llmroute.request(model, prompt="x", generation=llmroute.GenerationOptions(stream=False))


# -- priced at the call, not when read -------------------------------------------------------------

PEAK = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
OFF_PEAK = datetime(2025, 3, 1, 20, 0, tzinfo=UTC)  # DeepSeek's 16:30-00:30 UTC window: half price


@pytest.mark.anyio
async def test_a_deepseek_answer_costs_what_it_cost_at_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    model = compatible.configure("deepseek", api_key="sk-test").chat("deepseek-chat")
    request = llmroute.request(model, prompt="x")
    _set_clock(monkeypatch, PEAK)
    response, _ = await replay_generate("vercel-ai/deepseek/chat/deepseek-text.chunks.yaml", request)
    usage = response.usage
    assert usage is not None and usage.model == "deepseek-chat"
    assert response.steps[0].at == PEAK
    at_call = catalog.cost("deepseek", "deepseek-chat", usage, at=PEAK)
    at_read = catalog.cost("deepseek", "deepseek-chat", usage, at=OFF_PEAK)
    assert at_call is not None and at_read is not None and at_read.total * 2 == at_call.total

    _set_clock(monkeypatch, OFF_PEAK)  # read ten hours later, in the off-peak window
    assert response.cost == at_call
    assert response.steps[0].cost == at_call


# -- priced on the model that served the call ------------------------------------------------------


@pytest.mark.anyio
async def test_the_served_model_is_priced_not_the_requested_alias() -> None:
    # requested deepseek-chat, every chunk says "model": "deepseek-v4-flash"
    cassette = load("opencode/openai-compatible-chat/deepseek-streams-text.yaml")
    assert cassette.interactions[0].request.json()["model"] == "deepseek-chat"
    model = compatible.configure("deepseek", api_key="sk-test").chat("deepseek-chat")
    response, _ = await replay_generate(cassette, llmroute.request(model, prompt="x"))
    usage, at = response.usage, response.steps[0].at
    assert usage is not None and usage.model == "deepseek-v4-flash" and at is not None
    served = catalog.cost("deepseek", "deepseek-v4-flash", usage, at=at)
    requested = catalog.cost("deepseek", "deepseek-chat", msgspec.structs.replace(usage, model=None), at=at)
    assert served is not None and requested is not None and served != requested
    assert response.cost == served


def test_an_unknown_served_model_falls_back_to_the_requested_id() -> None:
    usage = llmroute.Usage(input_tokens=1000, output_tokens=100, model="gpt-4o-some-snapshot-nobody-lists-x")
    plain = msgspec.structs.replace(usage, model=None)
    assert catalog.cost("openai", "gpt-4o", usage, at=PEAK) == catalog.cost(
        "openai", "gpt-4o", plain, at=PEAK
    )


def test_a_served_name_for_the_same_row_keeps_the_requested_profile_prices() -> None:
    # Bedrock's Anthropic answer names the bare model; the regional profile's own price row is kept
    requested = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    usage = llmroute.Usage(input_tokens=1000, output_tokens=100, model="claude-sonnet-4-5-20250929")
    assert catalog.default().priced_model("bedrock", requested, usage) == requested


# -- Anthropic usage.iterations: each sampling run on its own model --------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # compaction on claude-opus-4-6 ($5/$25): the compaction run (60,385 in, 592 out) and the answer
        ("vercel-ai/anthropic/anthropic-compaction.1.json.yaml", (60385 + 682) * 5 + (592 + 1320) * 25),
        # the advisor (claude-opus-4-7, $5/$25) inside a claude-sonnet-4-6 ($3/$15) call
        (
            "vercel-ai/anthropic/anthropic-advisor-20260301.1.json.yaml",
            (1051 + 1363) * 3 + (35 + 3165) * 15 + 2728 * 5 + 874 * 25,
        ),
        # claude-fable-5 ($10 input) began, claude-opus-4-8 ($5/$25) answered as the fallback
        ("vercel-ai/anthropic/anthropic-fallback.json.yaml", 408 * 10 + 412 * 5 + 264 * 25),
    ],
)
async def test_each_iteration_is_priced_on_its_own_model(path: str, expected: int) -> None:
    body = json.loads(load(path).interactions[0].response.body)
    model = anthropic.configure("sk-ant-test").messages(body["model"])
    response, _ = await replay_generate(path, _whole(model))
    usage = response.usage
    assert usage is not None and len(usage.iterations) == len(body["usage"]["iterations"])
    # the totals stay as Anthropic reported them
    assert usage.output_tokens == body["usage"]["output_tokens"]
    cost = response.cost
    assert cost is not None and cost.total == expected / MILLION
    assert (
        cost.input is not None
        and cost.output is not None
        and cost.total
        == cost.input + cost.output + (cost.cache_read or 0) + (cost.cache_write or 0) + (cost.tools or 0)
    )


def test_an_iteration_over_200k_is_priced_at_the_long_context_tier_on_its_own() -> None:
    # Sonnet 4.5: input over 200k tokens is priced $6/$22.5 per MTok (the whole request, per request)
    big = llmroute.Usage(input_tokens=250_000, non_cached_input_tokens=250_000, output_tokens=1000)
    small = llmroute.Usage(input_tokens=150_000, non_cached_input_tokens=150_000, output_tokens=1000)
    parts = catalog.cost(
        "anthropic",
        "claude-sonnet-4-5",
        llmroute.Usage(input_tokens=150_000, output_tokens=1000, iterations=(small, small)),
        at=PEAK,
    )
    one = catalog.cost("anthropic", "claude-sonnet-4-5", small, at=PEAK)
    assert parts is not None and one is not None and parts.total == 2 * one.total  # two runs under 200k
    over = catalog.cost("anthropic", "claude-sonnet-4-5", big, at=PEAK)
    assert over is not None and over.total == (250_000 * 6 + 1000 * Decimal("22.5")) / MILLION


def test_fast_mode_is_priced_at_its_own_rates() -> None:
    # Opus 4.8 fast mode (``usage.speed: "fast"``): $10/$50 per MTok against the standard $5/$25
    # (https://platform.claude.com/docs/en/about-claude/pricing#fast-mode-pricing, as genai-prices has it)
    usage = llmroute.Usage(input_tokens=1000, non_cached_input_tokens=1000, output_tokens=100)
    fast = catalog.cost("anthropic", "claude-opus-4-8", msgspec.structs.replace(usage, speed="fast"), at=PEAK)
    standard = catalog.cost("anthropic", "claude-opus-4-8", usage, at=PEAK)
    assert standard is not None and standard.total == (1000 * 5 + 100 * 25) / MILLION
    assert fast is not None and fast.total == (1000 * 10 + 100 * 50) / MILLION


@pytest.mark.anyio
async def test_fast_mode_reaches_the_price_from_the_response() -> None:
    body = {
        "id": "msg_fast",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1000, "output_tokens": 100, "speed": "fast"},
    }
    model = anthropic.configure("sk-ant-test").messages("claude-opus-4-8")
    response, _ = await replay_generate(_json("https://api.anthropic.com/v1/messages", body), _whole(model))
    assert response.usage is not None and response.usage.speed == "fast"
    assert response.cost is not None and response.cost.total == (1000 * 10 + 100 * 50) / MILLION


# -- hosted tool fees ------------------------------------------------------------------------------

GEMINI_SEARCH = "pydantic-ai/test_google/test_google_model_web_search_tool.yaml"


def _gemini_answer(model_version: str, queries: list[str]) -> tuple[Cassette, llmroute.Model]:
    """The recorded grounded gemini-2.5-pro answer, its ``webSearchQueries`` and ``modelVersion`` set."""
    interaction = load(GEMINI_SEARCH).interactions[0]
    body = json.loads(interaction.response.body)
    body["modelVersion"] = model_version
    body["candidates"][0]["groundingMetadata"]["webSearchQueries"] = queries
    url = str(interaction.request.url).replace("gemini-2.5-pro", model_version)
    return _json(url, body), google.configure("g-test").model(model_version)


@pytest.mark.anyio
async def test_gemini_2_grounding_is_one_fee_per_grounded_prompt() -> None:
    # "$35 / 1,000 grounded prompts" however many queries the prompt ran
    cassette, model = _gemini_answer("gemini-2.5-pro", ["weather in San Francisco today", "SF forecast"])
    response, _ = await replay_generate(cassette, _whole(model))
    assert response.usage is not None and response.usage.web_search_requests == 2
    assert response.cost is not None and response.cost.tools == Decimal(35) / 1000


@pytest.mark.anyio
async def test_gemini_3_grounding_is_one_fee_per_search_query() -> None:
    # "$14 / 1,000 search queries"
    cassette, model = _gemini_answer(
        "gemini-3-pro-preview", ["weather in San Francisco today", "SF forecast"]
    )
    response, _ = await replay_generate(cassette, _whole(model))
    assert response.cost is not None and response.cost.tools == 2 * Decimal(14) / 1000


@pytest.mark.anyio
async def test_the_recorded_gemini_2_5_search_is_one_grounded_prompt() -> None:
    model = google.configure("g-test").model("gemini-2.5-pro")
    response, _ = await replay_generate(GEMINI_SEARCH, _whole(model))
    assert response.cost is not None and response.cost.tools == Decimal(35) / 1000


@pytest.mark.anyio
async def test_openai_bills_only_search_actions_of_web_search() -> None:
    path = "vercel-ai/openai/responses/openai-web-search-tool.1.chunks.yaml"
    body = load(path).interactions[0].response.body.decode()
    actions = [
        json.loads(line[5:])["item"]["action"]["type"]
        for line in body.splitlines()
        if line.startswith("data:") and '"response.output_item.done"' in line and '"web_search_call"' in line
    ]
    assert {"search", "open_page", "find_in_page"} <= set(actions)  # the recording has all three
    model = openai.configure("sk-test").responses("gpt-5-mini")
    response, _ = await replay_generate(path, llmroute.request(model, prompt="x"))
    usage = response.usage
    assert usage is not None and usage.web_search_requests == actions.count("search") < len(actions)
    assert response.cost is not None and response.cost.tools == actions.count("search") * Decimal(10) / 1000


@pytest.mark.anyio
@pytest.mark.parametrize(
    "path",
    [
        "vercel-ai/openai/responses/openai-file-search-tool.1.chunks.yaml",
        "vercel-ai/openai/responses/openai-file-search-tool.2.json.yaml",
    ],
)
async def test_openai_file_search_calls_are_charged(path: str) -> None:
    model = openai.configure("sk-test").responses("gpt-5-mini")
    request = llmroute.request(
        model, prompt="x", generation=llmroute.GenerationOptions(stream="chunks" in path)
    )
    response, _ = await replay_generate(path, request)
    assert response.usage is not None and response.usage.tool_calls == {"file_search": 1}
    assert response.cost is not None and response.cost.tools == Decimal("2.5") / 1000  # $2.50 / 1k calls


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "searches", "calls", "fee"),
    [
        ("vercel-ai/xai/responses/xai-x-search-tool.1.json.yaml", None, {"x_search": 1}, "0.005"),
        ("vercel-ai/xai/responses/xai-web-search-tool.1.json.yaml", 1, None, "0.005"),
        ("vercel-ai/xai/responses/xai-file-search-tool.1.json.yaml", None, {"file_search": 1}, "0.0025"),
        ("vercel-ai/xai/responses/xai-code-execution-tool.1.json.yaml", None, {"code_execution": 1}, "0.005"),
        # the stream's usage has xAI's own billed count: one x_search (its 4 web_search_call items are not)
        ("vercel-ai/xai/responses/xai-x-search-tool.chunks.yaml", None, {"x_search": 1}, "0.005"),
    ],
)
async def test_xai_server_side_tools_are_counted_and_priced(
    path: str, searches: int | None, calls: dict[str, int] | None, fee: str
) -> None:
    # docs.x.ai "Tools Pricing": web search, X search, code execution $5 / 1k calls; collections $2.50
    model = xai.configure("xai-test").responses("grok-4-fast-reasoning")
    request = llmroute.request(
        model, prompt="x", generation=llmroute.GenerationOptions(stream="chunks" in path)
    )
    response, _ = await replay_generate(path, request)
    usage = response.usage
    assert usage is not None and usage.web_search_requests == searches and usage.tool_calls == calls
    cost = response.cost  # was None for an x_search answer: the fee was unknown
    assert cost is not None and cost.tools == Decimal(fee)


def test_a_hosted_call_without_a_published_fee_leaves_the_cost_unknown() -> None:
    usage = llmroute.Usage(input_tokens=10, output_tokens=1, tool_calls={"mcp": 1})
    assert catalog.cost("xai", "grok-4-fast-reasoning", usage) is None
    assert catalog.cost_reason("xai", "grok-4-fast-reasoning", usage) == (
        "the catalog has no price for hosted mcp calls on this model"
    )
