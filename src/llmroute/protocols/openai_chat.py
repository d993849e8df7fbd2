"""OpenAI Chat Completions (and every OpenAI-compatible server), streamed over SSE."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..framing.sse import SSEEvent, SSEFraming
from ..route.auth import Auth
from ..route.endpoint import Endpoint
from ..route.model import Model, Route
from ..route.protocol import Protocol, StreamState
from ..schema.content import MediaPart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.events import Citation, FinishReason, LLMEvent, ReasoningDelta, TextDelta
from ..schema.request import LLMRequest
from ..schema.tools import HostedTool, ToolDefinition
from ..schema.usage import Usage
from ._shared import Blocks, ToolInput, data_url, decode_frame, result_text
from .errors import stream_error

__all__ = ["PROTOCOL", "ChatQuirks", "build_body", "make_protocol", "on_halt", "route", "step"]


class ChatQuirks(msgspec.Struct, frozen=True):
    """Declared differences between OpenAI-compatible servers.

    ``tool_call_key``: how streamed tool-call fragments are matched: by ``index`` (OpenAI), or by
    ``id`` for servers that omit ``index`` or reuse index 0 for every call. A repeated id in every
    fragment is handled either way. ``reasoning_fields``: which delta fields carry reasoning text, in
    priority order. ``include_usage``: send ``stream_options.include_usage``. ``max_tokens_field``:
    ``max_completion_tokens`` for OpenAI reasoning models. ``send_reasoning``: echo reasoning back as
    ``reasoning_content`` on assistant messages (servers that require it). ``supports_top_k``: send
    ``top_k``. ``empty_choices_ok``: chunks with no choices (Azure's prompt-filter first chunk, the
    usage trailer) are normal, not an error.
    """

    tool_call_key: Literal["index", "id"] = "index"
    reasoning_fields: tuple[str, ...] = ("reasoning_content", "reasoning")
    include_usage: bool = True
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    send_reasoning: bool = False
    supports_top_k: bool = False
    empty_choices_ok: bool = True


# 1. request body Structs -------------------------------------------------------------------------


class _Function(msgspec.Struct, kw_only=True):
    name: str
    arguments: str


class _ToolCallOut(msgspec.Struct, kw_only=True):
    id: str
    type: str = "function"
    function: _Function


class _SystemMessage(msgspec.Struct, kw_only=True, tag="system", tag_field="role"):
    content: str


class _UserMessage(msgspec.Struct, kw_only=True, tag="user", tag_field="role"):
    content: str | list[dict[str, Any]]


class _AssistantMessage(msgspec.Struct, kw_only=True, omit_defaults=True, tag="assistant", tag_field="role"):
    content: str | None  # no default: null must be sent when there is only a tool call
    tool_calls: list[_ToolCallOut] | None = None
    reasoning_content: str | None = None


class _ToolMessage(msgspec.Struct, kw_only=True, tag="tool", tag_field="role"):
    tool_call_id: str
    content: str


class _FunctionDef(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any]
    strict: bool | None = None


class _ToolDef(msgspec.Struct, kw_only=True):
    type: str = "function"
    function: _FunctionDef


class _StreamOptions(msgspec.Struct):
    include_usage: bool


class ChatBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    model: str
    messages: list[_SystemMessage | _UserMessage | _AssistantMessage | _ToolMessage]
    tools: list[_ToolDef] | None = None
    tool_choice: str | dict[str, Any] | None = None
    stream: bool
    stream_options: _StreamOptions | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    response_format: dict[str, Any] | None = None


# 2. stream event Structs ------------------------------------------------------------------------


class _FnDelta(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _ToolDelta(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: _FnDelta | None = None


class _UrlCitation(msgspec.Struct):
    url: str | None = None
    title: str | None = None
    content: str | None = None
    start_index: int | None = None
    end_index: int | None = None


class _Annotation(msgspec.Struct):
    type: str = ""
    url_citation: _UrlCitation | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[_ToolDelta] | None = None
    refusal: str | None = None
    annotations: list[_Annotation] | None = None


class _Choice(msgspec.Struct):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None
    annotations: list[_Annotation] | None = None


class _Chunk(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    choices: list[_Choice] | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    x_groq: dict[str, Any] | None = None


_decoder = msgspec.json.Decoder(_Chunk)


# 3. parser state --------------------------------------------------------------------------------


class ChatState(StreamState):
    __slots__ = (
        "blocks",
        "finish_reason",
        "quirks",
        "started",
        "text_len",
        "text_starts",
        "tool_by_id",
        "tools",
    )

    def __init__(self, quirks: ChatQuirks) -> None:
        super().__init__()
        self.quirks = quirks
        self.blocks = Blocks()
        self.tools: dict[int | str, ToolInput] = {}
        self.tool_by_id: dict[str, ToolInput] = {}
        self.finish_reason: str | None = None
        self.started = False
        self.text_len = 0  # characters of message content so far (annotation offsets count these)
        self.text_starts: list[tuple[int, str]] = []  # (content offset, block id) per text block


# 4. build_body ----------------------------------------------------------------------------------


def _user_content(parts: tuple[Any, ...]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, MediaPart):
            content.append(_media(part))
        else:
            raise InvalidRequestError(f"openai-chat: a user message cannot hold a {type(part).__name__}")
    return content


def _media(part: MediaPart) -> dict[str, Any]:
    if part.mime_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": data_url(part)}}
    if part.mime_type.startswith("audio/") and not part.is_url:
        return {"type": "input_audio", "input_audio": {"data": part.base64(), "format": part.mime_type.split("/")[1]}}
    if part.is_url:
        raise InvalidRequestError(f"openai-chat: {part.mime_type} is only accepted inline, not by URL")
    return {"type": "file", "file": {"filename": part.filename or "file", "file_data": data_url(part)}}


def _lower_messages(request: LLMRequest, quirks: ChatQuirks) -> list[Any]:
    messages: list[Any] = []
    if request.system:
        messages.append(_SystemMessage(content="\n\n".join(p.text for p in request.system)))
    for message in request.messages:
        messages.extend(_lower_message(message, quirks))
    return messages


def _lower_message(message: Message, quirks: ChatQuirks) -> list[Any]:
    role = message.role
    if role == "system":
        return [_SystemMessage(content="\n\n".join(p.text for p in message.content if isinstance(p, TextPart)))]
    if role == "user":
        return [_UserMessage(content=_user_content(message.content))]
    if role == "assistant":
        text = "".join(p.text for p in message.content if isinstance(p, TextPart))
        calls = [
            _ToolCallOut(id=p.id, function=_Function(name=p.name, arguments=_arguments(p.input)))
            for p in message.content
            if isinstance(p, ToolCallPart) and not p.provider_executed
        ]
        reasoning = "".join(p.text for p in message.content if isinstance(p, ReasoningPart))
        return [
            _AssistantMessage(
                content=text or None,
                tool_calls=calls or None,
                reasoning_content=(reasoning or None) if quirks.send_reasoning else None,
            )
        ]
    out: list[Any] = []
    media: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            if part.provider_executed:
                continue
            out.append(_ToolMessage(tool_call_id=part.id, content=result_text(part.result)))
            if isinstance(part.result, tuple | list):
                media.extend(_media(p) for p in part.result if isinstance(p, MediaPart))  # type: ignore[union-attr]
        elif isinstance(part, TextPart):
            out.append(_UserMessage(content=part.text))
    if media:
        # Chat tool messages carry text only; images a tool returned follow as a user message.
        out.append(_UserMessage(content=media))
    return out


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _tool_choice(request: LLMRequest) -> str | dict[str, Any] | None:
    choice = request.tool_choice
    if choice is None:
        return None
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def _tools(request: LLMRequest) -> list[_ToolDef] | None:
    tools: list[_ToolDef] = []
    for tool in request.tools:
        if isinstance(tool, HostedTool):
            raise InvalidRequestError(
                f"openai-chat has no hosted {tool.kind!r} tool; use the Responses API or a provider that offers it"
            )
        tools.append(_tool_def(tool))
    return tools or None


def _tool_def(tool: ToolDefinition) -> _ToolDef:
    return _ToolDef(
        function=_FunctionDef(
            name=tool.name, description=tool.description or None, parameters=tool.input_schema, strict=tool.strict
        )
    )


def _response_format(request: LLMRequest) -> dict[str, Any] | None:
    out = request.output_schema
    if out is None:
        return None
    spec: dict[str, Any] = {"name": out.name, "schema": out.schema, "strict": out.strict}
    if out.description:
        spec["description"] = out.description
    return {"type": "json_schema", "json_schema": spec}


def make_build_body(quirks: ChatQuirks) -> Any:
    def build_body(request: LLMRequest, model: Model) -> ChatBody | dict[str, Any]:
        g = request.generation
        assert g is not None  # resolved by prepare()
        max_tokens = g.max_tokens
        body = ChatBody(
            model=model.id,
            messages=_lower_messages(request, quirks),
            tools=_tools(request),
            tool_choice=_tool_choice(request),
            stream=True,
            stream_options=_StreamOptions(True) if quirks.include_usage else None,
            max_tokens=max_tokens if quirks.max_tokens_field == "max_tokens" else None,
            max_completion_tokens=max_tokens if quirks.max_tokens_field == "max_completion_tokens" else None,
            temperature=g.temperature,
            top_p=g.top_p,
            top_k=g.top_k if quirks.supports_top_k else None,
            frequency_penalty=g.frequency_penalty,
            presence_penalty=g.presence_penalty,
            seed=g.seed,
            stop=list(g.stop) if g.stop else None,
            response_format=_response_format(request),
        )
        extra = request.options_for(model.provider)
        return with_options(body, extra) if extra else body

    return build_body


def with_options(body: msgspec.Struct, options: dict[str, Any]) -> dict[str, Any]:
    """Provider options become top-level body keys; they may not replace a field we built."""
    data: dict[str, Any] = msgspec.to_builtins(body)
    clash = sorted(k for k in options if k in data)
    if clash:
        raise InvalidRequestError(f"provider option(s) {', '.join(clash)} clash with fields built from the request")
    data.update(options)
    return data


build_body = make_build_body(ChatQuirks())


# 5. step / on_halt ------------------------------------------------------------------------------

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool-calls",
    "error": "error",
}


def step(state: ChatState, frame: SSEEvent, out: list[LLMEvent]) -> None:
    data = frame.data
    if data == b"[DONE]":
        _finish(state, out)
        state.done = True
        return
    if state.done:
        return
    chunk = decode_frame(_decoder, data, "openai-chat chunk")
    if not state.started:
        state.started = True
        state.metadata = {"id": chunk.id, "model": chunk.model}
    if chunk.error is not None:
        raise stream_error(chunk.error, "openai-chat")
    choices = chunk.choices
    if choices:
        choice = choices[0]
        delta = choice.delta
        if delta is not None:
            content = delta.content
            blocks = state.blocks
            if content and blocks.text is not None and blocks.reasoning is None:
                out.append(TextDelta(blocks.text, content))  # hot path
                state.text_len += len(content)
            else:
                _on_delta(state, delta, out)
        if choice.annotations:
            _on_annotations(state, choice.annotations, out)
        if choice.finish_reason:
            state.finish_reason = choice.finish_reason
            _finish(state, out)
    if chunk.usage is not None:
        state.usage = _usage(chunk.usage)
    elif chunk.x_groq is not None and isinstance(chunk.x_groq.get("usage"), dict):
        state.usage = _usage(chunk.x_groq["usage"])


def _on_delta(state: ChatState, delta: _Delta, out: list[LLMEvent]) -> None:
    blocks = state.blocks
    reasoning = _reasoning_text(state.quirks, delta)
    if reasoning:
        if blocks.reasoning is not None:
            out.append(ReasoningDelta(blocks.reasoning, reasoning))
        else:
            blocks.end_text(out)
            blocks.reasoning_delta(reasoning, out)
    content = delta.content
    if content:
        blocks.end_reasoning(out)
        if blocks.text is None:
            state.text_starts.append((state.text_len, blocks.text_delta(content, out)))
        else:
            out.append(TextDelta(blocks.text, content))
        state.text_len += len(content)
    if delta.refusal:
        blocks.end_reasoning(out)
        blocks.text_delta(delta.refusal, out)
        state.finish_reason = state.finish_reason or "content_filter"
    if delta.tool_calls:
        for tool_delta in delta.tool_calls:
            _on_tool_delta(state, tool_delta, out)
    if delta.annotations:
        _on_annotations(state, delta.annotations, out)


def _reasoning_text(quirks: ChatQuirks, delta: _Delta) -> str | None:
    for field in quirks.reasoning_fields:
        value = getattr(delta, field, None)
        if value:
            return value
    return None


def _on_tool_delta(state: ChatState, delta: _ToolDelta, out: list[LLMEvent]) -> None:
    fn = delta.function
    tool: ToolInput | None = None
    if delta.id is not None and delta.id in state.tool_by_id:
        tool = state.tool_by_id[delta.id]  # some servers repeat the id in every fragment
    elif state.quirks.tool_call_key == "index" and delta.index is not None:
        tool = state.tools.get(delta.index)
    elif delta.id is None and state.tools:
        tool = next(reversed(state.tools.values()))  # no index, no id: continues the last call
    if tool is None:
        if delta.id is None and (fn is None or fn.name is None):
            raise InvalidProviderOutputError(
                "openai-chat: tool-call fragment for an unknown call", raw=msgspec.json.encode(delta).decode()
            )
        state.blocks.close(out)
        key: int | str = delta.index if state.quirks.tool_call_key == "index" and delta.index is not None else (
            delta.id or f"call_{len(state.tools)}"
        )
        tool = ToolInput(delta.id or f"call_{len(state.tools)}", (fn.name if fn else None) or "", out)
        state.tools[key] = tool
        state.tool_by_id[tool.id] = tool
    if fn is not None and fn.arguments:
        tool.delta(fn.arguments, out)


def _on_annotations(state: ChatState, annotations: list[_Annotation], out: list[LLMEvent]) -> None:
    for annotation in annotations:
        cite = annotation.url_citation
        if annotation.type != "url_citation" or cite is None:
            continue
        start, end = cite.start_index, cite.end_index
        block_id, offset = _block_at(state, start)
        if start is None or end is None or end <= start:
            start = end = None
        else:
            start, end = start - offset, end - offset
        out.append(Citation(block_id, cite.url, cite.title, start, end, cite.content))


def _block_at(state: ChatState, position: int | None) -> tuple[str, int]:
    if not state.text_starts:
        return "text-0", 0
    chosen = state.text_starts[0]
    for entry in state.text_starts:
        if position is not None and entry[0] <= position:
            chosen = entry
    return chosen[1], chosen[0]


def _finish(state: ChatState, out: list[LLMEvent]) -> None:
    state.blocks.close(out)
    for tool in state.tools.values():
        tool.finish(out)
    reason = _FINISH.get(state.finish_reason or "", "unknown")
    if state.tools and reason == "stop":
        reason = "tool-calls"  # some servers say "stop" after calling tools
    state.reason = reason


def _usage(raw: dict[str, Any]) -> Usage:
    prompt = raw.get("prompt_tokens")
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens")  # DeepSeek
    completion = raw.get("completion_tokens")
    cdetails = raw.get("completion_tokens_details") or {}
    reasoning = cdetails.get("reasoning_tokens") if isinstance(cdetails, dict) else None
    server = raw.get("server_tool_use") or {}
    searches = server.get("web_search_requests") if isinstance(server, dict) else None
    return Usage.from_cached(
        input_tokens=prompt,
        output_tokens=completion,
        cache_read=cached,
        cache_write=details.get("cache_write_tokens") if isinstance(details, dict) else None,
        reasoning=reasoning,
        web_search_requests=searches,
        raw=raw,
    )


def on_halt(state: ChatState, out: list[LLMEvent]) -> None:
    if state.finish_reason is None and not state.done:
        state.blocks.close(out)
        raise InvalidProviderOutputError("openai-chat: stream ended before a finish_reason or [DONE]")
    _finish(state, out)
    state.done = True


# 6. the Protocol value and its default route ---------------------------------------------------


def make_protocol(quirks: ChatQuirks = ChatQuirks(), name: str = "openai-chat") -> Protocol:
    return Protocol(
        name=name,
        build_body=make_build_body(quirks),
        new_state=lambda _request: ChatState(quirks),
        step=step,
        on_halt=on_halt,
        native_output_schema=True,
    )


PROTOCOL = make_protocol()


def route(
    base_url: str, auth: Auth, *, quirks: ChatQuirks | None = None, name: str = "openai-chat", **changes: Any
) -> Route:
    return Route(
        name=name,
        protocol=make_protocol(quirks) if quirks is not None else PROTOCOL,
        endpoint=Endpoint(base_url, "/chat/completions"),
        auth=auth,
        framing=SSEFraming(),
        **changes,
    )
