"""``Client``: prepare, stream and generate."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, Unpack

import httpx

from .route.compiler import prepare
from .route.embedding import EmbeddingGroup, EmbeddingModel, prepare_embedding, resolve_options
from .route.executor import ExecutionContext, run_step
from .route.hooks import HookRunner, check_hooks, global_version, runner_for
from .route.http_pool import http_transport
from .route.policy import RetryPolicy, Timeouts
from .route.prepared import PreparedRequest
from .route.redact import install_log_redaction
from .route.socket_pool import SocketPool
from .route.transport import ClientTransports
from .schema.embedding import EmbeddingResponse, InputType, check_inputs
from .schema.errors import ClientClosedError, InvalidRequestError, NoRouteError
from .schema.request import LLMRequest
from .schema.response import LLMResponse
from .stream import EventStream

if TYPE_CHECKING:
    from .schema.response import StepResult
    from .schema.tools import HostedTool, ToolDefinition
    from .tokens import TokenCount
    from .tools.server import ServerTool
    from .tools.structured import ObjectOptions, ObjectResponse, OutputType
    from .tools.tool import Tool

    StopCondition = Callable[[StepResult], bool]

__all__ = ["DEFAULT_MAX_CONNECTIONS", "CallOptions", "Client"]

_T = TypeVar("_T")

# Like the vendor SDKs (openai allows 1,000): one Client can hold that many streams open at once.
DEFAULT_MAX_CONNECTIONS = 1000
_MAX_KEEPALIVE = 100  # idle connections kept for reuse; the rest close when their stream ends


class CallOptions(TypedDict, total=False):
    """The keyword arguments of ``Client.stream``, which every other call (``Client.generate``,
    ``SyncClient.stream`` and ``generate``) passes on to it unchanged; defaults and meaning are
    ``Client.stream``'s, and a test holds the two lists equal."""

    tools: Sequence[Tool | ToolDefinition | HostedTool | ServerTool] | None
    stop_when: StopCondition | Sequence[StopCondition] | None
    tool_execution: Literal["auto", "none"]
    max_concurrency: int | None
    tool_errors: Literal["return", "raise"]
    timeouts: Timeouts | None
    retry: RetryPolicy | None
    max_response_bytes: int | None


class Client:
    """Owns (or is given) an ``httpx.AsyncClient``. Use as ``async with llmroute.Client() as client``."""

    def __init__(
        self,
        http: httpx.AsyncClient | None = None,
        *,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        max_error_bytes: int = 64 * 1024,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        max_response_bytes: int | None = None,
        max_connections: int | None = None,
        hooks: Iterable[object] | None = None,
        socket_pool: SocketPool | None = None,
    ) -> None:
        """``timeouts`` and ``retry`` are the defaults for every call (each call may override them);
        ``max_error_bytes`` caps how much of an error body is read; ``sleep`` is the backoff sleep
        (inject a fake one in tests so retries do not wait). ``max_response_bytes`` caps a response
        body (``ResponseTooLargeError``, connection closed at once); ``None``: streams are unbounded
        and non-streamed bodies are capped at ``DEFAULT_MAX_WHOLE_BODY_BYTES`` (64 MiB).

        ``max_connections``: how many requests the client's own connection pool runs at once
        (default ``DEFAULT_MAX_CONNECTIONS``, 1,000); more wait for a free connection, bounded by
        the ``first_byte`` and ``total`` deadlines, never by ``connect``. With ``http=`` the given
        client's own limits apply instead, so passing both is an error.

        ``hooks``: ``llmroute.Hook`` subclasses called around every attempt, tool run and tool
        loop (see ``llmroute.route.hooks``); ``llmroute.telemetry.instrument()`` adds its own to
        every client.

        ``socket_pool``: where WebSocket connections (OpenAI Responses' WebSocket mode) are kept
        across calls; ``SocketPool(max_idle=..., idle_timeout=..., max_age=...)`` tunes it (default
        ``SocketPool()``). The client closes it with ``aclose()``."""
        _check_type("http", http, httpx.AsyncClient, "an httpx.AsyncClient")
        _check_type("timeouts", timeouts, Timeouts, "llmroute.Timeouts(...)")
        _check_type("retry", retry, RetryPolicy, "llmroute.RetryPolicy(...)")
        _check_type("socket_pool", socket_pool, SocketPool, "llmroute.SocketPool(...)")
        _check_count("max_error_bytes", max_error_bytes, low=0, optional=False)
        _check_count("max_response_bytes", max_response_bytes, low=1)
        _check_count("max_connections", max_connections, low=1)
        if sleep is not None and not callable(sleep):
            raise InvalidRequestError(
                f"sleep: must be an async function, got {type(sleep).__name__}", param="sleep"
            )
        if max_connections is not None and http is not None:
            raise InvalidRequestError(
                "max_connections sizes the pool of the client llmroute creates; with http=, "
                "set limits on your httpx.AsyncClient instead"
            )
        self.hooks = check_hooks(hooks)
        self._runner: HookRunner | None = None
        self._runner_version = -1
        install_log_redaction()
        self.timeouts = timeouts or Timeouts()
        self.retry = retry or RetryPolicy()
        self.max_error_bytes = max_error_bytes
        self.max_response_bytes = max_response_bytes
        self.sleep = sleep
        self.max_connections = max_connections or DEFAULT_MAX_CONNECTIONS
        self._owns_http = http is None
        self._http = http
        self.sockets = socket_pool or SocketPool()
        self._transports: ClientTransports | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("this Client is closed; create a new one (or use it inside `async with`)")

    @property
    def http(self) -> httpx.AsyncClient:
        self._check_open()
        if self._http is None:
            # No client-wide timeout: every request carries its own (ExecutionContext.http_timeout).
            # The pool costs the same per request at any size (route/http_pool.py); behind a proxy
            # named by the environment, httpx's own.
            n = self.max_connections
            transport = http_transport(n, max_idle=min(n, _MAX_KEEPALIVE))
            if transport is None:
                limits = httpx.Limits(max_connections=n, max_keepalive_connections=min(n, _MAX_KEEPALIVE))
                self._http = httpx.AsyncClient(limits=limits)
            else:
                self._http = httpx.AsyncClient(transport=transport)
        return self._http

    def _bound_transports(self) -> ClientTransports:
        """HTTP through ``http``, WebSocket through ``sockets``, and each route's kind of transport
        bound to them once (built with ``http``)."""
        self._check_open()
        transports = self._transports
        if transports is None:
            transports = self._transports = ClientTransports(self.http, self.sockets)
        return transports

    def context(
        self,
        *,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        max_response_bytes: int | None = None,
    ) -> ExecutionContext:
        _check_type("timeouts", timeouts, Timeouts, "llmroute.Timeouts(...)")
        _check_type("retry", retry, RetryPolicy, "llmroute.RetryPolicy(...)")
        _check_count("max_response_bytes", max_response_bytes, low=1)
        return ExecutionContext(
            self._bound_transports(),
            timeouts or self.timeouts,
            retry or self.retry,
            self.max_error_bytes,
            sleep=self.sleep,
            max_response_bytes=max_response_bytes
            if max_response_bytes is not None
            else self.max_response_bytes,
            max_connections=self.max_connections if self._owns_http else None,
            hooks=self._hook_runner(),
        )

    def _hook_runner(self) -> HookRunner | None:
        version = global_version()
        if version != self._runner_version:  # built once, again only when a global hook changes
            self._runner, self._runner_version = runner_for(self.hooks), version
        return self._runner

    def __repr__(self) -> str:
        return f"Client(timeouts={self.timeouts!r}, retry={self.retry!r})"

    async def aclose(self) -> None:
        """Close the connection pool (when the client made it) and the WebSocket connections.
        Idempotent; afterwards every call raises ``ClientClosedError``."""
        self._closed = True
        await self.sockets.aclose()
        if self._owns_http and self._http is not None:
            await self._http.aclose()
            self._http = None
        self._transports = None

    async def __aenter__(self) -> Client:
        self._check_open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def prepare(self, request: LLMRequest) -> PreparedRequest:
        """The exact method, URL, headers and body bytes, without sending anything."""
        self._check_open()
        _check_request(request)
        return await prepare(request)

    async def count_tokens(self, request: LLMRequest) -> TokenCount:
        """The request's input tokens: the provider's counting endpoint where it has one (Anthropic,
        Gemini, OpenAI Responses), else a local estimate (``llmroute.tokens``; ``.source`` says which)."""
        from .tokens import count_tokens

        _check_request(request)
        return await count_tokens(self, request)

    async def check_context(self, request: LLMRequest) -> TokenCount | None:
        """The optional pre-flight check: ``ContextOverflowError`` when the input plus the allowed
        output cannot fit the model's context window (``model.info``); ``None`` when it is unknown."""
        from .tokens import check_context

        _check_request(request)
        return await check_context(self, request)

    def stream(
        self,
        request: LLMRequest,
        *,
        tools: Sequence[Tool | ToolDefinition | HostedTool | ServerTool] | None = None,
        stop_when: StopCondition | Sequence[StopCondition] | None = None,
        tool_execution: Literal["auto", "none"] = "auto",
        max_concurrency: int | None = None,
        tool_errors: Literal["return", "raise"] = "return",
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        max_response_bytes: int | None = None,
    ) -> EventStream:
        """Events as bytes arrive (with ``GenerationOptions(stream=False)``, all at once from the
        whole body). With ``tools``, runs them and calls the model again until it stops calling
        them, at most ``DEFAULT_MAX_STEPS`` (20) model calls unless ``stop_when`` says otherwise; a
        handler's exception goes back to the model as a tool error (``tool_errors="raise"``: fails
        the stream with ``ToolExecutionError``). See ``llmroute.tools``.
        ``max_response_bytes`` overrides the client's cap for this call."""
        _check_request(request)
        ctx = self.context(timeouts=timeouts, retry=retry, max_response_bytes=max_response_bytes)
        if request.tool_handlers:  # ``llmroute.request(tools=[a @tool])``: run it (``tools=`` wins a name)
            given = {getattr(getattr(t, "definition", t), "name", None) for t in tools or ()}
            kept = [t for t in request.tool_handlers if t.definition.name not in given]
            tools = (*kept, *(tools or ()))
        if tools is not None or stop_when is not None:
            from .tools.runtime import run_tools

            return EventStream(
                run_tools(
                    ctx,
                    request,
                    tools=tools or (),
                    stop_when=stop_when,
                    tool_execution=tool_execution,
                    max_concurrency=max_concurrency,
                    tool_errors=tool_errors,
                ),
                model=request.model,
            )
        return EventStream(run_step(ctx, request, 0, finish=True), model=request.model)

    async def generate(self, request: LLMRequest, **options: Unpack[CallOptions]) -> LLMResponse:
        """Stream and fold into an ``LLMResponse`` (arguments as for ``stream``)."""
        return await self.stream(request, **options).response()

    async def generate_object(
        self, request: LLMRequest, schema: OutputType[_T], **options: Unpack[ObjectOptions]
    ) -> ObjectResponse[_T]:
        """One call asking for JSON matching ``schema`` (a msgspec Struct or any msgspec type, a
        pydantic ``BaseModel`` or ``TypeAdapter``);
        returns ``ObjectResponse(value, response)`` (unpacks as a pair). Native JSON-schema mode where
        the protocol has one, else a forced tool; ``InvalidProviderOutputError`` (with ``.raw``) when
        the output does not validate. Options (``name``, ``description``, ``strict``, ``mode``,
        ``timeouts``, ``retry``): see ``llmroute.tools.structured.generate_object``."""
        from .tools.structured import generate_object

        return await generate_object(self, request, schema, **options)

    # embeddings ----------------------------------------------------------------------------------

    async def embed(
        self,
        model: EmbeddingModel | EmbeddingGroup,
        inputs: str | Sequence[str],
        dimensions: int | None = None,
        input_type: InputType | None = None,
        *,
        max_concurrency: int | None = None,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
    ) -> EmbeddingResponse:
        """One vector per input, in input order, as one compact float32 buffer
        (``response.vectors``), with the usage and ``response.cost``. ``model``: a facade's
        ``.embedding(id)``, or a ``Router`` of them. ``dimensions`` and ``input_type`` override
        the model's; a route that cannot honour one warns (``response.warnings``) or refuses it.

        The inputs are split to the provider's per-request maximum and sent ``max_concurrency``
        requests at a time (default ``DEFAULT_EMBED_CONCURRENCY``, 8), each with the client's
        retries and deadlines (``total`` bounds the whole call); if one slice fails for good, the
        others are cancelled and its typed error names it (``error.embed_slice``). See
        docs/embeddings.md."""
        from .route.embed_executor import DEFAULT_EMBED_CONCURRENCY, run_embed

        items = check_inputs(inputs)
        _check_count("max_concurrency", max_concurrency, low=1)
        limit = max_concurrency or DEFAULT_EMBED_CONCURRENCY
        ctx = self.context(timeouts=timeouts, retry=retry)
        if isinstance(model, EmbeddingGroup):
            return await model.run_embed(ctx, items, dimensions, input_type, limit)
        options, warnings = resolve_options(_embedding_model(model), dimensions, input_type)
        return await run_embed(ctx, model, items, options, warnings, limit)

    async def prepare_embed(
        self,
        model: EmbeddingModel,
        inputs: str | Sequence[str],
        dimensions: int | None = None,
        input_type: InputType | None = None,
    ) -> list[PreparedRequest]:
        """The exact requests ``embed`` would send, one per slice of the inputs, without sending
        anything (a router's: use one of its models)."""
        from .route.embed_executor import slices

        self._check_open()
        items = check_inputs(inputs)
        if isinstance(model, EmbeddingGroup):
            raise NoRouteError(
                "prepare_embed shows one model's requests: pass one of router.embedding_models()"
            )
        options, warnings = resolve_options(_embedding_model(model), dimensions, input_type)
        protocol = model.route.protocol
        prepared = [
            await prepare_embedding(model, items[start:stop], options)
            for start, stop in slices(items, protocol.max_inputs, protocol.max_bytes)
        ]
        for request in prepared:
            request.warnings = warnings
        return prepared


def _embedding_model(model: object) -> EmbeddingModel:
    if isinstance(model, EmbeddingModel):
        return model
    from .route.model import Model

    if isinstance(model, Model):
        raise NoRouteError(
            f"{model!r} is a chat model: embeddings need an embedding model "
            f"(e.g. {model.provider}.configure().embedding(MODEL_ID))"
        )
    raise NoRouteError(
        f"model: expected an EmbeddingModel (a facade's .embedding(id)) or a Router of them, "
        f"got {type(model).__name__}"
    )


def _check_request(request: object) -> None:
    # a prompt string or a dict passed where the request goes: say so, not AttributeError 'model'
    if not isinstance(request, LLMRequest):
        raise InvalidRequestError(
            f"request: expected an LLMRequest (llmroute.request(model, prompt=...)), got {type(request).__name__}",
            param="request",
        )


def _check_type(param: str, value: object, kind: type, want: str) -> None:
    if value is not None and not isinstance(value, kind):
        hint = (
            f" (e.g. {param}=Timeouts(total={value!r}))"
            if kind is Timeouts and isinstance(value, int | float)
            else ""
        )
        raise InvalidRequestError(
            f"{param}: expected {want} or None, got {type(value).__name__}{hint}", param=param
        )


def _check_count(param: str, value: object, *, low: int, optional: bool = True) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        want = f"an int, at least {low}" + (" (or None)" if optional else "")
        raise InvalidRequestError(f"{param}: must be {want}, got {value!r}", param=param)
