"""``Target`` (one model in a router: priority, weight, the operator's own caps) and ``Cooldown``
(the health policy: when a failing target is skipped, and for how long)."""

from __future__ import annotations

import math
from typing import Any

import msgspec

from ..route.model import Model, ModelGroup
from ..route.policy import RetryPolicy, Timeouts
from ..schema.errors import InvalidRequestError

__all__ = ["Cooldown", "Target"]


def _bad(param: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"{param}: {message}", param=param)


def _number(param: str, value: object, *, low: float, strict: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _bad(param, f"must be a finite number, got {value!r}")
    if value < low or (strict and value == low):
        raise _bad(param, f"must be {'>' if strict else '>='} {low:g}, got {value!r}")


def _count(param: str, value: object, *, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _bad(param, f"must be an int >= {low}, got {value!r}")


class Target(msgspec.Struct, frozen=True):
    """One model a ``Router`` may send to. Lower ``priority`` numbers are tried first; within a
    priority, ``weight`` shares the traffic."""

    model: Model
    """The model (from a provider facade)."""
    priority: int = 0
    """Lower is tried first; a higher number is a fallback for the lower ones."""
    weight: float = 1.0
    """This target's share of its priority's traffic (relative to the others there)."""
    name: str | None = None
    """What attempts, events and shared health keys call it; default ``provider:model``."""
    context_window: int | None = None
    """Tokens the model accepts; default: the catalog's (``model.info``), unknown when absent."""
    retry: RetryPolicy | None = None
    """This target's own retries before the router moves on (``None``: the call's policy)."""
    timeouts: Timeouts | None = None
    """This target's deadlines (``None``: the call's)."""
    max_in_flight: int | None = None
    """At most this many calls open on the target at once, in this process (``None``: no cap)."""
    rpm: int | None = None
    """The operator's own budget: at most this many requests a minute (a sliding window in the
    router's state, so shared by every process that shares it)."""
    tpm: int | None = None
    """The operator's own budget: at most this many tokens a minute (input and output, as
    reported; a call reserves its estimate first)."""

    def __post_init__(self) -> None:
        if isinstance(self.model, ModelGroup):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _bad("Target.model", "a Router inside a Router is not supported; list its targets instead")
        if not isinstance(self.model, Model):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _bad(
                "Target.model", f"expected a Model from a provider facade, got {type(self.model).__name__}"
            )
        priority: Any = self.priority
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise _bad("Target.priority", f"must be an int, got {priority!r}")
        _number("Target.weight", self.weight, low=0, strict=True)
        if self.name is not None and (not isinstance(self.name, str) or not self.name):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _bad("Target.name", f"must be a non-empty string, got {self.name!r}")
        window: Any = self.context_window
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
            raise _bad("Target.context_window", f"must be a positive int, got {window!r}")
        if self.retry is not None and not isinstance(self.retry, RetryPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _bad("Target.retry", f"expected llmroute.RetryPolicy(...), got {type(self.retry).__name__}")
        if self.timeouts is not None and not isinstance(self.timeouts, Timeouts):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _bad(
                "Target.timeouts", f"expected llmroute.Timeouts(...), got {type(self.timeouts).__name__}"
            )
        for field in ("max_in_flight", "rpm", "tpm"):
            value = getattr(self, field)
            if value is not None:
                _count(f"Target.{field}", value, low=1)

    @property
    def key(self) -> str:
        """``name``, or ``provider:model``."""
        return self.name or f"{self.model.provider}:{self.model.id}"


class Cooldown(msgspec.Struct, frozen=True):
    """When a failing target is skipped, per kind of failure, counted once per incident.

    A 5xx, an overloaded answer, a malformed stream, a connection failure or a timeout (each after
    the target's own retries) is a failure. ``failures`` of them in a row, or a ``failure_rate``
    of the calls that ended in the last ``window`` seconds, start an *incident*: the target is
    skipped for ``seconds``; then one call probes it (half-open, with no retries) while the
    others keep skipping it. A successful probe (or any answer that shows the target alive: a
    400, a stream the caller stopped reading) ends the incident; a failed one doubles the
    cooldown, up to ``max_seconds``. Calls already in flight when an incident started neither
    extend nor escalate it. An authentication or quota failure cools the target down at once for
    ``auth_seconds``. A 429 is not ill health: the target is blocked for the provider's
    ``Retry-After`` (or ``rate_limit_seconds``) and the call moves on at once."""

    failures: int = 3
    """Failed calls in a row (in the order they end) that start a cooldown."""
    failure_rate: float = 0.5
    """Or this share of the calls that ended in the last ``window`` seconds failed (in this
    process; 1 turns the rate off unless every call fails)."""
    window: float = 10.0
    """The seconds ``failure_rate`` looks back over."""
    min_calls: int = 10
    """``failure_rate`` counts once the window holds at least this many ended calls."""
    seconds: float = 1.0
    """The first cooldown of an incident (doubled per failed probe)."""
    max_seconds: float = 60.0
    """The longest cooldown, and the longest a ``Retry-After`` blocks a target."""
    auth_seconds: float = 300.0
    """The cooldown after an authentication failure (a bad or expired key) or a quota one."""
    rate_limit_seconds: float = 1.0
    """How long a 429 without ``Retry-After`` blocks the target."""
    timeouts: bool = True
    """Whether a deadline that fired (first byte, idle, total) counts as a failure."""
    probe_timeout: float = 60.0
    """The longest one caller holds the half-open probe (its lease is released when the probe
    ends, however it ends; this bounds a process that died mid-probe)."""

    def __post_init__(self) -> None:
        _count("Cooldown.failures", self.failures, low=1)
        _count("Cooldown.min_calls", self.min_calls, low=1)
        for field in (
            "seconds",
            "max_seconds",
            "auth_seconds",
            "rate_limit_seconds",
            "probe_timeout",
            "window",
        ):
            _number(f"Cooldown.{field}", getattr(self, field), low=0, strict=True)
        _number("Cooldown.failure_rate", self.failure_rate, low=0, strict=True)
        if self.failure_rate > 1:
            raise _bad("Cooldown.failure_rate", f"must be <= 1, got {self.failure_rate!r}")
        if not isinstance(self.timeouts, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _bad("Cooldown.timeouts", f"must be a bool, got {self.timeouts!r}")
