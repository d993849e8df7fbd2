"""The gateway as an ASGI app (Starlette): ``create_app(gateway)``. It serves; the wire formats are
the dialects' (``server.dialect``, one module each under ``server/dialects/``).

- ``POST`` a route per inbound dialect (``server.dialects.DIALECTS``: OpenAI Chat Completions at
  ``/v1/chat/completions``, Responses at ``/v1/responses``; streamed and not; stateless; and
  embeddings at ``/v1/embeddings``, for the ``"kind": "embedding"`` entries), and
  ``GET /v1/models`` (public entries only).
- Every request needs ``Authorization: Bearer <key>`` with one of the configured keys, compared in
  constant time (digests of equal length, every key checked).
- Bodies above ``maxBodyBytes`` are refused with 413 before they are read whole.
- The configured server ``web_search`` runs inside each chain per its inject policy; its calls
  never reach the client (streamed, they show as SSE comments).
- Failures are ``server.failure.Failure`` values rendered in the dialect's error shape (OpenAI's
  ``{"error": {"message", "type", "param", "code"}}`` elsewhere) with the matching status;
  messages are scrubbed of every secret the gateway knows, and never carry a stack trace or an
  upstream URL.

Stateless: any number of instances can serve behind a load balancer.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

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
from ..route.embedding import EmbeddingModel
from ..route.model import Model
from ..router import Router, estimate_tokens
from ..schema import clock
from ..schema.cost import Cost
from ..schema.errors import LLMError
from ..schema.events import (
    Finish,
    LLMEvent,
    ReasoningDelta,
    StepFinish,
    StepStart,
    TextDelta,
    ToolCall,
    ToolInputStart,
    ToolResult,
)
from ..schema.notices import RequestWarning
from ..schema.request import LLMRequest
from ..schema.response import steps_cost
from ..schema.usage import Usage
from ..state import SharedState, open_state
from ..stream import EventStream
from .config import LONG_CONTEXT, Gateway, Key
from .dialect import (
    AnyDialect,
    AnyEmbeddingsDialect,
    Arrival,
    Dialect,
    EmbeddingsDialect,
    Inbound,
    Renderer,
)
from .dialects import DIALECTS
from .failure import INTERNAL, Failure, Refused, error_body, openai_error_json, upstream_failure
from .hangup import Gone, unless_gone
from .limits import LimitExceeded, Limits
from .observe import Observer, Preflights
from .pool import upstream_client
from .record import Record
from .sessions import with_session
from .tracing import RouteTemplates, ServerSpans
from .upstream import Upstream

if TYPE_CHECKING:
    from .metrics import Metrics

__all__ = ["create_app"]

log = logging.getLogger("llmroute.server")

_encode = msgspec.json.Encoder().encode


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


def _cost_of(model: EmbeddingModel | None, usage: Usage) -> Cost | None:
    """What ``usage`` on ``model`` cost at the catalog's prices (``None``: unknown)."""
    if model is None:
        return None
    from .. import catalog

    return catalog.cost(model.provider, model.id, usage)


def _refused(status: int, message: str, type: str, code: str | None = None, **headers: str) -> Refused:
    return Refused(Failure(status, message, type, code, headers=dict(headers)))


def _json(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_encode(value), status, headers, media_type="application/json")


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
        # a client that declares its API's web search tool gets the gateway's on every step
        self.searching: list[Any] | None = [search.always()] if search is not None else None
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
            hooks = [self.metrics.health_hook()] if self.metrics is not None else None
            self.client = Client(http, hooks=hooks)
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

    def authorize(
        self,
        request: Request,
        record: Record | None = None,
        key_headers: tuple[str, ...] = ("x-api-key",),
        key_query: str | None = None,
    ) -> Key:
        """The caller's key, from ``Authorization: Bearer`` or else the first of ``key_headers``
        the request has (the dialect's: ``x-api-key``), or else the ``key_query`` parameter."""
        headers = request.headers
        header = headers.get("authorization")
        if header is not None:
            scheme, _, token = header.partition(" ")
            token = token.strip() if scheme.lower() == "bearer" else ""
        else:
            token = next((headers[h] for h in key_headers if h in headers), "")
            if not token and key_query is not None:
                token = request.query_params.get(key_query, "")
            token = token.strip()
        given = _digest(token)
        found: Key | None = None
        for key in self._keys:  # every key, always: the time does not say which one matched
            if hmac.compare_digest(given, key.digest):
                found = key
        if found is None or not token:
            raise _refused(401, "invalid or missing API key", "invalid_request_error", "invalid_api_key")
        if record is not None:
            record.key = found.id
        return found

    async def body(self, request: Request) -> bytes:
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _refused(
                413, f"request body exceeds {limit} bytes", "invalid_request_error", "body_too_large"
            )
        chunks: list[bytes] = []
        size = 0
        seconds = self.config.body_timeout
        with anyio.move_on_after(seconds) as scope:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _refused(
                        413, f"request body exceeds {limit} bytes", "invalid_request_error", "body_too_large"
                    )
                chunks.append(chunk)
        if scope.cancelled_caught:
            raise _refused(
                408,
                f"request body not received within {seconds:g} s",
                "invalid_request_error",
                "body_timeout",
            )
        return b"".join(chunks)

    def model(self, name: str, key: Key) -> Model | Router:
        self._allowed(name, key)
        if name in self.config.embeddings:
            raise _refused(
                400,
                f"the model {name!r} is an embedding model: POST /v1/embeddings",
                "invalid_request_error",
                "wrong_endpoint",
            )
        route = self.config.routes.get(name)
        return route if route is not None else self.config.models[name]

    def embedder(self, name: str, key: Key) -> EmbeddingModel:
        self._allowed(name, key)
        model = self.config.embeddings.get(name)
        if model is None:
            raise _refused(
                400,
                f"the model {name!r} is not an embedding model",
                "invalid_request_error",
                "wrong_endpoint",
            )
        return model

    def _allowed(self, name: str, key: Key) -> None:
        if name not in self._public:
            raise _refused(
                404, f"the model {name!r} does not exist", "invalid_request_error", "model_not_found"
            )
        if key.models is not None and name not in key.models:
            raise _refused(
                403,
                f"the key {key.id!r} may not use the model {name!r}",
                "permission_error",
                "model_not_allowed",
            )

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
            record.cache.target = target  # the route target's own name (two keys of one model differ)

    def failure(
        self,
        exc: Exception,
        record: Record,
        upstream: bool = False,
        render: Callable[[Failure], bytes] = openai_error_json,
    ) -> Response:
        """The response to a failed request, its body in the dialect's error shape (``render``)."""
        if isinstance(exc, Refused):
            failure = exc.failure
            record.status, record.error = failure.status, failure.code or failure.type
        elif isinstance(exc, LLMError):
            self.answered(record, exc.route_target)  # through a route: the target that failed last
            failure = upstream_failure(exc, self.config.secrets, self._hosts)
            record.status, record.error = failure.status, type(exc).__name__
            if upstream:
                self.observer.upstream_failure(
                    record, record.error, failure.status, exc.attempts, failure.message
                )
        else:
            log.error("gateway: unexpected %s", type(exc).__name__, exc_info=exc)
            record.status, record.error = 500, type(exc).__name__
            failure = INTERNAL
        return Response(
            render(failure), failure.status, failure.headers or None, media_type="application/json"
        )

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
        config = self.config
        model = config.routes.get(name) or config.models.get(name) or config.embeddings[name]
        return {"id": name, "object": "model", "created": 0, "owned_by": model.provider}

    async def models(self, request: Request) -> Response:
        record = Record("/v1/models", "GET")
        try:
            key = self.authorize(request, record)
        except Refused as exc:
            return self._finish(record, self.failure(exc, record))
        names = [n for n in self.config.public if key.models is None or n in key.models]
        if "anthropic-version" in request.headers:  # an Anthropic SDK (Claude Code) lists models
            data = [_anthropic_model(n) for n in names]
            first, last = (names[0], names[-1]) if names else (None, None)
            body = {"data": data, "has_more": False, "first_id": first, "last_id": last}
            return self._finish(record, _json(body))
        return self._finish(record, _json({"object": "list", "data": [self._model_object(n) for n in names]}))

    async def model_info(self, request: Request) -> Response:
        record = Record("/v1/models/{id}", "GET")
        try:
            key = self.authorize(request, record)
            name = request.path_params["id"]
            self.model(name, key)
            record.model = name
        except Refused as exc:
            return self._finish(record, self.failure(exc, record))
        if "anthropic-version" in request.headers:
            return self._finish(record, _json(_anthropic_model(name)))
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
            type = "insufficient_quota" if exc.code == "budget_exceeded" else "rate_limit_error"
            raise Refused(Failure(429, exc.message, type, exc.code, headers=headers)) from None
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

    def endpoint(
        self, dialect: AnyDialect | AnyEmbeddingsDialect, path: str
    ) -> Callable[[Request], Awaitable[Response]]:
        """The handler of one dialect's route."""
        if isinstance(dialect, EmbeddingsDialect):

            async def embed(request: Request) -> Response:
                return await self.serve_embeddings(dialect, request, Record(path))

            return embed

        async def serve(request: Request) -> Response:
            return await self.serve(dialect, request, Record(path))

        return serve

    async def serve_embeddings(
        self, dialect: AnyEmbeddingsDialect, request: Request, record: Record
    ) -> Response:
        """One embeddings request: the caller, the body, the model (an embedding entry), the
        key's limits, ``client.embed``, the usage charged; one access-log record."""
        upstream = False
        try:
            key = self.authorize(request, record, dialect.key_headers)
            inbound = dialect.decode(await self.body(request), request.path_params)
            model = self.embedder(inbound.model, key)
            record.model, record.target = inbound.model, f"{model.provider}/{model.id}"
            if key.limited:
                await self._admit(key, record)
            assert self.client is not None, "the app's lifespan creates the client"
            call = self.client.embed(
                model, inbound.inputs, inbound.dimensions, inbound.input_type, retry=self.config.retry
            )
            upstream = True
            response = await unless_gone(request, call)
            cost = response.cost
            await self._usage(record, response.usage, cost)
            return self._finish(
                record, Response(dialect.whole(inbound, response, cost), media_type="application/json")
            )
        except (ClientDisconnect, Gone):
            where = "while waiting for the upstream" if upstream else "while sending the body"
            self.observer.client_gone(record, where)
            return self._finish(record, Response(status_code=499))
        except Exception as exc:
            if isinstance(exc, LLMError) and exc.usage is not None:  # completed slices were billed
                await self._usage(
                    record, exc.usage, _cost_of(self.config.embeddings.get(record.model or ""), exc.usage)
                )
            return self._finish(record, self.failure(exc, record, upstream, dialect.error))

    def counter(self, dialect: AnyDialect, path: str) -> Callable[[Request], Awaitable[Response]]:
        """The handler of one dialect's token-counting route."""

        async def count(request: Request) -> Response:
            return await self.count(dialect, request, Record(path))

        return count

    def _arrive(
        self, dialect: AnyDialect, inbound: Inbound[Any], model: Model | Router, request: Request
    ) -> Inbound[Any]:
        """The dialect's ``prepare``, once the model is known."""
        if dialect.prepare is None:
            return inbound
        arrival = Arrival(Upstream.of(model), request.headers, request.query_params, self.tools is not None)
        return dialect.prepare(inbound, arrival)

    async def count(self, dialect: AnyDialect, request: Request, record: Record) -> Response:
        """A dialect's token count: the provider's endpoint where the model's upstream has one, else
        the gateway's estimate (the answer's ``x-llmroute-token-count`` says which)."""
        counter = dialect.count
        assert counter is not None, "routes are made for dialects that count"
        try:
            key = self.authorize(request, record, dialect.key_headers, dialect.key_query)
            inbound = counter.decode(await self.body(request), request.path_params)
            model = self.model(inbound.model, key)
            record.model, record.target = inbound.model, f"{model.provider}/{model.id}"
            inbound = self._arrive(dialect, inbound, model, request)
            llm_request = self.routed(model, msgspec.structs.replace(inbound.request, model=model))
            assert self.client is not None, "the app's lifespan creates the client"
            counted = await unless_gone(request, self.client.count_tokens(llm_request))
        except (ClientDisconnect, Gone):
            self.observer.client_gone(record, "while counting")
            return self._finish(record, Response(status_code=499))
        except Exception as exc:
            return self._finish(record, self.failure(exc, record, True, dialect.error))
        record.input_tokens = counted.input_tokens
        headers = {"x-llmroute-token-count": counted.source}
        body = counter.reply(counted.input_tokens, counted.source == "provider")
        return self._finish(record, Response(body, headers=headers, media_type="application/json"))

    async def serve(self, dialect: AnyDialect, request: Request, record: Record) -> Response:
        """One dialect's request: check the caller, read and decode the body, run the upstream call,
        answer whole or start relaying the stream; every path ends in one access-log record."""
        upstream = False
        try:
            key = self.authorize(request, record, dialect.key_headers, dialect.key_query)
            inbound = dialect.decode(await self.body(request), request.path_params)
            model = self.model(inbound.model, key)
            inbound = self._arrive(dialect, inbound, model, request)
            record.model, record.target, record.stream = (
                inbound.model,
                f"{model.provider}/{model.id}",
                inbound.stream,
            )
            if key.limited:
                await self._admit(key, record)
            llm_request = self.routed(model, msgspec.structs.replace(inbound.request, model=model))
            llm_request = with_session(llm_request, request.headers, self.config.cache)
            record.session = llm_request.session
            record.served = model = llm_request.model
            assert self.client is not None, "the app's lifespan creates the client"
            tools = self.searching if inbound.search else self.tools
            events = self.client.stream(llm_request, tools=tools, retry=self.config.retry)
            upstream = True
            if not inbound.stream:
                response = await unless_gone(request, events.response())
                self.answered(record, response.steps[-1].target if response.steps else None)
                record.cache.answered(response)
                await self._usage(record, response.usage, response.cost)
                body = dialect.whole(inbound, response, self.hidden)
                headers = _warned(inbound.warnings)
                return self._finish(record, Response(body, headers=headers, media_type="application/json"))
            first = await unless_gone(request, self._open(events))
            if isinstance(first, StepStart):
                self.answered(record, first.target)
                record.cache.saw(first)
        except (ClientDisconnect, Gone):
            where = "while waiting for the upstream" if upstream else "while sending the body"
            self.observer.client_gone(record, where)
            return self._finish(record, Response(status_code=499))
        except Exception as exc:
            return self._finish(record, self.failure(exc, record, upstream, dialect.error))
        renderer = dialect.stream(inbound, self.hidden)
        return StreamingResponse(
            self._relay(first, events, renderer, record),
            media_type=dialect.stream_media_type,
            headers={
                "cache-control": "no-cache",
                "x-accel-buffering": "no",
                **(_warned(inbound.warnings) or {}),
            },
        )

    async def _relay(
        self, first: LLMEvent, events: EventStream, renderer: Renderer, record: Record
    ) -> AsyncGenerator[bytes, None]:
        """The streaming loop of every dialect, whose wire format is the ``renderer``. One write per
        upstream read (a batch of events), not one per event. Usage and server-tool results are
        noted for pricing here, once. A client that hangs up cancels this generator: the upstream
        stream is closed at once and one line logged."""
        metrics, finished, hidden = self.metrics, False, self.hidden
        spend, finish = _Spend(), None
        render = renderer.event
        if metrics is not None:
            metrics.stream_started(record.route)
        out = [renderer.opening()]
        try:
            if isinstance(first, _ANSWER):
                record.first_token()
            render(first, out)
            try:
                async for batch in events.batches():
                    for event in batch:
                        if record.ttft is None and isinstance(event, _ANSWER):
                            record.first_token()
                        elif isinstance(event, StepFinish):
                            spend.add(event)
                            record.cache.saw(event)
                        elif isinstance(event, StepStart):
                            record.cache.saw(event)
                        elif isinstance(event, ToolResult) and event.name in hidden:
                            spend.results.append(event)
                        elif isinstance(event, Finish):
                            finish = event
                            await self._usage(record, event.usage, spend.cost(events, event))
                        render(event, out)
                    if out:
                        yield b"".join(out)
                        out = []
            except LLMError as exc:
                failure = upstream_failure(exc, self.config.secrets, self._hosts)
                record.error = type(exc).__name__
                self.observer.upstream_failure(record, record.error, 200, exc.attempts, failure.message)
                finished = True
                yield b"".join(out) + renderer.failed(failure)
                return
            except Exception as exc:  # a bug: the client gets a generic error, the log the details
                log.error("gateway: unexpected %s while streaming", type(exc).__name__, exc_info=exc)
                record.error = type(exc).__name__
                finished = True
                yield b"".join(out) + renderer.failed(INTERNAL)
                return
            finished = True
            yield b"".join(out) + renderer.end(finish, spend.cost(events, finish))
        finally:
            await events.aclose()
            if metrics is not None:
                metrics.stream_ended(record.route)
            if not finished:
                self.observer.client_gone(record, "mid-stream")
            self.observer.done(record)


def _anthropic_model(name: str) -> dict[str, Any]:
    """A model as Anthropic's ``/v1/models`` lists it."""
    return {"type": "model", "id": name, "display_name": name, "created_at": "1970-01-01T00:00:00Z"}


def _warned(warnings: tuple[RequestWarning, ...]) -> dict[str, str] | None:
    """``x-llmroute-warnings``: what the upstream did not take, one ``option: why`` per warning."""
    if not warnings:
        return None
    return {"x-llmroute-warnings": "; ".join(f"{w.option}: {w.message}" for w in warnings)}


def _routes(state: _Gateway) -> list[Route]:
    """The route table: a ``POST`` route per path of every inbound dialect (its token counting
    first: Gemini's ``{model}:countTokens`` would match its ``{model}:{method}``), then the
    gateway's own."""
    counting = [(d, d.count) for d in DIALECTS if isinstance(d, Dialect) and d.count is not None]
    return [
        *(Route(path, state.counter(d, path), methods=["POST"]) for d, c in counting for path in c.paths),
        *(Route(path, state.endpoint(d, path), methods=["POST"]) for d in DIALECTS for path in d.paths),
        Route("/v1/models", state.models, methods=["GET"]),
        Route("/v1/models/{id:path}", state.model_info, methods=["GET"]),
        Route("/health", state.health, methods=["GET"]),
        Route("/health/ready", state.health_ready, methods=["GET"]),
        Route("/metrics", state.metrics_text, methods=["GET"]),
    ]


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

    routes = _routes(state)
    templates = RouteTemplates(route.path for route in routes)
    # a no-op unless llmroute.telemetry is on
    middleware: list[Middleware] = [Middleware(ServerSpans, templates=templates)]
    if gateway.cors_origins:
        # answered by CORS, still logged
        middleware.append(Middleware(Preflights, observer=state.observer, templates=templates))
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
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: not_found},
        lifespan=state.lifespan,
    )
