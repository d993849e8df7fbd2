"""One gateway request as it goes (``Record``): filled in by the handlers, read once by the access
log and the metrics (``observe.py``, ``metrics.py``)."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from ..schema.usage import Usage
from .sessions import CacheSeen

__all__ = ["Record"]


class Record:
    """One request as it goes: filled in by the handlers, written once by ``Observer.done``."""

    __slots__ = (
        "cache",
        "cost",
        "done",
        "error",
        "input_tokens",
        "key",
        "limited",
        "method",
        "model",
        "output_tokens",
        "route",
        "served",
        "session",
        "start",
        "status",
        "stream",
        "target",
        "ttft",
    )

    def __init__(self, route: str, method: str = "POST") -> None:
        self.route = route
        self.method = method
        self.start = time.perf_counter()
        self.key: str | None = None
        self.model: str | None = None
        self.target: str | None = None
        self.stream = False
        self.status = 200
        self.error: str | None = None
        self.ttft: float | None = None
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cost: float | None = None
        self.done = False
        self.served: Any = None  # the upstream Model, for pricing
        self.limited: Any = None  # the Key, when it has limits to charge
        self.session: str | None = None  # the request's session (X-Claude-Code-Session-Id, x-session-id, ...)
        self.cache = CacheSeen()  # what the prompt cache did

    def first_token(self) -> None:
        if self.ttft is None:
            self.ttft = time.perf_counter() - self.start

    def usage(self, usage: Usage | None, cost: Decimal | None = None) -> None:
        if usage is not None:
            self.input_tokens, self.output_tokens = usage.input_tokens, usage.output_tokens
        if cost is not None:
            self.cost = float(cost)

    @property
    def tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)
