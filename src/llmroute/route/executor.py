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
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import anyio
import httpx
import msgspec

from ..framing.base import FrameDecoder
from ..schema.errors import (
    InvalidProviderOutputError,
    LLMError,
    RateLimitError,
    ResponseTooLargeError,
    TimeoutError,
    TransportError,
)
from ..schema.events import Finish, LLMEvent, StepFinish, StepStart
from ..schema.request import LLMRequest
from ..schema.usage import Usage
from .classify import from_response, http_context, is_web_page
from .compiler import prepare
from .decoding import output_error
from .hooks import CallInfo, CallResult
from .model import ModelGroup
from .plan import Plan, Step
from .prepared import PreparedRequest
from .protocol import StreamState
from .redact import collect_secrets, get_logger, redact_text, redact_url, secrets_in_scope
from .transport import ClientTransports, HttpWire, Wire, may_resend, transport_error
from .watchdog import Watchdog

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
    """One try: what was sent, how far it got, and what the read loop leaves for its error handling."""

    __slots__ = (
        "call",
        "chunks",
        "decoder",
        "delivered",
        "failure",
        "kept",
        "prepared",
        "read_body",
        "state",
        "timeouts",
        "watchdog",
        "wire",
    )

    def __init__(self, timeouts: Timeouts, call: CallInfo | None = None) -> None:
        self.timeouts = timeouts
        self.call = call  # hooks' view of the attempt (None: no hooks)
        self.kept: list[LLMEvent] = []  # the attempt's events, when a finish hook will fold them
        self.prepared: PreparedRequest | None = None
        self.wire: Wire | None = None
        self.watchdog: Watchdog | None = None
        self.chunks: AsyncIterator[bytes] | None = None
        self.state: StreamState | None = None
        self.decoder: FrameDecoder[Any] | None = None
        self.read_body = False  # a body byte arrived: transport failures are no longer retried
        self.delivered = False  # an event reached the caller: nothing is retried any more
        self.failure: httpx.HTTPError | None = None  # for ``_transport_failed``, outside the ``except``

    def deadline_error(self, which: str) -> TimeoutError:
        """The typed error of a read the watchdog stopped (``which`` deadline)."""
        return _deadline_error(which, _limit(self.timeouts, which), self.prepared)

    async def too_large(self, limit: int) -> None:
        await self.close()  # drop the connection now, never drain the rest
        raise ResponseTooLargeError(f"response body exceeded max_response_bytes={limit}", limit=limit)

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
        watchdog, self.watchdog = self.watchdog, None  # it holds deadline_error: a cycle left to the GC
        if watchdog is not None:
            watchdog.stop()
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


def run_model_step(
    ctx: ExecutionContext,
    request: LLMRequest,
    index: int = 0,
    finish: bool = False,
    loop: LoopInfo | None = None,
) -> AsyncGenerator[list[LLMEvent], None]:
    """``run_step`` on the ``Model`` in ``request.model`` (resolved when the first batch is asked
    for: a request that names no model fails there, as any other error of the call)."""
    return _send(_Run(ctx, request, index, finish, loop))


# The send chain, one concern per rung (as httpx's ``send`` -> ``_send_handling_auth`` -> ...):
#   _send              the attempt loop (retry, backoff) around one attempt's read loop, inline:
#                      the caller iterates this generator, and a generator between would cost
#                      every batch
#   _begin -> _open    one attempt up to its first read: prepare, send under the first-byte
#                      deadline, a refused response as its typed error (``_refused``)
#   _end               the step's last batch: the decoder's tail, on_halt, step-finish, finish
#   _transport_failed  an httpx failure -> its typed error, retried or raised
#   _failed            error decoration (``_decorate``: provider, scrub, HTTP context, usage) and
#                      the retry decision for typed errors; hooks hear of every ending


class _Run:
    """One model call across its attempts: its ``Plan`` (resolved once, when the first batch is
    asked for), the client's body cap and total deadline applied to it, the attempts so far."""

    __slots__ = ("ctx", "finish", "index", "loop", "plan", "request", "total_at", "tries")

    def __init__(
        self, ctx: ExecutionContext, request: LLMRequest, index: int, finish: bool, loop: LoopInfo | None
    ) -> None:
        self.ctx = ctx
        self.request = request
        self.index = index
        self.finish = finish
        self.loop = loop
        self.tries = 0

    def resolve(self) -> tuple[Step, int | None, float, float]:
        """Resolve the call; returns the read loop's constants: the parser's entry point, the body
        cap, the idle gap and when the total deadline falls."""
        plan = self.plan = Plan.of(self.request)
        limit = self.ctx.max_response_bytes
        if limit is None and not plan.streaming:
            limit = DEFAULT_MAX_WHOLE_BODY_BYTES
        timeouts = self.ctx.timeouts
        self.total_at = anyio.current_time() + timeouts.total if timeouts.total is not None else math.inf
        return plan.step, limit, timeouts.idle, self.total_at

    def attempts(self) -> Iterator[_Attempt]:
        """A new attempt each time the previous one is retried (the attempt loop ends the call)."""
        while True:
            self.tries += 1
            call = None
            if self.ctx.hooks is not None:
                plan = self.plan
                call = CallInfo(
                    self.request,
                    plan.model,
                    self.tries,
                    self.index,
                    plan.streaming,
                    self.loop,
                    plan.generation,
                )
            yield _Attempt(self.ctx.timeouts, call)


async def _send(run: _Run) -> AsyncGenerator[list[LLMEvent], None]:
    """The attempt loop around one attempt's read loop (kept inline: see the chain above)."""
    step, limit, idle, total_at = run.resolve()
    for attempt in run.attempts():
        call, kept, hooks = attempt.call, attempt.kept, run.ctx.hooks
        try:
            try:
                state, out, feed, read, guarded, scope, extend = await _begin(run, attempt)
                received, pending = 0, 1  # step-start waits for the first real event (so it can retry)
                while True:
                    try:
                        with scope:
                            chunk = await guarded(read)
                    except StopAsyncIteration:
                        break
                    attempt.read_body = True
                    if limit is not None and (received := received + len(chunk)) > limit:
                        await attempt.too_large(limit)
                    frame: Any = None
                    try:
                        for frame in feed(chunk):
                            step(state, frame, out)
                            if state.done:  # what follows the terminal event is ignored, whatever
                                break  # the read boundaries (it used to depend on them)
                    except LLMError:
                        raise
                    except Exception as exc:  # a shape the parser did not foresee: typed, never raw
                        raise output_error(exc, run.plan.protocol.name, frame) from None
                    if len(out) > pending:
                        attempt.delivered, pending = True, 0
                        if call is not None and hooks is not None:
                            await hooks.batch(call, out, kept)
                        yield out
                        out = []
                    if state.done:
                        break
                    extend(idle, total_at)
                yield await _end(run, attempt, out)
                # Resumed: the consumer read to the end (a ``break`` closed it at the yield): reuse.
                await attempt.drain(min(DRAIN_SECONDS, max(0.0, total_at - anyio.current_time())))
                return
            except httpx.HTTPError as exc:
                attempt.failure = exc
            await _transport_failed(run, attempt)  # raises its typed error, or backs off to retry
        except BaseException as exc:  # a typed error, ``break`` / ``aclose()``, a cancellation, a bug
            if not await _failed(run, attempt, exc):
                raise
        finally:
            await attempt.close()


_Reading = tuple[
    StreamState,
    list[LLMEvent],
    Callable[[bytes], Sequence[Any]],
    Callable[[], Awaitable[bytes]],
    Callable[[Callable[[], Awaitable[bytes]]], Awaitable[bytes]],
    secrets_in_scope,
    Callable[[float, float], None],
]


async def _begin(run: _Run, attempt: _Attempt) -> _Reading:
    """One attempt up to its first read: the wire, opened under the first-byte deadline (capped by
    the total), and what the read loop needs (parser state, first batch, decoder, read, deadline)."""
    timeouts = run.ctx.timeouts
    total_at = run.total_at
    first_at = min(anyio.current_time() + timeouts.first_byte, total_at)
    which = "total" if first_at >= total_at else "first_byte"
    wire: Wire | None = None
    with anyio.CancelScope(deadline=first_at):
        wire = await _open(run, attempt, first_at)
    if wire is None:
        raise _deadline_error(which, _limit(timeouts, which), attempt.prepared)
    prepared = attempt.prepared
    state = attempt.state = run.plan.protocol.new_state(run.request)
    decoder = attempt.decoder = run.plan.framing.decoder()
    out: list[LLMEvent] = [StepStart(run.index, warnings=prepared.warnings if prepared is not None else ())]
    scope = secrets_in_scope(prepared.secrets if prepared is not None else ())  # entered once per read
    chunks: AsyncIterator[bytes] = wire.chunks().__aiter__()
    attempt.chunks = chunks
    watchdog = attempt.watchdog = Watchdog(first_at, which, attempt.deadline_error)
    return state, out, decoder.feed, chunks.__anext__, watchdog.read, scope, watchdog.extend


async def _open(run: _Run, attempt: _Attempt, deadline: float) -> Wire:
    """Prepare, send and return an open 2xx response; a non-2xx becomes its typed error."""
    ctx, call, hooks = run.ctx, attempt.call, run.ctx.hooks
    prepared = await prepare(run.request, run.plan)
    prepared.secrets = collect_secrets(prepared.headers, prepared.url, prepared.secrets)
    attempt.prepared = prepared
    transport = ctx.transports.for_route(run.plan.route.transport)
    if hooks is not None and call is not None:
        await hooks.before_send(call, prepared)  # may add headers (a traceparent)
    log.debug("llmroute: %s %s", prepared.method, redact_url(prepared.url))
    with secrets_in_scope(prepared.secrets):  # what the HTTP stack logs meanwhile is redacted
        wire = attempt.wire = await transport.open(prepared, ctx.http_timeout())  # httpx: _transport_failed
    if hooks is not None and call is not None:
        await hooks.on_response(call, wire.status, wire.headers)
    if 200 <= wire.status < 300 and not is_web_page(wire.headers):
        return wire
    raise await _refused(run, attempt, wire, deadline)


async def _refused(run: _Run, attempt: _Attempt, wire: Wire, deadline: float) -> LLMError:
    """A non-2xx response (or a web page where an API answer belongs) as its typed error, from at
    most ``max_error_bytes`` of its body read within the idle gap."""
    prepared = attempt.prepared
    assert prepared is not None
    ctx = run.ctx
    body = b""
    with anyio.CancelScope(deadline=min(deadline, anyio.current_time() + ctx.timeouts.idle)):
        with contextlib.suppress(httpx.HTTPError), secrets_in_scope(prepared.secrets):
            body = await wire.read_capped(ctx.max_error_bytes)
    await attempt.close()  # never drain a large error body: the connection is dropped instead
    return from_response(
        wire.status,
        wire.headers,
        body,
        method=prepared.method,
        url=prepared.url,
        provider=run.plan.model.provider,
        secrets=prepared.secrets,
    )


async def _end(run: _Run, attempt: _Attempt, out: list[LLMEvent]) -> list[LLMEvent]:
    """The step's last batch: what the decoder still holds, ``on_halt``, step-finish (and finish)."""
    state, decoder, protocol = attempt.state, attempt.decoder, run.plan.protocol
    assert state is not None and decoder is not None
    try:
        if not state.done:
            for frame in decoder.close():
                run.plan.step(state, frame, out)
        protocol.on_halt(state, out)
        state.usage = _served(state.usage, state.metadata)
        out.append(StepFinish(run.index, state.reason, state.usage, state.metadata))
        if run.finish:
            out.append(Finish(state.reason, state.usage, state.metadata))
    except LLMError:
        raise
    except Exception as exc:
        raise output_error(exc, protocol.name) from None
    attempt.delivered = True
    hooks, call = run.ctx.hooks, attempt.call
    if call is not None and hooks is not None:
        await hooks.batch(call, out, attempt.kept)
        await hooks.finish(call, state.reason, state.usage, state.metadata, attempt.kept)
    return out


def _served(usage: Usage | None, metadata: dict[str, Any] | None) -> Usage | None:
    """The step's usage naming the model the response says served it (``Usage.model``), so a cost
    prices what answered (DeepSeek serves ``deepseek-chat`` as ``deepseek-v4-flash``)."""
    model = (metadata or {}).get("model")
    if usage is None or usage.model is not None or not isinstance(model, str) or not model:
        return usage
    return msgspec.structs.replace(usage, model=model)


async def _transport_failed(run: _Run, attempt: _Attempt) -> None:
    """An httpx failure as its typed error: backs off when it is retried, else raises it. Called
    outside the ``except`` block: the typed error must not keep the httpx exception -- which holds
    the request, its Authorization header and raw URL -- as its ``__context__``."""
    failure, attempt.failure = attempt.failure, None
    assert failure is not None
    prepared = attempt.prepared
    if prepared is None:
        raise failure
    phase = "idle" if attempt.read_body else "first_byte"
    error = transport_error(failure, prepared, phase, run.ctx.max_connections)
    retry = _retries(run, attempt, failure)
    del failure
    if not retry:
        raise error
    hooks, call = run.ctx.hooks, attempt.call
    if call is not None and hooks is not None:
        await hooks.error(call, error, _partial(attempt))
    await _backoff(run.ctx, run.tries, error, run.total_at, run.plan.route.name)


async def _failed(run: _Run, attempt: _Attempt, exc: BaseException) -> bool:
    """The attempt ended with ``exc`` (the caller re-raises it unless this returns ``True``: it is
    retried, after the backoff). A typed error is decorated first; hooks hear of every ending."""
    error = exc if isinstance(exc, LLMError) else None
    retry = False
    if error is not None:
        _decorate(run, attempt, error)
        retry = _retries(run, attempt, error)
        if not retry:
            error.attempts = run.tries
    hooks, call = run.ctx.hooks, attempt.call
    if call is not None and hooks is not None:
        if isinstance(exc, Exception):
            await hooks.error(call, exc, _partial(attempt))
        else:  # ``break`` / ``aclose()`` (GeneratorExit), a cancellation
            await hooks.abort(call, exc, _partial(attempt))
    if retry and error is not None:
        await attempt.close()
        await _backoff(run.ctx, run.tries, error, run.total_at, run.plan.route.name)
    return retry


def _decorate(run: _Run, attempt: _Attempt, exc: LLMError) -> None:
    """What any error of the attempt carries: the provider, no known secret, the HTTP context and
    the usage the parser had counted (folded into ``.partial`` by ``EventStream``)."""
    if exc.provider is None:
        exc.provider = run.plan.model.provider
    prepared = attempt.prepared
    _scrub(exc, prepared.secrets if prepared is not None else ())
    if exc.http is None and prepared is not None:
        wire = attempt.wire
        # A message on an open WebSocket has no HTTP status: the error names the socket.
        socket: str | None = getattr(wire, "socket_url", None)
        exc.http = http_context(
            "WEBSOCKET" if socket else prepared.method,
            socket or prepared.url,
            wire.status if wire is not None and not socket else None,
            wire.headers if wire is not None else None,
            secrets=prepared.secrets,
        )
    if attempt.state is not None and exc.usage is None:
        exc.usage = attempt.state.usage


def _retries(run: _Run, attempt: _Attempt, exc: BaseException) -> bool:
    """Whether the attempt's failure is tried again: nothing delivered, retries left, a kind the
    policy retries."""
    policy = run.ctx.retry
    return not attempt.delivered and run.tries <= policy.max_retries and _should_retry(exc, attempt, policy)


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
    # An error event inside a 200 stream (Anthropic overloaded_error, Bedrock throttlingException);
    # a rate-limit one is a 429 said late, retried as the policy retries 429s
    if isinstance(exc, RateLimitError) and 429 not in policy.statuses:
        return False
    return attempt.wire is not None


def _partial(attempt: _Attempt) -> CallResult | None:
    """For hooks: what an attempt that ended early had received (no cost: it was not completed)."""
    state = attempt.state
    return None if state is None else CallResult(state.reason, state.usage, state.metadata, attempt.kept)


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
