"""What a router knows of a target's health: the per-class failure policy, incidents (a cooldown and
its half-open probe, kept in the shared state), and the failure-rate window (kept per process).

Shared keys per target (``router:<namespace>:<target>:``):

- ``cd``: the current incident, ``"<until> <since> <level> <kind>"`` (wall-clock seconds): skipped
  while ``now < until``, half-open after it (one call at a time probes it) until a probe ends the
  incident or the key expires (``_LINGER`` after ``until``: a target nobody called is fresh again).
  ``since`` is when the incident (or its last escalation) began: a call that started before it is
  part of it, and its failure neither extends nor escalates it. ``level`` counts failed probes.
- ``fails``: the failure streak (calls in a row, in the order they ended).
- ``probe``: the half-open probe's lease, its value the lease's end.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from ..schema.errors import (
    AuthenticationError,
    ContentPolicyError,
    ContextOverflowError,
    InvalidProviderOutputError,
    InvalidRequestError,
    LLMError,
    QuotaExceededError,
    RateLimitError,
    ResponseTooLargeError,
    TimeoutError,
)
from .target import Cooldown

__all__ = ["FailureWindow", "Incident", "Verdict", "moves_on", "verdict"]

Verdict = Literal["failure", "auth", "rate-limit", "alive", "none"]
"""What a failed call says about its target: ``failure`` (counts toward a cooldown), ``auth`` (cool
down at once), ``rate-limit`` (blocked, not ill), ``alive`` (the target answered: the request was
the problem), ``none`` (nothing: refused before sending, or a body too large)."""

_LINGER = 2.0  # an incident is remembered this many times its cooldown after it ends (escalation)


def verdict(exc: LLMError, policy: Cooldown) -> Verdict:
    """The per-class policy: what ``exc`` (raised by a call to the target) says about it."""
    if isinstance(exc, RateLimitError):
        return "rate-limit"
    if isinstance(exc, AuthenticationError | QuotaExceededError):
        return "auth"
    if isinstance(exc, ResponseTooLargeError):
        return "none"
    if isinstance(exc, InvalidRequestError):
        return "alive" if exc.http is not None else "none"  # without http: refused before sending
    if isinstance(exc, ContentPolicyError):
        return "alive"
    if isinstance(exc, TimeoutError):
        return "failure" if policy.timeouts else "none"
    if exc.retryable or isinstance(exc, InvalidProviderOutputError):
        return "failure"
    return "alive" if exc.http is not None else "none"


def moves_on(exc: LLMError) -> bool:
    """Whether another target may succeed where this one failed (before any event was delivered)."""
    if isinstance(exc, AuthenticationError | QuotaExceededError):
        return True
    if isinstance(exc, ContextOverflowError):
        return True  # to a target with a larger window
    if isinstance(exc, InvalidRequestError):
        return exc.http is None  # refused before sending: this target's protocol cannot carry it
    if isinstance(exc, ResponseTooLargeError):
        return False
    return exc.retryable or isinstance(exc, InvalidProviderOutputError)


class Incident:
    """A target's cooldown as stored in its ``cd`` key."""

    __slots__ = ("kind", "level", "since", "until")

    def __init__(self, until: float, since: float, level: int, kind: str) -> None:
        self.until = until
        self.since = since
        self.level = level
        self.kind = kind  # "failure" or "auth"

    @classmethod
    def parse(cls, value: str | None) -> Incident | None:
        if not value:
            return None
        parts = value.split(" ")
        try:
            until = float(parts[0])
            since = float(parts[1]) if len(parts) > 1 else 0.0
            level = int(parts[2]) if len(parts) > 2 else 0
        except ValueError:
            return None  # not ours (another version's format): no incident
        if not (math.isfinite(until) and math.isfinite(since)):
            return None
        return cls(until, since, level, parts[3] if len(parts) > 3 else "failure")

    def encode(self) -> str:
        return f"{self.until!r} {self.since!r} {self.level} {self.kind}"

    def ttl(self, now: float) -> float:
        """How long the key lives: the cooldown, then ``_LINGER`` times it half-open."""
        return max(0.001, self.until - now) + _LINGER * max(self.until - self.since, 1.0)

    @staticmethod
    def start(policy: Cooldown, kind: str, now: float, level: int = 0, hint: float | None = None) -> Incident:
        """A new incident (``level`` 0) or an escalation (a failed probe: ``level`` + 1)."""
        if kind == "auth":
            seconds = policy.auth_seconds
        else:
            seconds = min(policy.seconds * 2.0**level, policy.max_seconds)
            if hint is not None and hint > seconds:  # a Retry-After with the 5xx: as the provider says
                seconds = min(hint, policy.max_seconds)
        return Incident(now + seconds, now, level, kind)


class FailureWindow:
    """The calls that ended in the last ``seconds``, and how many failed, in ``_BUCKETS`` buckets:
    O(1) per call, in this process."""

    __slots__ = ("_calls", "_fails", "_span", "_stamp")

    _BUCKETS = 10

    def __init__(self, seconds: float) -> None:
        self._span = seconds / self._BUCKETS
        self._calls = [0] * self._BUCKETS
        self._fails = [0] * self._BUCKETS
        self._stamp = [-1] * self._BUCKETS  # which bucket number each slot holds

    def _slot(self, now: float) -> int:
        number = int(now / self._span)
        i = number % self._BUCKETS
        if self._stamp[i] != number:
            self._stamp[i] = number
            self._calls[i] = self._fails[i] = 0
        return i

    def add(self, now: float, failed: bool) -> None:
        i = self._slot(now)
        self._calls[i] += 1
        if failed:
            self._fails[i] += 1

    def counts(self, now: float) -> tuple[int, int]:
        """(calls, failures) in the window."""
        oldest = int(now / self._span) - self._BUCKETS + 1
        calls = fails = 0
        for i, stamp in enumerate(self._stamp):
            if stamp >= oldest:
                calls += self._calls[i]
                fails += self._fails[i]
        return calls, fails

    def tripped(self, now: float, policy: Cooldown) -> bool:
        calls, fails = self.counts(now)
        return calls >= policy.min_calls and fails >= policy.failure_rate * calls

    def clear(self) -> None:
        self._stamp = [-1] * self._BUCKETS


def parse_float(value: str | None) -> float | None:
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def earliest(ends: Sequence[float | None]) -> float | None:
    known = [e for e in ends if e is not None]
    return min(known) if known else None
