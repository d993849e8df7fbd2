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
import math
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ..client import Client
from ..route.model import Model
from ..route.redact import redact_text
from ..router import Router, estimate_tokens
from ..schema import clock
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
from ..schema.events import (
    Finish,
    LLMEvent,
    ReasoningDelta,
    StepFinish,
    StepStart,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    ToolResult,
)
from ..schema.request import LLMRequest
from ..schema.response import LLMResponse, steps_cost
from ..schema.usage import Usage
from ..state import SharedState, open_state
from ..stream import EventStream
from . import chat, responses
from .config import LONG_CONTEXT, Gateway, Key
from .hangup import Gone, unless_gone
from .limits import LimitExceeded, Limits
from .observe import Observer, Preflights
from .pool import upstream_client
from .record import Record
from .request import arguments_json
from .tracing import ServerSpans

if TYPE_CHECKING:
    from .metrics import Metrics

__all__ = ["create_app", "error_body", "scrub"]

log = logging.getLogger("llmroute.server")

_encode = msgspec.json.Encoder().encode
# Upstream URLs say where the gateway's providers live: never echoed to a client.
_URL = re.compile(r"\b(?:https?|wss?)://[^\s\"'<>]+")


class _Spend:
    """A streamed run's step usages and server-tool results, priced once at its end (never per event):
    the client's ``usage.cost``, the access log, the metrics and the key's budget share the figure."""

    __slots__ = ("_priced", "at", "results", "usages")

    def __init__(self) -> None:
        self.usages: list[Usage] = []
        self.results: list[ToolResult] = []
        self._priced: tuple[Cost | None] | None = None
        self.at: datetime | None = None  # when the last step's answer arrived: its prices apply

    def add(self, step: StepFinish) -> None:
        self.at = clock.now()
        if step.usage is not None:
            self.usages.append(step.usage)

    def cost(self, events: EventStream, finish: Finish | None) -> Cost | None:
        if self._priced is None:
            usages = self.usages or (
                [finish.usage] if finish is not None and finish.usage is not None else []
            )
            at = self.at or clock.now()
            self._priced = (steps_cost(events.provider, events.model_id, usages, self.results, at=at),)
        return self._priced[0]


class _Refused(Exception):
    """A request the gateway refuses itself (auth, size, unknown model, limits)."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code = status, message, type, code
        self.headers = headers


def error_body(message: str, type: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def _json(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_encode(value), status, headers, media_type="application/json")


def scrub(text: str, secrets: tuple[str, ...], hosts: tuple[str, ...] = ()) -> str:
    """``text`` without any secret, URL or upstream ``host:port`` (an upstream error body that
    echoes the request's headers names its host)."""
    text = _URL.sub("<upstream>", redact_text(text, secrets))
    for host in hosts:
        if host in text:
            text = text.replace(host, "<upstream>")
    return text


def _upstream_error(
    exc: LLMError, secrets: tuple[str, ...], hosts: tuple[str, ...] = ()
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Status, OpenAI-style body and headers for a failure of the upstream call."""
    status, body, headers = _map_error(exc, scrub(exc.message, secrets, hosts))
    if exc.attempts > 1 and (status == 429 or status >= 500):
        # the gateway already retried: an SDK retrying too would multiply the upstream's load
        headers["x-should-retry"] = "false"
    return status, body, headers


def _map_error(exc: LLMError, message: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    headers: dict[str, str] = {}
    if isinstance(exc, InvalidRequestError) and exc.http is not None and exc.http.status == 404:
        # the upstream does not know the path or model: the operator's config, not the client's request
        text = f"the upstream answered 404 Not Found (check the model entry's base_url and model): {message}"
        return 502, error_body(text, "upstream_error", "upstream_not_found"), headers
    if isinstance(exc, ContextOverflowError):
        return 400, error_body(message, "invalid_request_error", "context_length_exceeded"), headers
    if isinstance(exc, ContentPolicyError):
        return 400, error_body(message, "invalid_request_error", "content_filter"), headers
    if isinstance(exc, NoRouteError) and exc.code == "no_target_available":
        # a route whose every target is cooling down or rate-limited: try again later
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(retry_after, int | float):
            headers["retry-after"] = str(max(1, math.ceil(retry_after)))
        return 503, error_body(message, "server_error", "no_target_available"), headers
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
_T = TypeVar("_T")

# the first event that is the model's answer (time to first token)
_ANSWER = (TextDelta, ReasoningDelta, ToolInputStart, ToolCall)


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


def _warm_catalog(models: list[Model]) -> None:
    """Load the price catalog at startup (a fraction of a second, once per process), not on the
    first request that needs a price; without the extra, costs are the providers' own only."""
    try:
        from .. import catalog

        for model in models:
            catalog.lookup(model.provider, model.id)
    except Exception as exc:  # the extra missing or its data unreadable
        log.info("gateway: no catalog prices (%s); costs are the providers' own only", type(exc).__name__)


def _ready_problem(gateway: Gateway) -> Callable[[], Awaitable[dict[str, str]]]:
    async def check() -> dict[str, str]:
        from .health import readiness

        return await readiness(gateway)

    return check


class _Gateway:
    def __init__(self, gateway: Gateway, client: Client | None, metrics: Metrics | None) -> None:
        self.config = gateway
        self.client = client
        self._own_client = client is None
        self._keys = gateway.keys
        self._public = frozenset(gateway.public)
        self._hosts = gateway.upstream_hosts
        search = gateway.web_search
        self.tools: list[Any] | None = [search] if search is not None else None
        self.hidden = frozenset({search.definition.name}) if search is not None else frozenset[str]()
        self.metrics = metrics
        self.observer = Observer(metrics, gateway.access_log)
        self.ready = _ready_problem(gateway)
        self.limits: Limits | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncGenerator[None, None]:
        http = None
        if self.client is None:
            http = upstream_client()
            self.client = Client(http)
        await anyio.to_thread.run_sync(_warm_catalog, list(self.config.models.values()))
        stop_telemetry = None
        if self.config.otel:
            from . import otel

            stop_telemetry = otel.start(self.config.capture_content)
        state: SharedState | None = self.config.state  # the routes' (one shared-state layer)
        if any(key.limited for key in self._keys):
            state = state or open_state(self.config.redis_url)
            self.limits = Limits(state)
        try:
            yield
        finally:
            if stop_telemetry is not None:
                stop_telemetry()
            if state is not None:
                await state.aclose()
            if self._own_client:
                await self.client.aclose()
                self.client = None
                if http is not None:
                    await http.aclose()

    # -- checks -----------------------------------------------------------------------------------

    def authorize(self, request: Request, record: Record | None = None) -> Key:
        """The caller's key, from ``Authorization: Bearer`` or ``x-api-key``."""
        header = request.headers.get("authorization")
        if header is not None:
            scheme, _, token = header.partition(" ")
            token = token.strip() if scheme.lower() == "bearer" else ""
        else:
            token = request.headers.get("x-api-key", "").strip()
        given = _digest(token)
        found: Key | None = None
        for key in self._keys:  # every key, always: the time does not say which one matched
            if hmac.compare_digest(given, key.digest):
                found = key
        if found is None or not token:
            raise _Refused(401, "invalid or missing API key", "invalid_request_error", "invalid_api_key")
        if record is not None:
            record.key = found.id
        return found

    async def body(self, request: Request) -> bytes:
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _Refused(
                413, f"request body exceeds {limit} bytes", "invalid_request_error", "body_too_large"
            )
        chunks: list[bytes] = []
        size = 0
        seconds = self.config.body_timeout
        with anyio.move_on_after(seconds) as scope:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _Refused(
                        413, f"request body exceeds {limit} bytes", "invalid_request_error", "body_too_large"
                    )
                chunks.append(chunk)
        if scope.cancelled_caught:
            raise _Refused(
                408,
                f"request body not received within {seconds:g} s",
                "invalid_request_error",
                "body_timeout",
            )
        return b"".join(chunks)

    def model(self, name: str, key: Key) -> Model | Router:
        if name not in self._public:
            raise _Refused(
                404, f"the model {name!r} does not exist", "invalid_request_error", "model_not_found"
            )
        if key.models is not None and name not in key.models:
            raise _Refused(
                403,
                f"the key {key.id!r} may not use the model {name!r}",
                "permission_error",
                "model_not_allowed",
            )
        route = self.config.routes.get(name)
        return route if route is not None else self.config.models[name]

    def routed(self, model: Model | Router, request: LLMRequest) -> LLMRequest:
        """A route's request whose input is estimated over ``longContextThreshold`` goes to the
        ``longcontext`` route instead."""
        if not isinstance(model, Router) or model.id == LONG_CONTEXT:
            return request
        long = self.config.routes.get(LONG_CONTEXT)
        threshold = self.config.long_context_threshold
        if long is None or threshold is None or estimate_tokens(request) <= threshold:
            return request
        return msgspec.structs.replace(request, model=long)

    def answered(self, record: Record, target: str | None) -> None:
        """Through a route: the access log and pricing name the target that answered (or, on a
        failure, the one that failed last)."""
        router = record.served
        if not isinstance(router, Router) or target is None:
            return
        model = router.target_model(target)
        if model is not None:
            record.served = model
            record.target = f"{router.id}:{model.provider}/{model.id}"

    def failure(self, exc: Exception, record: Record, upstream: bool = False) -> Response:
        if isinstance(exc, _Refused):
            record.status, record.error = exc.status, exc.code or exc.type
            return _json(error_body(exc.message, exc.type, exc.code), exc.status, exc.headers)
        if isinstance(exc, LLMError):
            self.answered(record, exc.route_target)  # through a route: the target that failed last
            status, body, headers = _upstream_error(exc, self.config.secrets, self._hosts)
            record.status, record.error = status, type(exc).__name__
            if upstream:
                self.observer.upstream_failure(
                    record, type(exc).__name__, status, exc.attempts, body["error"]["message"]
                )
            return _json(body, status, headers)
        log.error("gateway: unexpected %s", type(exc).__name__, exc_info=exc)
        record.status, record.error = 500, type(exc).__name__
        return _json(error_body("internal server error", "server_error"), 500)

    # -- endpoints --------------------------------------------------------------------------------

    async def health(self, _request: Request) -> Response:
        return _json({"status": "ok"})

    async def health_ready(self, _request: Request) -> Response:
        problems = await self.ready()
        if problems:
            return _json({"status": "unavailable", "problems": problems}, 503)
        return _json({"status": "ready"})

    async def metrics_text(self, _request: Request) -> Response:
        if self.metrics is None:
            return _json(
                error_body(
                    "metrics are off (config metrics: false, or pip install 'llmroute[metrics]')",
                    "invalid_request_error",
                    "metrics_off",
                ),
                404,
            )
        from .metrics import CONTENT_TYPE

        return Response(self.metrics.render(), 200, {"content-type": CONTENT_TYPE})

    def _model_object(self, name: str) -> dict[str, Any]:
        model = self.config.routes.get(name) or self.config.models[name]
        return {"id": name, "object": "model", "created": 0, "owned_by": model.provider}

    async def models(self, request: Request) -> Response:
        record = Record("/v1/models", "GET")
        try:
            key = self.authorize(request, record)
        except _Refused as exc:
            return self._finish(record, self.failure(exc, record))
        names = [n for n in self.config.public if key.models is None or n in key.models]
        return self._finish(record, _json({"object": "list", "data": [self._model_object(n) for n in names]}))

    async def model_info(self, request: Request) -> Response:
        record = Record("/v1/models/{id}", "GET")
        try:
            key = self.authorize(request, record)
            name = request.path_params["id"]
            self.model(name, key)
            record.model = name
        except _Refused as exc:
            return self._finish(record, self.failure(exc, record))
        return self._finish(record, _json(self._model_object(name)))

    async def _admit(self, key: Key, record: Record) -> None:
        assert self.limits is not None, "the lifespan sets up limits when a key has them"
        try:
            await self.limits.admit(key)
        except LimitExceeded as exc:
            headers: dict[str, str] = {}
            if exc.retry_after is not None:
                headers["retry-after"] = str(max(1, math.ceil(exc.retry_after)))
            if exc.code == "budget_exceeded":
                headers["x-should-retry"] = "false"
                raise _Refused(429, exc.message, "insufficient_quota", exc.code, headers) from None
            raise _Refused(429, exc.message, "rate_limit_error", exc.code, headers) from None
        record.limited = key

    async def _usage(self, record: Record, usage: Usage | None, cost: Cost | None) -> None:
        """Note a finished run's usage and cost; charge them to the key's limits."""
        if usage is None:
            return
        total = cost.total if cost is not None else None
        record.usage(usage, total)
        if record.limited is not None and self.limits is not None:
            with anyio.CancelScope(shield=True):  # spent upstream even if the client has gone
                await self.limits.charge(record.limited, usage.total_tokens, total)

    def _finish(self, record: Record, response: Response) -> Response:
        self.observer.done(record)
        return response

    def _open(self, events: EventStream) -> Awaitable[LLMEvent]:
        """The first event: an upstream failure before it is still a plain error response."""

        async def first() -> LLMEvent:
            try:
                return await events.__anext__()
            except BaseException:
                await events.aclose()
                raise

        return first()

    def _stream(self, body: AsyncGenerator[bytes, None]) -> StreamingResponse:
        return StreamingResponse(
            body,
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def _serve(
        self,
        request: Request,
        record: Record,
        decode: Callable[[bytes], _P],
        lower: Callable[[_P, Any], LLMRequest],
        whole: Callable[[LLMResponse, _P], dict[str, Any]],
        streamed: Callable[[LLMEvent, EventStream, _P, Record], AsyncGenerator[bytes, None]],
    ) -> Response:
        """Either endpoint: check the caller, read and lower the body, run the upstream call, answer
        whole or start relaying the stream; every path ends in one access-log record."""
        upstream = False
        try:
            key = self.authorize(request, record)
            payload = decode(await self.body(request))
            model = self.model(payload.model, key)
            record.model, record.target, record.stream = (
                payload.model,
                f"{model.provider}/{model.id}",
                payload.stream,
            )
            if key.limited:
                await self._admit(key, record)
            llm_request = self.routed(model, lower(payload, model))
            record.served = model = llm_request.model
            assert self.client is not None, "the app's lifespan creates the client"
            events = self.client.stream(llm_request, tools=self.tools, retry=self.config.retry)
            upstream = True
            if not payload.stream:
                response = await unless_gone(request, events.response())
                self.answered(record, response.steps[-1].target if response.steps else None)
                await self._usage(record, response.usage, response.cost)
                return self._finish(record, _json(whole(response, payload)))
            first = await unless_gone(request, self._open(events))
            if isinstance(first, StepStart):
                self.answered(record, first.target)
        except (ClientDisconnect, Gone):
            where = "while waiting for the upstream" if upstream else "while sending the body"
            self.observer.client_gone(record, where)
            return self._finish(record, Response(status_code=499))
        except Exception as exc:
            return self._finish(record, self.failure(exc, record, upstream))
        return self._stream(streamed(first, events, payload, record))

    async def chat_completions(self, request: Request) -> Response:
        return await self._serve(
            request,
            Record("/v1/chat/completions"),
            chat.decode_request,
            chat.to_llm_request,
            lambda response, payload: chat.completion(response, payload.model, self.hidden),
            lambda first, events, payload, record: self._sse(
                first,
                events,
                payload.model,
                payload.stream_options is not None and payload.stream_options.include_usage,
                record,
                chat.custom_tool_names(payload),
            ),
        )

    async def responses(self, request: Request) -> Response:
        return await self._serve(
            request,
            Record("/v1/responses"),
            responses.decode_request,
            responses.to_llm_request,
            lambda response, payload: responses.response_object(response, payload.model, self.hidden),
            lambda first, events, payload, record: self._responses_sse(first, events, payload.model, record),
        )

    def _responses_sse(
        self, first: LLMEvent, events: EventStream, model: str, record: Record
    ) -> AsyncGenerator[bytes, None]:
        """Responses streaming events: one message item per run of text (closed when a tool call
        comes between), client function calls as whole items, then ``response.completed``."""
        id, created = responses.new_id("resp"), int(time.time())
        sequence = 0
        output: list[dict[str, Any]] = []
        text_id: str | None = None
        text: list[str] = []
        finish: Finish | None = None
        streaming: dict[str, tuple[dict[str, Any], int, list[str]]] = {}
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
            elif isinstance(ev, ToolInputStart):
                if not ev.provider_executed and ev.name not in self.hidden:
                    close_text(out)
                    item = {
                        "type": "function_call",
                        "id": responses.new_id("fc"),
                        "call_id": ev.id,
                        "name": ev.name,
                        "arguments": "",
                        "status": "in_progress",
                    }
                    streaming[ev.id] = (item, len(output), [])
                    out.append(event("response.output_item.added", output_index=len(output), item=item))
                    output.append(item)  # its slot; replaced by the finished item
            elif isinstance(ev, ToolInputDelta):
                call = streaming.get(ev.id)
                if call is not None:
                    call[2].append(ev.text)
                    out.append(
                        event(
                            "response.function_call_arguments.delta",
                            item_id=call[0]["id"],
                            output_index=call[1],
                            delta=ev.text,
                        )
                    )
            elif isinstance(ev, ToolCall) and not ev.provider_executed:
                close_text(out)
                call = streaming.pop(ev.id, None)
                if call is not None:
                    opened, index, chunks = call
                    joined = "".join(chunks) if chunks else arguments_json(ev.input)
                    if not chunks:
                        out.append(
                            event(
                                "response.function_call_arguments.delta",
                                item_id=opened["id"],
                                output_index=index,
                                delta=joined,
                            )
                        )
                    out.append(
                        event(
                            "response.function_call_arguments.done",
                            item_id=opened["id"],
                            output_index=index,
                            name=ev.name,
                            arguments=joined,
                        )
                    )
                    item = {**opened, "arguments": joined, "status": "completed"}
                    output[index] = item
                    out.append(event("response.output_item.done", output_index=index, item=item))
                elif ev.name in self.hidden:
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

        started = responses.envelope(id, model, created, "in_progress", [])
        opening = event("response.created", response=started) + event(
            "response.in_progress", response=started
        )
        return self._relay(first, events, opening, render, failed, end, record, spend)

    def _sse(
        self,
        first: LLMEvent,
        events: EventStream,
        model: str,
        include_usage: bool,
        record: Record,
        custom: frozenset[str] = frozenset(),
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
        # calls whose arguments stream as they come: id -> (index, whether any fragment was sent)
        streaming: dict[str, list[Any]] = {}

        def arguments(index: int, text: str) -> bytes:
            return chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})

        def render(event: LLMEvent, out: list[bytes]) -> None:
            nonlocal finish, tool_index
            if isinstance(event, TextDelta):
                out.append(chunk({"content": event.text}))
            elif isinstance(event, ReasoningDelta):
                out.append(chunk({"reasoning_content": event.text}))
            elif isinstance(event, ToolInputStart):
                if not event.provider_executed and event.name not in self.hidden and event.name not in custom:
                    streaming[event.id] = [tool_index, False]
                    opened = {
                        "id": event.id,
                        "type": "function",
                        "function": {"name": event.name, "arguments": ""},
                    }
                    out.append(chunk({"tool_calls": [{"index": tool_index, **opened}]}))
                    tool_index += 1
            elif isinstance(event, ToolInputDelta):
                call = streaming.get(event.id)
                if call is not None:
                    call[1] = True
                    out.append(arguments(call[0], event.text))  # the upstream's bytes, as they came
            elif isinstance(event, ToolCall) and not event.provider_executed:
                call = streaming.pop(event.id, None)
                if call is not None:
                    if not call[1]:  # arguments given whole at the end, not streamed
                        out.append(arguments(call[0], arguments_json(event.input)))
                elif event.name in self.hidden:
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

        opening = chunk({"role": "assistant", "content": ""})
        return self._relay(first, events, opening, render, failed, end, record, spend)

    async def _relay(
        self,
        first: LLMEvent,
        events: EventStream,
        opening: bytes,
        render: Callable[[LLMEvent, list[bytes]], None],
        failed: Callable[[dict[str, Any]], bytes],
        end: Callable[[], bytes],
        record: Record,
        spend: _Spend,
    ) -> AsyncGenerator[bytes, None]:
        """The streaming loop of both endpoints, whose wire formats are the callbacks: ``render``
        appends an event's bytes, ``failed`` turns an error body (upstream, scrubbed; or a generic
        one for a bug) into the stream's last bytes, ``end`` gives the last bytes after a finish.
        One write per upstream read (a batch of events), not one per event. A client that hangs
        up cancels this generator: the upstream stream is closed at once and one line logged."""
        metrics, finished = self.metrics, False
        if metrics is not None:
            metrics.stream_started(record.route)
        out = [opening]
        try:
            if isinstance(first, _ANSWER):
                record.first_token()
            render(first, out)
            try:
                async for batch in events.batches():
                    for event in batch:
                        if record.ttft is None and isinstance(event, _ANSWER):
                            record.first_token()
                        elif isinstance(event, Finish):
                            await self._usage(record, event.usage, spend.cost(events, event))
                        render(event, out)
                    if out:
                        yield b"".join(out)
                        out = []
            except LLMError as exc:
                _, body, _ = _upstream_error(exc, self.config.secrets, self._hosts)
                record.error = type(exc).__name__
                self.observer.upstream_failure(
                    record, record.error, 200, exc.attempts, body["error"]["message"]
                )
                finished = True
                yield b"".join(out) + failed(body)
                return
            except Exception as exc:  # a bug: the client gets a generic error, the log the details
                log.error("gateway: unexpected %s while streaming", type(exc).__name__, exc_info=exc)
                record.error = type(exc).__name__
                finished = True
                yield b"".join(out) + failed(error_body("internal server error", "server_error"))
                return
            finished = True
            yield b"".join(out) + end()
        finally:
            await events.aclose()
            if metrics is not None:
                metrics.stream_ended(record.route)
            if not finished:
                self.observer.client_gone(record, "mid-stream")
            self.observer.done(record)


def create_app(gateway: Gateway, *, client: Client | None = None) -> Starlette:
    """The ASGI app. ``client`` is the ``llmroute.Client`` upstream calls go through (default: one
    the app opens at startup and closes at shutdown)."""
    metrics = None
    if gateway.metrics:
        try:
            from .metrics import Metrics
        except ImportError:  # the extra is missing: /metrics says so, everything else works
            log.warning("gateway: metrics are off: pip install 'llmroute[metrics]' (prometheus-client)")
        else:
            metrics = Metrics()
    state = _Gateway(gateway, client, metrics)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        message = "not found" if status == 404 else "method not allowed" if status == 405 else "bad request"
        return _json(error_body(message, "invalid_request_error", None), status)

    middleware: list[Middleware] = [Middleware(ServerSpans)]  # a no-op unless llmroute.telemetry is on
    if gateway.cors_origins:
        middleware.append(Middleware(Preflights, observer=state.observer))  # answered by CORS, still logged
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(gateway.cors_origins),
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["*"],
                expose_headers=["retry-after", "x-should-retry", "x-ratelimit-remaining-requests"],
                max_age=600,
            )
        )
    return Starlette(
        routes=[
            Route("/v1/chat/completions", state.chat_completions, methods=["POST"]),
            Route("/v1/responses", state.responses, methods=["POST"]),
            Route("/v1/models", state.models, methods=["GET"]),
            Route("/v1/models/{id:path}", state.model_info, methods=["GET"]),
            Route("/health", state.health, methods=["GET"]),
            Route("/health/ready", state.health_ready, methods=["GET"]),
            Route("/metrics", state.metrics_text, methods=["GET"]),
        ],
        middleware=middleware,
        exception_handlers={HTTPException: not_found},
        lifespan=state.lifespan,
    )
