"""openai-agents on llmroute: ``LLMRouteAgentsModel`` is an ``agents.Model`` over any llmroute
``Model`` or ``Router``, and ``LLMRouteModelProvider`` an ``agents.ModelProvider`` handing them out.

    from agents import Agent, Runner
    from llmroute.adapters.openai_agents import LLMRouteAgentsModel
    from llmroute.providers import anthropic

    agent = Agent(name="a", model=LLMRouteAgentsModel(anthropic.configure().messages("claude-haiku-4-5")))
    result = await Runner.run(agent, "hi")

The Responses-format input items the runner sends (messages, function calls and outputs, reasoning
with its encrypted content, hosted tool calls) become one ``LLMRequest``; llmroute's events become
Responses output items and stream events one for one (text with ``url_citation`` annotations,
reasoning summaries with their signature, function calls, hosted calls such as
``web_search_call``), with usage (cached, cache-write and reasoning tokens) and the cost in
``ModelResponse.raw_usage['llmroute_cost']``. What a Responses item cannot hold (a signature, a
provider's metadata, a hosted call's result) rides in the item's ``provider_data['llmroute']``,
so the next turn sends it back untouched. Failures stay typed ``llmroute.LLMError``s, and
``get_retry_advice`` tells the runner's retry policy which are retryable. Install with
``pip install 'llmroute[agents]'``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, cast

import msgspec
from agents import ModelBehaviorError, ModelSettings, ModelTracing, UserError
from agents import Usage as AgentsUsage
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model as AgentsModel
from agents.models.interface import ModelProvider
from agents.tool import (
    CodeInterpreterTool,
    FileSearchTool,
    FunctionTool,
    HostedMCPTool,
    ImageGenerationTool,
    Tool,
    WebSearchTool,
)
from agents.tracing import generation_span
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseReasoningSummaryPartAddedEvent,
    ResponseReasoningSummaryPartDoneEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseTextDeltaEvent,
    ResponseUsage,
)
from openai.types.responses.response_output_item import ResponseOutputItem
from openai.types.responses.response_reasoning_item import Summary
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from ..client import Client
from ..route.model import Model, ModelGroup
from ..route.policy import Timeouts
from ..schema.content import MediaPart, Message, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ..schema.errors import InvalidProviderOutputError, LLMError
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
    TextDelta,
    TextEnd,
    TextStart,
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
from ._core import Backend, check_target, cost_details, hosted_tool, merge_options, thinking_options

__all__ = ["LLMRouteAgentsModel", "LLMRouteModelProvider"]

KEY = "llmroute"
"""The ``provider_data`` key under which llmroute's own data travels on Responses items."""

# ModelSettings fields that are OpenAI body keys: sent to routes of the OpenAI protocols
_OPENAI_KEYS = ("parallel_tool_calls", "store", "truncation", "metadata", "top_logprobs")


class LLMRouteAgentsModel(AgentsModel):
    """An openai-agents model that calls through llmroute: any ``Model`` from a provider facade, or
    a ``Router``. ``client``: the ``llmroute.Client`` to call through; by default the model makes
    one per event loop and closes it in ``close()``."""

    def __init__(self, model: Model | ModelGroup, *, client: Client | None = None) -> None:
        self._backend = Backend(check_target(model), client)
        self.target = self._backend.target

    @property
    def model_name(self) -> str:
        return self.target.id

    async def close(self) -> None:
        """Close the clients this model made (never one it was given)."""
        await self._backend.aclose()

    def get_retry_advice(self, request: Any) -> Any:
        """Whether the runner's retry policy may try again: an ``LLMError``'s ``retryable`` and its
        ``retry_after`` (``None`` for failures that are not llmroute's)."""
        error = _llm_error(getattr(request, "error", None))
        if error is None:
            return None
        from agents.retry import ModelRetryAdvice

        return ModelRetryAdvice(
            suggested=error.retryable,
            retry_after=getattr(error, "retry_after", None),
            reason=type(error).__name__,
        )

    # -- calls ------------------------------------------------------------------------------------

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
        **later: Any,  # arguments newer versions add
    ) -> ModelResponse:
        request = self.to_request(system_instructions, input, model_settings, tools, output_schema, handoffs)
        _refuse_server_state(previous_response_id, conversation_id, prompt)
        done: list[LLMResponse] = []
        final: Response | None = None
        async for event in self._run(request, model_settings, tracing, input, done):
            if isinstance(event, ResponseCompletedEvent):
                final = event.response
        assert final is not None and done  # _run ends with both
        return ModelResponse(
            output=final.output, usage=_usage(done[0].usage), response_id=None, **_raw_usage(done[0])
        )

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
        **later: Any,  # arguments newer versions add
    ) -> AsyncIterator[TResponseStreamEvent]:
        request = self.to_request(system_instructions, input, model_settings, tools, output_schema, handoffs)
        _refuse_server_state(previous_response_id, conversation_id, prompt)
        return self._run(request, model_settings, tracing, input, [])

    async def _run(
        self,
        request: LLMRequest,
        settings: ModelSettings,
        tracing: ModelTracing,
        input: str | list[TResponseInputItem],
        done: list[LLMResponse],
    ) -> AsyncIterator[TResponseStreamEvent]:
        """One model call as Responses stream events, inside its generation span; the folded
        llmroute response lands in ``done`` before ``response.completed``."""
        with generation_span(
            model=self.model_name, model_config=_config(settings), disabled=tracing.is_disabled()
        ) as span:
            if tracing.include_data():
                span.span_data.input = _plain(input)
            mapper = _Mapper(self.model_name)
            yield ResponseCreatedEvent(
                response=mapper.envelope("in_progress", []),
                type="response.created",
                sequence_number=mapper.seq(),
            )
            events = self._backend.stream(request, timeouts=_timeouts(settings))
            try:
                async with events:
                    builder = events.track()
                    async for event in events:
                        for out in mapper.map(event):
                            yield out
            except LLMError as exc:
                raise _failure(exc) from exc
            response = builder.build()
            done.append(response)
            final = mapper.response(response)
            span.span_data.usage = _span_usage(response)
            if tracing.include_data():
                span.span_data.output = [item.model_dump(exclude_none=True) for item in final.output]
            yield ResponseCompletedEvent(
                response=final, type="response.completed", sequence_number=mapper.seq()
            )

    # -- openai-agents -> llmroute ----------------------------------------------------------------

    def to_request(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        settings: ModelSettings,
        tools: Sequence[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: Sequence[Handoff[Any, Any]],
    ) -> LLMRequest:
        """The ``LLMRequest`` a call with these arguments sends."""
        system, messages = _messages(input)
        if system_instructions:
            system.insert(0, system_instructions)
        specs: list[ToolSpec] = [_tool(t) for t in tools]
        specs.extend(
            ToolDefinition(
                name=h.tool_name,
                description=h.tool_description,
                input_schema=h.input_json_schema,
                strict=h.strict_json_schema,
            )
            for h in handoffs
        )
        models = self.target.models() if isinstance(self.target, ModelGroup) else (self.target,)
        extra_args = dict(settings.extra_args or {})
        own_options = extra_args.pop("llmroute_provider_options", None)
        if extra_args:
            raise UserError(
                f"extra_args {sorted(extra_args)}: llmroute takes extra_args={{'llmroute_provider_options': ...}}; "
                "use extra_body for body keys"
            )
        effort = settings.reasoning.effort if settings.reasoning is not None else None
        openai_keys = {
            k: getattr(settings, k) for k in _OPENAI_KEYS if getattr(settings, k, None) is not None
        }
        options = merge_options(
            {m.provider: openai_keys for m in models if m.route.protocol.name.startswith("openai")}
            if openai_keys
            else None,
            thinking_options(models, "medium" if effort == "none" else effort) if effort else None,
            cast(dict[str, dict[str, Any]] | None, own_options),
        )
        generation = GenerationOptions(
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            top_p=settings.top_p,
            frequency_penalty=settings.frequency_penalty,
            presence_penalty=settings.presence_penalty,
        )
        http = HttpOverlay(
            headers={str(k): str(v) for k, v in settings.extra_headers.items()}
            if settings.extra_headers
            else None,
            query={str(k): str(v) for k, v in settings.extra_query.items()} if settings.extra_query else None,
            body=dict(cast(Mapping[str, Any], settings.extra_body)) if settings.extra_body else None,
        )
        output = None
        if output_schema is not None and not output_schema.is_plain_text():
            output = OutputSchema(
                name="final_output",
                schema=output_schema.json_schema(),
                strict=output_schema.is_strict_json_schema(),
            )
        return LLMRequest(
            model=self.target,
            system=tuple(TextPart(t) for t in system if t),
            messages=tuple(messages),
            tools=tuple(specs),
            tool_choice=_tool_choice(settings.tool_choice),
            generation=generation if generation != GenerationOptions() else None,
            provider_options=options,
            http=http if http != HttpOverlay() else None,
            output_schema=output,
        )


class LLMRouteModelProvider(ModelProvider):
    """Hands out ``LLMRouteAgentsModel``s by name: ``models`` maps the names agents use
    (``Agent(model="fast")``) to llmroute models or routers; ``default`` answers ``model=None``.
    Use with ``RunConfig(model_provider=LLMRouteModelProvider(...))``. One client serves them all."""

    def __init__(
        self,
        models: Mapping[str, Model | ModelGroup],
        *,
        default: str | None = None,
        client: Client | None = None,
    ) -> None:
        self._targets = {name: check_target(m) for name, m in models.items()}
        if default is not None and default not in self._targets:
            raise UserError(f"default {default!r} is not one of the models {sorted(self._targets)}")
        self._default = default
        self._client = client
        self._made: dict[str, LLMRouteAgentsModel] = {}
        self._owned: Backend | None = None

    def get_model(self, model_name: str | None) -> AgentsModel:
        name = model_name if model_name is not None else self._default
        if name is None or name not in self._targets:
            raise UserError(f"model {model_name!r}: this provider serves {sorted(self._targets)}")
        made = self._made.get(name)
        if made is None:
            made = self._made[name] = LLMRouteAgentsModel(self._targets[name], client=self._client)
            if self._client is None:  # the provider's models share one backend's clients
                if self._owned is None:
                    self._owned = made._backend  # pyright: ignore[reportPrivateUsage]
                else:
                    made._backend = Backend(made.target, None)  # pyright: ignore[reportPrivateUsage]
                    made._backend._owned = self._owned._owned  # pyright: ignore[reportPrivateUsage]
        return made

    async def aclose(self) -> None:
        for model in self._made.values():
            await model.close()


def _refuse_server_state(previous_response_id: str | None, conversation_id: str | None, prompt: Any) -> None:
    if previous_response_id or conversation_id:
        raise UserError(
            "previous_response_id / conversation_id: llmroute sends the whole conversation on every call; "
            "it keeps no server-side state (leave them unset)"
        )
    if prompt:
        raise UserError("prompt: stored OpenAI prompts are not available through llmroute; pass instructions")


def _timeouts(settings: ModelSettings) -> Timeouts | None:
    timeout = getattr(settings, "timeout", None)
    return Timeouts(total=float(timeout)) if isinstance(timeout, int | float) else None


def _config(settings: ModelSettings) -> dict[str, Any]:
    return {k: v for k, v in settings.to_json_dict().items() if v is not None}


def _plain(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [_item(v) for v in cast(Sequence[Any], value)]


def _llm_error(error: object) -> LLMError | None:
    while error is not None:
        if isinstance(error, LLMError):
            return error
        error = getattr(error, "__cause__", None)
    return None


def _failure(error: LLMError) -> Exception:
    """Malformed provider output is the runner's ``ModelBehaviorError`` (with the ``LLMError`` as
    its cause); every other failure stays the typed ``LLMError`` it is."""
    if isinstance(error, InvalidProviderOutputError):
        return ModelBehaviorError(str(error))
    return error


def _tool(tool: Tool) -> ToolSpec:
    if isinstance(tool, FunctionTool):
        return ToolDefinition(
            name=tool.name,
            description=tool.description,
            input_schema=tool.params_json_schema,
            strict=tool.strict_json_schema,
        )
    return _hosted(tool)


def _hosted(tool: Tool) -> HostedTool:
    if isinstance(tool, WebSearchTool):
        location = tool.user_location
        filters = tool.filters
        domains = getattr(filters, "allowed_domains", None) if filters is not None else None
        return hosted_tool(
            "web_search",
            {
                "user_location": dict(cast(Mapping[str, Any], location)) if location else None,
                "allowed_domains": list(domains) if domains else None,
                "search_context_size": tool.search_context_size
                if tool.search_context_size != "medium"
                else None,
            },
        )
    if isinstance(tool, CodeInterpreterTool):
        return hosted_tool("code_execution", {})
    if isinstance(tool, FileSearchTool):
        return hosted_tool(
            "file_search",
            {"vector_store_ids": tool.vector_store_ids, "max_num_results": tool.max_num_results},
        )
    if isinstance(tool, ImageGenerationTool):
        return hosted_tool("image_generation", {})
    if isinstance(tool, HostedMCPTool):
        config = dict(cast(Mapping[str, Any], tool.tool_config))
        config.pop("type", None)
        return hosted_tool("mcp", config)
    raise UserError(
        f"tool {type(tool).__name__}: llmroute has no equivalent (function and hosted tools only)"
    )


def _tool_choice(choice: Any) -> ToolChoice | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        return ToolChoice.parse(choice)
    name = getattr(choice, "name", None)
    if isinstance(name, str):
        return ToolChoice.named(name)
    raise UserError(f"tool_choice {choice!r}: llmroute takes 'auto', 'none', 'required' or a tool name")


# -- input items -> messages --------------------------------------------------------------------------


def _item(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return cast(dict[str, Any], value)
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return cast(dict[str, Any], dump(exclude_unset=True))
    raise UserError(f"input item of type {type(value).__name__}: expected a Responses input item")


def _mine(item: Mapping[str, Any]) -> dict[str, Any]:
    data: object = item.get("provider_data")
    held: object = cast(dict[str, Any], data).get(KEY) if isinstance(data, dict) else None
    return cast(dict[str, Any], held) if isinstance(held, dict) else {}


def _messages(input: str | Sequence[Any]) -> tuple[list[str], list[Message]]:
    if isinstance(input, str):
        return [], [Message("user", (TextPart(input),))]
    system: list[str] = []
    out: list[Message] = []
    names: dict[str, str] = {}

    def add(role: Any, *parts: Part) -> None:
        if not parts:
            return
        if out and out[-1].role == role:
            out[-1] = Message(role, (*out[-1].content, *parts))
        else:
            out.append(Message(role, tuple(parts)))

    for raw in input:
        item = _item(raw)
        kind = item.get("type")
        role = item.get("role")
        if kind in (None, "message") and role in ("system", "developer"):
            texts = [p.text for p in _content(item.get("content")) if isinstance(p, TextPart)]
            if out:
                add("system", *(TextPart(t) for t in texts))
            else:
                system.extend(texts)
        elif kind in (None, "message") and role in ("user", "assistant"):
            parts = _content(item.get("content"))
            meta = _mine(item).get("meta")
            if role == "assistant" and meta:
                parts = [
                    msgspec.structs.replace(p, provider_metadata=meta) if isinstance(p, TextPart) else p
                    for p in parts
                ]
            add(role, *parts)
        elif kind == "function_call":
            names[str(item["call_id"])] = str(item["name"])
            add("assistant", _call_part(item))
        elif kind == "function_call_output":
            call_id = str(item["call_id"])
            output = item.get("output")
            result = output if isinstance(output, str) else tuple(_content(output))
            add("tool", ToolResultPart(call_id, names.get(call_id, ""), result))
        elif kind == "reasoning":
            add("assistant", _reasoning_part(item))
        elif _mine(item).get("call") is not None:
            add("assistant", *_hosted_parts(item))
        else:
            raise UserError(f"input item type {kind!r}: llmroute cannot send it")
    return system, out


def _content(content: Any) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(content)]
    parts: list[Part] = []
    for raw in cast(Sequence[Any], content):
        piece = _item(raw)
        kind = piece.get("type")
        if kind in ("input_text", "output_text", "text"):
            parts.append(TextPart(str(piece.get("text", ""))))
        elif kind == "refusal":
            parts.append(TextPart(str(piece.get("refusal", ""))))
        elif kind == "input_image":
            url = piece.get("image_url")
            if not isinstance(url, str):
                raise UserError("input_image: llmroute needs image_url (a URL or a data: URL), not a file_id")
            parts.append(_media_from_url(url, "image/png"))
        elif kind == "input_file":
            data = piece.get("file_data") or piece.get("file_url")
            if not isinstance(data, str):
                raise UserError("input_file: llmroute needs file_data or file_url, not a file_id")
            parts.append(_media_from_url(data, "application/pdf", piece.get("filename")))
        else:
            raise UserError(f"content part type {kind!r}: llmroute cannot send it")
    return parts


def _media_from_url(url: str, default: str, filename: Any = None) -> MediaPart:
    name = filename if isinstance(filename, str) else None
    if url.startswith("data:"):
        head, _, data = url.partition(",")
        mime = head[5:].split(";")[0] or default
        return MediaPart(mime, data, filename=name)
    return MediaPart(default, url, filename=name)


def _call_part(item: Mapping[str, Any]) -> ToolCallPart:
    arguments = item.get("arguments") or "{}"
    try:
        value: Any = json.loads(arguments)
    except ValueError:
        value = arguments
    meta = _mine(item).get("meta")
    return ToolCallPart(str(item["call_id"]), str(item["name"]), value, provider_metadata=meta)


def _reasoning_part(item: Mapping[str, Any]) -> ReasoningPart:
    mine = _mine(item)
    summary: list[Any] = item.get("summary") or []
    content: list[Any] = item.get("content") or []
    texts = [str(_item(s).get("text", "")) for s in cast(Sequence[Any], content or summary)]
    return ReasoningPart(
        "".join(texts),
        signature=mine.get("signature"),
        encrypted=item.get("encrypted_content"),
        provider_metadata=mine.get("meta"),
    )


def _hosted_parts(item: Mapping[str, Any]) -> list[Part]:
    mine = _mine(item)
    parts: list[Part] = [msgspec.convert(mine["call"], ToolCallPart)]
    if mine.get("result") is not None:
        parts.append(msgspec.convert(mine["result"], ToolResultPart))
    return parts


# -- llmroute -> Responses items and stream events ------------------------------------------------------


_STATUS: dict[FinishReason, str] = {"length": "incomplete", "content-filter": "incomplete"}


class _Mapper:
    """Turns one llmroute stream into Responses stream events and, at the end, the ``Response``."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.created = time.time()
        self.id = f"resp_llmroute_{int(self.created * 1000)}"
        self.n = 0
        self.items: list[ResponseOutputItem] = []  # finished items, in order
        self.index: dict[str, int] = {}  # block / call id -> output index
        self.text: dict[str, list[str]] = {}
        self.reasoning: dict[str, list[str]] = {}
        self.hosted: dict[str, dict[str, Any]] = {}  # a hosted call's id -> its provider_data
        self.open: dict[str, Any] = {}  # output index -> the item being built
        self.citations: dict[str, list[Citation]] = {}
        self.meta: dict[str, dict[str, Any]] = {}

    def seq(self) -> int:
        self.n += 1
        return self.n - 1

    def envelope(self, status: str, output: list[ResponseOutputItem], usage: Usage | None = None) -> Response:
        return Response(
            id=self.id,
            created_at=self.created,
            model=self.model,
            object="response",
            output=output,
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
            status=cast(Any, status),
            usage=_response_usage(usage) if usage is not None else None,
        )

    def _slot(self, key: str) -> int:
        at = self.index.get(key)
        if at is None:
            at = self.index[key] = len(self.index)
        return at

    def map(self, event: LLMEvent) -> Iterator[TResponseStreamEvent]:
        match event:
            case TextDelta():
                self.text[event.id].append(event.text)
                yield ResponseTextDeltaEvent(
                    content_index=0,
                    delta=event.text,
                    item_id=event.id,
                    output_index=self.index[event.id],
                    logprobs=[],
                    type="response.output_text.delta",
                    sequence_number=self.seq(),
                )
            case ReasoningDelta():
                self.reasoning[event.id].append(event.text)
                yield ResponseReasoningSummaryTextDeltaEvent(
                    delta=event.text,
                    item_id=event.id,
                    output_index=self.index[event.id],
                    summary_index=0,
                    type="response.reasoning_summary_text.delta",
                    sequence_number=self.seq(),
                )
            case ToolInputDelta():
                if event.id in self.open:
                    yield ResponseFunctionCallArgumentsDeltaEvent(
                        delta=event.text,
                        item_id=event.id,
                        output_index=self.index[event.id],
                        type="response.function_call_arguments.delta",
                        sequence_number=self.seq(),
                    )
            case TextStart():
                yield from self._text_start(event)
            case TextEnd():
                yield from self._text_end(event)
            case ReasoningStart():
                yield from self._reasoning_start(event)
            case ReasoningEnd():
                yield from self._reasoning_end(event)
            case ToolInputStart():
                if not event.provider_executed:
                    yield from self._call_start(event)
            case ToolCall():
                yield from self._call(event)
            case ToolResult():
                if event.provider_executed:
                    self._hosted_result(event)
            case Citation():
                self.citations.setdefault(event.block_id, []).append(event)
            case Media():
                yield from self._media(event)
            case StepFinish():
                pass
            case ApprovalRequest():
                raise UserError(
                    f"the provider asks to approve {event.name!r} before running it; answer approval "
                    "requests through llmroute directly (llmroute.approval)"
                )
            case _:
                pass

    def _added(self, key: str, item: Any) -> TResponseStreamEvent:
        at = self._slot(key)
        self.open[key] = item
        return ResponseOutputItemAddedEvent(
            item=item, output_index=at, type="response.output_item.added", sequence_number=self.seq()
        )

    def _done(self, key: str, item: ResponseOutputItem) -> TResponseStreamEvent:
        self.open.pop(key, None)
        self.items.append(item)
        return ResponseOutputItemDoneEvent(
            item=item,
            output_index=self.index[key],
            type="response.output_item.done",
            sequence_number=self.seq(),
        )

    def _text_start(self, event: TextStart) -> Iterator[TResponseStreamEvent]:
        self.text[event.id] = []
        if event.provider_metadata:
            self.meta[event.id] = event.provider_metadata
        item = ResponseOutputMessage(
            id=event.id, content=[], role="assistant", status="in_progress", type="message"
        )
        yield self._added(event.id, item)
        yield ResponseContentPartAddedEvent(
            content_index=0,
            item_id=event.id,
            output_index=self.index[event.id],
            part=ResponseOutputText(text="", type="output_text", annotations=[], logprobs=[]),
            type="response.content_part.added",
            sequence_number=self.seq(),
        )

    def _text_end(self, event: TextEnd) -> Iterator[TResponseStreamEvent]:
        if event.provider_metadata:
            self.meta[event.id] = {**self.meta.get(event.id, {}), **event.provider_metadata}
        part = ResponseOutputText(
            text="".join(self.text[event.id]), type="output_text", annotations=[], logprobs=[]
        )
        yield ResponseContentPartDoneEvent(
            content_index=0,
            item_id=event.id,
            output_index=self.index[event.id],
            part=part,
            type="response.content_part.done",
            sequence_number=self.seq(),
        )
        message = ResponseOutputMessage(
            id=event.id, content=[part], role="assistant", status="completed", type="message"
        )
        self.open[event.id] = message  # finished at the end: citations may still arrive (Gemini)

    def _reasoning_start(self, event: ReasoningStart) -> Iterator[TResponseStreamEvent]:
        self.reasoning[event.id] = []
        item = ResponseReasoningItem(id=event.id, summary=[], type="reasoning")
        yield self._added(event.id, item)
        yield ResponseReasoningSummaryPartAddedEvent(
            item_id=event.id,
            output_index=self.index[event.id],
            part=cast(Any, {"type": "summary_text", "text": ""}),
            summary_index=0,
            type="response.reasoning_summary_part.added",
            sequence_number=self.seq(),
        )

    def _reasoning_end(self, event: ReasoningEnd) -> Iterator[TResponseStreamEvent]:
        text = "".join(self.reasoning[event.id])
        yield ResponseReasoningSummaryPartDoneEvent(
            item_id=event.id,
            output_index=self.index[event.id],
            part=cast(Any, {"type": "summary_text", "text": text}),
            summary_index=0,
            type="response.reasoning_summary_part.done",
            sequence_number=self.seq(),
        )
        item = ResponseReasoningItem(
            id=event.id,
            summary=[Summary(text=text, type="summary_text")] if text else [],
            type="reasoning",
            encrypted_content=event.encrypted,
        )
        mine: dict[str, Any] = {}
        if event.signature is not None:
            mine["signature"] = event.signature
        if event.provider_metadata:
            mine["meta"] = event.provider_metadata
        if mine:
            item.provider_data = {KEY: mine}  # type: ignore[attr-defined]  # the SDK's convention for non-OpenAI data
        yield self._done(event.id, item)

    def _call_start(self, event: ToolInputStart) -> Iterator[TResponseStreamEvent]:
        item = ResponseFunctionToolCall(
            id=event.id,
            call_id=event.id,
            name=event.name,
            arguments="",
            type="function_call",
            status="in_progress",
        )
        yield self._added(event.id, item)

    def _call(self, event: ToolCall) -> Iterator[TResponseStreamEvent]:
        if event.provider_executed:
            self._slot(event.id)
            self.hosted[event.id] = {"call": msgspec.to_builtins(_part_of(event))}
            return
        if event.id not in self.open:
            yield from self._call_start(ToolInputStart(event.id, event.name))
        arguments = event.input if isinstance(event.input, str) else json.dumps(event.input)
        item = ResponseFunctionToolCall(
            id=event.id,
            call_id=event.id,
            name=event.name,
            arguments=arguments,
            type="function_call",
            status="completed",
        )
        if event.provider_metadata:
            item.provider_data = {KEY: {"meta": event.provider_metadata}}  # type: ignore[attr-defined]
        yield self._done(event.id, item)

    def _hosted_result(self, event: ToolResult) -> None:
        held = self.hosted.setdefault(event.id, {})
        held["result"] = msgspec.to_builtins(
            ToolResultPart(
                event.id,
                event.name,
                event.result,
                is_error=event.is_error,
                provider_executed=True,
                provider_metadata=event.provider_metadata,
            )
        )

    def _media(self, event: Media) -> Iterator[TResponseStreamEvent]:
        from openai.types.responses.response_output_item import ImageGenerationCall

        item = ImageGenerationCall(
            id=event.id, result=event.data, status="completed", type="image_generation_call"
        )
        item.provider_data = {KEY: {"mime_type": event.mime_type, "meta": event.provider_metadata}}  # type: ignore[attr-defined]
        yield self._added(event.id, item)
        yield self._done(event.id, item)

    def response(self, response: LLMResponse) -> Response:
        """The completed ``Response``: every item in stream order, messages with their citations
        as ``url_citation`` annotations, hosted calls as their Responses items."""
        for key, item in list(self.open.items()):
            if isinstance(item, ResponseOutputMessage):
                self.items.append(self._finish_message(key, item))
            del self.open[key]
        for call_id, held in self.hosted.items():
            self.items.append(_hosted_item(call_id, held))
        order = self.index
        self.items.sort(key=lambda item: order.get(str(getattr(item, "id", "")), len(order)))
        status = _STATUS.get(response.finish_reason, "completed")
        return self.envelope(status, list(self.items), response.usage)

    def _finish_message(self, key: str, item: ResponseOutputMessage) -> ResponseOutputMessage:
        text = cast(ResponseOutputText, item.content[0]) if item.content else None
        if text is not None:
            text.annotations = [_annotation(c) for c in self.citations.get(key, []) if c.url]
        mine: dict[str, Any] = {}
        if self.meta.get(key):
            mine["meta"] = self.meta[key]
        if self.citations.get(key):
            mine["citations"] = [msgspec.to_builtins(c) for c in self.citations[key]]
        if mine:
            item.provider_data = {KEY: mine}  # type: ignore[attr-defined]
        return item


def _part_of(event: ToolCall) -> ToolCallPart:
    return ToolCallPart(
        event.id, event.name, event.input, provider_executed=True, provider_metadata=event.provider_metadata
    )


def _annotation(citation: Citation) -> Any:
    from openai.types.responses.response_output_text import AnnotationURLCitation

    return AnnotationURLCitation(
        type="url_citation",
        url=citation.url or "",
        title=citation.title or "",
        start_index=citation.start if citation.start is not None else 0,
        end_index=citation.end if citation.end is not None else 0,
    )


def _hosted_item(call_id: str, held: dict[str, Any]) -> ResponseOutputItem:
    """A hosted call as its Responses item (``web_search_call`` with its query and sources; other
    kinds as ``mcp_call``-free generic items), the llmroute parts in ``provider_data``."""
    from openai.types.responses.response_function_web_search import ResponseFunctionWebSearch

    call: dict[str, Any] = held.get("call") or {}
    result: dict[str, Any] = held.get("result") or {}
    name = str(call.get("name", ""))
    data = {KEY: held}
    if name == "web_search":
        query: Any = call.get("input") or {}
        payload: Any = result.get("result") or {}
        sources: list[dict[str, Any]] = [
            {"type": "url", "url": s.get("url")} for s in payload.get("sources", []) if s.get("url")
        ]
        queries: list[Any] = payload.get("queries") or [
            cast(dict[str, Any], query).get("query", "") if isinstance(query, dict) else ""
        ]
        action: dict[str, Any] = {
            "type": "search",
            "query": queries[0] if queries else "",
            "sources": sources,
        }
        item = ResponseFunctionWebSearch.model_validate(
            {"id": call_id, "type": "web_search_call", "status": "completed", "action": action}
        )
    else:
        from openai.types.responses.response_code_interpreter_tool_call import ResponseCodeInterpreterToolCall

        item = ResponseCodeInterpreterToolCall.model_validate(
            {
                "id": call_id,
                "type": "code_interpreter_call",
                "status": "completed",
                "code": json.dumps(call.get("input")),
                "container_id": "",
                "outputs": [],
            }
        )
    item.provider_data = data  # type: ignore[attr-defined]
    return cast(ResponseOutputItem, item)


def _response_usage(usage: Usage) -> ResponseUsage:
    return ResponseUsage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        total_tokens=usage.total_tokens or 0,
        input_tokens_details=_input_details(usage),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=usage.reasoning_tokens or 0),
    )


def _input_details(usage: Usage) -> InputTokensDetails:
    # openai >= 2.x names cache writes; older SDKs have cached_tokens only (extra keys are kept)
    return InputTokensDetails.model_validate(
        {"cached_tokens": usage.cache_read_tokens or 0, "cache_write_tokens": usage.cache_write_tokens or 0}
    )


def _usage(usage: Usage | None) -> AgentsUsage:
    if usage is None:
        return AgentsUsage(requests=1)
    return AgentsUsage(
        requests=1,
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        total_tokens=usage.total_tokens or 0,
        input_tokens_details=_input_details(usage),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=usage.reasoning_tokens or 0),
    )


def _raw_usage(response: LLMResponse) -> dict[str, Any]:
    """``raw_usage`` for ``ModelResponse`` where the installed version has it: the provider's own
    usage object and llmroute's cost."""
    import dataclasses

    if "raw_usage" not in {f.name for f in dataclasses.fields(ModelResponse)}:
        return {}
    raw: dict[str, Any] = dict((response.usage.provider_metadata or {}) if response.usage else {})
    cost = cost_details(response)
    if cost is not None:
        raw["llmroute_cost"] = cost
    return {"raw_usage": raw or None}


def _span_usage(response: LLMResponse) -> dict[str, Any]:
    usage = response.usage or Usage()
    out: dict[str, Any] = {
        "input_tokens": usage.input_tokens or 0,
        "output_tokens": usage.output_tokens or 0,
    }
    cost = cost_details(response)
    if cost is not None:
        out["cost_usd"] = cost["total"]
    return out
