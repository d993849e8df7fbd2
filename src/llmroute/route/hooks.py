"""Hooks: callbacks around every model call, tool run and tool loop.

Subclass ``Hook`` and override what you need (every method is a no-op); a method may be a plain or
an ``async`` function. ``Client(hooks=[...])`` takes them; ``llmroute.telemetry`` is one such hook.

Per attempt (one HTTP request; a retry is a new attempt) the executor calls ``before_send`` (the
prepared request: add headers here; the body is final and may be signed), ``on_response`` (status,
headers, seconds to the response head), ``on_event`` for each event (only when a hook overrides
it: with none, events cost nothing), and then exactly one of ``on_finish`` (the stream completed),
``on_error`` (a typed failure, retried or not) or ``on_abort`` (the consumer stopped first:
``break``, ``aclose()``, cancellation). Through a ``Router``, ``on_health`` hears each target's
health change (``HealthChange``). End callbacks run shielded from cancellation: keep them
quick. A hook that raises is logged (a warning the first time, then at debug level) and never
breaks the call.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import anyio

from ..schema import clock
from ..schema.errors import InvalidRequestError
from ..schema.events import FinishReason, LLMEvent, ToolCall
from ..schema.request import LLMRequest
from ..schema.response import LLMResponse, ResponseBuilder
from ..schema.usage import Usage
from .redact import get_logger, redact_text

if TYPE_CHECKING:
    from ..schema.cost import Cost
    from ..schema.options import GenerationOptions
    from .model import Model
    from .prepared import PreparedRequest

__all__ = [
    "CallInfo",
    "CallResult",
    "HealthChange",
    "Hook",
    "HookRunner",
    "LoopInfo",
    "ResponseHead",
    "ToolInfo",
    "add_global_hook",
    "check_hooks",
    "global_version",
    "remove_global_hook",
    "runner_for",
]

log = get_logger(__name__)

HookReturn = Awaitable[None] | None


class LoopInfo:
    """One tool loop (``client.stream(..., tools=...)``): the parent of its model calls and tool runs."""

    __slots__ = ("request", "scratch", "started")

    def __init__(self, request: LLMRequest) -> None:
        self.request = request
        """The first request of the loop."""
        self.started = time.monotonic()
        """``time.monotonic()`` when the loop began."""
        self.scratch: dict[object, Any] = {}
        """Per-hook state for this loop, keyed by the hook (e.g. its span)."""


class CallInfo:
    """One attempt of one model call, as hooks see it."""

    __slots__ = (
        "attempt",
        "ended",
        "first_chunk",
        "generation",
        "loop",
        "model",
        "partial",
        "request",
        "scratch",
        "sent",
        "started",
        "step",
        "streaming",
    )

    def __init__(
        self,
        request: LLMRequest,
        model: Model,
        attempt: int,
        step: int,
        streaming: bool,
        loop: LoopInfo | None,
        generation: GenerationOptions | None = None,
    ) -> None:
        self.request = request
        """The request as the caller built it (before compiling)."""
        self.model = model
        """The ``Model`` it is sent to (``model.id``, ``model.provider``, ``model.route``)."""
        self.attempt = attempt
        """1 for the first try; each retry is a new ``CallInfo`` with the next number."""
        self.step = step
        """The model call's index in a tool loop (0 outside one)."""
        self.streaming = streaming
        """The request asked for a streamed response."""
        self.loop = loop
        """The tool loop this call belongs to, if any."""
        self.generation = generation
        """The generation options in effect (the route's, then the model's, then the request's;
        ``None`` when whoever built this ``CallInfo`` did not resolve them)."""
        self.started = time.monotonic()
        """``time.monotonic()`` just before sending."""
        self.first_chunk: float | None = None
        """``time.monotonic()`` when the first events arrived, once they have."""
        self.scratch: dict[object, Any] = {}
        """Per-hook state for this attempt, keyed by the hook (e.g. its span)."""
        self.partial: CallResult | None = None
        """In ``on_error`` / ``on_abort``: what arrived before the end (usage if already reported,
        response metadata, the events so far), or None when nothing did."""
        self.sent = False  # before_send ran: exactly one end callback follows
        self.ended = False


class ResponseHead:
    """The status line and headers of a response, before its body is read."""

    __slots__ = ("elapsed", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str], elapsed: float) -> None:
        self.status = status
        """The HTTP status code."""
        self.headers = headers
        """Response headers (as received; may include cookies: do not log them unredacted)."""
        self.elapsed = elapsed
        """Seconds from ``before_send`` to the response head."""


class CallResult:
    """How a completed attempt ended: its finish reason, usage and (folded on first access) the response."""

    __slots__ = ("_events", "_model", "_response", "at", "metadata", "reason", "usage")

    def __init__(
        self,
        reason: FinishReason,
        usage: Usage | None,
        metadata: dict[str, Any] | None,
        events: Sequence[LLMEvent],
        model: Model | None = None,
    ) -> None:
        self.reason: FinishReason = reason
        """Why the model stopped."""
        self.usage = usage
        """Token usage the provider reported for this call."""
        self.metadata = metadata
        """Provider response metadata: ``id`` and ``model`` (the served model version) where sent."""
        self._events = events
        self._model = model
        self._response: LLMResponse | None = None
        self.at = clock.now()
        """When the call ended: its cost uses the prices in force then."""

    @property
    def response_id(self) -> str | None:
        """The provider's id for this response, when it sends one."""
        value = (self.metadata or {}).get("id")
        return value if isinstance(value, str) else None

    @property
    def response_model(self) -> str | None:
        """The model that answered, as the provider names it."""
        value = (self.metadata or {}).get("model")
        return value if isinstance(value, str) else None

    @property
    def response(self) -> LLMResponse:
        """This call's events folded into an ``LLMResponse`` (built on first access)."""
        if self._response is None:
            builder = ResponseBuilder()
            for event in self._events:
                builder.add(event)
            self._response = builder.build()
        return self._response

    @property
    def cost(self) -> Cost | None:
        """What the call cost (``llmroute.catalog.cost`` of its usage), None when the price is unknown."""
        if self.usage is None or self._model is None:
            return None
        from ..catalog import cost  # loads the catalog's data on first use

        return cost(self._model.provider, self._model.id, self.usage, at=self.at)


class ToolInfo:
    """One local tool run inside a tool loop."""

    __slots__ = ("call", "description", "loop", "scratch", "started")

    def __init__(self, call: ToolCall, description: str | None, loop: LoopInfo | None) -> None:
        self.call = call
        """The model's tool call (``id``, ``name``, ``input``)."""
        self.description = description
        """The tool's description, when it has one."""
        self.loop = loop
        """The loop running it."""
        self.started = time.monotonic()
        """``time.monotonic()`` when the run began."""
        self.scratch: dict[object, Any] = {}
        """Per-hook state for this run, keyed by the hook."""


class HealthChange:
    """A router's target changed health (``Hook.on_health``): ``state`` is ``"cooling"`` (an
    incident began, or a failed probe made it longer), ``"healthy"`` (a probe, or any answer from
    a cooling target, ended the incident) or ``"rate-limited"`` (a 429 or the rate-limit headers
    block it for ``seconds``)."""

    __slots__ = ("at", "level", "reason", "router", "seconds", "state", "target")

    def __init__(
        self, router: str, target: str, state: str, reason: str, seconds: float = 0.0, level: int = 0
    ) -> None:
        self.router = router
        """The router's name (``Router(name=...)``)."""
        self.target = target
        """The target's name (as ``StepStart.target`` names it)."""
        self.state = state
        """``"cooling"``, ``"healthy"`` or ``"rate-limited"``."""
        self.reason = reason
        """What caused it: the error's class name, ``"failure rate"``, ``"probe succeeded"``, ..."""
        self.seconds = seconds
        """How long the target is skipped (0 for ``"healthy"``)."""
        self.level = level
        """Failed probes in this incident so far (0: its first cooldown)."""
        self.at = time.time()
        """When it changed (``time.time()``)."""

    def __repr__(self) -> str:
        return (
            f"HealthChange({self.router}:{self.target} -> {self.state}, {self.reason}, "
            f"{self.seconds:g}s, level {self.level})"
        )


class Hook:
    """Callbacks around every model call. Override what you need; each may be ``async``."""

    def before_send(self, call: CallInfo, request: PreparedRequest) -> HookReturn:
        """Just before an attempt is sent. ``request.headers`` may be changed (added headers are
        sent, not signed); the body must not be."""

    def on_response(self, call: CallInfo, head: ResponseHead) -> HookReturn:
        """The response head arrived (any status; an error status is followed by ``on_error``)."""

    def on_event(self, call: CallInfo, event: LLMEvent) -> HookReturn:
        """Each event of the attempt, before the caller sees it. Only called when overridden."""

    def on_finish(self, call: CallInfo, result: CallResult) -> HookReturn:
        """The attempt completed: reason, usage, response metadata, the folded response."""

    def on_error(self, call: CallInfo, error: BaseException) -> HookReturn:
        """The attempt failed (``error`` is usually an ``LLMError``; retried when retryable)."""

    def on_abort(self, call: CallInfo, reason: BaseException) -> HookReturn:
        """The consumer stopped before the end: ``break`` or ``aclose()`` (``GeneratorExit``) or
        cancellation; ``reason`` is that exception."""

    def on_loop_start(self, loop: LoopInfo) -> HookReturn:
        """A tool loop begins."""

    def on_loop_end(self, loop: LoopInfo, error: BaseException | None) -> HookReturn:
        """A tool loop ended: ``error`` is None when it completed, else what ended it (including
        ``GeneratorExit`` or cancellation)."""

    def on_tool_start(self, tool: ToolInfo) -> HookReturn:
        """A local tool is about to run."""

    def on_health(self, change: HealthChange) -> HookReturn:
        """A ``Router`` target's health changed (cooling down, healthy again, rate-limited), in a
        call through this client."""

    def on_tool_end(
        self, tool: ToolInfo, events: Sequence[LLMEvent], error: BaseException | None
    ) -> HookReturn:
        """A local tool ran: ``events`` are its ``tool-result`` (and ``tool-error``) events;
        ``error`` is set when it raised out of the loop (``tool_errors="raise"``) or was cancelled."""


_METHODS = (
    "before_send",
    "on_response",
    "on_event",
    "on_finish",
    "on_error",
    "on_abort",
    "on_loop_start",
    "on_loop_end",
    "on_tool_start",
    "on_tool_end",
    "on_health",
)


def _overrides(hook: object, name: str) -> bool:
    method = getattr(type(hook), name, None)
    return method is not None and method is not getattr(Hook, name)


class HookRunner:
    """The hooks of one client (its own, then the global ones), sorted by callback, so a callback
    nobody overrides costs nothing. Built by ``runner_for``; read by the executor and the tool loop."""

    __slots__ = ("_warned", "by_name", "events", "hooks", "keep_events")

    def __init__(self, hooks: Sequence[object]) -> None:
        self.hooks = tuple(hooks)
        self.by_name: dict[str, tuple[Any, ...]] = {
            name: tuple(getattr(h, name) for h in self.hooks if _overrides(h, name)) for name in _METHODS
        }
        self.events = self.by_name["on_event"]
        self.keep_events = bool(self.by_name["on_finish"])  # CallResult.response folds them
        self._warned: set[tuple[int, str]] = set()

    async def _call(self, name: str, *args: Any, shield: bool = False) -> None:
        for method in self.by_name[name]:
            await self._one(method, name, args, shield)

    async def _one(self, method: Any, name: str, args: tuple[Any, ...], shield: bool = False) -> None:
        try:
            result = method(*args)
            if inspect.isawaitable(result):
                if shield:  # an end callback runs during cancellation and generator close too
                    with anyio.CancelScope(shield=True):
                        await result
                else:
                    await result
        except Exception as exc:
            owner = getattr(method, "__self__", method)
            key = (id(owner), name)
            first = key not in self._warned
            self._warned.add(key)
            log.log(
                logging.WARNING if first else logging.DEBUG,
                "llmroute: hook %s.%s raised %s: %s (ignored; the call goes on)",
                type(owner).__name__,
                name,
                type(exc).__name__,
                redact_text(str(exc)),
            )

    async def _ended(self, name: str, *args: Any) -> None:
        await self._call(name, *args, shield=True)

    # attempts ----------------------------------------------------------------------------------

    async def before_send(self, call: CallInfo, prepared: PreparedRequest) -> None:
        call.sent = True
        call.started = time.monotonic()
        if self.by_name["before_send"]:
            await self._call("before_send", call, prepared)

    async def on_response(self, call: CallInfo, status: int, headers: Mapping[str, str]) -> None:
        if self.by_name["on_response"]:
            head = ResponseHead(status, headers, time.monotonic() - call.started)
            await self._call("on_response", call, head)

    async def batch(self, call: CallInfo, events: Sequence[LLMEvent], kept: list[LLMEvent]) -> None:
        """A batch of events is about to reach the caller."""
        if call.first_chunk is None:
            call.first_chunk = time.monotonic()
        if self.keep_events:
            kept.extend(events)
        for method in self.events:
            for event in events:
                await self._one(method, "on_event", (call, event))

    async def finish(
        self,
        call: CallInfo,
        reason: FinishReason,
        usage: Usage | None,
        metadata: dict[str, Any] | None,
        kept: Sequence[LLMEvent],
    ) -> None:
        if call.sent and not call.ended:
            call.ended = True
            if self.keep_events:  # there is an on_finish hook
                await self._ended("on_finish", call, CallResult(reason, usage, metadata, kept, call.model))

    async def error(self, call: CallInfo, error: BaseException, partial: CallResult | None) -> None:
        if call.sent and not call.ended:
            call.ended = True
            call.partial = partial
            await self._ended("on_error", call, error)

    async def abort(self, call: CallInfo, reason: BaseException, partial: CallResult | None) -> None:
        if call.sent and not call.ended:
            call.ended = True
            call.partial = partial
            await self._ended("on_abort", call, reason)

    # the tool loop -----------------------------------------------------------------------------

    async def loop_start(self, loop: LoopInfo) -> None:
        await self._call("on_loop_start", loop)

    async def loop_end(self, loop: LoopInfo, error: BaseException | None) -> None:
        await self._ended("on_loop_end", loop, error)

    async def tool_start(self, tool: ToolInfo) -> None:
        await self._call("on_tool_start", tool)

    async def tool_end(self, tool: ToolInfo, events: Sequence[LLMEvent], error: BaseException | None) -> None:
        await self._ended("on_tool_end", tool, events, error)

    # routers -----------------------------------------------------------------------------------

    async def health(self, change: HealthChange) -> None:
        await self._ended("on_health", change)


# Hooks every client runs after its own (``llmroute.telemetry.instrument()`` adds one).
_GLOBAL: list[object] = []
_version = 0


def add_global_hook(hook: object) -> None:
    """Run ``hook`` for every client's calls (after the client's own hooks)."""
    global _version
    _GLOBAL.append(hook)
    _version += 1


def remove_global_hook(hook: object) -> None:
    """Stop running a hook given to ``add_global_hook``."""
    global _version
    if hook in _GLOBAL:
        _GLOBAL.remove(hook)
        _version += 1


def global_version() -> int:
    """Changes whenever a global hook is added or removed (clients rebuild their runner then)."""
    return _version


def check_hooks(hooks: object) -> tuple[object, ...]:
    """``Client(hooks=...)``: a list of objects with hook methods; a typed error otherwise."""
    if hooks is None:
        return ()
    if isinstance(hooks, str | bytes) or not isinstance(hooks, Iterable):
        raise InvalidRequestError(
            f"hooks: expected a list of hooks (llmroute.Hook subclasses), got {type(hooks).__name__}",
            param="hooks",
        )
    out: tuple[object, ...] = tuple(cast(Iterable[object], hooks))
    for i, hook in enumerate(out):
        if not any(callable(getattr(hook, name, None)) for name in _METHODS) or isinstance(hook, type):
            raise InvalidRequestError(
                f"hooks[{i}]: not a hook: {type(hook).__name__} (subclass llmroute.Hook and "
                "override the callbacks you need)",
                param="hooks",
            )
    return out


def runner_for(hooks: tuple[object, ...]) -> HookRunner | None:
    """The runner for a client's hooks plus the global ones; None when there are none at all."""
    if not hooks and not _GLOBAL:
        return None
    return HookRunner((*hooks, *_GLOBAL))
