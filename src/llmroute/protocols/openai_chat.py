"""OpenAI Chat Completions (and every OpenAI-compatible server), streamed over SSE.

Non-streamed (``stream=False``: ``stream: false``, no ``stream_options``), the completion's
``choices[0].message`` is read as one delta holding everything, by the same handlers."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

import msgspec

from ..framing.sse import SSEDataFraming, SSEEvent
from ..hosted import WEB_SEARCH, search_result
from ..route.auth import Auth
from ..route.classify import from_stream_event
from ..route.decoding import DECODE_ERRORS
from ..route.endpoint import Endpoint
from ..route.model import Route
from ..route.protocol import Protocol, StreamState
from ..schema.content import MediaPart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.events import Citation, FinishReason, LLMEvent, Media, TextDelta, ToolCall, ToolResult
from ..schema.mime import sniff, sniff_base64
from ..schema.request import LLMRequest, ModelRef
from ..schema.tools import HostedTool, ToolDefinition
from ..schema.usage import Usage
from ._shared import (
    RAW_LIMIT,
    Blocks,
    ToolInput,
    content_parts,
    data_url,
    decode_frame,
    json_arguments,
    lower_hosted,
    only_fields,
    parse_tool_input,
    result_text,
    with_options,
)
from ._websearch import emit_search, hit_pairs, search_from_citations
from .openai_chat_custom import (
    CustomCallOut,
    call_metadata,
    custom_names,
    is_custom_call,
    lower_custom,
    lower_custom_call,
)
from .openai_chat_reasoning import (
    ContentChunk,
    details_text,
    end_reasoning,
    on_content_chunks,
    on_reasoning_details,
    reasoning_details_out,
)
from .openai_chat_support import chat_support
from .openai_usage import chat_usage

__all__ = [
    "HOSTED_TOOLS",
    "NAME",
    "PROTOCOL",
    "REASONING_MODEL",
    "REASONING_QUIRKS",
    "TOOL_KINDS",
    "ChatProtocol",
    "ChatQuirks",
    "HostedToolLowering",
    "build_body",
    "make_protocol",
    "on_halt",
    "route",
    "step",
    "whole",
]

NAME = "openai-chat"

# 1. quirks, constants and request body Structs ----------------------------------------------------

HostedToolLowering = Callable[[HostedTool], dict[str, Any]]  # one entry of a hosted tools table


class ChatQuirks(msgspec.Struct, frozen=True):
    """Declared differences between OpenAI-compatible servers.

    ``tool_call_key``: how streamed tool-call fragments are matched: by ``index`` (OpenAI), or by
    ``id`` for servers that omit ``index`` or reuse index 0 for every call. A repeated id in every
    fragment is handled either way. ``reasoning_fields``: which delta fields carry reasoning text, in
    priority order. ``include_usage``: send ``stream_options.include_usage``. ``max_tokens_field``:
    ``max_completion_tokens`` for OpenAI reasoning models. ``send_reasoning``: echo reasoning back as
    ``reasoning_content`` on assistant messages (servers that require it). ``supports_top_k``: send
    ``top_k``. ``empty_choices_ok``: chunks with no choices (Azure's prompt-filter first chunk, the
    usage trailer) are normal, not an error. ``hosted_tools``: this server's ``HOSTED_TOOLS``
    table, kind -> lowering to its ``tools`` entry (OpenRouter ``openrouter:web_search``, GLM
    ``web_search``); without it hosted tools are refused. ``send_reasoning_details``: echo OpenRouter
    ``reasoning_details`` (signatures, encrypted reasoning) back on assistant messages.
    ``completion_has_reasoning``: whether ``completion_tokens`` already counts ``reasoning_tokens``
    (OpenAI: yes; xAI: no, its ``total_tokens`` is prompt + completion + reasoning); ``None`` decides
    per response from the server's own ``total_tokens``. Either way ``Usage.output_tokens`` includes
    reasoning.

    Response-side extensions need no flag: fields only some servers send are parsed when present
    (``reasoning_details``, annotations, Groq ``executed_tools``, GLM's top-level ``web_search``).
    """

    tool_call_key: Literal["index", "id"] = "index"
    reasoning_fields: tuple[str, ...] = ("reasoning_content", "reasoning")
    include_usage: bool = True
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    send_reasoning: bool = False
    supports_top_k: bool = False
    empty_choices_ok: bool = True
    hosted_tools: Mapping[str, HostedToolLowering] | None = None
    send_reasoning_details: bool = False
    completion_has_reasoning: bool | None = None


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
    tool_calls: list[_ToolCallOut | CustomCallOut] | None = None
    reasoning_content: str | None = None
    reasoning_details: list[dict[str, Any]] | None = None


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


_DEFAULT_QUIRKS = ChatQuirks()
# OpenAI reasoning models (and Azure deployments named after them) reject ``max_tokens`` on Chat
# Completions and want ``max_completion_tokens``.
REASONING_MODEL = re.compile(r"^(o\d|gpt-5|codex)")
REASONING_QUIRKS = ChatQuirks(max_tokens_field="max_completion_tokens")


class ChatBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    model: str
    messages: list[_SystemMessage | _UserMessage | _AssistantMessage | _ToolMessage]
    tools: list[_ToolDef | dict[str, Any]] | None = None
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


# 2. stream event Structs --------------------------------------------------------------------------


class _FnDelta(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _CustomDelta(msgspec.Struct):
    name: str | None = None
    input: str | None = None  # free text, in pieces like function arguments


class _ToolDelta(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: _FnDelta | None = None
    type: str | None = None  # "custom" on a custom tool's first fragment
    custom: _CustomDelta | None = None


class _UrlCitation(msgspec.Struct):
    url: str | None = None
    title: str | None = None
    content: str | None = None
    start_index: int | None = None
    end_index: int | None = None


class _Annotation(msgspec.Struct):
    type: str = ""
    url_citation: _UrlCitation | None = None


class _ExecutedTool(msgspec.Struct):
    """A tool Groq's compound models ran server-side: first without ``output``, then with it."""

    index: int = 0
    type: str = ""
    arguments: str | None = None
    output: str | None = None
    search_results: dict[str, Any] | None = None


class _ImageUrl(msgspec.Struct):
    url: str = ""


class _ImageOut(msgspec.Struct):
    """An image the model produced (OpenRouter, Vercel AI Gateway: ``modalities: ["image"]``)."""

    type: str = ""
    image_url: _ImageUrl | None = None


class _Audio(msgspec.Struct):
    """Spoken output (``modalities: ["text", "audio"]``): base64 ``data`` (streamed in pieces, each
    encoded on its own), the ``transcript`` of what is said, and an ``id`` later turns may cite."""

    id: str | None = None
    data: str | None = None
    transcript: str | None = None
    expires_at: int | None = None


class _Delta(msgspec.Struct):
    content: str | list[ContentChunk] | None = None  # a list: Mistral (see ContentChunk)
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[_ToolDelta] | None = None
    refusal: str | None = None
    annotations: list[_Annotation] | None = None
    reasoning_details: list[Any] | None = None  # OpenRouter; kept as sent so it can round-trip
    executed_tools: list[_ExecutedTool] | None = None  # Groq compound
    images: list[_ImageOut] | None = None
    audio: _Audio | None = None


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
    web_search: Any = None  # GLM: search hits next to choices (any shape; validated by its handler)
    service_tier: str | None = None  # OpenAI: the tier that served the call (prices differ)


class _WholeChoice(msgspec.Struct):
    index: int = 0
    message: _Delta | None = None  # a message has the fields of a delta (and ``role``, ignored)
    finish_reason: str | None = None
    annotations: list[_Annotation] | None = None


class _Completion(_Chunk):
    """A non-streamed ``chat.completion``: a chunk's fields, with whole messages in ``choices``."""

    choices: list[_WholeChoice] | None = None  # pyright: ignore[reportIncompatibleVariableOverride]


_decoder = msgspec.json.Decoder(_Chunk)
# Nearly every chunk of a text stream: one choice whose delta holds only ``content`` (a string).
_text_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(
    only_fields(
        _Chunk,
        {
            "choices": tuple[
                only_fields(_Choice, {"delta": only_fields(_Delta, {"content": str})}, ("index",))
            ]
        },
        # ``service_tier`` rides on every OpenAI chunk; the first and the usage chunk (general path)
        # record it, so the text chunks need not decode it
        ("id", "model", "service_tier"),
    )
)
_completion_decoder = msgspec.json.Decoder(_Completion)


# 3. parser state ----------------------------------------------------------------------------------


class ChatState(StreamState):
    __slots__ = (
        "audio",
        "audio_info",
        "blocks",
        "cited",
        "executed",
        "finish_reason",
        "images",
        "name",
        "pending_citations",
        "quirks",
        "reasoning_details",
        "refused",
        "searched",
        "service_tier",
        "started",
        "text_len",
        "text_starts",
        "tool_by_id",
        "tools",
        "web_seen",
    )

    def __init__(self, quirks: ChatQuirks, name: str = NAME) -> None:
        super().__init__()
        self.quirks = quirks
        self.name = name
        self.blocks = Blocks()
        self.tools: dict[int | str, ToolInput] = {}
        self.tool_by_id: dict[str, ToolInput] = {}
        self.finish_reason: str | None = None
        self.refused = False  # the model sent a refusal instead of an answer
        self.started = False
        self.text_len = 0  # characters of message content so far (annotation offsets count these)
        self.text_starts: list[tuple[int, str]] = []  # (content offset, block id) per text block
        self.pending_citations: list[_UrlCitation] = []  # annotations that came before any text
        self.reasoning_details: list[dict[str, Any]] = []  # merged details of the open reasoning block
        self.executed: dict[int, tuple[str, str, bool]] = {}  # Groq: index -> (call id, name, result sent)
        self.web_seen: set[str] = set()  # GLM: search hits already surfaced
        self.cited: list[tuple[str | None, str | None]] = []  # (url, title) of url_citation annotations
        self.searched = False  # a web_search call was reported (else annotations imply one)
        self.images = 0  # images produced so far (their media ids)
        self.audio = bytearray()  # decoded audio pieces, reported whole as media at the finish
        self.audio_info: dict[str, Any] = {}  # its id and expiry
        self.service_tier: str | None = None  # the tier that served the call (Groq names it early)


# 4. build_body ------------------------------------------------------------------------------------


def _user_content(parts: tuple[Any, ...]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, MediaPart):
            content.append(_lower_media(part))
        else:
            raise InvalidRequestError(f"{NAME}: a user message cannot hold a {type(part).__name__}")
    return content


def _lower_media(part: MediaPart) -> dict[str, Any]:
    if part.mime_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": data_url(part)}}
    if part.mime_type.startswith("audio/") and not part.is_url:
        return {
            "type": "input_audio",
            "input_audio": {"data": part.base64(), "format": part.mime_type.split("/")[1]},
        }
    if part.is_url:
        raise InvalidRequestError(f"{NAME}: {part.mime_type} is only accepted inline, not by URL")
    return {"type": "file", "file": {"filename": part.filename or "file", "file_data": data_url(part)}}


def _lower_messages(request: LLMRequest, quirks: ChatQuirks) -> list[Any]:
    messages: list[Any] = []
    if request.system:
        messages.append(_SystemMessage(content="\n\n".join(p.text for p in request.system)))
    custom = custom_names(request)
    for message in request.messages:
        messages.extend(_lower_message(message, quirks, custom))
    return messages


def _lower_message(message: Message, quirks: ChatQuirks, custom: frozenset[str]) -> list[Any]:
    role = message.role
    if role == "system":
        return [
            _SystemMessage(content="\n\n".join(p.text for p in message.content if isinstance(p, TextPart)))
        ]
    if role == "user":
        return [_UserMessage(content=_user_content(message.content))]
    if role == "assistant":
        text = "".join(p.text for p in message.content if isinstance(p, TextPart))
        calls = [
            _lower_call(p, custom)
            for p in message.content
            if isinstance(p, ToolCallPart) and not p.provider_executed
        ]
        reasoning = "".join(p.text for p in message.content if isinstance(p, ReasoningPart))
        return [
            _AssistantMessage(
                content=text or None,
                tool_calls=calls or None,
                reasoning_content=(reasoning or None) if quirks.send_reasoning else None,
                reasoning_details=reasoning_details_out(message) if quirks.send_reasoning_details else None,
            )
        ]
    out: list[Any] = []
    media: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            if part.provider_executed:
                continue
            out.append(_ToolMessage(tool_call_id=part.id, content=result_text(part.result)))
            parts = content_parts(part.result)
            if parts:
                media.extend(_lower_media(p) for p in parts if isinstance(p, MediaPart))
        elif isinstance(part, TextPart):
            out.append(_UserMessage(content=part.text))
    if media:
        # Chat tool messages carry text only; images a tool returned follow as a user message.
        out.append(_UserMessage(content=media))
    return out


def _lower_call(part: ToolCallPart, custom: frozenset[str]) -> _ToolCallOut | CustomCallOut:
    if is_custom_call(part, custom):
        return lower_custom_call(part)
    return _ToolCallOut(id=part.id, function=_Function(name=part.name, arguments=json_arguments(part.input)))


def _lower_tool_choice(request: LLMRequest) -> str | dict[str, Any] | None:
    choice = request.tool_choice
    if choice is None:
        return None
    if choice.mode == "tool":
        if choice.name in custom_names(request):
            return {"type": "custom", "custom": {"name": choice.name}}
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def _lower_tools(request: LLMRequest, quirks: ChatQuirks) -> list[_ToolDef | dict[str, Any]] | None:
    tools: list[_ToolDef | dict[str, Any]] = []
    for tool in request.tools:
        if isinstance(tool, HostedTool):
            tools.append(_lower_hosted(tool, quirks))
        elif tool.kind == "custom":
            tools.append(lower_custom(tool))
        else:
            tools.append(_lower_tool(tool))
    return tools or None


def _lower_tool(tool: ToolDefinition) -> _ToolDef:
    return _ToolDef(
        function=_FunctionDef(
            name=tool.name,
            description=tool.description or None,
            parameters=tool.input_schema,
            strict=tool.strict,
        )
    )


def _lower_hosted(tool: HostedTool, quirks: ChatQuirks) -> dict[str, Any]:
    return lower_hosted(quirks.hosted_tools or HOSTED_TOOLS, tool, NAME)


def _response_format(request: LLMRequest) -> dict[str, Any] | None:
    out = request.output_schema
    if out is None:
        return {"type": "json_object"} if request.json_mode else None
    spec: dict[str, Any] = {"name": out.name, "schema": out.schema, "strict": out.strict}
    spec.update({"description": out.description} if out.description else {})
    return {"type": "json_schema", "json_schema": spec}


def make_build_body(quirks: ChatQuirks) -> Callable[[LLMRequest, ModelRef], ChatBody | dict[str, Any]]:
    def build_body(request: LLMRequest, model: ModelRef) -> ChatBody | dict[str, Any]:
        g = request.generation
        assert g is not None  # resolved by prepare()
        max_tokens = g.max_tokens
        stream = g.stream is not False
        body = ChatBody(
            model=model.id,
            messages=_lower_messages(request, quirks),
            tools=_lower_tools(request, quirks),
            tool_choice=_lower_tool_choice(request),
            stream=stream,
            stream_options=_StreamOptions(True) if quirks.include_usage and stream else None,
            max_tokens=max_tokens if quirks.max_tokens_field == "max_tokens" else None,
            max_completion_tokens=max_tokens if quirks.max_tokens_field == "max_completion_tokens" else None,
            temperature=g.temperature,
            top_p=g.top_p,
            top_k=g.top_k,  # ``chat_support`` drops it (warned) where the server has none
            frequency_penalty=g.frequency_penalty,
            presence_penalty=g.presence_penalty,
            seed=g.seed,
            stop=list(g.stop) if g.stop else None,
            response_format=_response_format(request),
        )
        return with_options(body, request.options_for(model.provider))

    return build_body


build_body = make_build_body(_DEFAULT_QUIRKS)


# Chat Completions has no hosted tools of its own: servers that have some (OpenRouter, GLM) declare
# their table as ``ChatQuirks.hosted_tools``.
HOSTED_TOOLS: dict[str, HostedToolLowering] = {}
# ``ToolDefinition.kind`` values Chat declares: functions, and custom tools (free-text input)
TOOL_KINDS = frozenset({"function", "custom"})


# 5. step / on_halt --------------------------------------------------------------------------------

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


def _obj(value: Any) -> dict[str, Any]:
    """A JSON object from loosely typed provider data; anything else reads as empty."""
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]


def step(state: ChatState, frame: bytes | SSEEvent, out: list[LLMEvent]) -> None:
    # ``SSEDataFraming`` hands over the event's data bytes (Chat never reads the event name); an
    # ``SSEEvent`` (a WebSocket message, an envelope, a test) is accepted too.
    data = frame if isinstance(frame, bytes) else frame.data
    if data == b"[DONE]":
        _finish(state, out)
        state.done = True
        return
    if state.done:
        return
    blocks = state.blocks
    block = blocks.text
    if block is not None and blocks.reasoning is None:
        # Hot path: while a text block is open, nearly every chunk only adds text to it. Any other
        # shape (more fields, another choice, bad bytes) fails this decode and takes the full path.
        try:
            content = _text_decoder.decode(data).choices[0].delta.content
        except DECODE_ERRORS:
            pass
        else:
            if content:
                out.append(TextDelta(block, content))
                state.text_len += len(content)
            return
    chunk = decode_frame(_decoder, data, f"{NAME} chunk")  # raises with the raw frame, or repairs UTF-8
    _on_chunk(state, chunk, data, out)


def whole(state: ChatState, body: bytes, out: list[LLMEvent]) -> None:
    """A ``chat.completion``: its message is one delta holding every field (tool calls get their
    position as ``index``), then the finish; the body is complete, so a missing ``finish_reason``
    finishes as ``unknown`` instead of failing as a cut stream would."""
    completion = decode_frame(_completion_decoder, body, f"{NAME} response")
    choices: list[_Choice] = []
    for choice in completion.choices or ():
        delta = choice.message
        if delta is not None and delta.tool_calls:
            calls = [
                c if c.index is not None else msgspec.structs.replace(c, index=i)
                for i, c in enumerate(delta.tool_calls)
            ]
            delta = msgspec.structs.replace(delta, tool_calls=calls)
        choices.append(_Choice(choice.index, delta, choice.finish_reason, choice.annotations))
    chunk = _Chunk(
        completion.id,
        completion.model,
        choices,
        completion.usage,
        completion.error,
        completion.x_groq,
        completion.web_search,
        completion.service_tier,
    )
    _on_chunk(state, chunk, body, out)
    state.done = True


def _on_chunk(state: ChatState, chunk: _Chunk, data: bytes, out: list[LLMEvent]) -> None:
    if not state.started:
        state.started = True
        state.metadata = {"id": chunk.id, "model": chunk.model}
    if chunk.error is not None:
        raise from_stream_event(chunk.error, state.name)  # OpenRouter / Groq: an error after HTTP 200
    if chunk.web_search is not None:
        _on_web_search(state, chunk.web_search, out)
    choices = chunk.choices
    if choices:
        choice = choices[0]
        delta = choice.delta
        if delta is not None:
            _on_delta(state, delta, out)
        if choice.annotations:
            _on_annotations(state, choice.annotations, out)
        if choice.finish_reason:
            state.finish_reason = choice.finish_reason
            _finish(state, out)
    elif not state.quirks.empty_choices_ok and chunk.usage is None and chunk.x_groq is None:
        raise InvalidProviderOutputError(
            f"{state.name}: chunk without choices", raw=data[:RAW_LIMIT].decode("utf-8", "replace")
        )
    if chunk.service_tier is not None:
        state.service_tier = chunk.service_tier
    if chunk.usage is not None:
        state.usage = _usage(chunk.usage, state.quirks, state.service_tier)
    elif chunk.x_groq is not None and isinstance(chunk.x_groq.get("usage"), dict):
        state.usage = _usage(chunk.x_groq["usage"], state.quirks, state.service_tier)


def _on_delta(state: ChatState, delta: _Delta, out: list[LLMEvent]) -> None:
    blocks = state.blocks
    reasoning = _reasoning_text(state.quirks, delta)
    details = delta.reasoning_details
    if not reasoning and details:
        reasoning = details_text(details)
    if reasoning:
        blocks.end_text(out)  # text and reasoning are never open together
        blocks.reasoning_delta(reasoning, out)
    if details:
        on_reasoning_details(state, details, out)
    if delta.executed_tools:
        _on_executed_tools(state, delta.executed_tools, out)
    content = delta.content
    if isinstance(content, list):
        on_content_chunks(state, content, out, _on_text)
    elif content:
        _on_text(state, content, out)
    if delta.refusal:
        _on_text(state, delta.refusal, out)
        state.refused = True
    if delta.tool_calls:
        for tool_delta in delta.tool_calls:
            _on_tool_delta(state, tool_delta, out)
    if delta.annotations:
        _on_annotations(state, delta.annotations, out)
    if delta.images:
        _on_images(state, delta.images, out)
    if delta.audio is not None:
        _on_audio(state, delta.audio, out)


_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+)?(?:;[\w-]+=[^;,]*)*;base64,", re.ASCII)


def _on_images(state: ChatState, images: list[_ImageOut], out: list[LLMEvent]) -> None:
    """Each generated image (a ``data:`` URL, whole in one delta) becomes media; a plain URL is
    not media the model produced in the response, so it is not reported as such."""
    for image in images:
        url = image.image_url.url if image.image_url is not None else ""
        match = _DATA_URL.match(url)
        if match is None:
            continue
        data = url[match.end() :]
        mime = match.group(1) or sniff_base64(data) or "application/octet-stream"
        out.append(Media(f"image-{state.images}", mime, data))
        state.images += 1


def _on_audio(state: ChatState, audio: _Audio, out: list[LLMEvent]) -> None:
    """The transcript is the message's text; the audio pieces add up to one clip."""
    if audio.transcript:
        _on_text(state, audio.transcript, out)
    if audio.data:
        try:
            state.audio += base64.b64decode(audio.data, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidProviderOutputError(f"{state.name}: audio data is not base64") from None
    for key, value in (("id", audio.id), ("expires_at", audio.expires_at)):
        if value is not None:
            state.audio_info[key] = value


def _end_audio(state: ChatState, out: list[LLMEvent]) -> None:
    """The whole clip as media: its type from its bytes (wav, mp3, flac, opus), else raw PCM
    (``pcm16``, the format a streamed answer must use: 24 kHz, 16-bit little-endian, mono)."""
    if not state.audio:
        return
    clip = bytes(state.audio)
    state.audio = bytearray()
    mime = sniff(clip) or "audio/pcm"
    id = state.audio_info.get("id") or "audio-0"
    out.append(
        Media(id, mime, base64.b64encode(clip).decode("ascii"), {"openai": {"audio": state.audio_info}})
    )


def _on_text(state: ChatState, text: str, out: list[LLMEvent]) -> None:
    """Message text (content or refusal): one block, its start offset recorded for citations."""
    end_reasoning(state, out)
    blocks = state.blocks
    opening = blocks.text is None
    block = blocks.text_delta(text, out)
    if opening:
        state.text_starts.append((state.text_len, block))
    state.text_len += len(text)


def _reasoning_text(quirks: ChatQuirks, delta: _Delta) -> str | None:
    for field in quirks.reasoning_fields:
        value = getattr(delta, field, None)
        if value:
            return value
    return None


def _close_all(state: ChatState, out: list[LLMEvent]) -> None:
    end_reasoning(state, out)
    state.blocks.end_text(out)


def _on_tool_delta(state: ChatState, delta: _ToolDelta, out: list[LLMEvent]) -> None:
    # ``type`` decides: Snowflake Cortex sends an empty ``custom`` beside a function call's ``function``
    custom = delta.type == "custom" or (delta.type is None and delta.function is None)
    fn = delta.custom if custom else delta.function  # a custom tool's free text comes as ``custom.input``
    tool: ToolInput | None = None
    if delta.id is not None and delta.id in state.tool_by_id:
        tool = state.tool_by_id[delta.id]  # some servers repeat the id in every fragment
        if _another_call(state, tool, delta, fn):
            raise InvalidProviderOutputError(f"{NAME}: tool call id {delta.id!r} repeated")
    elif state.quirks.tool_call_key == "index" and delta.index is not None:
        tool = state.tools.get(delta.index)
        if tool is not None and delta.id is not None and delta.id != tool.id:
            # Some compatible servers reuse index 0 for every call: a new id is a new call. The
            # earlier one keeps its place (re-keyed by its id) and still finishes.
            state.tools[tool.id] = state.tools.pop(delta.index)
            tool = None
    elif delta.id is None and state.tools:
        tool = next(reversed(state.tools.values()))  # no index, no id: continues the last call
    if tool is None:
        if delta.id is None and (fn is None or fn.name is None):
            raise InvalidProviderOutputError(
                f"{NAME}: tool-call fragment for an unknown call", raw=msgspec.json.encode(delta).decode()
            )
        _close_all(state, out)
        call_id = delta.id or f"call_{len(state.tools)}"
        key: int | str = (
            delta.index if state.quirks.tool_call_key == "index" and delta.index is not None else call_id
        )
        custom = custom and delta.custom is not None
        tool = ToolInput(
            call_id, (fn.name if fn else None) or "", out, metadata=call_metadata() if custom else None
        )
        state.tools[key] = tool
        state.tool_by_id[tool.id] = tool
    if fn is None:
        return
    text = fn.arguments if isinstance(fn, _FnDelta) else fn.input
    if text:
        tool.delta(text, out)


def _another_call(
    state: ChatState, tool: ToolInput, delta: _ToolDelta, fn: _FnDelta | _CustomDelta | None
) -> bool:
    """A named first fragment at another index under a known id: a second call reusing the id (the
    caller could answer only one), not a fragment of the first."""
    if state.quirks.tool_call_key != "index" or delta.index is None or fn is None or not fn.name:
        return False
    return state.tools.get(delta.index) is not tool


# Provider-executed tools reported inside a Chat stream: Groq compound ``executed_tools`` (a call
# without ``output``, then the same index with it) and GLM's top-level ``web_search`` hits. Both
# become tool-call + tool-result with ``provider_executed=True``; ids are derived from the response
# id so they stay unique across the steps of a tool loop. Searches are the canonical ``web_search``
# (``llmroute.hosted.SearchResult``); what the provider sent stays in ``provider_metadata``:
# Groq's executed tool under ``["groq"]``, GLM's hits under ``["glm"]["web_search"]`` (hit *i*
# behind source *i*, with ``media``, ``publish_date``, ``refer``, ``content``, ``icon``). A search
# only ``url_citation`` annotations show (OpenRouter's web plugin, OpenAI search models) is
# reported once at the end of the step, sources = the cited URLs.

_EXECUTED_NAMES = {"search": "web_search", "visit": "web_fetch", "python": "code_execution"}


def _hosted_id(state: ChatState, kind: str, n: int) -> str:
    response_id = (state.metadata or {}).get("id") or "response"
    return f"{response_id}-{kind}-{n}"


def _on_executed_tools(state: ChatState, tools: list[_ExecutedTool], out: list[LLMEvent]) -> None:
    for tool in tools:
        entry = state.executed.get(tool.index)
        if entry is None:
            _close_all(state, out)
            name = _EXECUTED_NAMES.get(tool.type, tool.type or "tool")
            entry = (_hosted_id(state, "executed", tool.index), name, False)
            state.executed[tool.index] = entry
            out.append(ToolCall(entry[0], name, parse_tool_input(tool.arguments or ""), True))
            state.searched = state.searched or name == WEB_SEARCH
        if tool.output is not None and not entry[2]:
            _close_all(state, out)
            state.executed[tool.index] = (entry[0], entry[1], True)
            result, meta = _executed_result(tool, entry[1])
            out.append(ToolResult(entry[0], entry[1], result, provider_executed=True, provider_metadata=meta))


def _executed_result(tool: _ExecutedTool, name: str) -> tuple[Any, dict[str, Any] | None]:
    raw_hits = (tool.search_results or {}).get("results")
    if name != WEB_SEARCH:
        hits = [_obj(hit) for hit in _list(raw_hits) if isinstance(hit, dict)]
        return ({"sources": hits, "output": tool.output} if hits else {"output": tool.output}), None
    query = _obj(parse_tool_input(tool.arguments or "")).get("query")
    result = search_result(hit_pairs(raw_hits), [query])
    return result, {"groq": {"type": tool.type, "output": tool.output, "search_results": tool.search_results}}


def _on_web_search(state: ChatState, hits: Any, out: list[LLMEvent]) -> None:
    """GLM: ``web_search`` hits next to ``choices``, on any chunk, possibly repeated: new hits
    (deduplicated by link) surface as one hosted web_search call + result."""
    new: list[dict[str, Any]] = []
    for hit in _list(hits):
        entry = _obj(hit)  # kept as sent: the hits ride in provider_metadata
        key = str(entry.get("link") or msgspec.json.encode(entry).decode())
        if not entry or key in state.web_seen:
            continue
        state.web_seen.add(key)
        new.append(entry)
    if not new:
        return
    _close_all(state, out)
    state.searched = True
    call_id = _hosted_id(state, WEB_SEARCH, len(state.web_seen) - len(new))
    result = search_result(hit_pairs(new, url="link"), dedupe=False)
    # dedupe=False: the hits are unique by link already, and source i must stay hit i
    emit_search(call_id, {}, result, out, result_metadata={"glm": {"web_search": new}})


def _on_annotations(state: ChatState, annotations: list[_Annotation], out: list[LLMEvent]) -> None:
    for annotation in annotations:
        cite = annotation.url_citation
        if annotation.type != "url_citation" or cite is None:
            continue
        state.cited.append((cite.url, cite.title))
        if state.text_starts:
            out.append(_citation(state, cite))
        else:
            state.pending_citations.append(cite)  # OpenRouter sends sources before the text


def _citation(state: ChatState, cite: _UrlCitation) -> Citation:
    start, end = cite.start_index, cite.end_index
    block_id, offset = _block_at(state, start)
    if start is None or end is None or end <= start:
        start = end = None  # no span (OpenRouter/Exa send 0..0): the source without a position
    else:
        start, end = start - offset, end - offset
    return Citation(block_id, cite.url, cite.title, start, end, cite.content)


def _block_at(state: ChatState, position: int | None) -> tuple[str, int]:
    if not state.text_starts:
        return "", 0  # the step produced no text to bind to
    chosen = state.text_starts[0]
    for entry in state.text_starts:
        if position is not None and entry[0] <= position:
            chosen = entry
    return chosen[1], chosen[0]


def _finish(state: ChatState, out: list[LLMEvent]) -> None:
    _close_all(state, out)
    _end_audio(state, out)
    for tool in state.tools.values():
        # a custom call's input is the model's text as written; only function arguments are JSON
        tool.finish(out, input="".join(tool.chunks) if tool.metadata is not None else None)
    if state.pending_citations:
        pending, state.pending_citations = state.pending_citations, []
        out.extend(_citation(state, cite) for cite in pending)
    if state.cited and not state.searched:
        state.searched = True
        search_from_citations(_hosted_id(state, WEB_SEARCH, 0), state.cited, out)
    reason = _FINISH.get(state.finish_reason or "", "unknown")
    if state.tools and reason == "stop":
        reason = "tool-calls"  # some servers say "stop" after calling tools
    elif state.refused and reason in ("stop", "unknown"):
        reason = "content-filter"  # a refusal ends with finish_reason "stop"
    state.reason = reason


def _usage(raw: dict[str, Any], quirks: ChatQuirks, service_tier: str | None) -> Usage:
    return chat_usage(raw, quirks.completion_has_reasoning, service_tier)


def on_halt(state: ChatState, out: list[LLMEvent]) -> None:
    if state.finish_reason is None and not state.done:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before a finish_reason or [DONE]")
    _finish(state, out)
    state.done = True


# 6. the Protocol value and its default route ------------------------------------------------------

ChatProtocol: TypeAlias = Protocol[ChatBody | dict[str, Any], bytes | SSEEvent, ChatState]
"""Chat's body, frames (SSE data bytes, or an ``SSEEvent``) and parser state."""


def _provider_name(request: LLMRequest, default: str) -> str:
    """Who to name in stream errors: the model's provider (``openrouter``, ``groq``, ...)."""
    provider = getattr(request.model, "provider", None)
    return provider if isinstance(provider, str) and provider else default


def make_protocol(quirks: ChatQuirks = _DEFAULT_QUIRKS, name: str = NAME) -> ChatProtocol:
    return Protocol(
        name=name,
        build_body=make_build_body(quirks),
        new_state=lambda request: ChatState(quirks, _provider_name(request, name)),
        step=step,
        on_halt=on_halt,
        native_output_schema=True,
        whole=whole,
        hosted_kinds=frozenset(quirks.hosted_tools or HOSTED_TOOLS),
        tool_kinds=TOOL_KINDS,
        support=chat_support(quirks),
    )


PROTOCOL = make_protocol()


def route(
    endpoint: Endpoint | str,
    auth: Auth,
    *,
    name: str = NAME,
    quirks: ChatQuirks | None = None,
    **changes: Any,
) -> Route:
    """A Chat Completions route. ``endpoint`` is an ``Endpoint`` or a base URL (``.../v1``,
    ``/chat/completions`` is appended)."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(endpoint, "/chat/completions")
    return Route(
        name=name,
        protocol=make_protocol(quirks) if quirks is not None else PROTOCOL,
        endpoint=endpoint,
        auth=auth,
        framing=SSEDataFraming(),
        **changes,
    )
