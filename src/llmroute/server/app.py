"""The OpenAI-compatible gateway as an ASGI app (Starlette): ``create_app(gateway)``.

- ``POST /v1/chat/completions`` and ``POST /v1/responses`` (streamed and not; stateless: no
  ``previous_response_id``), and ``GET /v1/models`` (public entries only).
- Every request needs ``Authorization: Bearer <key>`` with one of the configured keys, compared in
  constant time (digests of equal length, every key checked).
- Bodies above ``maxBodyBytes`` are refused with 413 before they are read whole.
- The configured server ``web_search`` runs inside each chain per its inject policy; its calls
  never reach the client (streamed, they show as SSE comments).
- Failures are OpenAI-style ``{"error": {"message", "type", "param", "code"}}`` bodies with the
  matching status; messages are scrubbed of every secret the gateway knows, and never carry a
  stack trace or an upstream URL.

Stateless: any number of instances can serve behind a load balancer.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import re
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any, Protocol, TypeVar

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ..client import Client
from ..route.redact import redact_text
from ..schema.content import ToolCallPart
from ..schema.cost import Cost
from ..schema.errors import (
    AuthenticationError,
    ContentPolicyError,
    ContextOverflowError,
    InvalidRequestError,
    LLMError,
    NoRouteError,
    QuotaExceededError,
    RateLimitError,
    TimeoutError,
)
from ..schema.events import Finish, LLMEvent, ReasoningDelta, StepFinish, TextDelta, ToolCall, ToolResult
from ..schema.request import LLMRequest
from ..schema.response import steps_cost
from ..schema.usage import Usage
from ..stream import EventStream
from . import chat, responses
from .config import Gateway

__all__ = ["create_app", "error_body"]

log = logging.getLogger("llmroute.server")

_encode = msgspec.json.Encoder().encode
# Upstream URLs say where the gateway's providers live: never echoed to a client.
_URL = re.compile(r"\b(?:https?|wss?)://[^\s\"'<>]+")


class _Spend:
    """A streamed run's step usages and server-tool results, priced once at its end (never per event)."""

    __slots__ = ("results", "usages")

    def __init__(self) -> None:
        self.usages: list[Usage] = []
        self.results: list[ToolResult] = []

    def add(self, step: StepFinish) -> None:
        if step.usage is not None:
            self.usages.append(step.usage)

    def cost(self, events: EventStream, finish: Finish | None) -> Cost | None:
        usages = self.usages or ([finish.usage] if finish is not None and finish.usage is not None else [])
        return steps_cost(events.provider, events.model_id, usages, self.results)


class _Refused(Exception):
    """A request the gateway refuses itself (auth, size, unknown model)."""

    def __init__(self, status: int, message: str, type: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code = status, message, type, code


def error_body(message: str, type: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def _json(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_encode(value), status, headers, media_type="application/json")


def _upstream_error(exc: LLMError, secrets: tuple[str, ...]) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Status, OpenAI-style body and headers for a failure of the upstream call."""
    message = _URL.sub("<upstream>", redact_text(exc.message, secrets))
    headers: dict[str, str] = {}
    if isinstance(exc, ContextOverflowError):
        return 400, error_body(message, "invalid_request_error", "context_length_exceeded"), headers
    if isinstance(exc, ContentPolicyError):
        return 400, error_body(message, "invalid_request_error", "content_filter"), headers
    if isinstance(exc, NoRouteError):
        return 500, error_body(message, "server_error", "no_route"), headers
    if isinstance(exc, InvalidRequestError):
        return 400, error_body(message, "invalid_request_error", exc.code), headers
    if isinstance(exc, QuotaExceededError):
        headers["x-should-retry"] = "false"
        return 429, error_body(message, "insufficient_quota", "insufficient_quota"), headers
    if isinstance(exc, RateLimitError):
        if exc.retry_after is not None:
            headers["retry-after"] = str(max(1, round(exc.retry_after)))
        return 429, error_body(message, "rate_limit_error", "rate_limit_exceeded"), headers
    if isinstance(exc, AuthenticationError):
        # the gateway's own upstream credentials: not the client's fault, and retrying will not help
        headers["x-should-retry"] = "false"
        return 502, error_body("upstream authentication failed", "upstream_error", "upstream_auth"), headers
    if isinstance(exc, TimeoutError):
        return 504, error_body(message, "upstream_error", "upstream_timeout"), headers
    return 502, error_body(message, "upstream_error", exc.code), headers


def _comment(event: ToolCall | ToolResult) -> bytes:
    """A server tool's call or result as an SSE comment: visible on the wire, ignored by clients."""
    if isinstance(event, ToolCall):
        return b": " + event.name.encode() + b" call " + _encode(event.input) + b"\n\n"
    return b": " + event.name.encode() + b" result " + (b"error" if event.is_error else b"done") + b"\n\n"


class _Payload(Protocol):
    """What the gateway reads of either endpoint's decoded body."""

    @property
    def model(self) -> str: ...
    @property
    def stream(self) -> bool: ...


_P = TypeVar("_P", bound=_Payload)


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


class _Gateway:
    def __init__(self, gateway: Gateway, client: Client | None) -> None:
        self.config = gateway
        self.client = client
        self._own_client = client is None
        self._keys = tuple(_digest(k) for k in gateway.keys)
        self._public = frozenset(gateway.public)
        search = gateway.web_search
        self.tools: list[Any] | None = [search] if search is not None else None
        self.hidden = frozenset({search.definition.name}) if search is not None else frozenset[str]()

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncGenerator[None, None]:
        if self.client is None:
            self.client = Client()
        try:
            yield
        finally:
            if self._own_client:
                await self.client.aclose()
                self.client = None

    # -- checks -----------------------------------------------------------------------------------

    def authorize(self, request: Request) -> None:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        given = _digest(token.strip() if scheme.lower() == "bearer" else "")
        ok = False
        for key in self._keys:  # every key, always: the time does not say which one matched
            ok |= hmac.compare_digest(given, key)
        if not ok:
            raise _Refused(401, "invalid or missing API key", "invalid_request_error", "invalid_api_key")

    async def body(self, request: Request) -> bytes:
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _Refused(
                413, f"request body exceeds {limit} bytes", "invalid_request_error", "body_too_large"
            )
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _Refused(
                    413, f"request body exceeds {limit} bytes", "invalid_request_error", "body_too_large"
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def model(self, name: str) -> Any:
        if name not in self._public:
            raise _Refused(
                404, f"the model {name!r} does not exist", "invalid_request_error", "model_not_found"
            )
        return self.config.models[name]

    def failure(self, exc: Exception) -> Response:
        if isinstance(exc, _Refused):
            return _json(error_body(exc.message, exc.type, exc.code), exc.status)
        if isinstance(exc, LLMError):
            status, body, headers = _upstream_error(exc, self.config.secrets)
            return _json(body, status, headers)
        log.error("gateway: unexpected %s", type(exc).__name__, exc_info=exc)
        return _json(error_body("internal server error", "server_error"), 500)

    # -- endpoints --------------------------------------------------------------------------------

    async def models(self, request: Request) -> Response:
        try:
            self.authorize(request)
        except _Refused as exc:
            return self.failure(exc)
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": self.config.models[name].provider}
            for name in self.config.public
        ]
        return _json({"object": "list", "data": data})

    async def _open(self, events: EventStream) -> LLMEvent:
        """The first event: an upstream failure before it is still a plain error response."""
        try:
            return await events.__anext__()
        except BaseException:
            await events.aclose()
            raise

    def _stream(self, body: AsyncGenerator[bytes, None]) -> StreamingResponse:
        return StreamingResponse(
            body,
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def _start(
        self,
        request: Request,
        decode: Callable[[bytes], _P],
        lower: Callable[[_P, Any], LLMRequest],
    ) -> tuple[_P, EventStream]:
        """Either endpoint: check the caller, read and lower the body, start the upstream run."""
        self.authorize(request)
        payload = decode(await self.body(request))
        llm_request = lower(payload, self.model(payload.model))
        assert self.client is not None, "the app's lifespan creates the client"
        return payload, self.client.stream(llm_request, tools=self.tools)

    async def chat_completions(self, request: Request) -> Response:
        try:
            payload, events = await self._start(request, chat.decode_request, chat.to_llm_request)
            if not payload.stream:
                response = await events.response()
                return _json(chat.completion(response, payload.model, self.hidden))
            first = await self._open(events)
        except Exception as exc:
            return self.failure(exc)
        include_usage = payload.stream_options is not None and payload.stream_options.include_usage
        return self._stream(self._sse(first, events, payload.model, include_usage))

    async def responses(self, request: Request) -> Response:
        try:
            payload, events = await self._start(request, responses.decode_request, responses.to_llm_request)
            if not payload.stream:
                response = await events.response()
                return _json(responses.response_object(response, payload.model, self.hidden))
            first = await self._open(events)
        except Exception as exc:
            return self.failure(exc)
        return self._stream(self._responses_sse(first, events, payload.model))

    def _responses_sse(self, first: LLMEvent, events: EventStream, model: str) -> AsyncGenerator[bytes, None]:
        """Responses streaming events: one message item per run of text (closed when a tool call
        comes between), client function calls as whole items, then ``response.completed``."""
        id, created = responses.new_id("resp"), int(time.time())
        sequence = 0
        output: list[dict[str, Any]] = []
        text_id: str | None = None
        text: list[str] = []
        finish: Finish | None = None
        spend = _Spend()

        def event(type: str, **fields: Any) -> bytes:
            nonlocal sequence
            sequence += 1
            body = {"type": type, "sequence_number": sequence, **fields}
            return b"event: " + type.encode() + b"\ndata: " + _encode(body) + b"\n\n"

        def close_text(out: list[bytes]) -> None:
            nonlocal text_id
            if text_id is None:
                return
            index, full = len(output), "".join(text)
            part: dict[str, Any] = {"type": "output_text", "text": full, "annotations": []}
            item = responses.message_item(text_id, full)
            out.append(
                event(
                    "response.output_text.done",
                    item_id=text_id,
                    output_index=index,
                    content_index=0,
                    text=full,
                )
            )
            out.append(
                event(
                    "response.content_part.done",
                    item_id=text_id,
                    output_index=index,
                    content_index=0,
                    part=part,
                )
            )
            out.append(event("response.output_item.done", output_index=index, item=item))
            output.append(item)
            text_id = None
            text.clear()

        def render(ev: LLMEvent, out: list[bytes]) -> None:
            nonlocal text_id, finish
            if isinstance(ev, TextDelta):
                if text_id is None:
                    text_id = responses.new_id("msg")
                    item: dict[str, Any] = {
                        "type": "message",
                        "id": text_id,
                        "status": "in_progress",
                        "role": "assistant",
                        "content": [],
                    }
                    part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
                    out.append(event("response.output_item.added", output_index=len(output), item=item))
                    out.append(
                        event(
                            "response.content_part.added",
                            item_id=text_id,
                            output_index=len(output),
                            content_index=0,
                            part=part,
                        )
                    )
                text.append(ev.text)
                out.append(
                    event(
                        "response.output_text.delta",
                        item_id=text_id,
                        output_index=len(output),
                        content_index=0,
                        delta=ev.text,
                    )
                )
            elif isinstance(ev, ToolCall) and not ev.provider_executed:
                close_text(out)
                if ev.name in self.hidden:
                    out.append(_comment(ev))
                else:
                    item = responses.call_item(ToolCallPart(ev.id, ev.name, ev.input))
                    out.append(event("response.output_item.added", output_index=len(output), item=item))
                    out.append(event("response.output_item.done", output_index=len(output), item=item))
                    output.append(item)
            elif isinstance(ev, ToolResult) and ev.name in self.hidden:
                out.append(_comment(ev))
                spend.results.append(ev)
            elif isinstance(ev, StepFinish):
                spend.add(ev)
            elif isinstance(ev, Finish):
                finish = ev

        def failed(error: dict[str, Any]) -> bytes:
            body = responses.envelope(id, model, created, "failed", output)
            body["error"] = error["error"]
            return event("response.failed", response=body)

        def end() -> bytes:
            out: list[bytes] = []
            close_text(out)
            state, incomplete = responses.status(finish.reason if finish is not None else "stop")
            usage = responses.usage(finish.usage if finish is not None else None, spend.cost(events, finish))
            done = responses.envelope(id, model, created, state, output, usage, incomplete)
            kind = "response.completed" if state == "completed" else "response.incomplete"
            return b"".join(out) + event(kind, response=done)

        created_event = event(
            "response.created", response=responses.envelope(id, model, created, "in_progress", [])
        )
        return self._relay(first, events, created_event, render, failed, end)

    def _sse(
        self, first: LLMEvent, events: EventStream, model: str, include_usage: bool
    ) -> AsyncGenerator[bytes, None]:
        id, created = chat.new_id(), int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            body: dict[str, Any] = {
                "id": id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [choice],
            }
            return b"data: " + _encode(body) + b"\n\n"

        finish: Finish | None = None
        spend = _Spend()
        tool_index = 0

        def render(event: LLMEvent, out: list[bytes]) -> None:
            nonlocal finish, tool_index
            if isinstance(event, TextDelta):
                out.append(chunk({"content": event.text}))
            elif isinstance(event, ReasoningDelta):
                out.append(chunk({"reasoning_content": event.text}))
            elif isinstance(event, ToolCall) and not event.provider_executed:
                if event.name in self.hidden:
                    out.append(_comment(event))
                else:
                    out.append(chunk({"tool_calls": [chat.tool_call(event, tool_index)]}))
                    tool_index += 1
            elif isinstance(event, ToolResult) and event.name in self.hidden:
                out.append(_comment(event))
                spend.results.append(event)
            elif isinstance(event, StepFinish):
                spend.add(event)
            elif isinstance(event, Finish):
                finish = event

        def failed(error: dict[str, Any]) -> bytes:
            return b"data: " + _encode(error) + b"\n\n"

        def end() -> bytes:
            reason = chat.finish_reason(finish.reason) if finish is not None else "stop"
            tail = [chunk({}, reason)]
            if include_usage:
                body: dict[str, Any] = {
                    "id": id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": chat.usage(
                        finish.usage if finish is not None else None, spend.cost(events, finish)
                    ),
                }
                tail.append(b"data: " + _encode(body) + b"\n\n")
            tail.append(b"data: [DONE]\n\n")
            return b"".join(tail)

        return self._relay(first, events, chunk({"role": "assistant", "content": ""}), render, failed, end)

    async def _relay(
        self,
        first: LLMEvent,
        events: EventStream,
        opening: bytes,
        render: Callable[[LLMEvent, list[bytes]], None],
        failed: Callable[[dict[str, Any]], bytes],
        end: Callable[[], bytes],
    ) -> AsyncGenerator[bytes, None]:
        """The streaming loop of both endpoints, whose wire formats are the callbacks: ``render``
        appends an event's bytes, ``failed`` turns an error body (upstream, scrubbed; or a generic
        one for a bug) into the stream's last bytes, ``end`` gives the last bytes after a finish.
        One write per upstream read (a batch of events), not one per event."""
        out = [opening]
        render(first, out)
        try:
            async for batch in events.batches():
                for event in batch:
                    render(event, out)
                if out:
                    yield b"".join(out)
                    out = []
        except LLMError as exc:
            _, body, _ = _upstream_error(exc, self.config.secrets)
            yield b"".join(out) + failed(body)
            return
        except Exception as exc:  # a bug: the client gets a generic error, the log the details
            log.error("gateway: unexpected %s while streaming", type(exc).__name__, exc_info=exc)
            yield b"".join(out) + failed(error_body("internal server error", "server_error"))
            return
        finally:
            await events.aclose()
        yield b"".join(out) + end()


def create_app(gateway: Gateway, *, client: Client | None = None) -> Starlette:
    """The ASGI app. ``client`` is the ``llmroute.Client`` upstream calls go through (default: one
    the app opens at startup and closes at shutdown)."""
    state = _Gateway(gateway, client)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        message = "not found" if status == 404 else "method not allowed" if status == 405 else "bad request"
        return _json(error_body(message, "invalid_request_error", None), status)

    return Starlette(
        routes=[
            Route("/v1/chat/completions", state.chat_completions, methods=["POST"]),
            Route("/v1/responses", state.responses, methods=["POST"]),
            Route("/v1/models", state.models, methods=["GET"]),
        ],
        exception_handlers={HTTPException: not_found},
        lifespan=state.lifespan,
    )
