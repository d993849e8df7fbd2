"""``Usage`` from the OpenAI-shaped usage objects (Chat Completions and Responses, and the servers
that copy them), with what they say about billing: a provider-reported cost (OpenRouter ``cost``,
xAI ``cost_in_usd_ticks``) and the service tier that served the call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ..schema.cost import reported_cost
from ..schema.usage import Usage
from ..schema.usage_read import usage_count, usage_from_cached, usage_section, with_modalities

__all__ = ["chat_usage", "responses_usage", "with_billing"]

_RESPONSES = "openai-responses"  # ``openai_responses.NAME`` (that module imports this one)


def _int(value: Any) -> int | None:
    return value if type(value) is int else None  # a bool is not a count


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def with_billing(usage: Usage, raw: dict[str, Any], service_tier: str | None) -> Usage:
    """``usage`` with the cost the provider reported in ``raw`` and the tier the response named."""
    cost = reported_cost(raw)
    if cost is None and service_tier is None:
        return usage
    return msgspec.structs.replace(usage, reported_cost=cost, service_tier=service_tier)


def _output_tokens(
    prompt: int | None, completion: int | None, reasoning: int | None, total: Any, has_reasoning: bool | None
) -> int | None:
    """Inclusive output: reasoning added when the server counts it apart from ``completion_tokens``
    (``has_reasoning``: ``ChatQuirks.completion_has_reasoning``; ``None`` decides from ``total``)."""
    if completion is None or not reasoning:
        return completion
    apart = has_reasoning is False
    if has_reasoning is None and isinstance(total, int) and prompt is not None:
        apart = prompt + completion + reasoning == total != prompt + completion
    return completion + reasoning if apart else completion


def chat_usage(raw: dict[str, Any], has_reasoning: bool | None, service_tier: str | None = None) -> Usage:
    """A Chat Completions ``usage`` object."""
    details = _obj(raw.get("prompt_tokens_details"))
    cached = _int(details.get("cached_tokens"))
    if cached is None:
        cached = _int(raw.get("prompt_cache_hit_tokens"))  # DeepSeek
    # OpenRouter: ``server_tool_use`` (plugin) or ``server_tool_use_details`` (server tool).
    server = _obj(raw.get("server_tool_use") or raw.get("server_tool_use_details"))
    prompt = _int(raw.get("prompt_tokens"))
    reasoning = _int(_obj(raw.get("completion_tokens_details")).get("reasoning_tokens"))
    completion = _int(raw.get("completion_tokens"))
    usage = usage_from_cached(
        input_tokens=prompt,
        output_tokens=_output_tokens(prompt, completion, reasoning, raw.get("total_tokens"), has_reasoning),
        cache_read=cached,
        cache_write=_int(details.get("cache_write_tokens")),
        reasoning=reasoning,
        web_search_requests=_int(server.get("web_search_requests")),
        raw=raw,
    )
    usage = _modalities(usage, details, _obj(raw.get("completion_tokens_details")), _int)
    return with_billing(usage, raw, service_tier)


def responses_usage(
    raw: dict[str, Any], searches: int, service_tier: str | None = None, calls: dict[str, int] | None = None
) -> Usage:
    """A Responses ``usage`` object (``searches``: the billed web_search calls the stream showed;
    ``calls``: the other hosted calls billed per call, by ``Usage.tool_calls`` kind)."""
    details = usage_section(raw, "input_tokens_details", _RESPONSES)
    out_details = usage_section(raw, "output_tokens_details", _RESPONSES)
    billed = usage_section(raw, "server_side_tool_usage_details", _RESPONSES)
    if billed:  # xAI's own count of the billed (successful) server-side calls: it decides
        searches, calls = _xai_billed(billed)
    usage = usage_from_cached(
        input_tokens=usage_count(raw, "input_tokens", _RESPONSES),
        output_tokens=usage_count(raw, "output_tokens", _RESPONSES),
        cache_read=usage_count(details, "cached_tokens", _RESPONSES),
        cache_write=usage_count(details, "cache_write_tokens", _RESPONSES),
        reasoning=usage_count(out_details, "reasoning_tokens", _RESPONSES),
        web_search_requests=searches or None,
        raw=raw,
    )
    if calls:
        usage = msgspec.structs.replace(usage, tool_calls=dict(calls))
    usage = _modalities(usage, details, out_details, _counted)
    return with_billing(usage, raw, service_tier)  # xAI's Responses API reports cost_in_usd_ticks


# xAI ``usage.server_side_tool_usage_details`` keys -> ``Usage.tool_calls`` kinds (docs.x.ai "Tools
# Pricing"); ``web_search_calls`` is ``web_search_requests``.
_XAI_BILLED = {
    "x_search_calls": "x_search",
    "code_interpreter_calls": "code_execution",
    "file_search_calls": "file_search",
    "document_search_calls": "document_search",
    "mcp_calls": "mcp",
    "image_generation_calls": "image_generation",
}


def _xai_billed(billed: Mapping[str, Any]) -> tuple[int, dict[str, int]]:
    calls: dict[str, int] = {}
    for key, value in billed.items():
        count = _counted(value) or 0
        if count and key != "web_search_calls":
            kind = _XAI_BILLED.get(key, key.removesuffix("_calls"))
            calls[kind] = calls.get(kind, 0) + count
    return _counted(billed.get("web_search_calls")) or 0, calls


def _counted(value: Any) -> int | None:
    """A Responses detail counter: absent or an int (anything else is malformed output, named)."""
    return usage_count({"count": value}, "count", _RESPONSES)


def _modalities(
    usage: Usage,
    details: Mapping[str, Any],
    out_details: Mapping[str, Any],
    count: Callable[[Any], int | None],
) -> Usage:
    """The audio and image parts of the ``*_tokens_details`` objects (gpt-audio, gpt-realtime,
    gpt-image, OpenRouter's image models), cached audio from ``cached_tokens_details``."""
    cached = details.get("cached_tokens_details")
    return with_modalities(
        usage,
        input_audio=count(details.get("audio_tokens")),
        cache_read_audio=count(cached.get("audio_tokens")) if isinstance(cached, dict) else None,  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        input_image=count(details.get("image_tokens")),
        output_audio=count(out_details.get("audio_tokens")),
        output_image=count(out_details.get("image_tokens")),
    )
