"""What the catalog knows about one model: limits, capabilities, dates and prices."""

from __future__ import annotations

from decimal import Decimal

import msgspec

__all__ = ["ModelInfo", "PriceTier", "Prices"]


class PriceTier(msgspec.Struct, frozen=True):
    """Prices that replace the base ones when a request's input exceeds ``above`` tokens. The whole
    request is priced at the tier (Gemini 2.5 Pro over 200k input tokens), not only the excess."""

    above: int
    """The threshold in input tokens (exclusive: ``input_tokens > above`` selects the tier)."""
    input: Decimal | None = None
    """USD per million non-cached input tokens in this tier (``None``: the base price)."""
    output: Decimal | None = None
    """USD per million output tokens in this tier."""
    cache_read: Decimal | None = None
    """USD per million cache-read tokens in this tier."""
    cache_write: Decimal | None = None
    """USD per million 5-minute cache-write tokens in this tier."""
    cache_write_1h: Decimal | None = None
    """USD per million 1-hour cache-write tokens in this tier."""


class Prices(msgspec.Struct, frozen=True):
    """Published prices in USD. Token prices are per million tokens; ``None`` is unknown, never free.

    A price that is unknown for a part falls back the way providers bill it: cache reads and writes
    to ``input`` (OpenAI bills cache writes as ordinary input), 1-hour cache writes to
    ``cache_write``, reasoning to ``output``.
    """

    input: Decimal | None = None
    """Non-cached input tokens."""
    output: Decimal | None = None
    """Output tokens (reasoning included unless ``reasoning`` is set)."""
    cache_read: Decimal | None = None
    """Input tokens read from the prompt cache."""
    cache_write: Decimal | None = None
    """Input tokens written to the prompt cache (Anthropic: the 5-minute TTL)."""
    cache_write_1h: Decimal | None = None
    """Input tokens written to the prompt cache with a 1-hour TTL (Anthropic)."""
    reasoning: Decimal | None = None
    """Reasoning tokens, where a provider prices them apart from output (rare)."""
    web_search: Decimal | None = None
    """Per 1,000 hosted web search requests (or grounded prompts, with ``web_search_per_prompt``)."""
    tiers: tuple[PriceTier, ...] = ()
    """Long-context tiers, lowest threshold first."""
    input_audio: Decimal | None = None
    """Non-cached audio input tokens (``None``: billed as ``input``)."""
    cache_read_audio: Decimal | None = None
    """Audio input tokens read from the cache (``None``: billed as ``cache_read``)."""
    input_image: Decimal | None = None
    """Image input tokens (``None``: billed as ``input``)."""
    output_audio: Decimal | None = None
    """Audio output tokens (``None``: billed as ``output``)."""
    output_image: Decimal | None = None
    """Image output tokens (``None``: billed as ``output``)."""
    tool_calls: dict[str, Decimal] = {}
    """Per 1,000 calls of other hosted tools, by ``Usage.tool_calls`` kind (``file_search``,
    ``x_search``, ``code_execution``); a kind missing here is unknown, never free."""
    web_search_per_prompt: bool = False
    """``web_search`` is charged once per call that searched, whatever the number of queries (Gemini
    1.x and 2.x Grounding with Google Search: per grounded prompt; Gemini 3 bills per query)."""


class ModelInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One model as the catalog knows it. Fields are ``None`` where the sources do not say."""

    provider: str
    """The llmroute provider name (``"openai"``, ``"bedrock"``, ...)."""
    id: str
    """The model id as the provider's API takes it."""
    name: str | None = None
    """A human-readable name (``"Claude Sonnet 4.5"``)."""
    context_window: int | None = None
    """Tokens the model attends to: input plus output."""
    max_input_tokens: int | None = None
    """Input limit where the provider states one apart from the context window."""
    max_output_tokens: int | None = None
    """The most output tokens one call may produce."""
    input_modalities: tuple[str, ...] = ()
    """``"text"``, ``"image"``, ``"audio"``, ``"video"``, ``"pdf"``."""
    output_modalities: tuple[str, ...] = ()
    """``"text"``, ``"image"``, ``"audio"``, ``"video"``."""
    tools: bool | None = None
    """Function calling."""
    structured_output: bool | None = None
    """Native JSON-schema output."""
    reasoning: bool | None = None
    """Thinking / reasoning tokens."""
    attachments: bool | None = None
    """File and image inputs."""
    temperature: bool | None = None
    """Accepts a sampling temperature."""
    web_search: bool | None = None
    """A hosted web search tool with a published price."""
    prompt_caching: bool | None = None
    """A discounted price for cached input."""
    open_weights: bool | None = None
    """The weights are published."""
    knowledge_cutoff: str | None = None
    """Training data cutoff, ``YYYY-MM`` or ``YYYY-MM-DD``."""
    release_date: str | None = None
    """``YYYY-MM-DD``."""
    last_updated: str | None = None
    """``YYYY-MM-DD``."""
    deprecated: bool | None = None
    """The provider marks the model deprecated (still callable; retirement comes next)."""
    status: str | None = None
    """``"alpha"``, ``"beta"``, ``"deprecated"`` or ``None`` (generally available)."""
    prices: Prices | None = None
    """Today's standard prices (``catalog.cost`` also applies service tiers and the request date)."""
    sources: tuple[str, ...] = ()
    """Where each part came from: ``"models.dev:anthropic/claude-sonnet-4-5"``,
    ``"genai-prices:anthropic/claude-sonnet-4-5"``, ``"user"``."""
