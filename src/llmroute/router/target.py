"""``Target`` (one model in a router, with its priority and weight) and ``Cooldown`` (health policy)."""

from __future__ import annotations

import math
from typing import Any

import msgspec

from ..route.embedding import EmbeddingModel
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


class Target(msgspec.Struct, frozen=True):
    """One model a ``Router`` may send to. Lower ``priority`` numbers are tried first; within a
    priority, ``weight`` shares the traffic."""

    model: Model | EmbeddingModel
    """The model (from a provider facade): a chat ``Model``, or an ``EmbeddingModel`` in a router
    of embedding models."""
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

    def __post_init__(self) -> None:
        if isinstance(self.model, ModelGroup):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _bad("Target.model", "a Router inside a Router is not supported; list its targets instead")
        if not isinstance(self.model, Model | EmbeddingModel):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _bad(
                "Target.model",
                f"expected a Model (or EmbeddingModel) from a provider facade, got {type(self.model).__name__}",
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

    @property
    def key(self) -> str:
        """``name``, or ``provider:model``."""
        return self.name or f"{self.model.provider}:{self.model.id}"


class Cooldown(msgspec.Struct, frozen=True):
    """When a failing target is skipped. Defaults: 3 failures in a row (429, 5xx, overloaded,
    timeouts, connection errors, each after the target's own retries) cool it down for 30 s, or
    the provider's ``Retry-After`` when longer; then one caller probes it (half-open) while the
    others keep skipping it. A failed probe doubles the cooldown, up to ``max_seconds``; a success
    clears everything. An authentication failure cools the target down at once for
    ``auth_seconds``."""

    failures: int = 3
    """Consecutive failures that start a cooldown."""
    seconds: float = 30.0
    """The first cooldown (doubled per failed probe)."""
    max_seconds: float = 300.0
    """The longest cooldown."""
    auth_seconds: float = 300.0
    """The cooldown after an authentication failure (a bad or expired key)."""
    probe_timeout: float = 60.0
    """How long one caller holds the half-open probe before another may try."""

    def __post_init__(self) -> None:
        failures: Any = self.failures
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise _bad("Cooldown.failures", f"must be an int >= 1, got {failures!r}")
        for field in ("seconds", "max_seconds", "auth_seconds", "probe_timeout"):
            _number(f"Cooldown.{field}", getattr(self, field), low=0, strict=True)
