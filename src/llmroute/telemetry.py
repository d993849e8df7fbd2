"""OpenTelemetry traces and metrics for every llmroute call, following the GenAI semantic conventions.

    from llmroute import telemetry
    telemetry.instrument()            # the global tracer and meter providers
    ...
    telemetry.uninstrument()

Needs ``opentelemetry-api`` (``pip install 'llmroute[otel]'``); ``import llmroute`` never imports
it. What is recorded (see docs/telemetry.md for every attribute):

- an ``embeddings {model}`` CLIENT span per embedding request (``client.embed`` sends one per
  slice of its inputs, and a retry is another), with ``gen_ai.embeddings.dimension.count``, the
  input tokens and ``llmroute.embed.inputs`` (how many inputs it carried).
- a ``chat {model}`` CLIENT span per attempt (``generate_content {model}`` for Gemini, the
  conventions' operation name for it); a retry or a router fallback is another span, numbered by
  ``llmroute.attempt``. It starts just before the request is sent and ends exactly once: at the
  finish, at an error, when the consumer stops early (``break``, ``aclose()``) or is cancelled.
  The W3C ``traceparent`` of that span is sent upstream.
- in a tool loop, an ``invoke_agent`` INTERNAL span as the parent of the loop's model calls and of
  one ``execute_tool {name}`` INTERNAL span per local tool run.
- the ``gen_ai.client.operation.duration``, ``gen_ai.client.token.usage`` and (streamed calls)
  ``gen_ai.client.operation.time_to_first_chunk`` histograms, with the conventions' buckets.
- prompts, outputs, tool arguments and results only with ``capture_content=True``, as the
  conventions' ``gen_ai.system_instructions`` / ``gen_ai.input.messages`` / ``gen_ai.output.messages``
  / ``gen_ai.tool.*`` JSON attributes, after the same secret redaction as logs. Credentials never
  reach an attribute: the URL is reduced to ``server.address`` and ``server.port``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec

try:
    from opentelemetry import context, metrics, trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ModuleNotFoundError(
        "llmroute.telemetry needs opentelemetry-api: pip install 'llmroute[otel]'", name=exc.name
    ) from exc

from ._version import __version__
from .route.hooks import (
    CallInfo,
    CallResult,
    EmbedInfo,
    Hook,
    LoopInfo,
    ToolInfo,
    add_global_hook,
    remove_global_hook,
)
from .route.redact import redact_text
from .schema.content import (
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from .schema.errors import LLMError
from .schema.events import LLMEvent, ToolError, ToolResult
from .schema.options import merge_generation
from .schema.tools import ToolDefinition
from .schema.usage import Usage

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, TracerProvider

    from .route.embedding import EmbeddingModel
    from .route.model import Model
    from .route.prepared import PreparedRequest

__all__ = ["GenAIHook", "instrument", "is_instrumented", "serve_traced", "uninstrument"]

# gen_ai.provider.name: the conventions' well-known values for llmroute's provider names; any other
# provider (an OpenAI-compatible family, a custom facade) is recorded under its own name.
PROVIDER_NAMES: Mapping[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "xai": "x_ai",
    "groq": "groq",
    "deepseek": "deepseek",
    "mistral": "mistral_ai",
    "perplexity": "perplexity",
    "cohere": "cohere",
}
# The conventions name Gemini's generateContent ``generate_content``; every other protocol is ``chat``.
_GENERATE_CONTENT_PROTOCOLS = frozenset({"gemini"})
# FinishReason -> the conventions' finish reasons (gen-ai-output-messages.json).
FINISH_REASONS: Mapping[str, str] = {
    "stop": "stop",
    "length": "length",
    "tool-calls": "tool_call",
    "content-filter": "content_filter",
    "error": "error",
    "unknown": "unknown",
}
# Explicit bucket boundaries the conventions advise.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

_TRACEPARENT = TraceContextTextMapPropagator()  # traceparent / tracestate only: never baggage upstream


class _CallSpan:
    __slots__ = ("metric_attrs", "secrets", "span")

    def __init__(self, span: Span, secrets: tuple[str, ...], metric_attrs: dict[str, Any]) -> None:
        self.span = span
        self.secrets = secrets
        self.metric_attrs = metric_attrs


class _LoopSpan:
    __slots__ = ("input_tokens", "output_tokens", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None


class GenAIHook(Hook):
    """The hook ``instrument()`` installs; use it directly to instrument one ``Client(hooks=[...])``."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
    ) -> None:
        self.capture_content = capture_content
        self.tracer = trace.get_tracer("llmroute", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("llmroute", __version__, meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.first_chunk = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to receive the first chunk, measured from when the client issues the "
            "generation request to when the first chunk is received in the response stream.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )

    # model calls -------------------------------------------------------------------------------

    def before_send(self, call: CallInfo, request: PreparedRequest) -> None:
        model = call.model
        operation = _operation(model)
        common = _common_attributes(model, operation, request.url)
        attrs: dict[str, Any] = {
            **common,
            "llmroute.attempt": call.attempt,
            "llmroute.route": model.route.name,
        }
        attrs.update(_request_options(call))
        span = self.tracer.start_span(
            f"{operation} {model.id}",
            context=_parent(call.loop, self),
            kind=SpanKind.CLIENT,
            attributes=attrs,
        )
        if self.capture_content and span.is_recording():
            _set_json(span, _input_content(call), request.secrets)
        call.scratch[self] = _CallSpan(span, request.secrets, common)
        _TRACEPARENT.inject(request.headers, context=trace.set_span_in_context(span))

    def on_finish(self, call: CallInfo, result: CallResult) -> None:
        state = call.scratch.pop(self, None)
        if not isinstance(state, _CallSpan):
            return
        span = state.span
        self._record_result(call, state, result)
        cost = _cost(result) if span.is_recording() else None  # a catalog lookup: only when kept
        if cost is not None:
            span.set_attribute("llmroute.cost.usd", cost)
        if self.capture_content and span.is_recording():
            _set_json(span, {"gen_ai.output.messages": _output_messages(result)}, state.secrets)
        span.end()

    def on_error(self, call: CallInfo, error: BaseException) -> None:
        state = call.scratch.pop(self, None)
        if not isinstance(state, _CallSpan):
            return
        kind = _error_type(error)
        if call.partial is not None:
            self._record_result(call, state, call.partial, error_type=kind, finished=False)
        else:
            self._record_duration(call, state, kind)
        _set_error(state.span, kind, redact_text(str(error), state.secrets))
        if isinstance(error, LLMError) and error.http is not None and error.http.status is not None:
            state.span.set_attribute("http.response.status_code", error.http.status)
        state.span.end()

    def on_abort(self, call: CallInfo, reason: BaseException) -> None:
        state = call.scratch.pop(self, None)
        if not isinstance(state, _CallSpan):
            return
        closed = isinstance(reason, GeneratorExit)
        kind = None if closed else "cancelled"
        if call.partial is not None:
            self._record_result(call, state, call.partial, error_type=kind, finished=False)
        else:
            self._record_duration(call, state, kind)
        if closed:
            state.span.set_attribute("llmroute.closed_early", True)
        else:
            _set_error(state.span, "cancelled", "the call was cancelled")
        state.span.end()

    def _record_result(
        self,
        call: CallInfo,
        state: _CallSpan,
        result: CallResult,
        *,
        error_type: str | None = None,
        finished: bool = True,
    ) -> None:
        """Response, usage and timing attributes and metrics; a partial result (an error or an
        abort) has no finish reason and keeps what arrived."""
        span = state.span
        attrs: dict[str, Any] = {}
        response_model = result.response_model
        if result.response_id:
            attrs["gen_ai.response.id"] = result.response_id
        if response_model:
            attrs["gen_ai.response.model"] = response_model
        if finished:
            attrs["gen_ai.response.finish_reasons"] = (FINISH_REASONS.get(result.reason, result.reason),)
        usage = result.usage
        if usage is not None:
            attrs.update(_usage_attributes(usage))
            _add_loop_usage(call.loop, self, usage)
        if call.streaming and call.first_chunk is not None:
            ttfc = call.first_chunk - call.started
            attrs["gen_ai.response.time_to_first_chunk"] = ttfc
            self.first_chunk.record(ttfc, _metric_attributes(state, response_model, None))
        span.set_attributes(attrs)
        metric = _metric_attributes(state, response_model, error_type)
        if usage is not None:
            token_attrs = _metric_attributes(state, response_model, None)
            if usage.input_tokens is not None:
                self.tokens.record(usage.input_tokens, {**token_attrs, "gen_ai.token.type": "input"})
            if usage.output_tokens is not None:
                self.tokens.record(usage.output_tokens, {**token_attrs, "gen_ai.token.type": "output"})
        self.duration.record(time.monotonic() - call.started, metric)

    def _record_duration(self, call: CallInfo, state: _CallSpan, error_type: str | None) -> None:
        self.duration.record(time.monotonic() - call.started, _metric_attributes(state, None, error_type))

    # embedding requests ------------------------------------------------------------------------

    def before_embed(self, call: EmbedInfo, request: PreparedRequest) -> None:
        model = call.model
        common = _common_attributes(model, "embeddings", request.url)
        start, stop = call.inputs
        attrs: dict[str, Any] = {
            **common,
            "llmroute.attempt": call.attempt,
            "llmroute.route": model.route.name,
            "llmroute.embed.inputs": stop - start,
        }
        if call.options.dimensions is not None:
            attrs["gen_ai.embeddings.dimension.count"] = call.options.dimensions
        span = self.tracer.start_span(f"embeddings {model.id}", kind=SpanKind.CLIENT, attributes=attrs)
        call.scratch[self] = _CallSpan(span, request.secrets, common)
        _TRACEPARENT.inject(request.headers, context=trace.set_span_in_context(span))

    def on_embed_finish(self, call: EmbedInfo) -> None:
        state = call.scratch.pop(self, None)
        if not isinstance(state, _CallSpan):
            return
        span = state.span
        attrs: dict[str, Any] = {}
        if call.response_model:
            attrs["gen_ai.response.model"] = call.response_model
        if call.dimensions is not None and call.options.dimensions is None:
            attrs["gen_ai.embeddings.dimension.count"] = call.dimensions  # the model's own size
        usage = call.usage
        metric = _metric_attributes(state, call.response_model, None)
        if usage is not None and usage.input_tokens is not None:
            attrs["gen_ai.usage.input_tokens"] = usage.input_tokens
            self.tokens.record(usage.input_tokens, {**metric, "gen_ai.token.type": "input"})
        span.set_attributes(attrs)
        self.duration.record(time.monotonic() - call.started, metric)
        span.end()

    def on_embed_error(self, call: EmbedInfo, error: BaseException) -> None:
        state = call.scratch.pop(self, None)
        if not isinstance(state, _CallSpan):
            return
        kind = _error_type(error)
        self.duration.record(time.monotonic() - call.started, _metric_attributes(state, None, kind))
        message = redact_text(str(error), state.secrets) if isinstance(error, Exception) else "cancelled"
        _set_error(state.span, kind, message)
        if isinstance(error, LLMError) and error.http is not None and error.http.status is not None:
            state.span.set_attribute("http.response.status_code", error.http.status)
        state.span.end()

    # the tool loop -----------------------------------------------------------------------------

    def on_loop_start(self, loop: LoopInfo) -> None:
        model = _model(loop.request.model)
        attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent"}
        if model is not None:
            attrs["gen_ai.provider.name"] = PROVIDER_NAMES.get(model.provider, model.provider)
            attrs["gen_ai.request.model"] = model.id
        span = self.tracer.start_span("invoke_agent", kind=SpanKind.INTERNAL, attributes=attrs)
        loop.scratch[self] = _LoopSpan(span)

    def on_loop_end(self, loop: LoopInfo, error: BaseException | None) -> None:
        state = loop.scratch.pop(self, None)
        if not isinstance(state, _LoopSpan):
            return
        span = state.span
        if state.input_tokens is not None:
            span.set_attribute("gen_ai.usage.input_tokens", state.input_tokens)
        if state.output_tokens is not None:
            span.set_attribute("gen_ai.usage.output_tokens", state.output_tokens)
        if isinstance(error, GeneratorExit):
            span.set_attribute("llmroute.closed_early", True)
        elif error is not None:
            kind = _error_type(error)
            _set_error(span, kind, redact_text(str(error)) if isinstance(error, Exception) else kind)
        span.end()

    def on_tool_start(self, tool: ToolInfo) -> None:
        call = tool.call
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if tool.description:
            attrs["gen_ai.tool.description"] = tool.description
        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=_parent(tool.loop, self),
            kind=SpanKind.INTERNAL,
            attributes=attrs,
        )
        if self.capture_content and span.is_recording():
            _set_json(span, {"gen_ai.tool.call.arguments": call.input}, ())
        tool.scratch[self] = span

    def on_tool_end(self, tool: ToolInfo, events: Sequence[LLMEvent], error: BaseException | None) -> None:
        span: Span | None = tool.scratch.pop(self, None)
        if span is None:
            return
        failure = next((e for e in events if isinstance(e, ToolError)), None)
        if error is not None:
            kind = _error_type(error)
            _set_error(span, kind, redact_text(str(error)) if isinstance(error, Exception) else kind)
        elif failure is not None:
            kind = type(failure.exception).__name__ if failure.exception is not None else "tool_error"
            _set_error(span, kind, redact_text(failure.message))
        elif self.capture_content and span.is_recording():
            result = next((e for e in events if isinstance(e, ToolResult)), None)
            if result is not None:
                _set_json(span, {"gen_ai.tool.call.result": result.result}, ())
        span.end()


# instrument() ----------------------------------------------------------------------------------

_installed: GenAIHook | None = None


def instrument(
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool = False,
) -> None:
    """Trace and meter every ``Client``'s calls (the global providers when none are given).
    Calling it again replaces the previous configuration."""
    global _installed
    uninstrument()
    _installed = GenAIHook(tracer_provider, meter_provider, capture_content)
    add_global_hook(_installed)


def uninstrument() -> None:
    """Stop tracing and metering (spans already open still end)."""
    global _installed
    if _installed is not None:
        remove_global_hook(_installed)
        _installed = None


def is_instrumented() -> bool:
    return _installed is not None


# attributes ------------------------------------------------------------------------------------


def _model(value: object) -> Model | None:
    from .route.model import Model

    return value if isinstance(value, Model) else None


def _operation(model: Model) -> str:
    return "generate_content" if model.route.protocol.name in _GENERATE_CONTENT_PROTOCOLS else "chat"


def _common_attributes(model: Model | EmbeddingModel, operation: str, url: str) -> dict[str, Any]:
    """What both the span and the metrics carry (set at span start, for sampling decisions)."""
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": PROVIDER_NAMES.get(model.provider, model.provider),
        "gen_ai.request.model": model.id,
    }
    parts = urlsplit(url)  # only host and port: never the path, query (keys) or userinfo
    if parts.hostname:
        attrs["server.address"] = parts.hostname
        port = parts.port or {"https": 443, "wss": 443, "http": 80, "ws": 80}.get(parts.scheme)
        if port is not None:
            attrs["server.port"] = port
    return attrs


def _request_options(call: CallInfo) -> dict[str, Any]:
    request = call.request
    options = call.generation  # resolved once per model call by the executor
    if options is None:
        model = call.model
        options = merge_generation(model.route.defaults, model.defaults, request.generation)
    attrs: dict[str, Any] = {}
    if options.max_tokens is not None:
        attrs["gen_ai.request.max_tokens"] = options.max_tokens
    for name, value in (
        ("temperature", options.temperature),
        ("top_p", options.top_p),
        ("top_k", options.top_k),
        ("frequency_penalty", options.frequency_penalty),
        ("presence_penalty", options.presence_penalty),
    ):
        if value is not None:
            attrs[f"gen_ai.request.{name}"] = float(value)
    if options.seed is not None:
        attrs["gen_ai.request.seed"] = options.seed
    if options.stop:
        attrs["gen_ai.request.stop_sequences"] = tuple(options.stop)
    if call.streaming:
        attrs["gen_ai.request.stream"] = True  # set if and only if the request streams
    if request.output_schema is not None:
        attrs["gen_ai.output.type"] = "json"
    return attrs


def _usage_attributes(usage: Usage) -> dict[str, int]:
    values = (
        ("gen_ai.usage.input_tokens", usage.input_tokens),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    )
    return {name: value for name, value in values if value is not None}


def _metric_attributes(
    state: _CallSpan, response_model: str | None, error_type: str | None
) -> dict[str, Any]:
    attrs = dict(state.metric_attrs)
    if response_model:
        attrs["gen_ai.response.model"] = response_model
    if error_type:
        attrs["error.type"] = error_type
    return attrs


def _error_type(error: BaseException) -> str:
    """Low-cardinality: llmroute's error class (``RateLimitError``, ``TimeoutError``, ...)."""
    if not isinstance(error, Exception):
        return "cancelled"
    return type(error).__name__


def _set_error(span: Span, kind: str, message: str) -> None:
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, message[:500]))


def _cost(result: CallResult) -> float | None:
    try:
        cost = result.cost
    except Exception:  # no catalog data, an unknown model: no cost attribute
        return None
    return float(cost.total) if cost is not None else None


def _parent(loop: LoopInfo | None, hook: GenAIHook) -> Context | None:
    """The tool loop's span when there is one, else the caller's current context."""
    state = loop.scratch.get(hook) if loop is not None else None
    return trace.set_span_in_context(state.span) if isinstance(state, _LoopSpan) else None


def _add_loop_usage(loop: LoopInfo | None, hook: GenAIHook, usage: Usage) -> None:
    state = loop.scratch.get(hook) if loop is not None else None
    if isinstance(state, _LoopSpan):
        if usage.input_tokens is not None:
            state.input_tokens = (state.input_tokens or 0) + usage.input_tokens
        if usage.output_tokens is not None:
            state.output_tokens = (state.output_tokens or 0) + usage.output_tokens


# content (capture_content=True only) -----------------------------------------------------------

_JSON = msgspec.json.Encoder()


def _set_json(span: Span, values: Mapping[str, Any], secrets: tuple[str, ...]) -> None:
    """JSON-string attributes (structured attributes are not yet supported on spans), redacted
    like log lines: the request's own credentials by value and anything credential-shaped."""
    for name, value in values.items():
        if value is None:
            continue
        try:
            text = _JSON.encode(value).decode()
        except (TypeError, msgspec.EncodeError):
            text = _JSON.encode(str(value)).decode()
        span.set_attribute(name, redact_text(text, secrets))


def _input_content(call: CallInfo) -> dict[str, Any]:
    request = call.request
    values: dict[str, Any] = {"gen_ai.input.messages": [_message(m) for m in request.messages]}
    if request.system:
        values["gen_ai.system_instructions"] = [{"type": "text", "content": p.text} for p in request.system]
    tools = [
        {"type": "function", "name": t.name, "description": t.description}
        for t in request.tools
        if isinstance(t, ToolDefinition)
    ]
    if tools:
        values["gen_ai.tool.definitions"] = tools
    return values


def _message(message: Message) -> dict[str, Any]:
    return {"role": message.role, "parts": [_part(p) for p in message.content]}


def _part(part: object) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "content": part.text}
    if isinstance(part, ReasoningPart):
        return {"type": "reasoning", "content": part.text}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": part.input}
    if isinstance(part, ToolResultPart):
        return {"type": "tool_call_response", "id": part.id, "response": part.result}
    if isinstance(part, MediaPart):
        # media bytes are not copied into telemetry: the kind and size say what was sent
        size = len(part.data) if isinstance(part.data, bytes) else len(part.data) * 3 // 4
        modality = part.mime_type.split("/", 1)[0]
        return {
            "type": "blob",
            "mime_type": part.mime_type,
            "modality": modality,
            "content": "",
            "size": size,
        }
    return {"type": str(getattr(part, "type", type(part).__name__))}


def _output_messages(result: CallResult) -> list[dict[str, Any]]:
    response = result.response
    message = _message(response.message)
    message["finish_reason"] = FINISH_REASONS.get(result.reason, result.reason)
    return [message]


# the gateway ----------------------------------------------------------------------------------


async def serve_traced(app: Any, scope: Any, receive: Any, send: Any, route: str) -> None:
    """One SERVER span around a gateway request (``llmroute.server.tracing``): its parent is the
    client's ``traceparent``, and the upstream calls made while serving it are its children."""
    hook = _installed
    if hook is None:
        await app(scope, receive, send)
        return
    raw: list[tuple[bytes, bytes]] = scope.get("headers") or []
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in raw}
    method = str(scope.get("method", "GET"))
    attrs: dict[str, Any] = {
        "http.request.method": method,
        "url.path": str(scope.get("path", "")),  # never the query: it may carry a key
        "url.scheme": str(scope.get("scheme", "http")),
    }
    if route:
        attrs["http.route"] = route
    server = scope.get("server")
    if server:
        attrs["server.address"], attrs["server.port"] = str(server[0]), int(server[1])
    span = hook.tracer.start_span(
        f"{method} {route}" if route else method,
        context=_TRACEPARENT.extract(headers),
        kind=SpanKind.SERVER,
        attributes=attrs,
    )
    status: list[int] = []

    async def send_status(message: Any) -> None:
        if message.get("type") == "http.response.start":
            status.append(int(message.get("status", 0)))
        await send(message)

    token = context.attach(trace.set_span_in_context(span))
    try:
        await app(scope, receive, send_status)
    except BaseException as exc:
        kind = _error_type(exc)
        _set_error(span, kind, kind)
        raise
    finally:
        context.detach(token)
        if status:
            span.set_attribute("http.response.status_code", status[0])
            if status[0] >= 500:
                _set_error(span, str(status[0]), f"HTTP {status[0]}")
        span.end()
