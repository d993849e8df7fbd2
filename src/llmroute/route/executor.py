"""Run one model call: prepare, send, map errors, retry, enforce deadlines, frame, parse.

Yields batches of events. Reliability rules (see docs/reliability.md):

- Retries happen only while no event has reached the caller: a retryable HTTP status, a connection
  failure before any body byte, or a 200 stream whose first event is an overloaded / rate-limit
  error. Each attempt re-prepares the request (fresh credentials and signatures).
- Deadlines: a cancel scope around sending, then one ``Watchdog`` per stream for the reads (one
  timer, re-armed lazily; never held across a ``yield``), on asyncio and trio: ``first_byte`` until
  the first body byte, ``idle`` between chunks, ``total`` over the whole call including backoff.
- The HTTP response is closed in a shielded ``finally``: breaking out, cancelling, ``aclose()`` or a
  deadline drops the connection at once.
- ``stream=False`` (``GenerationOptions``) reads the whole body (``WholeBodyFraming``) and hands it
  to the protocol's ``whole`` handler: the same loop, deadlines, retries and events.
- ``max_response_bytes`` caps the body: past it the connection is closed at once and
  ``ResponseTooLargeError`` raised. Unset, streams are unbounded and whole bodies are capped at
  ``DEFAULT_MAX_WHOLE_BODY_BYTES`` (they are held in memory before decoding).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import anyio
import httpx

from ..framing.whole import WHOLE_BODY
from ..schema.errors import (
    InvalidProviderOutputError,
    LLMError,
    ResponseTooLargeError,
    TimeoutError,
    TransportError,
)
from ..schema.events import Finish, LLMEvent, StepFinish, StepStart
from ..schema.request import LLMRequest
from .classify import from_response, http_context, is_web_page
from .compiler import is_streaming, prepare
from .decoding import output_error
from .hooks import CallInfo, CallResult
from .model import ModelGroup, model_of
from .prepared import PreparedRequest
from .redact import collect_secrets, get_logger, redact_text, redact_url, secrets_in_scope
from .transport import ClientTransports, HttpWire, Wire, may_resend, transport_error
from .watchdog import DeadlineExceeded, Watchdog

if TYPE_CHECKING:
    from .hooks import HookRunner, LoopInfo
    from .policy import RetryPolicy, Timeouts

__all__ = ["DEFAULT_MAX_WHOLE_BODY_BYTES", "ExecutionContext", "run_model_step", "run_step"]

log = get_logger(__name__)

DEFAULT_MAX_WHOLE_BODY_BYTES = 64 * 1024 * 1024  # a non-streamed body is held whole before decoding
# Keep-alive: what may follow the terminal event before the body ends. More, or slower, and the
# connection is closed rather than returned to the pool.
DRAIN_BYTES = 64 * 1024
DRAIN_SECONDS = 1.0

Sleep = Callable[[float], Awaitable[Any]]


class ExecutionContext:
    """What a call needs from the client: its transports, policies, limits and the sleep used for
    retry backoff (injectable so tests do not wait)."""

    __slots__ = (
        "hooks",
        "max_connections",
        "max_error_bytes",
        "max_response_bytes",
        "retry",
        "sleep",
        "timeouts",
        "transports",
    )

    def __init__(
        self,
        transports: ClientTransports,
        timeouts: Timeouts,
        retry: RetryPolicy,
        max_error_bytes: int = 64 * 1024,
        sleep: Sleep | None = None,
        max_response_bytes: int | None = None,
        max_connections: int | None = None,
        hooks: HookRunner | None = None,
    ) -> None:
        self.transports = transports  # the client's HTTP pool and WebSocket connections
        self.hooks = hooks  # None: no hook at all, and the executor skips every hook call
        self.max_connections = max_connections  # the pool size, when the client built the pool
        self.timeouts = timeouts
        self.retry = retry
        self.max_error_bytes = max_error_bytes
        self.max_response_bytes = max_response_bytes
        self.sleep: Sleep = sleep if sleep is not None else anyio.sleep

    def http_timeout(self) -> httpx.Timeout:
        # Our cancel scopes enforce first_byte / idle / total precisely; httpx's read timeout is a
        # backstop just beyond them, and its connect timeout is the ``connect`` deadline. A request
        # queued for a free connection waits under ``pool`` (default: none of its own, so only
        # first_byte / total bound it): with more streams than connections, a queue is normal.
        t = self.timeouts
        read = max(t.idle, t.first_byte) + 1.0
        return httpx.Timeout(connect=t.connect, read=read, write=read, pool=t.pool)


class _Attempt:
    """One try: what was sent and how far it got."""

    __slots__ = ("chunks", "prepared", "read_body", "watchdog", "wire")

    def __init__(self) -> None:
        self.prepared: PreparedRequest | None = None
        self.wire: Wire | None = None
        self.watchdog: Watchdog | None = None
        self.chunks: AsyncIterator[bytes] | None = None
        self.read_body = False  # a body byte arrived: transport failures are no longer retried

    async def drain(self, seconds: float) -> None:
        """After the terminal event: read the rest of the body (a ``[DONE]``, the chunked trailer),
        at most ``DRAIN_BYTES`` within ``seconds``, so the connection goes back to the pool for
        the next request instead of being closed. Past either bound the connection is dropped."""
        chunks = self.chunks
        if chunks is None or not isinstance(self.wire, HttpWire):  # a WebSocket is per call
            return
        got = 0
        secrets = self.prepared.secrets if self.prepared is not None else ()
        with anyio.move_on_after(seconds), contextlib.suppress(httpx.HTTPError), secrets_in_scope(secrets):
            while got <= DRAIN_BYTES:
                try:
                    got += len(await chunks.__anext__())
                except StopAsyncIteration:
                    self.chunks = None  # ended: httpx has released the connection
                    return

    async def close(self) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()
        chunks, self.chunks = self.chunks, None
        wire, self.wire = self.wire, None
        if wire is not None:
            with anyio.CancelScope(shield=True):  # close even when the caller was cancelled
                try:
                    await wire.aclose()
                    if isinstance(chunks, AsyncGenerator):
                        await _finish_chunks(cast("AsyncGenerator[bytes, None]", chunks))
                except Exception:  # a broken socket may fail to close cleanly; it is gone either way
                    log.debug("llmroute: error while closing a response", exc_info=False)


async def _finish_chunks(chunks: AsyncGenerator[bytes, None]) -> None:
    """End the body's generator chain (httpx nests three async generators) once the response is
    closed: a read under a cancelled scope ends every level of it at once (the cancellation, or
    the closed connection's error, runs up through each), where ``aclose()`` would end only the
    outer one and leave the inner ones to the GC (a ``ResourceWarning`` each on trio)."""
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            for _ in range(_FINISH_READS):  # what was buffered may still be read without a wait
                await chunks.__anext__()
        except (StopAsyncIteration, Exception):
            pass
    await chunks.aclose()


_FINISH_READS = 4096


def _deadline_error(which: str, seconds: float | None, prepared: PreparedRequest | None) -> TimeoutError:
    url = redact_url(prepared.url) if prepared is not None else None
    ctx = http_context(prepared.method, prepared.url, None, None) if prepared is not None else None
    limit = f" of {seconds:g}s" if seconds is not None else ""
    where = f" waiting for {url}" if url else ""
    return TimeoutError(f"{which} deadline{limit} exceeded{where}", deadline=which, http=ctx, code="timeout")


async def _open(
    ctx: ExecutionContext, request: LLMRequest, attempt: _Attempt, deadline: float, call: CallInfo | None
) -> Wire:
    """Prepare, send and return an open 2xx response; a non-2xx becomes its typed error."""
    prepared = await prepare(request)
    prepared.secrets = collect_secrets(prepared.headers, prepared.url, prepared.secrets)
    attempt.prepared = prepared
    model = model_of(request)
    transport = ctx.transports.for_route(model.route.transport)
    hooks = ctx.hooks
    if hooks is not None and call is not None:
        await hooks.before_send(call, prepared)  # may add headers (a traceparent)
    log.debug("llmroute: %s %s", prepared.method, redact_url(prepared.url))
    with secrets_in_scope(prepared.secrets):  # what the HTTP stack logs meanwhile is redacted
        wire = await transport.open(prepared, ctx.http_timeout())  # httpx errors: run_step
    attempt.wire = wire
    if hooks is not None and call is not None:
        await hooks.on_response(call, wire.status, wire.headers)
    if 200 <= wire.status < 300 and not is_web_page(wire.headers):
        return wire
    body = b""
    with anyio.CancelScope(deadline=min(deadline, anyio.current_time() + ctx.timeouts.idle)):
        with contextlib.suppress(httpx.HTTPError), secrets_in_scope(prepared.secrets):
            body = await wire.read_capped(ctx.max_error_bytes)
    await attempt.close()  # never drain a large error body: the connection is dropped instead
    raise from_response(
        wire.status,
        wire.headers,
        body,
        method=prepared.method,
        url=prepared.url,
        provider=model.provider,
        secrets=prepared.secrets,
    )


def _should_retry(exc: BaseException, attempt: _Attempt, policy: RetryPolicy) -> bool:
    if isinstance(exc, httpx.HTTPError):
        prepared = attempt.prepared
        idempotent = prepared is not None and any(k.lower() == "idempotency-key" for k in prepared.headers)
        return policy.retry_connect and not attempt.read_body and may_resend(exc, idempotent)
    if not isinstance(exc, LLMError) or not exc.retryable or isinstance(exc, TransportError):
        return False  # transport failures are decided on the raw httpx error above
    status = exc.http.status if exc.http is not None else None
    if status is not None and status >= 300:
        return status in policy.statuses
    # An error event inside a 200 stream (Anthropic overloaded_error, Bedrock throttlingException).
    return attempt.wire is not None


def run_step(
    ctx: ExecutionContext,
    request: LLMRequest,
    index: int = 0,
    finish: bool = False,
    loop: LoopInfo | None = None,
) -> AsyncGenerator[list[LLMEvent], None]:
    """One model call as batches of events: ``step-start`` ... ``step-finish`` (then ``finish``
    when ``finish``: a single-step call, consumed directly with no generator in between).
    ``loop``: the tool loop the call belongs to (for hooks). A ``ModelGroup`` (``llmroute.Router``)
    in ``request.model`` runs the call itself (each of its attempts through ``run_model_step``)."""
    group = request.model
    if isinstance(group, ModelGroup):
        return group.run_step(ctx, request, index, finish, loop)
    return run_model_step(ctx, request, index, finish, loop)


async def run_model_step(
    ctx: ExecutionContext,
    request: LLMRequest,
    index: int = 0,
    finish: bool = False,
    loop: LoopInfo | None = None,
) -> AsyncGenerator[list[LLMEvent], None]:
    """``run_step`` on the ``Model`` in ``request.model``."""
    model = model_of(request)
    route = model.route
    protocol = route.protocol
    streaming = is_streaming(request)
    framing = route.framing if streaming else WHOLE_BODY
    # prepare() refuses stream=False for a protocol without a ``whole`` handler before any read
    step = protocol.step if streaming or protocol.whole is None else protocol.whole
    limit = ctx.max_response_bytes
    if limit is None and not streaming:
        limit = DEFAULT_MAX_WHOLE_BODY_BYTES
    policy = ctx.retry
    timeouts = ctx.timeouts
    clock = anyio.current_time
    total_at = clock() + timeouts.total if timeouts.total is not None else math.inf
    idle = timeouts.idle
    hooks = ctx.hooks
    tries = 0
    while True:
        tries += 1
        attempt = _Attempt()
        call: CallInfo | None = None
        kept: list[LLMEvent] = []  # the attempt's events, when a finish hook will fold them
        if hooks is not None:
            call = CallInfo(request, model, tries, index, streaming, loop)
        delivered = False
        state: Any = None
        failure: httpx.HTTPError | None = None
        try:
            try:
                first_at = min(clock() + timeouts.first_byte, total_at)
                wire: Wire | None = None
                with anyio.CancelScope(deadline=first_at):
                    wire = await _open(ctx, request, attempt, first_at, call)
                if wire is None:
                    which = "total" if first_at >= total_at else "first_byte"
                    raise _deadline_error(which, _limit(timeouts, which), attempt.prepared)
                state = protocol.new_state(request)
                decoder = framing.decoder()
                feed = decoder.feed
                received = 0
                warnings = attempt.prepared.warnings if attempt.prepared is not None else ()
                out: list[LLMEvent] = [StepStart(index, warnings=warnings)]
                pending = 1  # step-start waits for the first real event (so a first-event error can retry)
                secrets = attempt.prepared.secrets if attempt.prepared is not None else ()
                scope = secrets_in_scope(secrets)  # entered once per read, built once per attempt
                chunks: AsyncIterator[bytes] = wire.chunks().__aiter__()
                attempt.chunks = chunks
                read = chunks.__anext__
                watchdog = attempt.watchdog = Watchdog(
                    first_at, "total" if first_at >= total_at else "first_byte"
                )
                guarded, move, now = watchdog.read, watchdog.set, watchdog.now
                while True:
                    try:
                        with scope:
                            chunk = await guarded(read)
                    except StopAsyncIteration:
                        break
                    except DeadlineExceeded:
                        which = watchdog.which
                        raise _deadline_error(which, _limit(timeouts, which), attempt.prepared) from None
                    attempt.read_body = True
                    if limit is not None:
                        received += len(chunk)
                        if received > limit:
                            await attempt.close()  # drop the connection now, never drain the rest
                            raise ResponseTooLargeError(
                                f"response body exceeded max_response_bytes={limit}", limit=limit
                            )
                    frame: Any = None
                    try:
                        for frame in feed(chunk):
                            step(state, frame, out)
                            if state.done:  # what follows the terminal event is ignored, whatever
                                break  # the read boundaries (it used to depend on them)
                    except LLMError:
                        raise
                    except Exception as exc:  # a shape the parser did not foresee: typed, never raw
                        raise output_error(exc, protocol.name, frame) from None
                    if len(out) > pending:
                        delivered = True
                        pending = 0
                        if call is not None and hooks is not None:
                            await hooks.batch(call, out, kept)
                        yield out
                        out = []
                    if state.done:
                        break
                    at = now() + idle
                    if at >= total_at:
                        move(total_at, "total")
                    else:
                        move(at, "idle")
                try:
                    if not state.done:
                        for frame in decoder.close():
                            step(state, frame, out)
                    protocol.on_halt(state, out)
                    out.append(StepFinish(index, state.reason, state.usage, state.metadata))
                    if finish:
                        out.append(Finish(state.reason, state.usage, state.metadata))
                except LLMError:
                    raise
                except Exception as exc:
                    raise output_error(exc, protocol.name) from None
                delivered = True
                if call is not None and hooks is not None:
                    await hooks.batch(call, out, kept)
                    await hooks.finish(call, state.reason, state.usage, state.metadata, kept)
                yield out
                # Resumed: the consumer read to the end (a ``break`` closes the generator at the
                # yield above and the connection with it). Keep the connection alive for reuse.
                await attempt.drain(min(DRAIN_SECONDS, max(0.0, total_at - clock())))
                return
            except httpx.HTTPError as exc:
                failure = exc
            # Handled outside the ``except`` block: the typed error must not keep the httpx
            # exception -- which holds the request, its Authorization header and raw URL -- as its
            # ``__context__``.
            prepared = attempt.prepared
            if prepared is None:
                raise failure
            phase = "idle" if attempt.read_body else "first_byte"
            error = transport_error(failure, prepared, phase, ctx.max_connections)
            retry = not delivered and tries <= policy.max_retries and _should_retry(failure, attempt, policy)
            del failure
            if retry:
                if call is not None and hooks is not None:
                    await hooks.error(call, error, _partial(state, kept))
                await _backoff(ctx, tries, error, total_at, route.name)
                continue
            raise error
        except LLMError as exc:
            if exc.provider is None:
                exc.provider = model.provider
            _scrub(exc, attempt.prepared.secrets if attempt.prepared is not None else ())
            if exc.http is None and attempt.prepared is not None:
                wire_now = attempt.wire
                # A message on an open WebSocket has no HTTP status: the error names the socket.
                socket: str | None = getattr(wire_now, "socket_url", None)
                exc.http = http_context(
                    "WEBSOCKET" if socket else attempt.prepared.method,
                    socket or attempt.prepared.url,
                    wire_now.status if wire_now is not None and not socket else None,
                    wire_now.headers if wire_now is not None else None,
                    secrets=attempt.prepared.secrets,
                )
            if state is not None and exc.usage is None:
                exc.usage = state.usage  # folded into .partial by EventStream
            retry = not delivered and tries <= policy.max_retries and _should_retry(exc, attempt, policy)
            if not retry:
                exc.attempts = tries
            if call is not None and hooks is not None:
                await hooks.error(call, exc, _partial(state, kept))
            if retry:
                await attempt.close()
                await _backoff(ctx, tries, exc, total_at, route.name)
                continue
            raise
        except BaseException as exc:  # ``break`` / ``aclose()`` (GeneratorExit), cancellation, a bug
            if call is not None and hooks is not None:
                if isinstance(exc, Exception):
                    await hooks.error(call, exc, _partial(state, kept))
                else:
                    await hooks.abort(call, exc, _partial(state, kept))
            raise
        finally:
            await attempt.close()


def _partial(state: Any, kept: list[LLMEvent]) -> CallResult | None:
    """For hooks: what an attempt that ended early had received (no cost: it was not completed)."""
    return None if state is None else CallResult(state.reason, state.usage, state.metadata, kept)


def _scrub(exc: LLMError, secrets: tuple[str, ...]) -> None:
    """Errors raised from inside a stream quote provider text, which may echo a credential."""
    message = redact_text(exc.message, secrets)
    if message != exc.message:
        exc.message = message
        exc.args = (message,)
    if exc.code:
        exc.code = redact_text(exc.code, secrets)
    if isinstance(exc, InvalidProviderOutputError) and exc.raw:
        exc.raw = redact_text(exc.raw, secrets)


def _limit(timeouts: Timeouts, which: str) -> float | None:
    return {"first_byte": timeouts.first_byte, "idle": timeouts.idle, "total": timeouts.total}.get(which)


async def _backoff(ctx: ExecutionContext, tries: int, error: LLMError, total_at: float, route: str) -> None:
    """Wait before the next attempt, or re-raise ``error`` when the total deadline leaves no room."""
    retry_after = getattr(error, "retry_after", None)
    delay = ctx.retry.delay(tries, retry_after)
    what = str(error)
    if anyio.current_time() + delay >= total_at:
        error.attempts = tries
        raise error
    log.info(
        "llmroute: %s attempt %d failed (%s); retrying in %.2fs (%d retries left)",
        route,
        tries,
        redact_text(what),
        delay,
        ctx.retry.max_retries - tries,
    )
    await ctx.sleep(delay)
