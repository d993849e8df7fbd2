"""What the prompt cache did: ``CacheStats`` (reads and writes as shares of the input) and
``CacheMiss`` (why a call that should have read the cache did not, as a ``Router`` with affinity
explains it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Protocol

import msgspec

from .usage import Usage

__all__ = ["CacheMiss", "CacheStats", "MissReason", "cache_stats", "ttl_seconds"]

MissReason = Literal["changed", "ttl", "target", "provider"]

# how long each ``CachePolicy.ttl`` keeps a prefix; ``None`` is the providers' default (Anthropic's
# five minutes, OpenAI's in-memory 5 to 10 idle minutes, OpenRouter's 10-minute sticky sessions)
_TTL_SECONDS = {None: 300.0, "5m": 300.0, "1h": 3600.0, "24h": 86400.0}


def ttl_seconds(ttl: str | None) -> float:
    """Seconds a cached prefix lives for a ``CachePolicy.ttl`` value (``None``: five minutes)."""
    return _TTL_SECONDS.get(ttl, 300.0)


class CacheStats(msgspec.Struct, frozen=True):
    """Input tokens and what the prompt cache did with them, over one call or many.

    ``input_tokens`` is the inclusive total (``Usage.input_tokens``: uncached input, cache reads and
    cache writes), so a provider that reports its reads apart from its input (Anthropic) is not
    counted twice."""

    input_tokens: int = 0
    """All input tokens of the calls that reported usage."""
    cache_read_tokens: int = 0
    """Of those, read from the cache."""
    cache_write_tokens: int = 0
    """Of those, written to the cache."""
    calls: int = 0
    """Calls counted (steps that reported input tokens)."""

    @property
    def hit_ratio(self) -> float | None:
        """Cache reads over all input (``None`` without input)."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else None

    @property
    def write_ratio(self) -> float | None:
        """Cache writes over all input (``None`` without input)."""
        return self.cache_write_tokens / self.input_tokens if self.input_tokens else None

    def add(self, usage: Usage | None) -> CacheStats:
        """These counts with one more call's usage (unchanged when it reported no input)."""
        if usage is None or not usage.input_tokens:
            return self
        return CacheStats(
            self.input_tokens + usage.input_tokens,
            self.cache_read_tokens + (usage.cache_read_tokens or 0),
            self.cache_write_tokens + (usage.cache_write_tokens or 0),
            self.calls + 1,
        )

    def __add__(self, other: CacheStats) -> CacheStats:
        return CacheStats(
            self.input_tokens + other.input_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.calls + other.calls,
        )


class _HasCache(Protocol):
    @property
    def cache(self) -> CacheStats: ...


def cache_stats(responses: Iterable[_HasCache]) -> CacheStats:
    """The cache over a sequence of responses (a session): their ``.cache`` summed."""
    total = CacheStats()
    for response in responses:
        total = total + response.cache
    return total


class CacheMiss(msgspec.Struct, frozen=True, omit_defaults=True):
    """Why a call in a session read less from the prompt cache than the session's previous call
    left there (``StepFinish.cache_miss``, ``LLMResponse.cache_miss``; a ``Router`` with affinity
    works it out from hashes of the request's regions: no prompt is kept).

    ``reason``: ``"ttl"`` (longer idle than the cache lives), ``"target"`` (the call went to
    another target than the one holding the prefix), ``"changed"`` (``region`` of the request is
    not what it was: the cache holds only what comes before it) or ``"provider"`` (the prefix
    was the same and the provider read less anyway: an eviction, or its own routing)."""

    reason: MissReason
    """The cause, by the first of these that holds: ttl, target, changed, provider."""
    message: str
    """The cause in a sentence."""
    region: str | None = None
    """``"changed"``: the first region that differs, by its path in the request: ``tools``,
    ``system[0]``, ``messages[3]``."""
    expected: int = 0
    """Tokens the cache held for the session after its previous call (read + written then)."""
    read: int = 0
    """Tokens this call read from it."""
    idle: float = 0.0
    """Seconds since the session's previous call."""
    previous_target: str | None = None
    """The target that served the session's previous call."""
    target: str | None = None
    """The target that served this one."""
