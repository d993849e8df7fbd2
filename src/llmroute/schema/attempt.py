"""``Attempt``: one target a ``Router`` tried before another answered (``LLMResponse.attempts``)."""

from __future__ import annotations

import msgspec

__all__ = ["Attempt"]


class Attempt(msgspec.Struct, frozen=True, omit_defaults=True):
    """A failed or refused try on one router target, or a session's pinned target passed over
    without sending (``error`` ``"Skipped"``). Nothing secret: the message is the typed error's own
    (already redacted) text, capped."""

    target: str
    """The target's name (``Target.name``; by default ``provider:model``)."""
    model: str
    """The model id sent to."""
    provider: str
    """The model's provider."""
    error: str
    """The typed error's class name (``RateLimitError``, ``ContextOverflowError``, ...), or
    ``"Skipped"``: the session's pinned target could not take the call (cooling down, rate-limited,
    at its cap), and the message says why."""
    message: str = ""
    """The error's message, redacted and capped at 300 characters."""
    status: int | None = None
    """The HTTP status, when the provider answered."""
    at: float = 0.0
    """When it failed (Unix time, seconds)."""
    elapsed: float = 0.0
    """Seconds spent on this target, its own retries included."""
    pinned: bool = False
    """The target held the session's pin (``Router(affinity=...)``): the session moved off it."""
