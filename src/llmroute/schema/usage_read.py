"""Reading provider usage: token counters checked as they are read.

Apart from ``usage.py`` because a malformed counter is an ``InvalidProviderOutputError``, and the
errors module imports ``Usage`` (an error carries the partial usage): the checks live above both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import msgspec

from .errors import InvalidProviderOutputError
from .usage import Usage

__all__ = [
    "modality_counts",
    "usage_count",
    "usage_from_cached",
    "usage_from_uncached",
    "usage_section",
    "with_modalities",
]


def usage_from_uncached(
    *,
    uncached_input: int | None,
    output_tokens: int | None,
    cache_read: int | None = None,
    cache_write: int | None = None,
    reasoning: int | None = None,
    web_search_requests: int | None = None,
    raw: dict[str, Any] | None = None,
    cache_write_1h: int | None = None,
) -> Usage:
    """Build from an input count that excludes cached tokens (Anthropic / Bedrock accounting)."""
    _counters(
        input_tokens=uncached_input,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        web_search_requests=web_search_requests,
        cache_write_1h_tokens=cache_write_1h,
    )
    parts = [t for t in (uncached_input, cache_read, cache_write) if t is not None]
    return Usage(
        input_tokens=sum(parts) if parts else None,
        output_tokens=output_tokens,
        non_cached_input_tokens=uncached_input,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        web_search_requests=web_search_requests,
        provider_metadata=raw,
        cache_write_1h_tokens=cache_write_1h,
    )


def usage_from_cached(
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read: int | None = None,
    cache_write: int | None = None,
    reasoning: int | None = None,
    web_search_requests: int | None = None,
    raw: dict[str, Any] | None = None,
    cache_write_1h: int | None = None,
) -> Usage:
    """Build from an inclusive input total and its cached parts (OpenAI-style accounting)."""
    _counters(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        web_search_requests=web_search_requests,
        cache_write_1h_tokens=cache_write_1h,
    )
    non_cached = None
    if input_tokens is not None:
        non_cached = input_tokens - (cache_read or 0) - (cache_write or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        non_cached_input_tokens=non_cached,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        web_search_requests=web_search_requests,
        provider_metadata=raw,
        cache_write_1h_tokens=cache_write_1h,
    )


def _malformed(message: str) -> InvalidProviderOutputError:
    return InvalidProviderOutputError(message, code="bad_usage")


def _kind(value: object) -> str:
    return "a bool" if isinstance(value, bool) else f"{type(value).__name__} {value!r:.40}"


def _counters(**values: object) -> None:
    """Provider counters are integers: a string, a bool or an object in their place is malformed
    output, named here (``InvalidProviderOutputError``), never a silent value."""
    for name, value in values.items():
        if value is not None and type(value) is not int:
            raise _malformed(f"usage: {name} is {_kind(value)}, not a token count")


def usage_count(raw: Mapping[str, Any], key: str, where: str) -> int | None:
    """The provider's counter ``raw[key]`` (``None`` when absent or null); anything but an integer
    is an ``InvalidProviderOutputError`` naming ``where`` and the field."""
    value = raw.get(key)
    if value is None or type(value) is int:
        return value
    raise _malformed(f"{where}: usage field {key!r} is {_kind(value)}, not a token count")


def usage_section(raw: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """The provider's nested usage object ``raw[key]`` (empty when absent or null); anything but an
    object is an ``InvalidProviderOutputError`` naming ``where`` and the field."""
    value = raw.get(key)
    if value is None:
        return {}
    if isinstance(value, dict):
        return value  # pyright: ignore[reportUnknownVariableType]
    raise _malformed(f"{where}: usage field {key!r} is {_kind(value)}, not an object")


def with_modalities(
    usage: Usage,
    *,
    input_audio: int | None = None,
    cache_read_audio: int | None = None,
    input_image: int | None = None,
    output_audio: int | None = None,
    output_image: int | None = None,
) -> Usage:
    """``usage`` with the audio and image parts the provider split out (counters checked; a zero
    stays a zero, so "reported none" and "not reported" remain apart)."""
    counts = {
        "input_audio_tokens": input_audio,
        "cache_read_audio_tokens": cache_read_audio,
        "input_image_tokens": input_image,
        "output_audio_tokens": output_audio,
        "output_image_tokens": output_image,
    }
    _counters(**counts)
    present = {k: v for k, v in counts.items() if v is not None}
    return msgspec.structs.replace(usage, **present) if present else usage


def modality_counts(details: object, where: str) -> dict[str, int]:
    """Gemini's ``[{"modality": "AUDIO", "tokenCount": 25}, ...]`` as ``{"AUDIO": 25}`` (a modality
    listed twice is summed; an entry without a count is zero); anything else malformed is named."""
    if details is None:
        return {}
    if not isinstance(details, list):
        raise _malformed(f"{where}: usage details are {_kind(details)}, not a list")
    out: dict[str, int] = {}
    for entry in cast(list[object], details):
        if not isinstance(entry, dict):
            raise _malformed(f"{where}: a usage details entry is {_kind(entry)}, not an object")
        modality = entry.get("modality")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        count = usage_count(entry, "tokenCount", where) or 0  # pyright: ignore[reportUnknownArgumentType]
        if isinstance(modality, str):
            out[modality] = out.get(modality, 0) + count
    return out
