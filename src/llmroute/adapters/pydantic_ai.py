"""pydantic-ai on llmroute: ``LLMRouteModel`` is a ``pydantic_ai.models.Model`` over any llmroute
``Model`` or ``Router``.

    from pydantic_ai import Agent
    from llmroute.adapters.pydantic_ai import LLMRouteModel
    from llmroute.providers import anthropic

    agent = Agent(LLMRouteModel(anthropic.configure().messages("claude-haiku-4-5")))

Messages, tools (function, output and built-in tools such as ``WebSearchTool``), output modes
(tool, native, prompted), the unified ``thinking`` setting and the generic model settings become
one ``LLMRequest``; llmroute's events become pydantic-ai parts one for one (text with citations,
thinking with its signature or encrypted content, tool calls, built-in tool calls and returns,
files), with usage (cache read/write, reasoning tokens), ``response.cost`` in
``provider_details['llmroute']['cost']``, the finish reason, and ``LLMError`` raised as
pydantic-ai's ``ModelHTTPError`` / ``ModelAPIError`` categories. Install with
``pip install 'llmroute[pydantic-ai]'``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import msgspec
import pydantic_core
from pydantic_ai import exceptions as pai_errors
from pydantic_ai import messages as pai
from pydantic_ai import native_tools as pai_native
from pydantic_ai.models import Model as PaiModel
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition as PaiToolDefinition
from pydantic_ai.usage import RequestUsage

from ..client import Client
from ..route.model import Model, ModelGroup
from ..route.policy import Timeouts
from ..schema.content import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from ..schema.errors import (
    AuthenticationError,
    ContentPolicyError,
    ContextOverflowError,
    InvalidRequestError,
    LLMError,
    ProviderInternalError,
    QuotaExceededError,
    RateLimitError,
    TimeoutError,
    TransportError,
)
from ..schema.events import (
    ApprovalRequest,
    Citation,
    FinishReason,
    LLMEvent,
    Media,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    StepStart,
    TextDelta,
    TextEnd,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    ToolResult,
)
from ..schema.options import GenerationOptions, HttpOverlay
from ..schema.request import LLMRequest, OutputSchema
from ..schema.response import LLMResponse
from ..schema.tools import HostedTool, ToolChoice, ToolDefinition, ToolSpec
from ..schema.usage import Usage
from ..stream import EventStream
from ._core import (
    Backend,
    check_target,
    cost_details,
    hosted_tool,
    http_status,
    merge_options,
    thinking_options,
)

__all__ = ["LLMRouteModel", "LLMRouteSettings", "LLMRouteStreamedResponse"]

KEY = "llmroute"
"""The ``provider_details`` key under which llmroute's own data (provider metadata, the cost)
travels on pydantic-ai parts and responses, so the next turn sends it back untouched."""


class LLMRouteSettings(ModelSettings, total=False):
    """pydantic-ai's ``ModelSettings`` plus llmroute's own (prefixed ``llmroute_``)."""

    llmroute_provider_options: dict[str, dict[str, Any]]
    """Provider options by namespace (``{"anthropic": {"top_k": 5}}``), merged over the request's."""
    llmroute_top_k: int
    """``GenerationOptions.top_k``."""


_FINISH: dict[FinishReason, pai.FinishReason | None] = {
    "stop": "stop",
    "length": "length",
    "tool-calls": "tool_call",
    "content-filter": "content_filter",
    "error": "error",
    "unknown": None,
}

# pydantic-ai built-in tool kinds llmroute lowers as hosted tools of the same kind
_NATIVE_KINDS = {
    "web_search",
    "code_execution",
    "web_fetch",
    "image_generation",
    "file_search",
    "mcp_server",
    "x_search",
}


def _native_tool_types() -> frozenset[type[pai_native.AbstractNativeTool]]:
    types: set[type[pai_native.AbstractNativeTool]] = set()
    for name in dir(pai_native):
        value = getattr(pai_native, name)
        if (
            isinstance(value, type)
            and issubclass(value, pai_native.AbstractNativeTool)
            and getattr(value, "kind", None) in _NATIVE_KINDS
        ):
            types.add(value)
    return frozenset(types)


def _has_field(cls: type, name: str) -> bool:
    """Whether the pydantic-ai dataclass ``cls`` has field ``name`` in the installed version."""
    return any(f.name == name for f in dataclasses.fields(cls))


_TEXT_CITATIONS = _has_field(pai.TextPart, "citations")
_REASONING_TOKENS = _has_field(RequestUsage, "output_reasoning_tokens")


class LLMRouteModel(PaiModel):
    """A pydantic-ai model that calls through llmroute: any ``Model`` from a provider facade, or a
    ``Router``. ``client``: the ``llmroute.Client`` to call through (its timeouts, retries and
    hooks apply); by default the model makes one per event loop and closes it with ``aclose()``
    (or ``async with``)."""

    unsupported_settings = frozenset({"logit_bias", "parallel_tool_calls", "service_tier"})  # pyright: ignore[reportIncompatibleVariableOverride]

    def __init__(
        self,
        model: Model | ModelGroup,
        *,
        client: Client | None = None,
        settings: ModelSettings | None = None,
        profile: ModelProfile | None = None,
    ) -> None:
        self._backend = Backend(check_target(model), client)
        self._target = self._backend.target
        hosted = {kind for m in models_of_target(self._target) for kind in m.route.protocol.hosted_kinds}
        defaults = ModelProfile(
            supports_tools=True,
            supports_json_schema_output=True,
            supports_json_object_output=True,
            supports_image_output=True,
            supports_thinking=True,
            supported_native_tools=frozenset(
                t for t in _native_tool_types() if _hosted_kind(t.kind) in hosted
            ),
        )
        super().__init__(settings=settings, profile={**defaults, **(profile or {})})

    # -- identity ---------------------------------------------------------------------------------

    @property
    def model_name(self) -> str:
        return self._target.id

    @property
    def system(self) -> str:
        """The provider's name (``anthropic``, ``openai``, ...; a router: ``router``)."""
        return self._target.provider

    @property
    def base_url(self) -> str | None:
        target = self._target
        return target.route.endpoint.base_url if isinstance(target, Model) else None

    @classmethod
    def supported_native_tools(cls) -> frozenset[type[pai_native.AbstractNativeTool]]:
        """The built-in tools llmroute lowers (each route's profile narrows them to the kinds its
        protocol hosts)."""
        return _native_tool_types()

    async def aclose(self) -> None:
        """Close the clients this model made (never one it was given)."""
        await self._backend.aclose()

    async def __aexit__(self, *args: Any) -> bool | None:
        await self.aclose()
        return await super().__aexit__(*args)

    # -- calls ------------------------------------------------------------------------------------

    async def request(
        self,
        messages: list[pai.ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> pai.ModelResponse:
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        request = self.to_request(messages, settings, params)
        streamed = self._open(request, params, settings)
        async with streamed.owning():
            async for _ in streamed:
                pass
        return streamed.get()

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[pai.ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse, None]:
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        request = self.to_request(messages, settings, params)
        streamed = self._open(request, params, settings)
        async with streamed.owning():
            yield streamed

    async def count_tokens(
        self,
        messages: list[pai.ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> RequestUsage:
        """The provider's count where the route has a counting endpoint (Anthropic, Gemini, OpenAI
        Responses), else llmroute's local estimate (``details['estimated'] == 1``)."""
        settings, params = self.prepare_request(model_settings, model_request_parameters)
        request = self.to_request(messages, settings, params)
        try:
            count = await self._backend.client.count_tokens(request)
        except LLMError as exc:
            raise to_pydantic_ai_error(exc, self.model_name) from exc
        details = {"estimated": 1} if count.source == "estimate" else {}
        return RequestUsage(input_tokens=count.input_tokens, details=details)

    def _open(
        self, request: LLMRequest, params: ModelRequestParameters, settings: ModelSettings | None
    ) -> LLMRouteStreamedResponse:
        try:
            events = self._backend.stream(request, timeouts=_timeouts(settings))
        except LLMError as exc:
            raise to_pydantic_ai_error(exc, self.model_name) from exc
        return LLMRouteStreamedResponse(
            model_request_parameters=params,
            _model_name=self.model_name,
            _provider_name=self.system,
            _provider_url=self.base_url,
            _events=events,
        )

    # -- pydantic-ai -> llmroute ------------------------------------------------------------------

    def to_request(
        self,
        messages: Sequence[pai.ModelMessage],
        settings: ModelSettings | None,
        params: ModelRequestParameters,
    ) -> LLMRequest:
        """The ``LLMRequest`` a call with these messages, settings and parameters sends."""
        s = cast(LLMRouteSettings, settings or {})
        system, history = _history(messages)
        system.extend(_instructions(messages, params))
        tools: list[ToolSpec] = [_tool(t) for t in (*params.function_tools, *params.output_tools)]
        tools.extend(_native(t) for t in params.native_tools)
        options = merge_options(
            thinking_options(models_of_target(self._target), params.thinking)
            if params.thinking is not None
            else None,
            s.get("llmroute_provider_options"),
        )
        output_schema, json_mode = _output(params)
        stop = s.get("stop_sequences")
        generation = GenerationOptions(
            max_tokens=s.get("max_tokens"),
            temperature=s.get("temperature"),
            top_p=s.get("top_p"),
            top_k=s.get("llmroute_top_k"),
            seed=s.get("seed"),
            presence_penalty=s.get("presence_penalty"),
            frequency_penalty=s.get("frequency_penalty"),
            stop=tuple(stop) if stop else None,
        )
        headers = s.get("extra_headers")
        body = s.get("extra_body")
        if body is not None and not isinstance(body, dict):
            raise pai_errors.UserError(
                "extra_body: llmroute adds a JSON object's keys to the body; got a non-object"
            )
        http = HttpOverlay(
            headers=dict(headers) if headers else None, body=cast(dict[str, Any], body) or None
        )
        return LLMRequest(
            model=self._target,
            system=tuple(TextPart(t) for t in system if t),
            messages=tuple(history),
            tools=tuple(tools),
            tool_choice=_tool_choice(s, params, tools),
            generation=generation if generation != GenerationOptions() else None,
            provider_options=options,
            http=http if http != HttpOverlay() else None,
            output_schema=output_schema,
            json_mode=json_mode,
        )


def _timeouts(settings: ModelSettings | None) -> Timeouts | None:
    """pydantic-ai's ``timeout`` setting (seconds) as llmroute's total deadline."""
    timeout = (settings or {}).get("timeout")
    return Timeouts(total=float(timeout)) if isinstance(timeout, int | float) else None


def models_of_target(target: Model | ModelGroup) -> tuple[Model, ...]:
    return target.models() if isinstance(target, ModelGroup) else (target,)


def _hosted_kind(kind: str) -> str:
    return "mcp" if kind == "mcp_server" else kind


def _tool(tool: PaiToolDefinition) -> ToolDefinition:
    return ToolDefinition(
        name=tool.name,
        description=tool.description or "",
        input_schema=tool.parameters_json_schema,
        strict=tool.strict,
    )


def _native(tool: pai_native.AbstractNativeTool) -> HostedTool:
    kind = tool.kind
    get = _changed(tool).get
    if kind == "web_search":
        location = get("user_location")
        return hosted_tool(
            "web_search",
            {
                "max_uses": get("max_uses"),
                "allowed_domains": get("allowed_domains"),
                "blocked_domains": get("blocked_domains"),
                "user_location": dict(location) if location else None,
                "search_context_size": get("search_context_size"),
            },
        )
    if kind == "web_fetch":
        return hosted_tool("web_fetch", {"max_uses": get("max_uses")})
    if kind == "file_search":
        return hosted_tool("file_search", {"vector_store_ids": get("file_store_ids")})
    if kind == "mcp_server":
        return hosted_tool("mcp", {"server_label": get("id"), "server_url": get("url")})
    if kind in _NATIVE_KINDS:
        return hosted_tool(kind, {})
    raise pai_errors.UserError(f"native tool {type(tool).__name__} ({kind!r}) has no llmroute hosted tool")


def _changed(tool: pai_native.AbstractNativeTool) -> dict[str, Any]:
    """The tool's fields set away from their defaults: a default (WebSearchTool's
    ``search_context_size='medium'``) is the provider's own, so it is not sent as an option a
    route might not take."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(tool):
        value = getattr(tool, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        out[f.name] = value
    return out


def _tool_choice(
    settings: LLMRouteSettings, params: ModelRequestParameters, tools: Sequence[ToolSpec]
) -> ToolChoice | None:
    choice: Any = settings.get("tool_choice")
    if choice in ("auto", "none", "required"):
        return ToolChoice(choice)
    names = cast(list[Any], choice) if isinstance(choice, list) else None
    if names is not None and len(names) == 1:
        return ToolChoice.named(str(names[0]))
    if choice is not None and not isinstance(choice, list):
        raise pai_errors.UserError(
            f"tool_choice {choice!r}: llmroute takes 'auto', 'none', 'required' or [name]"
        )
    if tools and not params.allow_text_output and params.output_tools:
        return ToolChoice("required")
    return None


def _output(params: ModelRequestParameters) -> tuple[OutputSchema | None, bool]:
    obj = params.output_object
    if params.output_mode == "native" and obj is not None:
        return (
            OutputSchema(
                name=obj.name or "final_result",
                schema=obj.json_schema,
                description=obj.description,
                strict=obj.strict if obj.strict is not None else True,
            ),
            False,
        )
    if params.output_mode == "prompted":
        return None, True
    return None, False


def _instructions(messages: Sequence[pai.ModelMessage], params: ModelRequestParameters) -> list[str]:
    parts = params.instruction_parts
    if parts is not None:
        texts = [p.content for p in parts]
    else:
        texts = []
        for message in reversed(messages):
            if isinstance(message, pai.ModelRequest):
                if message.instructions:
                    texts = [message.instructions]
                break
    prompted = params.prompted_output_instructions if params.output_mode == "prompted" else None
    if prompted and prompted not in texts:
        texts.append(prompted)
    return texts


def _details(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """llmroute's provider metadata from a part's ``provider_details``."""
    meta: object = _held(value).get("meta")
    return cast(dict[str, Any], meta) if isinstance(meta, dict) and meta else None


def _history(messages: Sequence[pai.ModelMessage]) -> tuple[list[str], list[Message]]:
    system: list[str] = []
    out: list[Message] = []

    def add(role: Any, part: Part) -> None:
        if out and out[-1].role == role:
            out[-1] = Message(role, (*out[-1].content, part))
        else:
            out.append(Message(role, (part,)))

    for message in messages:
        if isinstance(message, pai.ModelRequest):
            for part in message.parts:
                _request_part(part, system, out, add)
        else:
            for part in message.parts:
                mapped = _response_part(part)
                if mapped is not None:
                    add("assistant", mapped)
    return system, out


def _request_part(part: Any, system: list[str], out: list[Message], add: Any) -> None:
    if isinstance(part, pai.SystemPromptPart):
        if out:
            add("system", TextPart(part.content))
        else:
            system.append(part.content)
    elif isinstance(part, pai.UserPromptPart):
        for item in _user_content(part.content):
            add("user", item)
    elif isinstance(part, pai.ToolReturnPart):
        part = cast("pai.ToolReturnPart[Any]", part)
        outcome: object = getattr(part, "outcome", "success")
        add(
            "tool",
            ToolResultPart(
                part.tool_call_id,
                part.tool_name,
                _tool_result(part),
                is_error=outcome not in ("success", None),
            ),
        )
    elif isinstance(part, pai.RetryPromptPart):  # pyright: ignore[reportDeprecated]
        if part.tool_name is None:
            add("user", TextPart(part.model_response()))
        else:
            add(
                "tool",
                ToolResultPart(part.tool_call_id, part.tool_name, part.model_response(), is_error=True),
            )
    else:
        kind = getattr(part, "part_kind", type(part).__name__)
        raise pai_errors.UserError(f"llmroute cannot send a {kind!r} request part")


def _tool_result(part: pai.ToolReturnPart[Any]) -> Any:
    content: Any = part.content
    if isinstance(content, list | tuple):
        items = cast(Sequence[Any], content)
        if any(isinstance(c, pai.BinaryContent | pai.FileUrl) for c in items):
            return tuple(_user_content(list(items)))
    return part.model_response_str()


def _user_content(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)]
    parts: list[Part] = []
    for item in cast(Sequence[Any], content):
        if isinstance(item, str):
            parts.append(TextPart(item))
        elif isinstance(item, pai.BinaryContent):
            parts.append(MediaPart(item.media_type, item.data, filename=getattr(item, "identifier", None)))
        elif isinstance(item, pai.FileUrl):
            parts.append(MediaPart(item.media_type, item.url))
        elif isinstance(item, pai.CachePoint):
            continue  # llmroute places cache breakpoints by CachePolicy
        elif getattr(item, "kind", None) == "text-content" or type(item).__name__ == "TextContent":
            parts.append(TextPart(str(item.content)))
        else:
            raise pai_errors.UserError(f"llmroute cannot send user content of type {type(item).__name__}")
    return parts


def _response_part(part: Any) -> Part | None:
    meta = _details(getattr(part, "provider_details", None))
    if isinstance(part, pai.TextPart):
        return TextPart(part.content, provider_metadata=meta) if part.content or meta else None
    if isinstance(part, pai.ThinkingPart):
        held = _held(part.provider_details)
        return ReasoningPart(
            part.content,
            signature=part.signature if not held.get("encrypted") else held.get("signature"),
            encrypted=held.get("encrypted"),
            provider_metadata=meta,
        )
    if isinstance(part, pai.NativeToolCallPart):
        part = cast("pai.NativeToolCallPart[Any]", part)
        return ToolCallPart(
            part.tool_call_id,
            _llmroute_name(part),
            part.args_as_dict(),
            provider_executed=True,
            provider_metadata=meta,
        )
    if isinstance(part, pai.ToolCallPart):
        return ToolCallPart(part.tool_call_id, part.tool_name, part.args_as_dict(), provider_metadata=meta)
    if isinstance(part, pai.NativeToolReturnPart):
        part = cast("pai.NativeToolReturnPart[Any]", part)
        return ToolResultPart(
            part.tool_call_id,
            _llmroute_name(part),
            part.content,
            provider_executed=True,
            provider_metadata=meta,
        )
    if isinstance(part, pai.FilePart):
        return MediaPart(part.content.media_type, part.content.data, provider_metadata=meta)
    kind = getattr(part, "part_kind", type(part).__name__)
    raise pai_errors.UserError(f"llmroute cannot send a {kind!r} response part back")


def _llmroute_name(part: pai.NativeToolCallPart[Any] | pai.NativeToolReturnPart[Any]) -> str:
    return str(_held(part.provider_details).get("name") or part.tool_name)


def _held(details: dict[str, Any] | None) -> dict[str, Any]:
    """What llmroute put under ``provider_details['llmroute']`` (empty when nothing)."""
    held: object = (details or {}).get(KEY)
    return cast(dict[str, Any], held) if isinstance(held, dict) else {}


# -- llmroute -> pydantic-ai --------------------------------------------------------------------------


def request_usage(usage: Usage | None) -> RequestUsage:
    """llmroute's ``Usage`` as pydantic-ai's: inclusive input and output, cache read/write,
    reasoning tokens (``output_reasoning_tokens`` where the version has it, and always in
    ``details['reasoning_tokens']``), hosted web searches in ``details['web_search_requests']``."""
    if usage is None:
        return RequestUsage()
    details: dict[str, int] = {}
    if usage.reasoning_tokens:
        details["reasoning_tokens"] = usage.reasoning_tokens
    if usage.web_search_requests:
        details["web_search_requests"] = usage.web_search_requests
    if usage.cache_write_1h_tokens:
        details["cache_write_1h_tokens"] = usage.cache_write_1h_tokens
    extra: dict[str, Any] = {}
    if _REASONING_TOKENS and usage.reasoning_tokens:
        extra["output_reasoning_tokens"] = usage.reasoning_tokens
    return RequestUsage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=usage.cache_read_tokens or 0,
        cache_write_tokens=usage.cache_write_tokens or 0,
        details=details,
        **extra,
    )


def to_pydantic_ai_error(error: LLMError, model_name: str) -> Exception:
    """``error`` as the pydantic-ai exception its kind is: with an HTTP status a ``ModelHTTPError``
    (of the matching category where the version has them: rate limit, quota, server, context
    window, authentication, rejected), else ``ModelAPIError`` (``ModelConnectionError`` /
    ``ModelTimeoutError`` for transport failures); a request llmroute refused before sending is a
    ``UserError``."""
    status = http_status(error)
    message = str(error)
    category = _category(error)
    if status is None and isinstance(error, InvalidRequestError):
        return pai_errors.UserError(message)
    if status is not None:
        for_category = getattr(pai_errors.ModelHTTPError, "for_category", None)
        body = error.http.body if error.http is not None else None
        if for_category is not None and category is not None:
            return cast(
                Exception,
                for_category(
                    category,
                    status_code=status,
                    model_name=model_name,
                    body=body or message,
                    headers=error.http.headers if error.http is not None else None,
                    provider_error_code=error.code,
                    retry_after=getattr(error, "retry_after", None),
                ),
            )
        return pai_errors.ModelHTTPError(status, model_name, body or message)
    if category is not None and category is not getattr(pai_errors, "ModelRequestRejectedError", None):
        try:
            return category(model_name, message, provider_error_code=error.code)
        except TypeError:
            pass
    return pai_errors.ModelAPIError(model_name, message)


def _category(error: LLMError) -> Any:
    names: list[tuple[type[LLMError], str]] = [
        (ContextOverflowError, "ModelContextWindowExceededError"),
        (RateLimitError, "ModelRateLimitError"),
        (QuotaExceededError, "ModelQuotaExceededError"),
        (AuthenticationError, "ModelAuthenticationError"),
        (ContentPolicyError, "ModelRequestRejectedError"),
        (InvalidRequestError, "ModelRequestRejectedError"),
        (TimeoutError, "ModelTimeoutError"),
        (TransportError, "ModelConnectionError"),
    ]
    if isinstance(error, ProviderInternalError):
        status = http_status(error)
        return getattr(pai_errors, "ModelOverloadedError" if status == 529 else "ModelServerError", None)
    for kind, name in names:
        if isinstance(error, kind):
            return getattr(pai_errors, name, None)
    return None


def _jsonable(value: Any) -> Any:
    try:
        return msgspec.to_builtins(value)
    except (TypeError, msgspec.EncodeError):
        return pydantic_core.to_jsonable_python(value, fallback=repr)


@dataclass
class LLMRouteStreamedResponse(StreamedResponse):
    """An llmroute ``EventStream`` as pydantic-ai stream events: each llmroute event becomes the
    part event it is (through pydantic-ai's parts manager), and ``cancel()`` / closing the stream
    closes the upstream connection at once."""

    _model_name: str = ""
    _provider_name: str = ""
    _provider_url: str | None = None
    _events: EventStream | None = None
    _timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    _started: set[str] = field(default_factory=set[str])
    _tool_args: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    _llm_response: LLMResponse | None = None
    _texted: bool = False
    _late: set[str] = field(default_factory=set[str])  # hosted calls reported after the text they ground

    @asynccontextmanager
    async def owning(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            await self.close_stream()

    async def close_stream(self) -> None:
        if self._events is not None:
            await self._events.aclose()

    def get(self) -> pai.ModelResponse:
        """The response so far. A hosted call reported after the text it grounds (Gemini's
        grounding, a search OpenRouter shows only by its citations) is placed before that text,
        where the search happened: pydantic-ai reads text before a built-in call as thoughts."""
        response = super().get()
        if not self._late:
            return response
        parts = list(response.parts)
        late = [
            p
            for p in parts
            if isinstance(p, pai.NativeToolCallPart | pai.NativeToolReturnPart)
            and p.tool_call_id in self._late
        ]
        rest = [p for p in parts if all(p is not q for q in late)]
        first = next((i for i, p in enumerate(rest) if isinstance(p, pai.TextPart)), len(rest))
        response.parts = [*rest[:first], *late, *rest[first:]]
        return response

    @property
    def llm_response(self) -> LLMResponse | None:
        """The llmroute response this stream folded into, once it has finished."""
        return self._llm_response

    async def _get_event_iterator(self) -> AsyncIterator[pai.ModelResponseStreamEvent]:
        events = self._events
        assert events is not None
        builder = events.track()
        try:
            async for event in events:
                for out in self._map(event):
                    yield out
        except LLMError as exc:
            raise to_pydantic_ai_error(exc, self._model_name) from exc
        response = self._llm_response = builder.build()
        self._finish(response)

    def _finish(self, response: LLMResponse) -> None:
        cost = cost_details(response)
        details: dict[str, Any] = {"provider": response.provider, "model_id": response.model_id}
        if cost is not None:
            details["cost"] = cost
        if response.steps and response.steps[-1].target:
            details["target"] = response.steps[-1].target
        self.provider_details = {**(self.provider_details or {}), KEY: details}

    def _map(self, event: LLMEvent) -> Iterator[pai.ModelResponseStreamEvent]:
        pm = self._parts_manager
        match event:  # the frequent kinds first
            case TextDelta():
                self._texted = True
                yield from pm.handle_text_delta(vendor_part_id=event.id, content=event.text)
            case ReasoningDelta():
                yield from pm.handle_thinking_delta(
                    vendor_part_id=event.id, content=event.text, provider_name=self._provider_name
                )
            case ToolInputDelta():
                pieces = self._tool_args.get(event.id)
                if pieces is not None:
                    pieces.append(event.text)
                    ev = pm.handle_tool_call_delta(vendor_part_id=event.id, args=event.text)
                    if ev is not None:
                        yield ev
            case TextEnd():
                if event.provider_metadata:
                    self._update(event.id, event.provider_metadata)
            case ReasoningStart():
                yield from pm.handle_thinking_delta(
                    vendor_part_id=event.id, content="", provider_name=self._provider_name
                )
            case ReasoningEnd():
                yield from self._reasoning_end(event)
            case ToolInputStart():
                if not event.provider_executed:
                    self._tool_args[event.id] = []
                    ev = pm.handle_tool_call_delta(
                        vendor_part_id=event.id, tool_name=event.name, tool_call_id=event.id
                    )
                    if ev is not None:
                        yield ev
            case ToolCall():
                yield from self._tool_call(event)
            case ToolResult():
                if event.provider_executed:
                    yield self._native_return(event)
            case Citation():
                self._cite(event)
            case Media():
                yield self._media(event)
            case StepFinish():
                self._step(event.reason, event.usage)
            case StepStart():
                if event.provider_metadata:
                    held = self.provider_details or {}
                    self.provider_details = {**held, "step_metadata": event.provider_metadata}
            case ApprovalRequest():
                raise pai_errors.UnexpectedModelBehavior(
                    f"the provider asks to approve {event.name!r} before running it; answer approval "
                    "requests through llmroute directly (llmroute.approval)"
                )
            case _:  # text-start, tool-input-end, tool-error, provider-error, finish: nothing to add
                pass

    def _step(self, reason: FinishReason, usage: Usage | None) -> None:
        self.finish_reason = _FINISH[reason]
        if usage is not None:
            self._usage = self._usage + request_usage(usage)

    def _update(self, block: str, meta: dict[str, Any]) -> None:
        part = self._parts_manager.get_part_by_vendor_id(block)
        if part is not None and hasattr(part, "provider_details"):
            held: dict[str, Any] = dict(getattr(part, "provider_details", None) or {})
            mine = dict(held.get(KEY) or {})
            mine["meta"] = {**(mine.get("meta") or {}), **meta}
            held[KEY] = mine
            part.provider_details = held  # pyright: ignore[reportAttributeAccessIssue]

    def _reasoning_end(self, event: ReasoningEnd) -> Iterator[pai.ModelResponseStreamEvent]:
        mine: dict[str, Any] = {}
        if event.encrypted is not None:
            mine["encrypted"] = event.encrypted
            if event.signature is not None:
                mine["signature"] = event.signature
        if event.provider_metadata:
            mine["meta"] = event.provider_metadata
        yield from self._parts_manager.handle_thinking_delta(
            vendor_part_id=event.id,
            signature=event.signature if event.signature is not None else event.encrypted,
            provider_name=self._provider_name,
            provider_details={KEY: mine} if mine else None,
        )

    def _tool_call(self, event: ToolCall) -> Iterator[pai.ModelResponseStreamEvent]:
        pm = self._parts_manager
        details = {KEY: {"meta": event.provider_metadata}} if event.provider_metadata else None
        if event.provider_executed:
            if self._texted:
                self._late.add(event.id)
            part = pai.NativeToolCallPart(
                tool_name=event.name,
                args=_as_args(event.input),
                tool_call_id=event.id,
                provider_name=self._provider_name,
                provider_details={
                    **(details or {}),
                    KEY: {**(details or {}).get(KEY, {}), "name": event.name},
                },
            )
            yield pm.handle_part(vendor_part_id=event.id, part=part)
            return
        pieces = self._tool_args.pop(event.id, None)
        if pieces is not None and _same_args("".join(pieces), event.input) and details is None:
            return  # streamed whole: the part already holds these arguments
        yield pm.handle_tool_call_part(
            vendor_part_id=event.id,
            tool_name=event.name,
            args=_as_args(event.input),
            tool_call_id=event.id,
            provider_details=details,
        )

    def _native_return(self, event: ToolResult) -> pai.ModelResponseStreamEvent:
        mine: dict[str, Any] = {"name": event.name}
        if event.provider_metadata:
            mine["meta"] = event.provider_metadata
        part = pai.NativeToolReturnPart(
            tool_name=event.name,
            content=_jsonable(event.result),
            tool_call_id=event.id,
            provider_name=self._provider_name,
            provider_details={KEY: mine},
        )
        return self._parts_manager.handle_part(vendor_part_id=f"{event.id}:result", part=part)

    def _cite(self, event: Citation) -> None:
        part = self._parts_manager.get_part_by_vendor_id(event.block_id)
        if not isinstance(part, pai.TextPart):
            return
        held: dict[str, Any] = dict(part.provider_details or {})
        mine = dict(held.get(KEY) or {})
        record = {k: v for k, v in msgspec.to_builtins(event).items() if k not in ("type", "block_id")}
        mine["citations"] = [*mine.get("citations", []), record]
        held[KEY] = mine
        part.provider_details = held
        if _TEXT_CITATIONS and event.url is not None:
            source = pai.WebCitationSource(  # pyright: ignore[reportAttributeAccessIssue, reportUnknownVariableType]
                event.url, title=event.title, excerpts=[event.cited_text] if event.cited_text else []
            )
            anchor = (
                pai.ContentCitationAnchor(start=event.start, end=event.end)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownVariableType]
                if event.start is not None and event.end is not None
                else None
            )
            cites: list[Any] = list(getattr(part, "citations", None) or [])
            cites.append(pai.Citation([source], anchor=anchor))  # pyright: ignore[reportAttributeAccessIssue, reportUnknownArgumentType]
            part.citations = cites  # pyright: ignore[reportAttributeAccessIssue]

    def _media(self, event: Media) -> pai.ModelResponseStreamEvent:
        details = {KEY: {"meta": event.provider_metadata}} if event.provider_metadata else None
        part = pai.FilePart(
            content=pai.BinaryContent(data=event.to_bytes(), media_type=event.mime_type),
            provider_name=self._provider_name,
            provider_details=details,
        )
        return self._parts_manager.handle_part(vendor_part_id=event.id, part=part)

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def provider_name(self) -> str | None:
        return self._provider_name

    @property
    def provider_url(self) -> str | None:
        return self._provider_url

    @property
    def timestamp(self) -> datetime:
        return self._timestamp


def _as_args(value: Any) -> str | dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return cast(dict[str, Any] | None, value)
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _same_args(text: str, value: Any) -> bool:
    try:
        return json.loads(text or "{}") == (value if value is not None else {})
    except ValueError:
        return False
