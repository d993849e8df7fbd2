"""A router's targets as it runs them (``Slot``): each one's model behind the observing transport,
which times every send (the latency estimate), counts it (the rate-limit count-down) and reads
every answer's rate-limit headers for the router."""

from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from typing import Protocol

import httpx

from ..route.embedding import EmbeddingModel
from ..route.hooks import HookRunner
from ..route.model import Model
from ..route.prepared import PreparedRequest
from ..route.transport import ClientTransports, Transport, TransportKind, Wire
from ..schema.request import LLMRequest
from ..schema.tools import HostedTool
from .health import FailureWindow
from .history import origin_of
from .latency import Latency
from .limits import Budget, RateLimits, read_limits
from .target import Cooldown, Target

__all__ = ["CURRENT", "Call", "Slot"]

log = logging.getLogger("llmroute.router")


class Router(Protocol):
    """What a slot needs of its router (``router.Router``): its cooldown policy, and where the
    rate-limit headers its answers carry go."""

    @property
    def cooldown(self) -> Cooldown: ...

    async def remember_limits(
        self, slot: Slot, limits: RateLimits, seq: int, hooks: HookRunner | None = None
    ) -> None: ...


class Slot:
    """A target as the router runs it: its model (behind the observing transport), keys, and what
    this process counts of it (in flight, latency, remaining budget, failure window)."""

    __slots__ = (
        "blocked_at",
        "budget",
        "context",
        "failed_at",
        "failures",
        "hosted",
        "in_flight",
        "index",
        "key_cd",
        "key_fails",
        "key_limits",
        "key_probe",
        "key_rpm",
        "key_tpm",
        "latency",
        "model",
        "name",
        "origin",
        "target",
        "tool_kinds",
    )

    def __init__(self, router: Router, target: Target, prefix: str, index: int) -> None:
        self.index = index  # position in the router's targets (and its health snapshot)
        self.target = target
        self.name = target.key
        model = target.model
        self.origin = origin_of(model)
        observer = Observer(model.route.transport, router, self)
        self.model: Model | EmbeddingModel = model.with_(route=model.route.with_(transport=observer))
        base = f"{prefix}{self.name}:"
        self.key_cd, self.key_fails, self.key_probe = base + "cd", base + "fails", base + "probe"
        self.key_limits, self.key_rpm, self.key_tpm = base + "limits", base + "rpm", base + "tpm"
        chat = model.route.protocol if isinstance(model, Model) else None  # embeddings carry no tools
        self.hosted = chat.hosted_kinds if chat is not None else frozenset[str]()
        self.tool_kinds = chat.tool_kinds if chat is not None else frozenset[str]()
        self.context: int | None = target.context_window if target.context_window else _catalog_window(model)
        self.in_flight = 0
        self.latency = Latency()
        self.budget = Budget()
        self.failures = FailureWindow(router.cooldown.window)
        self.failed_at = 0.0  # monotonic time of this process's last counted failure
        self.blocked_at = 0.0  # monotonic time this process last blocked it for its rate limits

    def cannot_carry(self, request: LLMRequest) -> str | None:
        """Why this target's protocol cannot send ``request``'s tools (checked before sending)."""
        for tool in request.tools:
            if isinstance(tool, HostedTool):
                if tool.kind not in self.hosted:
                    return f"cannot carry the hosted tool {tool.kind!r}"
            elif tool.kind not in self.tool_kinds:
                return f"cannot carry {tool.kind!r} tools"
        return None


def _catalog_window(model: Model | EmbeddingModel) -> int | None:
    try:
        info = model.info  # llmroute.catalog (loaded on first use), when it knows the model
    except Exception:  # the catalog's data failed to load: the window is unknown, not an error
        log.debug("llmroute: no catalog entry for %s", model, exc_info=True)
        return None
    return info.context_window if info is not None else None


class Call:
    """One routed attempt as the observing transport sees it: when its request went out (for the
    latency estimate) and its place in the target's sends (for the rate-limit count-down)."""

    __slots__ = ("hooks", "pending", "seq", "slot", "tokens")

    def __init__(self, slot: Slot, tokens: int | None, hooks: HookRunner | None) -> None:
        self.slot = slot
        self.hooks = hooks
        self.tokens = tokens
        self.pending = 0  # the latency estimator's id for the request awaiting its first event
        self.seq = 0


# Set by a routed attempt until its first event: the executor runs inside that step, in the caller's
# context, so the observing transport finds the attempt without anything passed through the executor.
CURRENT: ContextVar[Call | None] = ContextVar("llmroute_router_call", default=None)


class Observer:
    """The target's kind of transport, bound so that every request's send time and every response's
    rate-limit headers are seen."""

    __slots__ = ("inner", "router", "slot")

    def __init__(self, inner: TransportKind | None, router: Router, slot: Slot) -> None:
        self.inner = inner
        self.router = router
        self.slot = slot

    @property
    def name(self) -> str:
        return "http" if self.inner is None else self.inner.name

    @property
    def streams_only(self) -> bool:
        return self.inner is not None and self.inner.streams_only

    @property
    def pooled(self) -> bool:
        return self.inner is not None and self.inner.pooled

    def bind(self, transports: ClientTransports) -> Transport:
        # a pooled connection's headers are its upgrade's, not this response's: not read
        return Observing(transports.for_route(self.inner), self.router, self.slot, not self.pooled)

    def __repr__(self) -> str:
        return repr(self.inner)


class Observing:
    """``Observer`` bound to a client: the target's transport, its sends timed and counted and
    its rate-limit headers read."""

    __slots__ = ("headers", "inner", "router", "slot")

    def __init__(self, inner: Transport, router: Router, slot: Slot, headers: bool) -> None:
        self.inner = inner
        self.router = router
        self.slot = slot
        self.headers = headers

    async def open(
        self,
        prepared: PreparedRequest,
        timeout: httpx.Timeout,  # noqa: ASYNC109
    ) -> Wire:
        slot = self.slot
        call = CURRENT.get()
        if call is not None and call.slot is slot:  # each attempt (a retry too) is a send
            latency = slot.latency
            if call.pending:
                latency.ended(call.pending)
            call.pending = latency.sent(time.monotonic())
            call.seq = slot.budget.sent(call.tokens)
        wire = await self.inner.open(prepared, timeout)
        if self.headers:
            limits = read_limits(wire.status, wire.headers)
            if limits is None:
                budget = slot.budget
                if budget.requests is not None or budget.tokens is not None:
                    budget.plenty()
            else:
                if call is not None and call.slot is slot:
                    await self.router.remember_limits(slot, limits, call.seq, call.hooks)
                else:
                    await self.router.remember_limits(slot, limits, slot.budget.sends)
        return wire
