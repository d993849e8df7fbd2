"""Every recording that carries a provider-reported cost: ``response.cost`` is that figure exactly
(``source="provider"``), and the catalog's own computation for the same usage agrees within 2%
wherever the catalog knows the model and the usage says everything that was billed."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import llmroute
from llmroute import catalog
from llmroute.providers import openrouter, xai
from llmroute.testing import Cassette
from tests.helpers import load, replay_generate

# (cassette, interaction, the cost in the recorded usage, what the catalog's computation is checked against)
# "agrees": the catalog's cost of the same usage is within 2% of the provider's.
# "tokens": OpenRouter's web plugin bills search results the usage does not count; the catalog's
#   price of the tokens agrees with ``cost_details`` (prompt + completions) within 2% and its cost of
#   the whole call is None (a fee it cannot price), never a guess.
# "synthetic": vercel-ai's hand-written fixture (round token counts, 123456 ticks, an image
#   generation call the usage does not price): no real bill to agree with.
CASES: list[tuple[str, int, str, str]] = [
    ("vercel-ai/xai/xai-text.chunks.yaml", 0, "1466250 ticks", "agrees"),
    ("vercel-ai/xai/xai-text.json.yaml", 0, "1176500 ticks", "agrees"),
    ("vercel-ai/xai/xai-tool-call.chunks.yaml", 0, "1330500 ticks", "agrees"),
    ("vercel-ai/xai/xai-tool-call.json.yaml", 0, "1399000 ticks", "agrees"),
    ("vercel-ai/openai-compatible/chat/xai-text.chunks.yaml", 0, "1721250 ticks", "agrees"),
    ("vercel-ai/openai-compatible/chat/xai-text.json.yaml", 0, "1641500 ticks", "agrees"),
    ("vercel-ai/openai-compatible/chat/xai-tool-call.chunks.yaml", 0, "1497500 ticks", "agrees"),
    ("vercel-ai/openai-compatible/chat/xai-tool-call.json.yaml", 0, "1777000 ticks", "agrees"),
    ("vercel-ai/xai/responses/xai-image-generation-tool.1.chunks.yaml", 0, "123456 ticks", "synthetic"),
    ("vercel-ai/xai/responses/xai-image-generation-tool.1.json.yaml", 0, "123456 ticks", "synthetic"),
    ("opencode/openai-compatible-chat/xai-streams-text.yaml", 0, "1484000 ticks", "agrees"),
    ("opencode/openai-compatible-chat/xai-grok-4-3-drives-a-tool-loop.yaml", 0, "7606000 ticks", "agrees"),
    ("opencode/openai-compatible-chat/xai-grok-4-3-drives-a-tool-loop.yaml", 1, "6859000 ticks", "agrees"),
    ("opencode/openai-compatible-chat/openrouter-streams-text.yaml", 0, "0.00000495", "agrees"),
    ("opencode/openai-compatible-chat/openrouter-streams-tool-call.yaml", 0, "0.00001305", "agrees"),
    (
        "opencode/openai-compatible-chat/openrouter-gpt-4o-mini-drives-a-tool-loop.yaml",
        0,
        "0.0000183",
        "agrees",
    ),
    (
        "opencode/openai-compatible-chat/openrouter-gpt-4o-mini-drives-a-tool-loop.yaml",
        1,
        "0.0000237",
        "agrees",
    ),
    (
        "opencode/openai-compatible-chat/openrouter-claude-opus-4-7-drives-a-tool-loop.yaml",
        0,
        "0.00566",
        "agrees",
    ),
    (
        "opencode/openai-compatible-chat/openrouter-claude-opus-4-7-drives-a-tool-loop.yaml",
        1,
        "0.00497",
        "agrees",
    ),
    ("opencode/openai-compatible-chat/openrouter-gpt-5-5-drives-a-tool-loop.yaml", 0, "0.000885", "agrees"),
    ("opencode/openai-compatible-chat/openrouter-gpt-5-5-drives-a-tool-loop.yaml", 1, "0.0009", "agrees"),
    ("pydantic-ai/test_openrouter/test_openrouter_stream_with_reasoning.yaml", 0, "0.00085", "agrees"),
    ("pydantic-ai/test_openrouter/test_openrouter_streaming_reasoning.yaml", 0, "0.000669", "agrees"),
    (
        "pydantic-ai/test_openrouter/test_openrouter_web_search_tool_usage_stream.yaml",
        0,
        "0.0133176",
        "tokens",
    ),
    ("pydantic-ai/test_openrouter/test_openrouter_web_search_annotations.yaml", 0, "0.007637029", "tokens"),
    (
        "pydantic-ai/test_openrouter/test_openrouter_web_search_annotations_stream.yaml",
        0,
        "0.0076509169000000005",
        "tokens",
    ),
]


def _model(url: str, model_id: str) -> llmroute.Model:
    facade = xai.configure("test-key") if "api.x.ai" in url else openrouter.configure("test-key")
    return facade.responses(model_id) if url.endswith("/responses") else facade.chat(model_id)


def _expected(text: str) -> Decimal:
    if text.endswith(" ticks"):
        return int(text.removesuffix(" ticks")) * Decimal("1e-10")  # xAI: 10^-10 USD a tick
    return Decimal(text)


def _within_2_percent(ours: Decimal, theirs: Decimal) -> bool:
    return abs(ours - theirs) <= theirs * Decimal("0.02")


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "index", "reported", "check"), CASES)
async def test_response_cost_is_the_reported_cost(path: str, index: int, reported: str, check: str) -> None:
    interaction = load(path).interactions[index]
    body: dict[str, Any] = interaction.request.json()
    model = _model(str(interaction.request.url), body["model"])
    request = llmroute.request(
        model, prompt="x", generation=llmroute.GenerationOptions(stream=bool(body.get("stream")))
    )
    response, _ = await replay_generate(Cassette([interaction]), request)
    cost = response.cost
    assert cost is not None and cost.source == "provider"
    assert cost.total == _expected(reported)
    assert response.steps[-1].cost == cost

    usage = response.usage
    assert usage is not None and usage.reported_cost == _expected(reported)
    ours = catalog.catalog_cost(model.provider, model.id, usage)
    if check == "agrees":
        assert ours is not None and _within_2_percent(ours.total, cost.total), (ours, cost)
    elif check == "tokens":
        assert ours is None  # the plugin's per-result fee is not in the usage
        raw = usage.provider_metadata or {}
        details = raw["cost_details"]
        billed = Decimal(str(details["upstream_inference_prompt_cost"])) + Decimal(
            str(details["upstream_inference_completions_cost"])
        )
        tokens_only = llmroute.Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            reasoning_tokens=usage.reasoning_tokens,
        )
        priced = catalog.catalog_cost(model.provider, model.id, tokens_only)
        assert priced is not None and _within_2_percent(priced.total, billed), (priced, billed)
    else:
        assert check == "synthetic"


@pytest.mark.anyio
async def test_tool_loop_cost_sums_the_reported_costs() -> None:
    cassette = load("opencode/openai-compatible-chat/xai-grok-4-3-drives-a-tool-loop.yaml")
    body = cassette.interactions[0].request.json()
    weather = llmroute.tool(lambda city: f"Sunny in {city}", name="get_weather", description="Weather")
    request = llmroute.request(xai.configure("test-key").chat(body["model"]), prompt="weather in Paris?")
    response, _ = await replay_generate(cassette, request, tools=[weather])
    assert [s.cost.total if s.cost else None for s in response.steps] == [
        Decimal("0.0007606"),
        Decimal("0.0006859"),
    ]
    assert response.cost is not None
    assert response.cost.total == Decimal("0.0014465") and response.cost.source == "provider"
