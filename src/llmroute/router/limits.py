"""What a router learns before sending: rate-limit headers, and an estimate of a request's tokens.

Rate limits are read from every response (success or not): OpenAI's ``x-ratelimit-remaining-*`` /
``x-ratelimit-reset-*`` (durations like ``6m0s``), Anthropic's ``anthropic-ratelimit-*-remaining`` /
``-reset`` (RFC 3339 times), and ``retry-after-ms`` / ``Retry-After`` on a 429 or 503. No requests
(or tokens) left means the target is skipped until the reset; few tokens left means a request
estimated larger than what is left goes elsewhere.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Mapping
from typing import Any, cast

import msgspec

from ..route.classify import parse_retry_after
from ..schema.content import MediaPart, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ..schema.request import LLMRequest

__all__ = ["DEFAULT_RESET", "TOKENS_WATCHED", "RateLimits", "estimate_tokens", "read_limits"]

DEFAULT_RESET = 1.0  # seconds to stay away when a limit hit 0 and no reset time was given
TOKENS_WATCHED = 32_000  # remaining tokens below this are remembered (to route big requests away)
_MEDIA_TOKENS = 1_000  # an image or document, roughly
_DURATION = re.compile(
    r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?"
)
_encoder = msgspec.json.Encoder()


class RateLimits(msgspec.Struct, frozen=True):
    """What a provider's rate-limit headers say is left."""

    blocked_for: float | None = None
    """Seconds with nothing left: skip the target that long."""
    tokens: int | None = None
    """Tokens left."""
    tokens_for: float = DEFAULT_RESET
    """Seconds ``tokens`` stays true (until the provider's reset)."""


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def _reset(value: str | None, now: float) -> float | None:
    """Seconds from an OpenAI duration (``1s``, ``6m0s``, ``20ms``), a bare number, or an
    Anthropic RFC 3339 time."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    match = _DURATION.fullmatch(value)
    if match and any(match.groups()):
        h, m, s, ms = (float(g) if g else 0.0 for g in match.groups())
        return h * 3600 + m * 60 + s + ms / 1000
    try:
        at = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    return max(0.0, at.timestamp() - now)


_PREFIXES = (b"x-ratelimit-", b"anthropic-ratelimit-", b"retry-after")


def _relevant(headers: Mapping[str, str]) -> dict[str, str]:
    """The rate-limit headers only, lower-cased, in one pass (httpx's ``get`` scans every header
    and raises on a miss: five of them cost more than the rest of the router)."""
    raw: Any = getattr(headers, "raw", None)
    if raw is None:
        return {k.lower(): v for k, v in headers.items() if k.lower().encode().startswith(_PREFIXES)}
    out: dict[str, str] = {}
    for key, value in cast(list[tuple[bytes, bytes]], raw):
        lower = key.lower()
        if lower.startswith(_PREFIXES):
            out[lower.decode("latin-1")] = value.decode("latin-1")
    return out


def read_limits(status: int, headers: Mapping[str, str]) -> RateLimits | None:
    """What the response's headers say about this target's limits; ``None`` when nothing to act on."""
    relevant = _relevant(headers)
    if not relevant:
        return None
    get = relevant.get
    requests = _int(get("x-ratelimit-remaining-requests") or get("anthropic-ratelimit-requests-remaining"))
    tokens = _int(
        get("x-ratelimit-remaining-tokens")
        or get("anthropic-ratelimit-input-tokens-remaining")
        or get("anthropic-ratelimit-tokens-remaining")
    )
    limited = status in (429, 503, 529)
    if requests is None and tokens is None and not limited:
        return None
    now = time.time()
    if limited:
        wait = parse_retry_after(relevant)
        if wait is not None and wait > 0:
            return RateLimits(blocked_for=wait)
    if requests is not None and requests <= 0:
        reset = _reset(get("x-ratelimit-reset-requests") or get("anthropic-ratelimit-requests-reset"), now)
        return RateLimits(blocked_for=reset or DEFAULT_RESET)
    if tokens is not None and tokens < TOKENS_WATCHED:
        reset = _reset(
            get("x-ratelimit-reset-tokens")
            or get("anthropic-ratelimit-input-tokens-reset")
            or get("anthropic-ratelimit-tokens-reset"),
            now,
        )
        if tokens <= 0:
            return RateLimits(blocked_for=reset or DEFAULT_RESET)
        return RateLimits(tokens=tokens, tokens_for=reset or DEFAULT_RESET)
    return None


def _text_tokens(text: str) -> int:
    return (len(text.encode()) + 3) // 4


def _json_tokens(value: object) -> int:
    if isinstance(value, str):
        return _text_tokens(value)
    try:
        return (len(_encoder.encode(value)) + 3) // 4
    except (TypeError, ValueError):  # a value JSON cannot hold: it will not be sent as JSON either
        return _MEDIA_TOKENS


def estimate_tokens(request: LLMRequest) -> int:
    """A rough count of the tokens ``request`` needs: input text at ~4 UTF-8 bytes a token, tool
    schemas and structured values by their JSON, ~1,000 per media part, plus ``max_tokens`` when
    set (a provider checks input and output against the window). For routing, not billing."""
    total = 0
    for part in request.system:
        total += _text_tokens(part.text)
    for message in request.messages:
        for part in message.content:
            if isinstance(part, TextPart | ReasoningPart):
                total += _text_tokens(part.text)
            elif isinstance(part, MediaPart):
                total += _MEDIA_TOKENS
            elif isinstance(part, ToolCallPart | ToolResultPart):
                total += _json_tokens(part.input if isinstance(part, ToolCallPart) else part.result)
        total += 4  # role and separators
    if request.tools:
        total += (len(_encoder.encode(request.tools)) + 3) // 4
    generation = request.generation
    if generation is not None and generation.max_tokens:
        total += generation.max_tokens
    return total
