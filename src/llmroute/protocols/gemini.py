"""Gemini ``generateContent`` (Google AI Studio, Vertex AI, Code Assist), streamed over SSE.

``:streamGenerateContent?alt=sse`` sends one complete ``GenerateContentResponse`` per event; its
``parts`` hold only the new delta. Non-streamed (``stream=False``), ``:generateContent`` answers
with one such response holding every part: the same chunk handler reads it as a one-chunk stream.
Grounding (``groundingMetadata``) becomes the canonical hosted ``web_search`` call/result plus
``citation`` events once the stream ends: see ``gemini_grounding``. Tool schemas are rewritten for
Gemini's ``Schema`` by ``gemini_schema``.

Code Assist (``cloudcode-pa``) is this protocol inside an envelope: see ``gemini_code_assist``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import msgspec

from ..framing.sse import SSEDataFraming, SSEEvent
from ..route.auth import Auth
from ..route.classify import from_stream_event
from ..route.decoding import DECODE_ERRORS
from ..route.endpoint import Endpoint
from ..route.model import Route
from ..route.protocol import AnyProtocol, Protocol, StreamState
from ..route.support import ALWAYS_CONSTRAINED, Support, hosted_parts
from ..schema.content import (
    ApprovalRequestPart,
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.events import (
    FinishReason,
    LLMEvent,
    Media,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolResult,
)
from ..schema.mime import sniff_base64
from ..schema.request import LLMRequest, ModelRef
from ..schema.tools import HostedTool, ToolDefinition
from ..schema.usage import Usage, usage_count
from ._output_tool import described_schema
from ._partial_json import PathWriter, parse_path
from ._shared import ToolInput, decode_frame, lower_hosted, ns, result_text, with_options
from .gemini_grounding import (
    NS,
    GroundingMetadata,
    MergedGrounding,
    PartText,
    UrlContext,
    UrlMetadata,
    emit_grounding,
    hosted_id,
)
from .gemini_schema import sanitize_schema

__all__ = [
    "HOSTED_TOOLS",
    "NAME",
    "PROTOCOL",
    "Chunk",
    "GeminiProtocol",
    "GeminiState",
    "build_body",
    "on_chunk",
    "on_halt",
    "route",
    "step",
    "whole",
]

NAME = "gemini"


# 1. quirks, constants and request body Structs ----------------------------------------------------


class _Blob(msgspec.Struct, rename="camel"):
    mime_type: str
    data: str


class _FileData(msgspec.Struct, rename="camel"):
    mime_type: str
    file_uri: str


class _FunctionCallOut(msgspec.Struct, omit_defaults=True):
    name: str
    args: Any
    id: str | None = None


class _FunctionResponseOut(msgspec.Struct, omit_defaults=True):
    name: str
    response: dict[str, Any]
    id: str | None = None


class _PartOut(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    text: str | None = None
    thought: bool | None = None
    inline_data: _Blob | None = None
    file_data: _FileData | None = None
    function_call: _FunctionCallOut | None = None
    function_response: _FunctionResponseOut | None = None
    executable_code: dict[str, Any] | None = None
    code_execution_result: dict[str, Any] | None = None
    thought_signature: str | None = None


class _ContentOut(msgspec.Struct):
    role: str
    parts: list[_PartOut]


class _SystemInstruction(msgspec.Struct):
    parts: list[_PartOut]


class _FunctionDeclaration(msgspec.Struct, omit_defaults=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class _ToolOut(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    function_declarations: list[_FunctionDeclaration] | None = None
    google_search: dict[str, Any] | None = None
    url_context: dict[str, Any] | None = None
    code_execution: dict[str, Any] | None = None
    file_search: dict[str, Any] | None = None


class _FunctionCallingConfig(msgspec.Struct, omit_defaults=True, rename="camel"):
    mode: str | None = None
    allowed_function_names: list[str] | None = None
    stream_function_call_arguments: bool | None = None


class _ToolConfig(msgspec.Struct, rename="camel"):
    function_calling_config: _FunctionCallingConfig


class _GenerationConfig(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    response_mime_type: str | None = None
    response_schema: dict[str, Any] | None = None
    response_json_schema: dict[str, Any] | None = None
    response_modalities: list[str] | None = None
    media_resolution: str | None = None
    thinking_config: dict[str, Any] | None = None


class GeminiBody(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    contents: list[_ContentOut]
    system_instruction: _SystemInstruction | None = None
    tools: list[_ToolOut] | None = None
    tool_config: _ToolConfig | None = None
    generation_config: _GenerationConfig | None = None
    safety_settings: list[dict[str, Any]] | None = None
    cached_content: str | None = None
    labels: dict[str, str] | None = None


# 2. stream event Structs --------------------------------------------------------------------------


class _PartialArg(msgspec.Struct, rename="camel"):
    """One ``partialArgs`` entry: a value (a protobuf ``Value``: one of the fields) at a JSON path."""

    json_path: str
    string_value: str | None = None
    number_value: int | float | None = None
    bool_value: bool | None = None
    null_value: Any = msgspec.UNSET
    struct_value: dict[str, Any] | None = None
    list_value: list[Any] | None = None
    will_continue: bool = False

    def value(self) -> Any:
        for given in (self.string_value, self.number_value, self.bool_value, self.struct_value):
            if given is not None:
                return given
        if self.list_value is not None:
            return self.list_value
        if self.null_value is not msgspec.UNSET:
            return None
        raise InvalidProviderOutputError(f"{NAME}: partialArgs entry at {self.json_path!r} has no value")


class _FunctionCall(msgspec.Struct, rename="camel"):
    """A whole call, or with ``streamFunctionCallArguments`` a piece of one: ``name`` +
    ``will_continue`` opens it, ``partial_args`` add to it, a piece without ``will_continue``
    closes it."""

    name: str = ""
    args: dict[str, Any] | None = None
    id: str | None = None
    partial_args: list[_PartialArg] | None = None
    will_continue: bool = False


class _InlineData(msgspec.Struct, rename="camel"):
    """Media the model produced (image output): base64 ``data``, its type when Gemini names it."""

    data: str = ""
    mime_type: str | None = None


class _Part(msgspec.Struct, rename="camel"):
    text: str | None = None
    thought: bool = False
    thought_signature: str | None = None
    function_call: _FunctionCall | None = None
    inline_data: _InlineData | None = None
    executable_code: dict[str, Any] | None = None
    code_execution_result: dict[str, Any] | None = None


class _Content(msgspec.Struct):
    parts: list[_Part] | None = None
    role: str | None = None


class _Candidate(msgspec.Struct, rename="camel"):
    content: _Content | None = None
    finish_reason: str | None = None
    finish_message: str | None = None
    index: int = 0
    grounding_metadata: GroundingMetadata | None = None
    url_context_metadata: UrlContext | None = None


class _PromptFeedback(msgspec.Struct, rename="camel"):
    block_reason: str | None = None
    block_reason_message: str | None = None


class Chunk(msgspec.Struct, rename="camel"):
    candidates: list[_Candidate] | None = None
    usage_metadata: msgspec.Raw = msgspec.Raw()  # decoded once, from the last chunk that had it
    prompt_feedback: _PromptFeedback | None = None
    model_version: str | None = None
    response_id: str | None = None
    error: dict[str, Any] | None = None


_decoder = msgspec.json.Decoder(Chunk)
_decode = _decoder.decode
_usage_decoder = msgspec.json.Decoder(dict[str, Any])


# 3. parser state ----------------------------------------------------------------------------------


class _StreamedCall:
    """A function call whose arguments arrive as ``partialArgs`` pieces."""

    __slots__ = ("tool", "writer")

    def __init__(self, tool: ToolInput) -> None:
        self.tool = tool
        self.writer = PathWriter()


class GeminiState(StreamState):
    __slots__ = (
        "block_reason",
        "call_ids",
        "counter",
        "file_search_id",
        "finish_message",
        "finish_reason",
        "grounding",
        "hosted",
        "local_calls",
        "open",
        "parts",
        "pending_code_id",
        "raw_usage",
        "response_id",
        "started",
        "streamed",
        "url_context",
    )

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[PartText] = []
        self.open: PartText | None = None  # the open text/reasoning block
        self.counter = 0  # block ids
        self.local_calls = 0
        self.call_ids: set[str] = set()  # ids the provider gave its function calls
        self.hosted = 0
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.block_reason: str | None = None
        self.raw_usage: msgspec.Raw | None = None
        self.grounding = MergedGrounding()
        self.url_context: list[UrlMetadata] = []
        self.response_id: str | None = None
        self.file_search_id: str | None = None
        self.pending_code_id: str | None = None  # the code call awaiting its codeExecutionResult
        self.started = False
        self.streamed: _StreamedCall | None = None  # the call whose arguments are streaming


# 4. build_body ------------------------------------------------------------------------------------


def _text_out(part: TextPart) -> _PartOut:
    return _PartOut(text=part.text, thought_signature=_signature_of(part.provider_metadata))


def _signature_of(metadata: dict[str, Any] | None) -> str | None:
    sig = ns(metadata, NS).get("thoughtSignature")
    return sig if isinstance(sig, str) else None


def _lower_media(part: MediaPart) -> _PartOut:
    if part.is_url:
        return _PartOut(file_data=_FileData(part.mime_type, part.data))  # type: ignore[arg-type]
    # media the model produced carries its thought signature back (Gemini 3 image output)
    sig = _signature_of(part.provider_metadata)
    return _PartOut(inline_data=_Blob(part.mime_type, part.base64()), thought_signature=sig)


def _user_parts(parts: tuple[Any, ...]) -> list[_PartOut]:
    out: list[_PartOut] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append(_PartOut(text=part.text))
        elif isinstance(part, MediaPart):
            out.append(_lower_media(part))
        else:
            raise InvalidRequestError(f"{NAME}: a user message cannot hold a {type(part).__name__}")
    return out


def _model_parts(parts: tuple[Any, ...]) -> list[_PartOut]:
    out: list[_PartOut] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append(_text_out(part))
        elif isinstance(part, ReasoningPart):
            # Only Gemini's own reasoning carries a signature Gemini can verify.
            sig = _signature_of(part.provider_metadata)
            if part.text or sig:
                out.append(_PartOut(text=part.text, thought=True, thought_signature=sig))
        elif isinstance(part, ToolCallPart):
            if part.provider_executed:
                if part.name == "code_execution" and isinstance(part.input, dict):
                    out.append(_PartOut(executable_code=part.input))  # type: ignore[arg-type]
                continue  # grounding / url context calls are not replayable
            args: Any = part.input
            if not isinstance(args, dict):
                args = {"input": args}  # functionCall.args must be an object
            out.append(
                _PartOut(
                    function_call=_FunctionCallOut(part.name, args, part.id),
                    thought_signature=_signature_of(part.provider_metadata),
                )
            )
        elif isinstance(part, ToolResultPart):
            if part.provider_executed and part.name == "code_execution" and isinstance(part.result, dict):
                out.append(_PartOut(code_execution_result=part.result))  # type: ignore[arg-type]
        elif isinstance(part, MediaPart):
            out.append(_lower_media(part))
    return out


def _tool_parts(parts: tuple[Any, ...]) -> list[_PartOut]:
    out: list[_PartOut] = []
    media: list[_PartOut] = []
    for part in parts:
        if isinstance(part, ToolResultPart):
            if part.provider_executed:
                continue
            key = "error" if part.is_error else "content"
            response = {"name": part.name, key: result_text(part.result)}
            out.append(_PartOut(function_response=_FunctionResponseOut(part.name, response, part.id)))
            if isinstance(part.result, tuple | list):
                media.extend(_lower_media(p) for p in part.result if isinstance(p, MediaPart))  # type: ignore[union-attr]
        elif isinstance(part, TextPart):
            out.append(_PartOut(text=part.text))
        elif isinstance(part, MediaPart):
            out.append(_lower_media(part))
    return out + media  # images a tool returned follow its functionResponse in the same user turn


def _lower_messages(request: LLMRequest) -> tuple[list[_ContentOut], list[_PartOut]]:
    system = [_PartOut(text=p.text) for p in request.system]
    contents: list[_ContentOut] = []
    for message in request.messages:
        if message.role == "system":
            system.extend(_PartOut(text=p.text) for p in message.content if isinstance(p, TextPart))
            continue
        parts = _lower_message(message)
        if not parts:
            continue
        role = "model" if message.role == "assistant" else "user"
        if contents and contents[-1].role == role and message.role == "tool":
            contents[-1].parts.extend(parts)  # results of one turn's calls share a user turn
        else:
            contents.append(_ContentOut(role, parts))
    return contents, system


def _lower_message(message: Message) -> list[_PartOut]:
    if message.role == "user":
        return _user_parts(message.content)
    if message.role == "assistant":
        return _model_parts(message.content)
    return _tool_parts(message.content)


_HOSTED_GENERIC = ("max_uses", "allowed_domains", "user_location", "search_context_size")


def _lower_web_search(tool: HostedTool) -> _ToolOut:
    options = dict(tool.options)
    unsupported = sorted(k for k in _HOSTED_GENERIC if k in options)
    if unsupported:
        raise InvalidRequestError(f"{NAME} googleSearch has no {', '.join(unsupported)} option")
    blocked = options.pop("blocked_domains", None)
    if blocked:
        options["excludeDomains"] = blocked
    return _ToolOut(google_search=options)


def _lower_url_context(tool: HostedTool) -> _ToolOut:
    return _ToolOut(url_context=dict(tool.options))


def _lower_code_execution(tool: HostedTool) -> _ToolOut:
    return _ToolOut(code_execution=dict(tool.options))


def _lower_file_search(tool: HostedTool) -> _ToolOut:
    options = dict(tool.options)
    stores = options.pop("vector_store_ids", None)
    if stores:
        options["fileSearchStoreNames"] = stores
    return _ToolOut(file_search=options)


def _lower_hosted(tool: HostedTool) -> _ToolOut:
    return lower_hosted(HOSTED_TOOLS, tool, NAME)


def _lower_tools(request: LLMRequest) -> list[_ToolOut] | None:
    functions: list[_FunctionDeclaration] = []
    hosted: list[_ToolOut] = []
    for tool in request.tools:
        if isinstance(tool, HostedTool):
            hosted.append(_lower_hosted(tool))
        else:
            functions.append(_lower_tool(tool))
    tools = [_ToolOut(function_declarations=functions)] if functions else []
    return (tools + hosted) or None


def _lower_tool(tool: ToolDefinition) -> _FunctionDeclaration:
    return _FunctionDeclaration(
        name=tool.name,
        description=tool.description or None,
        parameters=sanitize_schema(tool.input_schema),
    )


def _lower_tool_choice(request: LLMRequest, stream_arguments: bool | None) -> _ToolConfig | None:
    """``tool_choice`` as a function-calling mode, plus ``streamFunctionCallArguments`` (Gemini 3:
    arguments arrive as ``partialArgs`` pieces) when asked for."""
    choice = request.tool_choice
    if choice is None:
        config = _FunctionCallingConfig()
    elif choice.mode == "tool":
        if choice.name is None:
            raise InvalidRequestError(f"{NAME}: a named tool choice needs a tool name")
        config = _FunctionCallingConfig("ANY", [choice.name])
    else:
        config = _FunctionCallingConfig({"auto": "AUTO", "none": "NONE", "required": "ANY"}[choice.mode])
    if stream_arguments is not None:
        if not isinstance(stream_arguments, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(f"{NAME}: stream_function_call_arguments must be a bool")
        config.stream_function_call_arguments = stream_arguments
    return _ToolConfig(config) if config != _FunctionCallingConfig() else None


# Provider options (``provider_options={"google": {...}}`` or ``google.configure().gemini(id, **opts)``)
# with a place in the body; any other key is sent as a top-level body field as given.
_THINKING_KEYS = {
    "thinking_budget": "thinkingBudget",
    "thinkingBudget": "thinkingBudget",
    "include_thoughts": "includeThoughts",
    "includeThoughts": "includeThoughts",
    "thinking_level": "thinkingLevel",
    "thinkingLevel": "thinkingLevel",
}
_BODY_KEYS = {
    "safety_settings": "safety_settings",
    "safetySettings": "safety_settings",
    "cached_content": "cached_content",
    "cachedContent": "cached_content",
    "labels": "labels",
}
_STREAM_ARGUMENTS_KEYS = ("stream_function_call_arguments", "streamFunctionCallArguments")
_GENERATION_KEYS = {
    "response_modalities": "response_modalities",
    "responseModalities": "response_modalities",
    "media_resolution": "media_resolution",
    "mediaResolution": "media_resolution",
}


def _options(request: LLMRequest, model: ModelRef) -> dict[str, Any]:
    options = dict(request.options_for(NS))
    if model.provider != NS:
        options.update(request.options_for(model.provider))
    return options


def build_body(request: LLMRequest, model: ModelRef) -> GeminiBody | dict[str, Any]:
    g = request.generation
    assert g is not None  # resolved by prepare()
    options = _options(request, model)
    thinking: dict[str, Any] = {
        **(options.pop("thinkingConfig", None) or {}),
        **(options.pop("thinking_config", None) or {}),
    }
    generation: dict[str, Any] = {}
    body_fields: dict[str, Any] = {}
    json_schema_mode = bool(options.pop("response_json_schema", False))
    stream_arguments: bool | None = None
    for key in _STREAM_ARGUMENTS_KEYS:
        stream_arguments = options.pop(key, stream_arguments)
    raw_generation: dict[str, Any] = options.pop("generation_config", None) or {}
    for key in list(options):
        if key in _THINKING_KEYS:
            thinking[_THINKING_KEYS[key]] = options.pop(key)
        elif key in _BODY_KEYS:
            body_fields[_BODY_KEYS[key]] = options.pop(key)
        elif key in _GENERATION_KEYS:
            generation[_GENERATION_KEYS[key]] = options.pop(key)
    out_schema = request.output_schema
    if out_schema is not None or request.json_mode:
        generation["response_mime_type"] = "application/json"
    if out_schema is not None:
        if json_schema_mode:
            generation["response_json_schema"] = described_schema(out_schema)
        else:
            generation["response_schema"] = sanitize_schema(described_schema(out_schema))
    config = _GenerationConfig(
        max_output_tokens=g.max_tokens,
        temperature=g.temperature,
        top_p=g.top_p,
        top_k=g.top_k,
        stop_sequences=list(g.stop) if g.stop else None,
        seed=g.seed,
        presence_penalty=g.presence_penalty,
        frequency_penalty=g.frequency_penalty,
        thinking_config=thinking or None,
        **generation,
    )
    contents, system = _lower_messages(request)
    body = GeminiBody(
        contents=contents,
        system_instruction=_SystemInstruction(system) if system else None,
        tools=_lower_tools(request),
        tool_config=_lower_tool_choice(request, stream_arguments),
        generation_config=config if config != _EMPTY_CONFIG else None,
        **body_fields,
    )
    if not raw_generation:
        return with_options(body, options)
    data: dict[str, Any] = msgspec.to_builtins(body)
    data["generationConfig"] = {**data.get("generationConfig", {}), **raw_generation}
    return with_options(data, options)


_EMPTY_CONFIG = _GenerationConfig()

# what Gemini leaves out (see ``route.support``)
SUPPORT = Support(
    {
        "cache": "Gemini caches repeated prefixes by itself; an explicit cache is a cachedContent "
        "resource (provider option cached_content), not breakpoints",
        "tools.strict": "Gemini function declarations have no strict flag",
        "parts.approval-request": "Gemini has no tool approvals",
        "output_schema.strict": ALWAYS_CONSTRAINED,
        **hosted_parts(),
    },
    keeps_part=lambda part: _replayable(part),
)


def _replayable(part: Part) -> bool:
    """Hosted parts the history lowering keeps: Gemini's own code execution (grounding and URL
    context calls are not replayable)."""
    if isinstance(part, ApprovalRequestPart):
        return False
    if not getattr(part, "provider_executed", False):
        return True
    value = part.input if isinstance(part, ToolCallPart) else getattr(part, "result", None)
    return getattr(part, "name", None) == "code_execution" and isinstance(value, dict)


HOSTED_TOOLS: dict[str, Callable[..., Any]] = {
    "web_search": _lower_web_search,
    "url_context": _lower_url_context,
    "code_execution": _lower_code_execution,
    "file_search": _lower_file_search,
}


# 5. step / on_halt --------------------------------------------------------------------------------

_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content-filter",
    "RECITATION": "content-filter",
    "BLOCKLIST": "content-filter",
    "PROHIBITED_CONTENT": "content-filter",
    "SPII": "content-filter",
    "IMAGE_SAFETY": "content-filter",
    "IMAGE_PROHIBITED_CONTENT": "content-filter",
    "IMAGE_RECITATION": "content-filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "LANGUAGE": "unknown",
    "OTHER": "unknown",
    "FINISH_REASON_UNSPECIFIED": "unknown",
}


def step(state: GeminiState, frame: bytes | SSEEvent, out: list[LLMEvent]) -> None:
    # ``SSEDataFraming`` hands over the event's data bytes (Gemini never reads the event name); an
    # ``SSEEvent`` is accepted too.
    data = frame if isinstance(frame, bytes) else frame.data
    try:
        chunk = _decode(data)
    except DECODE_ERRORS:  # blank frames are skipped; the slow path reports the raw frame
        if not data.strip():
            return
        chunk = decode_frame(_decoder, data, f"{NAME} chunk")
    on_chunk(state, chunk, out)


def whole(state: GeminiState, body: bytes, out: list[LLMEvent]) -> None:
    """A ``:generateContent`` body: one response with every part, read as a one-chunk stream. The
    body is whole, so one without ``finishReason`` is still an answer (finish ``unknown``), not a
    cut stream."""
    on_chunk(state, decode_frame(_decoder, body, f"{NAME} response"), out)
    if state.finish_reason is None and state.block_reason is None:
        state.finish_reason = "FINISH_REASON_UNSPECIFIED"


def on_chunk(state: GeminiState, chunk: Chunk, out: list[LLMEvent]) -> None:
    """One decoded ``GenerateContentResponse`` (``step`` decodes each frame into one; an envelope
    such as Code Assist's hands over the chunk it decoded)."""
    if chunk.error is not None:
        raise from_stream_event(chunk.error, NAME)
    if not state.started:
        state.started = True
        state.response_id = chunk.response_id
        state.metadata = {"id": chunk.response_id, "model": chunk.model_version}
    if chunk.usage_metadata:
        state.raw_usage = chunk.usage_metadata
    candidates = chunk.candidates
    if candidates:
        candidate = candidates[0]
        if candidate.index != 0:
            return  # candidateCount > 1: only the first candidate is surfaced
        content = candidate.content
        if content is not None and content.parts:
            for part in content.parts:
                text = part.text
                current = state.open
                thought = part.thought
                if (
                    text
                    and current is not None
                    and current.kind == ("thought" if thought else "text")
                    and (part.thought_signature is None or current.signature is None)
                ):  # hot path: the open block continues
                    if part.thought_signature is not None:
                        current.signature = part.thought_signature
                    if thought:
                        out.append(ReasoningDelta(current.block_id, text))
                    else:
                        current.chunks.append(text)
                        out.append(TextDelta(current.block_id, text))
                else:
                    _on_part(state, part, out)
        if candidate.grounding_metadata is not None:
            state.grounding.merge(candidate.grounding_metadata)
        if candidate.url_context_metadata is not None and candidate.url_context_metadata.url_metadata:
            state.url_context = candidate.url_context_metadata.url_metadata
        if candidate.finish_reason:
            state.finish_reason = candidate.finish_reason
            state.finish_message = candidate.finish_message or state.finish_message
    feedback = chunk.prompt_feedback
    if feedback is not None and feedback.block_reason:
        state.block_reason = feedback.block_reason
        state.finish_message = feedback.block_reason_message or state.finish_message


def _next_id(state: GeminiState, kind: str) -> str:
    id = f"{kind}-{state.counter}"
    state.counter += 1
    return id


def _on_part(state: GeminiState, part: _Part, out: list[LLMEvent]) -> None:
    if part.function_call is not None:
        _on_function_call(state, part, out)
        return
    if state.streamed is not None and (
        part.text or part.executable_code or part.code_execution_result or part.inline_data
    ):
        _end_streamed_call(state, out)  # content after a call whose closing piece never came
    if part.executable_code is not None:
        _on_code(state, part.executable_code, out)
    elif part.code_execution_result is not None:
        _on_code_result(state, part.code_execution_result, out)
    elif part.inline_data is not None:
        if not part.thought:  # interim "thought" images (Gemini 3 image models) are not the answer
            _on_media(state, part, part.inline_data, out)
    else:
        _on_text(state, part, out)  # text, or an empty part carrying only a signature


def _on_text(state: GeminiState, part: _Part, out: list[LLMEvent]) -> None:
    text = part.text or ""
    kind = "thought" if part.thought else "text"
    sig = part.thought_signature
    if not text and sig is None:
        return  # an empty part carries nothing ({"text": ""} closing a Gemini 3 stream)
    current = state.open
    if current is not None and current.kind == kind and (sig is None or current.signature is None):
        # continues the open block (an empty text part may carry the signature of the part)
        if sig is not None:
            current.signature = sig
    else:
        _close_all(state, out)
        current = PartText(kind, _next_id(state, "reasoning" if part.thought else "text"), sig)
        state.parts.append(current)
        state.open = current
        meta = {NS: {"thoughtSignature": sig}} if sig is not None and not part.thought else None
        out.append(ReasoningStart(current.block_id) if part.thought else TextStart(current.block_id, meta))
    if text:
        if part.thought:
            out.append(ReasoningDelta(current.block_id, text))
        else:
            current.chunks.append(text)
            out.append(TextDelta(current.block_id, text))


def _close_all(state: GeminiState, out: list[LLMEvent]) -> None:
    current = state.open
    if current is None:
        return
    state.open = None
    sig = current.signature
    meta = {NS: {"thoughtSignature": sig}} if sig is not None else None
    if current.kind == "thought":
        out.append(ReasoningEnd(current.block_id, sig, None, meta))
    else:
        out.append(TextEnd(current.block_id, meta))


def _call_id(state: GeminiState, given: str | None) -> str:
    if given:
        if given in state.call_ids:  # a second call under one id: the caller could answer only one
            raise InvalidProviderOutputError(f"{NAME}: function call id {given!r} repeated")
        state.call_ids.add(given)
        return given
    n = state.local_calls
    # Gemini 2.x sends no call ids: derive stable ones (identical under any re-chunking).
    return f"call_{state.response_id}_{n}" if state.response_id else f"call_{n}"


def _on_function_call(state: GeminiState, part: _Part, out: list[LLMEvent]) -> None:
    call = part.function_call
    assert call is not None
    if call.name:
        _close_all(state, out)
        _end_streamed_call(state, out)
        sig = part.thought_signature
        meta = {NS: {"thoughtSignature": sig}} if sig is not None else None
        tool = ToolInput(_call_id(state, call.id), call.name, out, metadata=meta)
        state.local_calls += 1
        state.parts.append(PartText("other", tool.id, sig))
        if not call.will_continue and call.partial_args is None:
            tool.finish(out, input=call.args if call.args is not None else {})
            return
        state.streamed = _StreamedCall(tool)
        for key, value in (call.args or {}).items():
            tool.delta(state.streamed.writer.set((key,), value), out)
    streamed = state.streamed
    if streamed is None:
        return  # a piece with no call open (``{}`` after a whole call) adds nothing
    for entry in call.partial_args or ():
        try:
            text = streamed.writer.set(parse_path(entry.json_path), entry.value())
        except ValueError as exc:
            raise InvalidProviderOutputError(
                f"{NAME}: partialArgs of {streamed.tool.name!r}: {exc}"
            ) from None
        streamed.tool.delta(text, out)
    if not call.will_continue:
        _end_streamed_call(state, out)


def _end_streamed_call(state: GeminiState, out: list[LLMEvent]) -> None:
    """Close the call whose arguments were streaming (its closing piece, another part, or the end)."""
    streamed = state.streamed
    if streamed is not None:
        state.streamed = None
        streamed.tool.delta(streamed.writer.finish(), out)
        streamed.tool.finish(out, input=streamed.writer.value)


def _on_media(state: GeminiState, part: _Part, blob: _InlineData, out: list[LLMEvent]) -> None:
    """One whole image (or audio) part; its thought signature rides along so it round-trips."""
    _close_all(state, out)
    sig = part.thought_signature
    media = Media(
        _next_id(state, "media"),
        blob.mime_type or sniff_base64(blob.data) or "application/octet-stream",
        blob.data,
        {NS: {"thoughtSignature": sig}} if sig is not None else None,
    )
    state.parts.append(PartText("other", media.id, sig))
    out.append(media)


def _is_file_search(code: dict[str, Any]) -> bool:
    """File search runs as generated code calling ``file_search.query(...)``: it is the file search
    call (its result comes later as ``retrievedContext`` grounding), not user-visible code execution."""
    return "file_search." in str(code.get("code", ""))


def _on_code(state: GeminiState, code: dict[str, Any], out: list[LLMEvent]) -> None:
    _close_all(state, out)
    if _is_file_search(code):
        tool = ToolInput(hosted_id(state, "file_search"), "file_search", out, provider_executed=True)
        state.file_search_id = tool.id
    else:
        tool = ToolInput(hosted_id(state, "code"), "code_execution", out, provider_executed=True)
        state.pending_code_id = tool.id
    state.parts.append(PartText("other", tool.id, None))
    tool.finish(out, input=code)


def _on_code_result(state: GeminiState, result: dict[str, Any], out: list[LLMEvent]) -> None:
    _close_all(state, out)
    id = state.pending_code_id or hosted_id(state, "code")  # a result without its call gets its own id
    state.pending_code_id = None
    state.parts.append(PartText("other", id, None))
    failed = result.get("outcome") not in (None, "OUTCOME_OK")
    out.append(ToolResult(id, "code_execution", result, is_error=failed, provider_executed=True))


def _usage(state: GeminiState) -> Usage | None:
    if state.raw_usage is None:
        return None
    raw = decode_frame(_usage_decoder, state.raw_usage, f"{NAME} usageMetadata")
    prompt, candidates, tool_prompt, thoughts, cached = (
        usage_count(raw, key, NAME)
        for key in (
            "promptTokenCount",
            "candidatesTokenCount",
            "toolUsePromptTokenCount",
            "thoughtsTokenCount",
            "cachedContentTokenCount",
        )
    )
    # input = prompt + tool-use prompt, output = candidates + thoughts (None when neither is given)
    sums = Usage(input_tokens=prompt, output_tokens=candidates) + Usage(
        input_tokens=tool_prompt, output_tokens=thoughts
    )
    output = sums.output_tokens
    searches = len(state.grounding.queries) if state.grounding.queries else None
    return Usage.from_cached(
        input_tokens=sums.input_tokens,
        output_tokens=output,
        cache_read=cached,
        reasoning=thoughts if thoughts is not None or output is None else 0,
        web_search_requests=searches,
        raw=raw,
    )


def on_halt(state: GeminiState, out: list[LLMEvent]) -> None:
    if not state.done and state.finish_reason is None and state.block_reason is None:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before a finishReason")
    _close_all(state, out)
    _end_streamed_call(state, out)
    if state.done:
        return
    emit_grounding(state, out)
    if state.block_reason is not None and state.finish_reason is None:
        reason: FinishReason = "content-filter"
    else:
        reason = _FINISH.get(state.finish_reason or "", "unknown")
    if reason == "stop" and state.local_calls:
        reason = "tool-calls"
    state.reason = reason
    state.usage = _usage(state)
    extra = {
        k: v
        for k, v in (
            ("finish_reason", state.finish_reason),
            ("finish_message", state.finish_message),
            ("block_reason", state.block_reason),
        )
        if v is not None
    }
    if extra:
        state.metadata = {**(state.metadata or {}), **extra}
    state.done = True


# 6. the Protocol value and its default route ------------------------------------------------------

GeminiProtocol: TypeAlias = Protocol[GeminiBody | dict[str, Any], bytes | SSEEvent, GeminiState]
"""Gemini's body, frames (SSE data bytes, or an ``SSEEvent``) and parser state."""

PROTOCOL: GeminiProtocol = Protocol(
    name=NAME,
    build_body=build_body,
    new_state=lambda _request: GeminiState(),
    step=step,
    on_halt=on_halt,
    native_output_schema=True,
    whole=whole,
    hosted_kinds=frozenset(HOSTED_TOOLS),
    support=SUPPORT,
)

# Vertex AI's Gemini: the same protocol without the Gemini API's File Search stores
VERTEX_PROTOCOL: GeminiProtocol = msgspec.structs.replace(
    PROTOCOL, hosted_kinds=PROTOCOL.hosted_kinds - {"file_search"}
)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
_STREAM_QUERY = {"alt": "sse"}


def route(
    endpoint: Endpoint | str,
    auth: Auth,
    *,
    name: str = NAME,
    protocol: AnyProtocol = PROTOCOL,
    **changes: Any,
) -> Route:
    """Google AI Studio / Vertex: ``{base_url}/models/{model}:streamGenerateContent?alt=sse``
    (``:generateContent`` when not streaming). ``endpoint`` is an ``Endpoint`` or that base URL."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(
            endpoint,
            "/models/{model}:streamGenerateContent",
            whole_path="/models/{model}:generateContent",
            stream_query=_STREAM_QUERY,
        )
    return Route(
        name=name,
        protocol=protocol,
        endpoint=endpoint,
        auth=auth,
        framing=SSEDataFraming(),
        **changes,
    )
