"""Run one model call: prepare, send, map errors, frame, parse. Yields batches of events."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import httpx

from ..schema.errors import LLMError
from ..schema.events import LLMEvent, StepFinish, StepStart
from ..schema.request import LLMRequest
from .errors import error_from_response
from .prepare import model_of, prepare
from .redact import redact_url
from .transport import HttpTransport, Transport, Wire, transport_error

if TYPE_CHECKING:
    from .policy import RetryPolicy, Timeouts

__all__ = ["ExecutionContext", "run_step"]

log = logging.getLogger("llmroute")

DEFAULT_TRANSPORT = HttpTransport()


class ExecutionContext:
    """What a call needs from the client: the HTTP client, policies and limits."""

    __slots__ = ("http", "max_error_bytes", "retry", "timeouts", "transport")

    def __init__(
        self,
        http: httpx.AsyncClient,
        timeouts: Timeouts,
        retry: RetryPolicy,
        max_error_bytes: int = 64 * 1024,
        transport: Transport = DEFAULT_TRANSPORT,
    ) -> None:
        self.http = http
        self.timeouts = timeouts
        self.retry = retry
        self.max_error_bytes = max_error_bytes
        self.transport = transport

    def http_timeout(self) -> httpx.Timeout:
        t = self.timeouts
        return httpx.Timeout(connect=t.connect, read=max(t.idle, t.first_byte), write=t.idle, pool=t.connect)


async def _open(ctx: ExecutionContext, request: LLMRequest) -> tuple[Wire, Any]:
    prepared = await prepare(request)
    model = model_of(request)
    transport: Transport = model.route.transport or ctx.transport
    log.debug("llmroute: %s %s", prepared.method, redact_url(prepared.url))
    try:
        wire = await transport.open(ctx.http, prepared, ctx.http_timeout())
    except httpx.HTTPError as exc:
        raise transport_error(exc, prepared) from None
    if 200 <= wire.status < 300:
        return wire, prepared
    try:
        body = await wire.read_capped(ctx.max_error_bytes)
    except httpx.HTTPError:
        body = b""
    finally:
        await wire.aclose()
    raise error_from_response(
        wire.status,
        wire.headers,
        body,
        method=prepared.method,
        url=prepared.url,
        provider=model.provider,
        secrets=prepared.secrets,
    )


async def run_step(
    ctx: ExecutionContext, request: LLMRequest, index: int = 0
) -> AsyncGenerator[list[LLMEvent], None]:
    """One model call as batches of events: ``step-start`` ... ``step-finish``."""
    model = model_of(request)
    route = model.route
    protocol = route.protocol
    wire, prepared = await _open(ctx, request)
    try:
        state = protocol.new_state(request)
        decoder = route.framing.decoder()
        feed = decoder.feed
        step = protocol.step
        out: list[LLMEvent] = [StepStart(index)]
        async for chunk in wire.chunks():
            for frame in feed(chunk):
                step(state, frame, out)
            if out:
                yield out
                out = []
            if state.done:
                break
        if not state.done:
            for frame in decoder.close():
                step(state, frame, out)
        protocol.on_halt(state, out)
        out.append(StepFinish(index, state.reason, state.usage, state.metadata))
        yield out
    except httpx.HTTPError as exc:
        raise transport_error(exc, prepared) from None
    except LLMError as exc:
        if exc.provider is None:
            exc.provider = model.provider
        raise
    finally:
        await wire.aclose()
