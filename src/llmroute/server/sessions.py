"""The gateway's prompt caching: which session a client's request belongs to, the cache policy for
clients that send none (``cache`` in the config), the routes' affinity (``virtualrouter.affinity``),
and what the cache did with each request (the access log's shares, the metrics' hit ratio)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

from ..router import Affinity
from ..schema.cache import CacheMiss
from ..schema.events import StepFinish, StepStart
from ..schema.options import CachePolicy
from ..schema.request import LLMRequest
from ..schema.response import LLMResponse
from ..schema.usage import Usage

__all__ = ["SESSION_HEADERS", "AffinityEntry", "CacheEntry", "CacheSeen", "with_session"]

# the headers coding agents and clients name their session with, in the order they are read
SESSION_HEADERS = ("x-claude-code-session-id", "x-session-id")


class CacheEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """``cache``: the ``CachePolicy`` a request gets when its client sent none (Codex, plain
    OpenAI clients: they send no breakpoints); the same fields and defaults."""

    tools: bool = True
    """A breakpoint after the tool definitions."""
    system: bool = True
    """A breakpoint after the system prompt."""
    messages: int = 2
    """Breakpoints on the last this many messages."""
    ttl: Literal["5m", "1h", "24h"] | None = None
    """How long the cached prefix lives (and a session's pin)."""
    explicit: bool = False
    """Create explicit caches where the provider caches implicitly (Gemini)."""

    def policy(self) -> CachePolicy:
        return CachePolicy(self.tools, self.system, self.messages, self.ttl, explicit=self.explicit)


class AffinityEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """``virtualrouter.affinity`` as an object (``true``, the default, is these defaults;
    ``false`` turns it off): ``llmroute.router.Affinity``."""

    prefix: bool = True
    """A request with no session is named by its stable prefix (system, tools, first message)."""
    ttl: float | None = None
    """Seconds a pin lives after the session's last call (default: the request's cache ttl, else 300)."""
    explain: bool = True
    """Name the cause of a cache miss on the access log (``cache_miss``)."""

    def affinity(self) -> Affinity:
        return Affinity(self.prefix, self.ttl, self.explain)


def with_session(request: LLMRequest, headers: Mapping[str, str], default: CachePolicy | None) -> LLMRequest:
    """``request`` with its session (``X-Claude-Code-Session-Id``, ``x-session-id``; else what
    its body named: ``prompt_cache_key``, ``user``) and, when the client sent none, the
    gateway's cache policy."""
    session = request.session
    if session is None:
        session = next((headers[h] for h in SESSION_HEADERS if headers.get(h)), None)
    cache = request.cache if request.cache is not None else default
    if session is None and cache is not None and cache.key is not None:
        session = cache.key
    if session is None:
        user = getattr(request, "user", None)  # OpenAI's ``user``, where the dialect keeps it
        session = user if isinstance(user, str) and user else None
    if session == request.session and cache is request.cache:
        return request
    return msgspec.structs.replace(request, session=session, cache=cache)


class CacheSeen:
    """What the prompt cache did over one request's steps: tokens in, read, written; the first
    miss a router explained; the pinned target a session left; the route target that answered."""

    __slots__ = ("input", "miss", "moved", "read", "target", "write")

    def __init__(self) -> None:
        self.target: str | None = None  # through a route: the name of the target that answered
        self.input = 0
        self.read = 0
        self.write = 0
        self.miss: CacheMiss | None = None
        self.moved: str | None = None

    def saw(self, event: object) -> None:
        """One event of the answer (only step starts and finishes are read)."""
        if isinstance(event, StepFinish):
            self.used(event.usage)
            if self.miss is None and event.cache_miss is not None:
                self.miss = event.cache_miss
        elif isinstance(event, StepStart) and self.moved is None:
            self.moved = next((a.target for a in event.attempts if a.pinned), None)

    def answered(self, response: LLMResponse) -> None:
        """A whole answer: its steps' usage, its first miss, the pinned target it left."""
        for step in response.steps:
            self.used(step.usage)
        self.miss = response.cache_miss
        self.moved = next((a.target for a in response.attempts if a.pinned), None)

    def used(self, usage: Usage | None) -> None:
        if usage is not None and usage.input_tokens:
            self.input += usage.input_tokens
            self.read += usage.cache_read_tokens or 0
            self.write += usage.cache_write_tokens or 0

    def fields(self) -> dict[str, object]:
        """The access log's fields (none when no input was reported)."""
        out: dict[str, object] = {}
        if self.target is not None:
            out["route_target"] = self.target
        if self.input:
            out["cache_read_share"] = round(self.read / self.input, 4)
            out["cache_write_share"] = round(self.write / self.input, 4)
        if self.miss is not None:
            out["cache_miss"] = self.miss.reason
            if self.miss.region is not None:
                out["cache_miss_region"] = self.miss.region
        if self.moved is not None:
            out["pin_moved_from"] = self.moved
        return out
