"""Generation options, cache policy and raw HTTP overlays."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["CachePolicy", "GenerationOptions", "HttpOverlay", "merge_generation"]


class GenerationOptions(msgspec.Struct, frozen=True, omit_defaults=True):
    """Sampling and length options. ``None`` means "not set": the next layer down decides
    (``merge_generation``: route, then model, then request)."""

    max_tokens: int | None = None
    """Most tokens the model may generate (output, reasoning included where the provider counts it
    so); protocols that require a value (Anthropic) send their default when unset."""
    temperature: float | None = None
    """Sampling temperature; the provider's range applies (usually 0 to 2, Anthropic 0 to 1)."""
    top_p: float | None = None
    """Nucleus sampling: sample from the smallest token set whose probability reaches this."""
    top_k: int | None = None
    """Sample from the ``top_k`` most likely tokens only; not sent (with a ``RequestWarning``) where
    the provider has no such knob (OpenAI)."""
    frequency_penalty: float | None = None
    """Penalise tokens by how often they already appeared; not sent where unsupported (warned)."""
    presence_penalty: float | None = None
    """Penalise tokens that already appeared at all; not sent where unsupported (warned)."""
    seed: int | None = None
    """Best-effort deterministic sampling; not sent where unsupported (warned)."""
    stop: tuple[str, ...] | None = None
    """Stop sequences: generation ends before any of them; not sent where unsupported (warned)."""
    stream: bool | None = None
    """``False`` sends the provider's non-streaming request (``:generateContent``,
    ``stream: false``, Converse without ``-stream``, ...) and decodes the whole JSON body into the
    same events a stream would give; ``None`` (the default) and ``True`` stream."""


def merge_generation(*layers: GenerationOptions | None) -> GenerationOptions:
    """Per field, the last layer that sets a value wins (route -> model -> request)."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer is None:
            continue
        for name in layer.__struct_fields__:
            value = getattr(layer, name)
            if value is not None:
                merged[name] = value
    return GenerationOptions(**merged)


class CachePolicy(msgspec.Struct, frozen=True, omit_defaults=True):
    """One prompt-cache policy, lowered by every route in its provider's own terms (the table is
    in ``docs/caching.md``); a part a route cannot honour is a ``RequestWarning`` naming it.

    Breakpoints are placed tools -> system -> the last ``messages`` messages, at most four in all,
    where caching is explicit (Anthropic, Bedrock, Vertex, Anthropic and Gemini models through
    OpenRouter); providers that cache repeated prefixes by themselves (OpenAI, Azure, xAI,
    DeepSeek, Gemini's implicit cache) need none. ``ttl`` is how long the prefix should live there.
    """

    tools: bool = True
    """A breakpoint after the tool definitions."""
    system: bool = True
    """A breakpoint after the system prompt."""
    messages: int = 2
    """Breakpoints on the last this many messages (``0``: none)."""
    ttl: Literal["5m", "1h", "24h"] | None = None
    """How long the cached prefix lives (``None``: the provider's default, about five minutes):
    Anthropic and Bedrock breakpoints' ``ttl`` (``24h`` is sent as their longest, ``1h``, with a
    warning), OpenAI and Azure ``prompt_cache_retention: "24h"``, a Gemini explicit cache's ``ttl``.
    A ``Router`` with affinity keeps a session on its target this long after its last call."""
    key: str | None = None
    """Groups requests that share a prefix onto the same cache servers: OpenAI and Azure
    ``prompt_cache_key``, xAI ``prompt_cache_key`` (Responses) or ``x-grok-conv-id`` (Chat),
    OpenRouter ``x-session-id``. Without it, ``LLMRequest.session`` is sent there. Not sent, with a
    warning, where the provider has no such key (Anthropic, Bedrock, Gemini)."""
    explicit: bool = False
    """Where the provider caches implicitly (Gemini), create an explicit cache of the stable
    prefix instead (Gemini ``cachedContents``, billed for storage while it lives: ``ttl``), reuse it
    while the prefix is unchanged, and let it expire. Elsewhere caching is either explicit already
    (Anthropic) or automatic only (OpenAI: warned)."""


class HttpOverlay(msgspec.Struct, frozen=True, omit_defaults=True):
    """Extra headers, query parameters and top-level body keys added to the prepared request.

    Overlays may add keys but never overwrite one the protocol owns; trying is an ``InvalidRequestError``.
    """

    headers: dict[str, str] | None = None
    """Extra request headers."""
    query: dict[str, str] | None = None
    """Extra URL query parameters."""
    body: dict[str, Any] | None = None
    """Extra top-level JSON body keys."""
