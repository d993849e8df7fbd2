"""Generation options, cache policy and raw HTTP overlays."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["CachePolicy", "GenerationOptions", "HttpOverlay", "merge_generation"]


class GenerationOptions(msgspec.Struct, frozen=True, omit_defaults=True):
    """Sampling and length options. ``None`` means "not set": the next layer down decides.

    ``stream=False`` sends the provider's non-streaming request (``:generateContent``,
    ``stream: false``, Converse without ``-stream``, ...) and decodes the whole JSON body into the
    same events a stream would give; ``None`` (the default) and ``True`` stream."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    stream: bool | None = None


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
    """Prompt-cache breakpoints for protocols with explicit caching (Anthropic, Bedrock).

    Breakpoints are placed tools -> system -> the last ``messages`` messages, at most four in all.
    """

    tools: bool = True
    system: bool = True
    messages: int = 2
    ttl: Literal["5m", "1h"] | None = None


class HttpOverlay(msgspec.Struct, frozen=True, omit_defaults=True):
    """Extra headers, query parameters and top-level body keys added to the prepared request.

    Overlays may add keys but never overwrite one the protocol owns; trying is an ``InvalidRequestError``.
    """

    headers: dict[str, str] | None = None
    query: dict[str, str] | None = None
    body: dict[str, Any] | None = None
