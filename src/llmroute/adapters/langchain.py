"""LangChain on llmroute: ``ChatLLMRoute`` is a ``BaseChatModel`` over any llmroute ``Model`` or
``Router``.

    from llmroute.adapters.langchain import ChatLLMRoute
    from llmroute.providers import anthropic

    chat = ChatLLMRoute(model=anthropic.configure().messages("claude-haiku-4-5"))
    chat.bind_tools([get_weather]).invoke("Weather in Paris?")

Messages (their standard content blocks: text, images, files, audio, reasoning, tool calls and
results), bound tools (LangChain tools, functions, Pydantic models, OpenAI tool dicts, llmroute
hosted tools such as ``llmroute.hosted.web_search()``), ``tool_choice``, structured output
(``json_schema`` natively or by a forced tool, ``function_calling``, ``json_mode``) and the
standard parameters become one ``LLMRequest``. llmroute's events become ``AIMessageChunk``s
that aggregate (content blocks by ``index``: text with citation annotations, reasoning with its
signature in ``extras``, ``server_tool_call`` / ``server_tool_result`` for hosted tools, images;
``tool_call_chunks``), the last with ``usage_metadata`` (cache read/creation, reasoning tokens),
``response_metadata`` (finish reason, model, ``llmroute`` cost) and ``chunk_position="last"``.
``invoke`` folds the same chunks, so streaming and not agree. Failures stay typed
``llmroute.LLMError``s (``.retryable``). Install with ``pip install 'llmroute[langchain]'``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Literal, cast

import msgspec
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.chat_models import agenerate_from_stream, generate_from_stream
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ..route.model import Model, ModelGroup
from ..route.policy import RetryPolicy, Timeouts
from ..schema.content import MediaPart, Message, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ..schema.errors import InvalidRequestError
from ..schema.events import (
    Citation,
    LLMEvent,
    Media,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    ToolResult,
)
from ..schema.options import GenerationOptions
from ..schema.request import LLMRequest, OutputSchema
from ..schema.response import LLMResponse
from ..schema.tools import HostedTool, ToolChoice, ToolDefinition, ToolSpec
from ..schema.usage import Usage
from ._core import Backend, check_target, cost_details, merge_options, thinking_options

__all__ = ["ChatLLMRoute"]

KEY = "llmroute"
"""Where llmroute's own data (provider metadata) rides on content blocks (``extras``) and messages
(``additional_kwargs``), so the next turn sends it back untouched."""

StructuredMethod = Literal["json_schema", "function_calling", "json_mode"]


class ChatLLMRoute(BaseChatModel):
    """A LangChain chat model that calls through llmroute: ``model`` is any ``Model`` from a
    provider facade, or a ``Router``. ``client``: the ``llmroute.Client`` to call through (its
    timeouts, retries and hooks apply); by default the model makes its own."""

    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True)

    model: Any
    """The llmroute ``Model`` or ``Router``."""
    client: Any = None
    """An ``llmroute.Client`` to call through (``None``: one made per event loop, and a
    ``SyncClient`` for sync calls)."""
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, alias="max_tokens")
    top_p: float | None = None
    top_k: int | None = None
    stop: list[str] | None = Field(default=None, alias="stop_sequences")
    timeout: float | None = None
    """The whole call's deadline in seconds (``Timeouts.total``)."""
    max_retries: int | None = None
    """llmroute's retries after the first attempt (``None``: the client's policy)."""
    thinking: bool | str | None = None
    """``True``/``False`` or an effort (``"low"``, ``"medium"``, ``"high"``, ...): each protocol's
    own thinking setting (Anthropic budget, Gemini ``thinkingConfig``, OpenAI effort)."""
    provider_options: dict[str, dict[str, Any]] | None = None
    """Provider-specific body keys by namespace (``{"anthropic": {...}}``)."""
    streaming: bool = False
    """``invoke`` streams underneath (it always folds the same chunks either way)."""

    _backend: Backend = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._backend = Backend(check_target(self.model), self.client)

    @property
    def _llm_type(self) -> str:
        return "llmroute"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        target = self._backend.target
        return {"model": target.id, "provider": target.provider, "temperature": self.temperature}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = self._backend.target.provider
        params["ls_model_name"] = str(kwargs.get("model") or self._backend.target.id)
        params["ls_model_type"] = "chat"
        if self.max_tokens is not None:
            params["ls_max_tokens"] = self.max_tokens
        if self.temperature is not None:
            params["ls_temperature"] = self.temperature
        stops = stop or self.stop
        if stops:
            params["ls_stop"] = stops
        return params

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return False  # the model holds credentials and a route: not plain data

    # -- tools and structured output --------------------------------------------------------------

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool | HostedTool],
        *,
        tool_choice: str | bool | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools: LangChain tools, functions, Pydantic models, OpenAI tool dicts, or llmroute
        hosted tools (``llmroute.hosted.web_search()``). ``tool_choice``: ``"auto"``, ``"none"``,
        ``"any"``/``"required"``/``True``, or a tool's name."""
        specs = [_tool_spec(t) for t in tools]
        choice = _tool_choice(tool_choice, specs)
        return self.bind(llmroute_tools=specs, llmroute_tool_choice=choice, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: StructuredMethod = "json_schema",
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """``json_schema`` (default): the protocol's JSON-schema mode, or a forced tool where the
        model has none, answered as text and parsed; ``function_calling``: a forced tool call
        (LangChain's own implementation over ``bind_tools``); ``json_mode``: any JSON object."""
        if method == "function_calling":
            return super().with_structured_output(schema, include_raw=include_raw, **kwargs)
        if kwargs:
            raise ValueError(f"with_structured_output: unexpected arguments {sorted(kwargs)}")
        given = cast(Any, schema)
        model_class = cast(type[Any], schema) if isinstance(schema, type) else None
        pydantic_schema = model_class is not None and (
            issubclass(model_class, BaseModel) or _is_v1_model(model_class)
        )
        parser: Runnable[Any, Any] = (
            PydanticOutputParser(pydantic_object=cast(Any, schema)) if pydantic_schema else JsonOutputParser()
        )
        if method == "json_mode":
            bound = self.bind(
                llmroute_json_mode=True,
                ls_structured_output_format={"kwargs": {"method": method}, "schema": schema},
            )
        else:
            spec = dict(convert_to_json_schema(given))
            title = str(spec.pop("title", None) or getattr(model_class, "__name__", None) or "output")
            output = OutputSchema(
                name=title,
                schema=spec,
                description=spec.pop("description", None),
                strict=strict if strict is not None else False,
            )
            bound = self.bind(
                llmroute_output_schema=output,
                ls_structured_output_format={"kwargs": {"method": method}, "schema": schema},
            )
        if not include_raw:
            return bound | parser
        parsed = RunnablePassthrough.assign(
            parsed=lambda x: parser.invoke(x["raw"]), parsing_error=lambda _: None
        )
        fallback = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=bound) | parsed.with_fallbacks([fallback], exception_key="parsing_error")

    # -- calls ------------------------------------------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return _collapse(generate_from_stream(self._stream(messages, stop, run_manager, **kwargs)))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return _collapse(await agenerate_from_stream(self._astream(messages, stop, run_manager, **kwargs)))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        request, options = self.to_request(messages, stop, **kwargs)
        mapper = _Chunks(request.model.id)
        with self._backend.sync.stream(request, **options) as events:
            builder = events.track()
            for event in events:
                for chunk in mapper.map(event):
                    if run_manager is not None and isinstance(event, TextDelta):
                        run_manager.on_llm_new_token(event.text, chunk=chunk)
                    yield chunk
            yield mapper.last(builder.build())

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        request, options = self.to_request(messages, stop, **kwargs)
        mapper = _Chunks(request.model.id)
        async with self._backend.client.stream(request, **options) as events:
            builder = events.track()
            async for event in events:
                for chunk in mapper.map(event):
                    if run_manager is not None and isinstance(event, TextDelta):
                        await run_manager.on_llm_new_token(event.text, chunk=chunk)
                    yield chunk
            yield mapper.last(builder.build())

    async def aclose(self) -> None:
        """Close the clients this model made (never one it was given)."""
        await self._backend.aclose()

    # -- LangChain -> llmroute --------------------------------------------------------------------

    def to_request(
        self, messages: Sequence[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> tuple[LLMRequest, dict[str, Any]]:
        """The ``LLMRequest`` these messages and call arguments send, and the call's options
        (``timeouts``, ``retry``)."""
        target = self._backend.target
        override = kwargs.pop("model", None)
        if override is not None and override != target.id:
            if not isinstance(target, Model):
                raise InvalidRequestError(
                    "model: a Router's models cannot be overridden per call", param="model"
                )
            target = target.with_(id=str(override))
        tools: list[ToolSpec] = list(kwargs.pop("llmroute_tools", None) or ())
        choice: ToolChoice | None = kwargs.pop("llmroute_tool_choice", None)
        if "tools" in kwargs:  # bound the plain LangChain way: bind(tools=[...])
            tools.extend(_tool_spec(t) for t in kwargs.pop("tools"))
        if "tool_choice" in kwargs:
            choice = _tool_choice(kwargs.pop("tool_choice"), tools)
        output: OutputSchema | None = kwargs.pop("llmroute_output_schema", None)
        json_mode = bool(kwargs.pop("llmroute_json_mode", False))
        kwargs.pop("ls_structured_output_format", None)
        thinking = kwargs.pop("thinking", self.thinking)
        own = kwargs.pop("provider_options", None)
        temperature = kwargs.pop("temperature", self.temperature)
        max_tokens = kwargs.pop("max_tokens", self.max_tokens)
        timeout = kwargs.pop("timeout", self.timeout)
        if kwargs:
            raise InvalidRequestError(f"unexpected call arguments {sorted(kwargs)}", param=sorted(kwargs)[0])
        models = target.models() if isinstance(target, ModelGroup) else (target,)
        stops = stop or self.stop
        generation = GenerationOptions(
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            stop=tuple(stops) if stops else None,
        )
        system, history = _messages(messages)
        request = LLMRequest(
            model=target,
            system=tuple(TextPart(t) for t in system if t),
            messages=tuple(history),
            tools=tuple(tools),
            tool_choice=choice,
            generation=generation if generation != GenerationOptions() else None,
            provider_options=merge_options(
                thinking_options(models, thinking) if thinking is not None else None,
                self.provider_options,
                own,
            ),
            output_schema=output,
            json_mode=json_mode,
        )
        options: dict[str, Any] = {}
        if timeout is not None:
            options["timeouts"] = Timeouts(total=float(timeout))
        if self.max_retries is not None:
            options["retry"] = RetryPolicy(max_retries=self.max_retries)
        return request, options


def _is_v1_model(schema: type[Any]) -> bool:
    try:
        from pydantic import v1
    except ImportError:  # pragma: no cover - pydantic 2 always ships it
        return False
    return issubclass(schema, v1.BaseModel)


def _collapse(result: ChatResult) -> ChatResult:
    """A reply that is only plain text gets ``content`` as a string, as most chat models give it."""
    out: list[ChatGeneration] = []
    for generation in result.generations:
        message = generation.message
        content = message.content
        if isinstance(content, list) and all(
            isinstance(b, dict)
            and b.get("type") == "text"
            and not b.get("annotations")
            and not b.get("extras")
            for b in content
        ):
            text = "".join(str(cast(dict[str, Any], b)["text"]) for b in content)
            message = message.model_copy(update={"content": text})
        out.append(ChatGeneration(message=message, generation_info=generation.generation_info))
    return ChatResult(generations=out, llm_output=result.llm_output)


def _tool_spec(tool: Any) -> ToolSpec:
    if isinstance(tool, HostedTool | ToolDefinition):
        return tool
    raw: dict[str, Any] = cast(dict[str, Any], tool) if isinstance(tool, dict) else {}
    kind = raw.get("type")
    if "function" not in raw and isinstance(kind, str) and kind not in ("function", "custom"):
        return HostedTool(kind, {k: v for k, v in raw.items() if k != "type"})  # {"type": "web_search", ...}
    spec = convert_to_openai_tool(cast(Any, tool))
    function = cast(dict[str, Any], spec["function"])
    return ToolDefinition(
        name=str(function["name"]),
        description=str(function.get("description") or ""),
        input_schema=cast(dict[str, Any], function.get("parameters") or {"type": "object", "properties": {}}),
        strict=cast(bool | None, function.get("strict")),
    )


def _tool_choice(choice: Any, tools: Sequence[ToolSpec]) -> ToolChoice | None:
    if choice is None or choice is False:
        return None
    if choice is True or choice in ("any", "required"):
        return ToolChoice("required")
    if isinstance(choice, str):
        return ToolChoice.parse(choice)
    if isinstance(choice, dict):
        raw = cast(dict[str, Any], choice)
        function: dict[str, Any] = raw.get("function") or {}
        name = raw.get("name") or function.get("name")
        if isinstance(name, str):
            return ToolChoice.named(name)
    raise InvalidRequestError(
        f"tool_choice {choice!r}: expected 'auto', 'none', 'any', True or a tool's name"
    )


# -- messages -------------------------------------------------------------------------------------------


def _messages(messages: Sequence[BaseMessage]) -> tuple[list[str], list[Message]]:
    system: list[str] = []
    out: list[Message] = []
    names: dict[str, str] = {}

    def add(role: Any, parts: Sequence[Part]) -> None:
        if not parts:
            return
        if out and out[-1].role == role:
            out[-1] = Message(role, (*out[-1].content, *parts))
        else:
            out.append(Message(role, tuple(parts)))

    for message in messages:
        if isinstance(message, SystemMessage):
            texts = [p.text for p in _parts(message) if isinstance(p, TextPart)]
            if out:
                add("system", [TextPart(t) for t in texts])
            else:
                system.extend(texts)
        elif isinstance(message, HumanMessage):
            add("user", _parts(message))
        elif isinstance(message, AIMessage):
            parts = _assistant(message)
            names.update({p.id: p.name for p in parts if isinstance(p, ToolCallPart)})
            add("assistant", parts)
        elif isinstance(message, ToolMessage):
            call = message.tool_call_id
            result: Any = message.content if isinstance(message.content, str) else tuple(_parts(message))
            add(
                "tool",
                [
                    ToolResultPart(
                        call, message.name or names.get(call, ""), result, is_error=message.status == "error"
                    )
                ],
            )
        else:
            raise InvalidRequestError(
                f"messages: llmroute cannot send a {type(message).__name__}", param="messages"
            )
    return system, out


def _parts(message: BaseMessage) -> list[Part]:
    """A message's content as llmroute parts, read through LangChain's standard content blocks."""
    parts: list[Part] = []
    for block in message.content_blocks:
        raw = cast(dict[str, Any], block)
        kind = raw.get("type")
        if kind == "text":
            parts.append(TextPart(str(raw.get("text", ""))))
        elif kind in ("image", "file", "audio", "video"):
            parts.append(_media(raw))
        elif kind == "text-plain":
            parts.append(MediaPart(str(raw.get("mime_type") or "text/plain"), str(raw.get("text", ""))))
        elif kind in ("reasoning", "tool_call", "tool_call_chunk", "invalid_tool_call"):
            continue  # only assistant messages carry them (read by _assistant)
        elif kind == "non_standard":
            raise InvalidRequestError(
                f"messages: a content block llmroute cannot read: {raw.get('value')!r}", param="messages"
            )
        else:
            raise InvalidRequestError(
                f"messages: content block type {kind!r} is not sendable", param="messages"
            )
    return parts


def _media(block: dict[str, Any]) -> MediaPart:
    mime = block.get("mime_type")
    default = {"image": "image/png", "audio": "audio/wav", "video": "video/mp4"}.get(
        str(block.get("type")), "application/pdf"
    )
    extras: dict[str, Any] = block.get("extras") or {}
    found: object = extras.get("filename") or block.get("filename")
    name = found if isinstance(found, str) else None
    if block.get("base64"):
        return MediaPart(str(mime or default), str(block["base64"]), filename=name)
    if block.get("url"):
        url = str(block["url"])
        if url.startswith("data:"):
            head, _, data = url.partition(",")
            return MediaPart(head[5:].split(";")[0] or str(mime or default), data, filename=name)
        return MediaPart(str(mime or default), url, filename=name)
    raise InvalidRequestError(
        f"messages: a {block.get('type')} block needs base64 data or a URL (file ids are provider state)",
        param="messages",
    )


def _assistant(message: AIMessage) -> list[Part]:
    parts: list[Part] = []
    held = cast(dict[str, Any], message.additional_kwargs.get(KEY) or {})
    call_meta = cast(dict[str, Any], held.get("tool_calls") or {})
    content = message.content if isinstance(message.content, list) else None
    blocks = (
        [cast(dict[str, Any], b) for b in content if isinstance(b, dict)] if content is not None else None
    )
    if blocks is None:
        text = message.content if isinstance(message.content, str) else ""
        if text:
            parts.append(TextPart(text))
    else:
        for block in blocks:
            part = _assistant_block(block)
            if part is not None:
                parts.append(part)
    for call in message.tool_calls:
        call_id = call.get("id") or ""
        parts.append(
            ToolCallPart(call_id, call["name"], call["args"], provider_metadata=call_meta.get(call_id))
        )
    return parts


def _assistant_block(block: dict[str, Any]) -> Part | None:
    extras = cast(dict[str, Any], block.get("extras") or {})
    meta = extras.get(KEY)
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
        return TextPart(text, provider_metadata=meta) if text or meta else None
    if kind == "reasoning":
        return ReasoningPart(
            str(block.get("reasoning", "")),
            signature=extras.get("signature"),
            encrypted=extras.get("encrypted"),
            provider_metadata=meta,
        )
    if kind == "thinking":  # Anthropic's own block, as ChatAnthropic writes it
        return ReasoningPart(str(block.get("thinking", "")), signature=block.get("signature"))
    if kind == "server_tool_call":
        return ToolCallPart(
            str(block["id"]),
            str(block["name"]),
            block.get("args"),
            provider_executed=True,
            provider_metadata=meta,
        )
    if kind == "server_tool_result":
        return ToolResultPart(
            str(block["tool_call_id"]),
            str(extras.get("name") or ""),
            block.get("output"),
            is_error=block.get("status") == "error",
            provider_executed=True,
            provider_metadata=meta,
        )
    if kind in ("image", "audio", "file"):
        return msgspec.structs.replace(_media(block), provider_metadata=meta)
    if kind in ("tool_call", "tool_call_chunk", "invalid_tool_call", "tool_use", "function_call"):
        return None  # read from message.tool_calls (tool_use: Anthropic's form, function_call: OpenAI's)
    raise InvalidRequestError(f"messages: assistant content block {kind!r} is not sendable", param="messages")


# -- events -> chunks -----------------------------------------------------------------------------------


def _chunk(**fields: Any) -> ChatGenerationChunk:
    fields.setdefault("content", [])
    return ChatGenerationChunk(message=AIMessageChunk(**fields))


class _Chunks:
    """One llmroute stream as ``AIMessageChunk``s whose sum is the whole reply: every content
    block at its own ``index``, tool calls as ``tool_call_chunks``."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.blocks: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.call_meta: dict[str, Any] = {}
        self.streamed: set[str] = set()  # calls whose arguments arrived as deltas

    def _at(self, key: str) -> int:
        at = self.blocks.get(key)
        if at is None:
            at = self.blocks[key] = len(self.blocks)
        return at

    def map(self, event: LLMEvent) -> Iterator[ChatGenerationChunk]:
        match event:
            case TextDelta():
                yield _chunk(content=[{"type": "text", "text": event.text, "index": self._at(event.id)}])
            case ReasoningDelta():
                yield _chunk(
                    content=[{"type": "reasoning", "reasoning": event.text, "index": self._at(event.id)}]
                )
            case ToolInputDelta():
                at = self.calls.get(event.id)
                if at is not None:
                    self.streamed.add(event.id)
                    yield _chunk(
                        tool_call_chunks=[{"args": event.text, "index": at, "type": "tool_call_chunk"}]
                    )
            case TextStart() | ReasoningStart():
                name = "text" if isinstance(event, TextStart) else "reasoning"
                yield _chunk(content=[{"type": name, name: "", "index": self._at(event.id)}])
            case TextEnd():
                if event.provider_metadata:
                    block = {"type": "text", "text": "", "index": self._at(event.id)}
                    yield _chunk(content=[{**block, "extras": {KEY: event.provider_metadata}}])
            case ReasoningEnd():
                extras: dict[str, Any] = {}
                if event.signature is not None:
                    extras["signature"] = event.signature
                if event.encrypted is not None:
                    extras["encrypted"] = event.encrypted
                if event.provider_metadata:
                    extras[KEY] = event.provider_metadata
                if extras:
                    block = {"type": "reasoning", "reasoning": "", "index": self._at(event.id)}
                    yield _chunk(content=[{**block, "extras": extras}])
            case ToolInputStart():
                if not event.provider_executed:
                    at = self.calls[event.id] = len(self.calls)
                    yield _chunk(
                        tool_call_chunks=[
                            {
                                "name": event.name,
                                "args": "",
                                "id": event.id,
                                "index": at,
                                "type": "tool_call_chunk",
                            }
                        ]
                    )
            case ToolCall():
                yield from self._call(event)
            case ToolResult():
                if event.provider_executed:
                    yield self._hosted_result(event)
            case Citation():
                yield self._cite(event)
            case Media():
                kind = event.mime_type.split("/")[0]
                block: dict[str, Any] = {
                    "type": kind if kind in ("image", "audio", "video") else "file",
                    "base64": event.data,
                    "mime_type": event.mime_type,
                    "index": self._at(event.id),
                }
                if event.provider_metadata:
                    block["extras"] = {KEY: event.provider_metadata}
                yield _chunk(content=[block])
            case StepStart() | StepFinish():
                pass
            case _:
                pass

    def _call(self, event: ToolCall) -> Iterator[ChatGenerationChunk]:
        if event.provider_executed:
            block: dict[str, Any] = {
                "type": "server_tool_call",
                "id": event.id,
                "name": event.name,
                "args": _as_object(event.input),
                "index": self._at(event.id),
            }
            if event.provider_metadata:
                block["extras"] = {KEY: event.provider_metadata}
            yield _chunk(content=[block])
            return
        if event.provider_metadata:
            self.call_meta[event.id] = event.provider_metadata
        args = event.input if isinstance(event.input, str) else json.dumps(event.input)
        at = self.calls.get(event.id)
        if at is None:  # a call that arrived whole
            at = self.calls[event.id] = len(self.calls)
            yield _chunk(
                tool_call_chunks=[
                    {"name": event.name, "args": args, "id": event.id, "index": at, "type": "tool_call_chunk"}
                ]
            )
        elif event.id not in self.streamed:  # opened, its arguments whole at the end (Gemini)
            yield _chunk(tool_call_chunks=[{"args": args, "index": at, "type": "tool_call_chunk"}])

    def _hosted_result(self, event: ToolResult) -> ChatGenerationChunk:
        extras: dict[str, Any] = {"name": event.name}
        if event.provider_metadata:
            extras[KEY] = event.provider_metadata
        block = {
            "type": "server_tool_result",
            "tool_call_id": event.id,
            "status": "error" if event.is_error else "success",
            "output": msgspec.to_builtins(event.result),
            "index": self._at(f"{event.id}:result"),
            "extras": extras,
        }
        return _chunk(content=[block])

    def _cite(self, event: Citation) -> ChatGenerationChunk:
        fields = (("url", event.url), ("title", event.title), ("cited_text", event.cited_text))
        note: dict[str, Any] = {"type": "citation", **{k: v for k, v in fields if v is not None}}
        if event.start is not None and event.end is not None:
            note["start_index"], note["end_index"] = event.start, event.end
        return _chunk(
            content=[{"type": "text", "text": "", "index": self._at(event.block_id), "annotations": [note]}]
        )

    def last(self, response: LLMResponse) -> ChatGenerationChunk:
        """The closing chunk: usage, finish reason, model, cost, and the tool calls' metadata."""
        metadata: dict[str, Any] = {
            "finish_reason": response.finish_reason,
            "model_name": response.model_id or self.model,
            "model_provider": "llmroute",
            "provider": response.provider,
        }
        cost = cost_details(response)
        if cost is not None:
            metadata[KEY] = {"cost": cost}
        kwargs: dict[str, Any] = {KEY: {"tool_calls": self.call_meta}} if self.call_meta else {}
        return _chunk(
            content=[],
            usage_metadata=_usage(response.usage),
            response_metadata=metadata,
            additional_kwargs=kwargs,
            chunk_position="last",
        )


def _as_object(value: Any) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {"input": value}


def _usage(usage: Usage | None) -> Any:
    if usage is None:
        return None
    out: dict[str, Any] = {
        "input_tokens": usage.input_tokens or 0,
        "output_tokens": usage.output_tokens or 0,
        "total_tokens": usage.total_tokens or 0,
    }
    inputs = {
        k: v
        for k, v in (("cache_read", usage.cache_read_tokens), ("cache_creation", usage.cache_write_tokens))
        if v
    }
    if inputs:
        out["input_token_details"] = inputs
    if usage.reasoning_tokens:
        out["output_token_details"] = {"reasoning": usage.reasoning_tokens}
    return out
