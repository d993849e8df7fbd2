"""Run one ``client.embed`` call: split the inputs, send the slices concurrently, keep the order.

- **Slices.** The inputs are cut, in order, into slices of at most the protocol's ``max_inputs``
  and (where the API caps tokens per request) ``max_bytes`` of UTF-8: every token is at least one
  byte, so a slice under the byte cap is under the token cap, whatever the tokenizer. An input
  larger than the cap on its own is sent alone (the provider decides).
- **Concurrency.** At most ``limit`` requests are in flight (``Client.embed(max_concurrency=)``),
  within the client's connection pool; each finished slice is copied into the one result buffer
  at its place and dropped, so the order is the inputs' whatever the completion order.
- **Failures.** Each request has the chat calls' retries and deadlines (``first_byte`` and
  ``idle`` per request, ``total`` over the whole call). Embedding a text twice has no side
  effect, so a connection reset after the request was written is retried too. When a slice fails
  for good, the others are cancelled and its typed error is raised, naming the slice
  (``error.embed_slice``, ``inputs[2048:4096]`` in the message) and carrying the usage of the
  slices that had completed (they were billed).
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Iterator, Mapping, Sequence

import anyio
import httpx

from ..schema.embedding import EmbeddingResponse, Embeddings
from ..schema.errors import (
    InvalidProviderOutputError,
    InvalidRequestError,
    LLMError,
    ResponseTooLargeError,
    TransportError,
)
from ..schema.notices import RequestWarning
from ..schema.usage import Usage
from .classify import is_web_page
from .decoding import output_error
from .embedding import Decoded, EmbeddingModel, EmbedOptions, prepare_embedding
from .executor import DEFAULT_MAX_WHOLE_BODY_BYTES, ExecutionContext, backoff, deadline_error, read_refusal
from .hooks import EmbedInfo
from .prepared import PreparedRequest
from .redact import collect_secrets, redact_text, secrets_in_scope
from .transport import Wire, may_resend, transport_error

__all__ = ["DEFAULT_EMBED_CONCURRENCY", "MAX_BYTES_PER_INPUT", "run_embed", "slices"]

DEFAULT_EMBED_CONCURRENCY = 8
"""Requests one ``client.embed`` call keeps in flight at most (``max_concurrency=``)."""
MAX_BYTES_PER_INPUT = 256 * 1024
"""Unless ``max_response_bytes`` is set, an answer may hold this much per input (a 3,072-float
vector is about 70 KB in JSON), or 64 MiB in all when that is more."""


def slices(inputs: Sequence[str], max_inputs: int, max_bytes: int | None) -> list[tuple[int, int]]:
    """``(start, stop)`` of each request, in order: at most ``max_inputs`` inputs and (unless a
    single input is larger on its own) ``max_bytes`` UTF-8 bytes each."""
    out: list[tuple[int, int]] = []
    start = size = 0
    for i, text in enumerate(inputs):
        n = len(text) if text.isascii() else _utf8_size(text, i)
        if i > start and (i - start >= max_inputs or (max_bytes is not None and size + n > max_bytes)):
            out.append((start, i))
            start, size = i, 0
        size += n
    out.append((start, len(inputs)))
    return out


def _utf8_size(text: str, index: int) -> int:
    try:
        return len(text.encode())
    except UnicodeEncodeError as exc:  # a lone surrogate (a str sliced inside a pair, bad decoding)
        raise InvalidRequestError(
            f"inputs[{index}]: character {exc.start} is a lone surrogate, which has no UTF-8 form",
            param=f"inputs[{index}]",
        ) from None


async def run_embed(
    ctx: ExecutionContext,
    model: EmbeddingModel,
    inputs: tuple[str, ...],
    options: EmbedOptions,
    warnings: tuple[RequestWarning, ...],
    limit: int,
) -> EmbeddingResponse:
    """The whole call on ``model``: every slice sent (``limit`` at a time), reassembled in order."""
    protocol = model.route.protocol
    call = _Call(ctx, model, inputs, options, slices(inputs, protocol.max_inputs, protocol.max_bytes))
    await call.run(limit)
    return EmbeddingResponse(
        vectors=call.vectors(),
        model=model.id,
        provider=model.provider,
        usage=call.usage,
        response_model=call.response_model,
        warnings=warnings,
        requests=len(call.slices),
    )


class _Call:
    """One embed call across its slices: their results, in place, and the first failure."""

    __slots__ = (
        "ctx",
        "data",
        "dimensions",
        "failure",
        "inputs",
        "model",
        "options",
        "reported",
        "response_model",
        "slices",
        "total_at",
        "unreported",
    )

    def __init__(
        self,
        ctx: ExecutionContext,
        model: EmbeddingModel,
        inputs: tuple[str, ...],
        options: EmbedOptions,
        cut: list[tuple[int, int]],
    ) -> None:
        self.ctx = ctx
        self.model = model
        self.inputs = inputs
        self.options = options
        self.slices = cut
        self.data: array[float] | None = None  # every vector, allocated when the first slice lands
        self.dimensions = 0
        self.failure: LLMError | None = None
        self.reported: Usage | None = None  # the usage of the slices done so far
        self.unreported = False  # a slice came back without usage: the call's usage is unknown
        self.response_model: str | None = None
        total = ctx.timeouts.total
        self.total_at = anyio.current_time() + total if total is not None else float("inf")

    @property
    def usage(self) -> Usage | None:
        return None if self.unreported else self.reported

    async def run(self, limit: int) -> None:
        if len(self.slices) == 1:
            self.landed(0, await self.send(0))
            return
        pending = iter(range(len(self.slices)))
        async with anyio.create_task_group() as group:
            for _ in range(min(limit, len(self.slices))):
                group.start_soon(self.worker, pending, group.cancel_scope)
        if self.failure is not None:
            raise self.failure

    async def worker(self, pending: Iterator[int], scope: anyio.CancelScope) -> None:
        for k in pending:  # one shared iterator: each slice is taken by exactly one worker
            try:
                self.landed(k, await self.send(k))
            except LLMError as exc:
                if self.failure is None:
                    self.failure = exc
                scope.cancel()  # the other slices stop: the call has failed
                return

    def landed(self, k: int, decoded: Decoded) -> None:
        """Slice ``k``'s vectors, copied into their place in the one buffer."""
        start, stop = self.slices[k]
        d = decoded.dimensions
        if self.data is None:
            self.dimensions = d
            if len(self.slices) == 1:
                self.data = decoded.vectors  # the answer's own buffer: nothing to copy
            else:
                self.data = array("f", [0.0]) * (len(self.inputs) * d)
        elif d != self.dimensions:
            raise self.named(
                k,
                InvalidProviderOutputError(
                    f"{self.model.route.protocol.name}: {d} dimensions, the other answers have "
                    f"{self.dimensions}",
                    code="bad_shape",
                ),
            )
        if self.data is not decoded.vectors:
            self.data[start * d : stop * d] = decoded.vectors
        if decoded.usage is None:
            self.unreported = True
        else:
            self.reported = decoded.usage if self.reported is None else self.reported + decoded.usage
        if self.response_model is None:
            self.response_model = decoded.model

    def vectors(self) -> Embeddings:
        assert self.data is not None
        return Embeddings(self.data, self.dimensions)

    def named(self, k: int, error: LLMError) -> LLMError:
        """``error`` as the call's: the failed slice named, the completed slices' usage kept."""
        start, stop = self.slices[k]
        error.embed_slice = (start, stop)
        if len(self.slices) > 1:
            error.message = f"inputs[{start}:{stop}] (request {k + 1} of {len(self.slices)}): {error.message}"
            error.args = (error.message,)
        if error.usage is None:
            error.usage = self.reported
        if error.provider is None:
            error.provider = self.model.provider
        return error

    # one slice -----------------------------------------------------------------------------------

    async def send(self, k: int) -> Decoded:
        """Slice ``k`` with its retries; the failure that ends them is named (``named``)."""
        start, stop = self.slices[k]
        texts = self.inputs[start:stop]
        ctx = self.ctx
        tries = 0
        while True:
            tries += 1
            info = EmbedInfo(self.model, self.options, (start, stop), tries) if ctx.hooks else None
            resend: bool | None = None  # set for a transport failure: whether it may be sent again
            try:
                decoded = await self.attempt(texts, info)
            except _Unsent as exc:
                error, resend = exc.error, exc.resend
            except LLMError as exc:
                error = exc
            except BaseException as exc:  # cancelled (another slice failed) or a bug
                await self.ended(info, exc)
                raise
            else:
                await self.ended(info, None)
                return decoded
            await self.ended(info, error)
            if tries > ctx.retry.max_retries or not self.retries(error, resend):
                error.attempts = tries
                raise self.named(k, error)
            try:
                await backoff(ctx, tries, error, self.total_at, self.model.route.name)
            except LLMError as exc:  # no time left before the total deadline
                raise self.named(k, exc) from None

    def retries(self, error: LLMError, resend: bool | None) -> bool:
        """Whether a failed attempt is sent again (retries left aside): a connection failure by
        ``resend``, a refused answer by its status."""
        if resend is not None:
            return resend and self.ctx.retry.retry_connect
        if not error.retryable or isinstance(error, TransportError):
            return False
        status = error.http.status if error.http is not None else None
        return status is not None and status in self.ctx.retry.statuses

    async def ended(self, info: EmbedInfo | None, error: BaseException | None) -> None:
        hooks = self.ctx.hooks
        if hooks is not None and info is not None:
            await hooks.embed_end(info, error)

    async def attempt(self, texts: Sequence[str], info: EmbedInfo | None) -> Decoded:
        """One request: prepared, sent, read whole and decoded."""
        ctx, route = self.ctx, self.model.route
        prepared = await prepare_embedding(self.model, texts, self.options)
        prepared.secrets = collect_secrets(prepared.headers, prepared.url, prepared.secrets)
        if ctx.hooks is not None and info is not None:
            await ctx.hooks.embed_start(info, prepared)
        reading = _Reading()
        failure: httpx.HTTPError | None = None
        body: bytes = b""
        headers: Mapping[str, str] = {}
        try:
            body, headers = await self.exchange(prepared, reading, len(texts))
        except httpx.HTTPError as exc:
            failure = exc
        if failure is not None:  # outside the except: the typed error keeps no httpx context
            phase = "idle" if reading.started else "first_byte"
            error = transport_error(failure, prepared, phase, ctx.max_connections)
            resend = not reading.started and may_resend(failure, idempotent=True)
            del failure
            raise _Unsent(error, resend)
        protocol = route.protocol
        try:
            decoded = protocol.decode(body, headers, len(texts))
        except LLMError as exc:
            if isinstance(exc, InvalidProviderOutputError) and exc.raw:
                exc.raw = redact_text(exc.raw, prepared.secrets)
            raise
        except Exception as exc:  # a shape the decoder did not foresee: typed, never raw
            raise output_error(exc, protocol.name, body) from None
        if info is not None:
            info.usage, info.dimensions, info.response_model = (
                decoded.usage,
                decoded.dimensions,
                decoded.model,
            )
        return decoded

    async def exchange(
        self, prepared: PreparedRequest, reading: _Reading, count: int
    ) -> tuple[bytes, Mapping[str, str]]:
        """Send ``prepared`` (the first byte by the first-byte deadline, capped by the total) and
        read the whole 2xx body; anything else is its typed error."""
        ctx = self.ctx
        transport = ctx.transports.for_route(self.model.route.transport)
        first_at = min(anyio.current_time() + ctx.timeouts.first_byte, self.total_at)
        which = "total" if first_at >= self.total_at else "first_byte"
        wire: Wire | None = None
        with anyio.CancelScope(deadline=first_at), secrets_in_scope(prepared.secrets):
            wire = await transport.open(prepared, ctx.http_timeout())
        if wire is None:
            raise deadline_error(which, _seconds(ctx, which), prepared)
        try:
            if not 200 <= wire.status < 300 or is_web_page(wire.headers):
                raise await read_refusal(ctx, wire, prepared, first_at, self.model.provider, wire.aclose)
            return await self.read(wire, prepared, first_at, which, reading, count), wire.headers
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await wire.aclose()

    async def read(
        self,
        wire: Wire,
        prepared: PreparedRequest,
        first_at: float,
        which: str,
        reading: _Reading,
        count: int,
    ) -> bytes:
        """The whole body: the first chunk by ``first_at``, each next within the idle gap, all
        within ``max_response_bytes`` (unset: 64 MiB, or ``MAX_BYTES_PER_INPUT`` for each of the
        request's ``count`` inputs when that is more: 2,048 vectors of 3,072 floats in JSON are
        some 140 MB)."""
        ctx = self.ctx
        limit = ctx.max_response_bytes or max(DEFAULT_MAX_WHOLE_BODY_BYTES, count * MAX_BYTES_PER_INPUT)
        body: list[bytes] = []  # joined once at the end: one copy of a body that may be 100 MB
        size = 0
        chunks = wire.chunks().__aiter__()
        deadline, phase = first_at, which
        while True:
            chunk: bytes | None = None
            with anyio.CancelScope(deadline=deadline), secrets_in_scope(prepared.secrets):
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return body[0] if len(body) == 1 else b"".join(body)
            if chunk is None:
                raise deadline_error(phase, _seconds(ctx, phase), prepared)
            reading.started = True
            body.append(chunk)
            size += len(chunk)
            if size > limit:
                raise ResponseTooLargeError(f"response body exceeded max_response_bytes={limit}", limit=limit)
            idle_at = anyio.current_time() + ctx.timeouts.idle
            deadline, phase = (idle_at, "idle") if idle_at < self.total_at else (self.total_at, "total")


class _Reading:
    """How far one attempt's body got (a failure after the first byte is not re-sent)."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = False


class _Unsent(Exception):
    """A transport failure's typed error, and whether the request may be sent again."""

    def __init__(self, error: LLMError, resend: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.resend = resend


def _seconds(ctx: ExecutionContext, which: str) -> float | None:
    t = ctx.timeouts
    return {"first_byte": t.first_byte, "idle": t.idle, "total": t.total}.get(which)
