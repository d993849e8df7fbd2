"""What a router learns before sending: rate-limit headers, and an estimate of a request's tokens.

Rate limits are read from every response (success or not): OpenAI's ``x-ratelimit-remaining-*`` /
``x-ratelimit-reset-*`` (durations like ``6m0s``), Anthropic's ``anthropic-ratelimit-*-remaining`` /
``-reset`` (RFC 3339 times), and ``retry-after-ms`` / ``Retry-After`` on a 429 or 503. No requests
(or tokens) left means the target is skipped until the reset. Fewer than ``REQUESTS_WATCHED``
requests left are counted down by every call the router sends after the one that was answered
(``Budget``), so concurrent callers stop at the limit instead of all reading "5 left" and sending
32; fewer than ``TOKENS_WATCHED`` tokens left send a request estimated larger elsewhere.
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

__all__ = [
    "DEFAULT_RESET",
    "REQUESTS_WATCHED",
    "TOKENS_WATCHED",
    "Budget",
    "RateLimits",
    "estimate_tokens",
    "read_limits",
]

DEFAULT_RESET = 1.0  # seconds to stay away when a limit hit 0 and no reset time was given
REQUESTS_WATCHED = 1_000  # remaining requests below this are counted down per call sent
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
    """Tokens left (when fewer than ``TOKENS_WATCHED``)."""
    tokens_for: float = DEFAULT_RESET
    """Seconds ``tokens`` stays true (until the provider's reset)."""
    requests: int | None = None
    """Requests left (when fewer than ``REQUESTS_WATCHED``)."""
    requests_for: float = DEFAULT_RESET
    """Seconds ``requests`` stays true (until the provider's reset)."""


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

    def requests_reset() -> float:
        value = get("x-ratelimit-reset-requests") or get("anthropic-ratelimit-requests-reset")
        return _reset(value, now) or DEFAULT_RESET

    def tokens_reset() -> float:
        value = (
            get("x-ratelimit-reset-tokens")
            or get("anthropic-ratelimit-input-tokens-reset")
            or get("anthropic-ratelimit-tokens-reset")
        )
        return _reset(value, now) or DEFAULT_RESET

    if requests is not None and requests <= 0:
        return RateLimits(blocked_for=requests_reset())
    if tokens is not None and tokens <= 0:
        return RateLimits(blocked_for=tokens_reset())
    watch_requests = requests is not None and requests < REQUESTS_WATCHED
    watch_tokens = tokens is not None and tokens < TOKENS_WATCHED
    if not (watch_requests or watch_tokens):
        return None
    return RateLimits(
        tokens=tokens if watch_tokens else None,
        tokens_for=tokens_reset() if watch_tokens else DEFAULT_RESET,
        requests=requests if watch_requests else None,
        requests_for=requests_reset() if watch_requests else DEFAULT_RESET,
    )


class Budget:
    """A target's remaining requests and tokens as this process counts them down (monotonic time):
    the last reading, less what was sent after the call it answered."""

    __slots__ = ("requests", "requests_until", "sends", "tokens", "tokens_until")

    def __init__(self) -> None:
        self.sends = 0  # requests sent to the target by this process, ever
        self.requests: float | None = None
        self.requests_until = 0.0
        self.tokens: float | None = None
        self.tokens_until = 0.0

    def sent(self, tokens: int | None) -> int:
        """A request goes out (``tokens``: its estimate, when tokens are counted); returns its
        sequence number, for ``read``."""
        self.sends += 1
        if self.requests is not None:
            self.requests -= 1
        if self.tokens is not None and tokens is not None:
            self.tokens -= tokens
        return self.sends

    def read(self, limits: RateLimits, seq: int, now: float) -> None:
        """The answer to request number ``seq`` carried ``limits``: what it says is left, less the
        requests sent since (the provider had not seen them yet)."""
        since = self.sends - seq
        self.requests = self.tokens = None  # a reading without them: plenty left
        if limits.requests is not None:
            self.requests = float(limits.requests - since)
            self.requests_until = now + limits.requests_for
        if limits.tokens is not None:
            self.tokens = float(limits.tokens)
            self.tokens_until = now + limits.tokens_for

    def plenty(self) -> None:
        """An answer whose headers leave nothing to watch."""
        self.requests = self.tokens = None

    def counts_tokens(self, now: float) -> bool:
        if self.tokens is not None and now >= self.tokens_until:
            self.tokens = None
        return self.tokens is not None

    def refusal(self, now: float, need: int | None) -> tuple[str, float] | None:
        """Why nothing should be sent now, and until when (monotonic); ``need``: the request's
        estimated tokens (when tokens are counted)."""
        if self.requests is not None:
            if now >= self.requests_until:
                self.requests = None
            elif self.requests <= 0:
                return (
                    "rate-limited (its remaining requests are taken by calls in flight)",
                    self.requests_until,
                )
        if need is not None and self.counts_tokens(now) and self.tokens is not None and need > self.tokens:
            return f"rate-limited ({max(0, int(self.tokens))} tokens left, ~{need} needed)", self.tokens_until
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
