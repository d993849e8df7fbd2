"""AWS Bedrock Converse (``/model/{id}/converse-stream``), streamed as AWS event-stream messages.

Non-streamed (``stream=False``), ``/model/{id}/converse`` answers with JSON whose content blocks
are fed to the stream handlers as the start/delta/stop events a stream of them would carry."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from ..framing.eventstream import EventStreamFraming, EventStreamMessage
from ..route.auth import Auth
from ..route.classify import from_exception_frame
from ..route.endpoint import Endpoint
from ..route.model import Route
from ..route.protocol import Protocol, StreamState
from ..route.support import ALWAYS_CONSTRAINED, Support, no_field
from ..schema.content import MediaPart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.events import Citation, FinishReason, LLMEvent, ReasoningDelta, TextDelta, ToolResult
from ..schema.request import LLMRequest, ModelRef
from ..schema.tools import HostedTool, ToolDefinition
from ..schema.usage import Usage
from ._output_tool import AnswerInput, answer_tool_name, native_schema, with_output_tool
from ._shared import (
    Blocks,
    ToolInput,
    cache_targets,
    content_parts,
    decode_frame,
    lower_hosted,
    lower_tools,
    ns,
    with_options,
)

__all__ = [
    "ACCEPT",
    "HOSTED_TOOLS",
    "MAX_CACHE_POINTS",
    "PROTOCOL",
    "ConverseBody",
    "ConverseProtocol",
    "build_body",
    "on_halt",
    "route",
    "runtime_url",
    "step",
    "whole",
]

NAME = "bedrock-converse"

# 1. quirks, constants and request body Structs ----------------------------------------------------

ACCEPT = "application/vnd.amazon.eventstream"
MAX_CACHE_POINTS = 4
NAMESPACE = "bedrock"  # provider options namespace

_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
_VIDEO_FORMATS = {
    "video/mp4": "mp4",
    "video/quicktime": "mov",
    "video/x-matroska": "mkv",
    "video/webm": "webm",
    "video/x-flv": "flv",
    "video/mpeg": "mpeg",
    "video/x-ms-wmv": "wmv",
    "video/3gpp": "three_gp",
}
_DOC_NAME_BAD = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")
# Converse's own top-level fields that provider options may set; anything else in the "bedrock"
# namespace is a model-specific field and goes into additionalModelRequestFields.
_TOP_LEVEL_OPTIONS = frozenset(
    {
        "guardrailConfig",
        "performanceConfig",
        "promptVariables",
        "requestMetadata",
        "additionalModelResponseFieldPaths",
    }
)
_CODE_INTERPRETER = "nova_code_interpreter"


class _S3Location(msgspec.Struct):
    uri: str


class _Source(msgspec.Struct, omit_defaults=True):
    bytes: str | None = None  # base64
    s3Location: _S3Location | None = None


class _Image(msgspec.Struct):
    format: str
    source: _Source


class _Document(msgspec.Struct, omit_defaults=True):
    format: str
    name: str
    source: _Source
    citations: dict[str, Any] | None = None


class _Video(msgspec.Struct):
    format: str
    source: _Source


class _ToolUse(msgspec.Struct, omit_defaults=True):
    toolUseId: str
    name: str
    input: Any
    type: str | None = None  # "server_tool_use" for provider-executed tools


class _ToolResult(msgspec.Struct, omit_defaults=True):
    toolUseId: str
    content: list[_Block]
    status: str  # "success" | "error", always sent
    type: str | None = None  # e.g. "nova_code_interpreter_result" for provider-executed results


class _ReasoningText(msgspec.Struct, omit_defaults=True):
    text: str
    signature: str | None = None


class _Reasoning(msgspec.Struct, omit_defaults=True):
    reasoningText: _ReasoningText | None = None
    redactedContent: str | None = None


class _CachePoint(msgspec.Struct, omit_defaults=True):
    type: str
    ttl: str | None = None  # "5m" | "1h"; Bedrock's default (5m) when omitted


class _Block(msgspec.Struct, omit_defaults=True):
    """One content block: exactly one field is set."""

    text: str | None = None
    image: _Image | None = None
    document: _Document | None = None
    video: _Video | None = None
    json: Any | UnsetType = UNSET
    toolUse: _ToolUse | None = None
    toolResult: _ToolResult | None = None
    reasoningContent: _Reasoning | None = None
    cachePoint: _CachePoint | None = None


class _Message(msgspec.Struct):
    role: str
    content: list[_Block]


class _InferenceConfig(msgspec.Struct, omit_defaults=True):
    maxTokens: int | None = None
    temperature: float | None = None
    topP: float | None = None
    stopSequences: list[str] | None = None


class _ToolSpec(msgspec.Struct, omit_defaults=True):
    name: str
    inputSchema: dict[str, Any]
    description: str | None = None
    strict: bool | None = None


class _SystemTool(msgspec.Struct):
    name: str


class _Tool(msgspec.Struct, omit_defaults=True):
    toolSpec: _ToolSpec | None = None
    systemTool: _SystemTool | None = None
    cachePoint: _CachePoint | None = None


class _ToolConfig(msgspec.Struct, omit_defaults=True):
    tools: list[_Tool]
    toolChoice: dict[str, Any] | None = None


class ConverseBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    messages: list[_Message]
    system: list[_Block] | None = None
    inferenceConfig: _InferenceConfig | None = None
    toolConfig: _ToolConfig | None = None
    additionalModelRequestFields: dict[str, Any] | None = None
    outputConfig: dict[str, Any] | None = None


# 2. stream event Structs --------------------------------------------------------------------------


class _ToolUseStart(msgspec.Struct):
    toolUseId: str
    name: str
    type: str | None = None


class _ToolResultStart(msgspec.Struct):
    toolUseId: str
    status: str | None = None
    type: str | None = None


class _Start(msgspec.Struct):
    toolUse: _ToolUseStart | None = None
    toolResult: _ToolResultStart | None = None


class _BlockStart(msgspec.Struct):
    contentBlockIndex: int = 0
    start: _Start | None = None


class _ReasoningDelta(msgspec.Struct):
    text: str | None = None
    signature: str | None = None
    redactedContent: str | None = None


class _ToolUseDelta(msgspec.Struct):
    input: str = ""


class _CitationDelta(msgspec.Struct):
    title: str | None = None
    source: str | None = None
    sourceContent: list[dict[str, Any]] | None = None
    location: dict[str, Any] | None = None


class _Delta(msgspec.Struct):
    text: str | None = None
    reasoningContent: _ReasoningDelta | None = None
    toolUse: _ToolUseDelta | None = None
    toolResult: list[dict[str, Any]] | None = None
    citation: _CitationDelta | None = None


class _BlockDelta(msgspec.Struct):
    contentBlockIndex: int = 0
    delta: _Delta | None = None


class _BlockStop(msgspec.Struct):
    contentBlockIndex: int = 0


class _MessageStop(msgspec.Struct):
    stopReason: str | None = None
    additionalModelResponseFields: Any = None


class _Metadata(msgspec.Struct):
    usage: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None


class _ToolUseBlock(_ToolUseStart):
    input: Any = None


class _ToolResultBlock(_ToolResultStart):
    content: list[dict[str, Any]] | None = None


class _ReasoningBlock(msgspec.Struct):
    reasoningText: _ReasoningDelta | None = None
    redactedContent: str | None = None


class _CitationsBlock(msgspec.Struct):
    content: list[dict[str, Any]] | None = None
    citations: list[_CitationDelta] | None = None


class _WholeBlock(msgspec.Struct):
    text: str | None = None
    reasoningContent: _ReasoningBlock | None = None
    toolUse: _ToolUseBlock | None = None
    toolResult: _ToolResultBlock | None = None
    citationsContent: _CitationsBlock | None = None


class _WholeMessage(msgspec.Struct):
    content: list[_WholeBlock] | None = None


class _Output(msgspec.Struct):
    message: _WholeMessage | None = None


class _ConverseResponse(msgspec.Struct):
    """A non-streamed ``/converse`` response."""

    output: _Output | None = None
    stopReason: str | None = None
    usage: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    additionalModelResponseFields: Any = None


_start_decoder = msgspec.json.Decoder(_BlockStart)
_whole_decoder = msgspec.json.Decoder(_ConverseResponse)
_delta_decoder = msgspec.json.Decoder(_BlockDelta)
_stop_decoder = msgspec.json.Decoder(_BlockStop)
_message_stop_decoder = msgspec.json.Decoder(_MessageStop)
_metadata_decoder = msgspec.json.Decoder(_Metadata)


# 3. parser state ----------------------------------------------------------------------------------


class _PendingResult:
    __slots__ = ("id", "items", "status", "type")

    def __init__(self, id: str, status: str | None, type: str | None) -> None:
        self.id = id
        self.status = status
        self.type = type
        self.items: list[dict[str, Any]] = []


class ConverseState(StreamState):
    __slots__ = (
        "answer_tool",
        "answered",
        "blocks",
        "client_tools",
        "reasoning_index",
        "redacted",
        "results",
        "signature",
        "stop_reason",
        "text_index",
        "tool_names",
        "tools",
    )

    def __init__(self) -> None:
        super().__init__()
        self.blocks = Blocks()
        # contentBlockIndex of the open text / reasoning block (-1: none), compared per delta
        self.text_index = -1
        self.reasoning_index = -1
        self.tools: dict[int, ToolInput] = {}
        self.results: dict[int, _PendingResult] = {}
        self.tool_names: dict[str, str] = {}  # toolUseId -> name, for provider-executed results
        self.client_tools = False
        self.signature: str | None = None  # of the open reasoning block
        self.redacted: str | None = None
        self.stop_reason: str | None = None
        self.answer_tool: str | None = None  # the forced output tool: its call is the answer's text
        self.answered = False

    @classmethod
    def for_request(cls, request: LLMRequest) -> ConverseState:
        state = cls()
        state.answer_tool = answer_tool_name(request)
        return state


# 4. build_body ------------------------------------------------------------------------------------


def _source(part: MediaPart, what: str) -> _Source:
    data = part.data
    if isinstance(data, str) and data.startswith("s3://"):
        return _Source(s3Location=_S3Location(data))
    if part.is_url:
        raise InvalidRequestError(f"{NAME}: {what} must be inline bytes or an s3:// URI, not a URL")
    return _Source(bytes=part.base64())


def _document_name(part: MediaPart, index: int) -> str:
    name = part.filename.rsplit(".", 1)[0] if part.filename else ""
    name = " ".join(_DOC_NAME_BAD.sub("-", name).split())
    return name or f"document-{index}"


def _lower_media(part: MediaPart, index: int) -> _Block:
    mime = part.mime_type.lower()
    if mime in _IMAGE_FORMATS:
        return _Block(image=_Image(_IMAGE_FORMATS[mime], _source(part, "an image")))
    if mime in _DOCUMENT_FORMATS:
        citations = {"enabled": True} if ns(part.provider_metadata, NAMESPACE).get("citations") else None
        return _Block(
            document=_Document(
                _DOCUMENT_FORMATS[mime], _document_name(part, index), _source(part, "a document"), citations
            )
        )
    if mime in _VIDEO_FORMATS:
        return _Block(video=_Video(_VIDEO_FORMATS[mime], _source(part, "a video")))
    raise InvalidRequestError(f"{NAME} does not accept {part.mime_type} content")


def _lower_reasoning(part: ReasoningPart) -> _Block | None:
    if part.encrypted:
        return _Block(reasoningContent=_Reasoning(redactedContent=part.encrypted))
    signature: str | None = part.signature or ns(part.provider_metadata, NAMESPACE).get("signature")
    if not part.text and not signature:
        return None
    return _Block(reasoningContent=_Reasoning(reasoningText=_ReasoningText(part.text, signature)))


def _result_content(result: Any) -> list[_Block]:
    if isinstance(result, str):
        return [_Block(text=result)]
    parts = content_parts(result)
    if parts is not None:
        return [
            _Block(text=p.text) if isinstance(p, TextPart) else _lower_media(p, i)
            for i, p in enumerate(parts)
        ]
    if isinstance(result, dict | list):
        return [_Block(json=result)]  # pyright: ignore[reportUnknownArgumentType]
    return [_Block(text=msgspec.json.encode(result).decode())]


def _lower_tool_result(part: ToolResultPart) -> _Block:
    kind: str | None = ns(part.provider_metadata, NAMESPACE).get("type") if part.provider_executed else None
    status = "error" if part.is_error else "success"
    return _Block(toolResult=_ToolResult(part.id, _result_content(part.result), status, kind))


def _lower_part(part: Part, index: int) -> _Block | None:
    if isinstance(part, TextPart):
        return _Block(text=part.text) if part.text else None
    if isinstance(part, MediaPart):
        return _lower_media(part, index)
    if isinstance(part, ReasoningPart):
        return _lower_reasoning(part)
    if isinstance(part, ToolCallPart):
        return _Block(
            toolUse=_ToolUse(
                part.id, part.name, part.input, "server_tool_use" if part.provider_executed else None
            )
        )
    if isinstance(part, ToolResultPart):
        return _lower_tool_result(part)
    raise InvalidRequestError(f"{NAME}: {type(part).__name__} is not supported on this protocol")


def _lower_messages(request: LLMRequest) -> tuple[list[_Block] | None, list[_Message]]:
    """The system blocks and the messages. Converse roles alternate user/assistant: tool results and
    mid-conversation system text are user content, and consecutive same-role messages are merged."""
    system = [_Block(text=p.text) for p in request.system if p.text] or None
    out: list[_Message] = []
    for message in request.messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks: list[_Block] = []
        for index, part in enumerate(message.content):
            if role == "user" and isinstance(part, ReasoningPart | ToolCallPart):
                raise InvalidRequestError(
                    f"{NAME}: a {message.role} message cannot hold a {type(part).__name__}"
                )
            if role == "assistant" and isinstance(part, MediaPart):
                continue  # media another provider's model produced: Converse assistant turns hold none
            block = _lower_part(part, index)
            if block is not None:
                blocks.append(block)
        if not blocks:
            continue
        if out and out[-1].role == role:
            out[-1].content.extend(blocks)
        else:
            out.append(_Message(role, blocks))
    return system, out


def _lower_tools(request: LLMRequest) -> list[_Tool]:
    return lower_tools(request.tools, _lower_tool, _lower_hosted)


def _lower_tool(tool: ToolDefinition) -> _Tool:
    return _Tool(
        toolSpec=_ToolSpec(tool.name, {"json": tool.input_schema}, tool.description or None, tool.strict)
    )


def _uses_tools(messages: list[_Message]) -> bool:
    return any(b.toolUse is not None or b.toolResult is not None for m in messages for b in m.content)


def _lower_tool_choice(request: LLMRequest) -> dict[str, Any] | None:
    """Converse's ``toolChoice``; none for ``"none"``, which Converse lacks (see ``_tool_config``)."""
    choice = request.tool_choice
    if choice is None or choice.mode == "none":
        return None
    if choice.mode == "tool":
        return {"tool": {"name": choice.name}}
    return {"any": {}} if choice.mode == "required" else {"auto": {}}


def _tool_config(request: LLMRequest, messages: list[_Message]) -> _ToolConfig | None:
    tools = _lower_tools(request)
    if not tools:
        return None
    choice = request.tool_choice
    if choice is not None and choice.mode == "none" and not _uses_tools(messages):
        return None  # omitted: but a history with tool blocks requires toolConfig, so tools stay
    return _ToolConfig(tools, _lower_tool_choice(request))


def _apply_cache(
    request: LLMRequest,
    system: list[_Block] | None,
    tool_config: _ToolConfig | None,
    messages: list[_Message],
) -> None:
    """Positional ``cachePoint`` blocks: tools -> system -> the last N messages, at most four."""
    policy = request.cache
    if policy is None:
        return
    tools = tool_config.tools if tool_config is not None else None
    point = _CachePoint("default", policy.ttl)
    targets = cache_targets(policy, tools=bool(tools), system=bool(system), messages=len(messages))
    for target in targets[:MAX_CACHE_POINTS]:
        if target == "tools" and tools:
            tools.append(_Tool(cachePoint=point))
        elif target == "system" and system:
            system.append(_Block(cachePoint=point))
        elif isinstance(target, int):
            messages[target].content.append(_Block(cachePoint=point))


def _additional_fields(request: LLMRequest, options: dict[str, Any]) -> dict[str, Any] | None:
    fields: dict[str, Any] = {}
    g = request.generation
    if g is not None and g.top_k is not None:
        fields["top_k"] = g.top_k
    explicit = options.get("additionalModelRequestFields") or options.get("additional_model_request_fields")
    if isinstance(explicit, dict):
        fields.update(explicit)  # type: ignore[arg-type]
    for key, value in options.items():
        if key in _TOP_LEVEL_OPTIONS or key in (
            "additionalModelRequestFields",
            "additional_model_request_fields",
        ):
            continue
        fields[key] = value  # "thinking", "reasoningConfig", "anthropic_beta", ...
    return fields or None


_json = msgspec.json.Encoder()


def _output_config(request: LLMRequest, model_id: str) -> dict[str, Any] | None:
    """``outputConfig.textFormat`` for a model with structured outputs (the schema is a JSON string)."""
    native = native_schema(request, model_id)
    if native is None:
        return None
    spec: dict[str, Any] = {"name": native.name, "schema": _json.encode(native.schema).decode()}
    if native.description:
        spec["description"] = native.description
    return {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": spec}}}


def _thinks(fields: dict[str, Any] | None) -> bool:
    """Extended thinking is on (Claude ``thinking``, Nova ``reasoningConfig``)."""
    for key in ("thinking", "reasoningConfig"):
        value = (fields or {}).get(key)
        if isinstance(value, dict) and value.get("type", "enabled") != "disabled":  # pyright: ignore[reportUnknownMemberType]
            return True
    return False


def build_body(request: LLMRequest, model: ModelRef) -> ConverseBody | dict[str, Any]:
    g = request.generation
    options = request.options_for(NAMESPACE)
    request = with_output_tool(
        request, model.id, NAME, thinking=_thinks(_additional_fields(request, options))
    )
    system, messages = _lower_messages(request)
    tool_config = _tool_config(request, messages)
    _apply_cache(request, system, tool_config, messages)
    inference = None
    if g is not None:
        inference = _InferenceConfig(
            maxTokens=g.max_tokens,
            temperature=g.temperature,
            topP=g.top_p,
            stopSequences=list(g.stop) if g.stop else None,
        )
        if inference == _InferenceConfig():
            inference = None
    body = ConverseBody(
        messages=messages,
        system=system,
        inferenceConfig=inference,
        toolConfig=tool_config,
        additionalModelRequestFields=_additional_fields(request, options),
        outputConfig=_output_config(request, model.id),
    )
    return with_options(body, {k: v for k, v in options.items() if k in _TOP_LEVEL_OPTIONS})


# -- hosted tools: one lowering each, offered through HOSTED_TOOLS


def _lower_hosted(tool: HostedTool) -> _Tool:
    return lower_hosted(HOSTED_TOOLS, tool, NAME)


def _lower_code_execution(tool: HostedTool) -> _Tool:
    """A system tool (Nova's code interpreter unless ``name`` names another)."""
    return _Tool(systemTool=_SystemTool(str(tool.options.get("name", _CODE_INTERPRETER))))


HOSTED_TOOLS: dict[str, Callable[..., Any]] = {"code_execution": _lower_code_execution}

# what Converse leaves out (see ``route.support``)
SUPPORT = Support(
    {
        **no_field("Bedrock Converse", "seed", "frequency_penalty", "presence_penalty"),
        "output_schema.strict": ALWAYS_CONSTRAINED,
    }
)


# 5. step / on_halt --------------------------------------------------------------------------------

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool-calls",
    "content_filtered": "content-filter",
    "guardrail_intervened": "content-filter",
}


def step(state: ConverseState, frame: EventStreamMessage, out: list[LLMEvent]) -> None:
    if frame.message_type != "event":
        raise from_exception_frame(frame)
    kind = frame.event_type
    if state.stop_reason is not None and kind in _MESSAGE_EVENTS:
        # the step is finished: content (or a second stop) now would follow its finish
        raise InvalidProviderOutputError(f"{NAME}: {kind} after messageStop")
    if kind == "contentBlockDelta":  # hot path: most of a stream
        _on_content_block_delta(state, decode_frame(_delta_decoder, frame.payload, _DELTA), out)
        return
    handler = _HANDLERS.get(kind)
    if handler is not None:
        decoder, what, on_event = handler
        on_event(state, decode_frame(decoder, frame.payload, what), out)
    # messageStart carries only the role; unknown event types are skipped.


_MESSAGE_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"}
)


def _violation(what: str) -> InvalidProviderOutputError:
    return InvalidProviderOutputError(f"{NAME}: {what}")


def whole(state: ConverseState, body: bytes, out: list[LLMEvent]) -> None:
    """A ``/converse`` response: each content block as start/delta/stop, then stop and metadata."""
    response = decode_frame(_whole_decoder, body, f"{NAME} response")
    message = response.output.message if response.output is not None else None
    for index, block in enumerate(message.content or () if message is not None else ()):
        _on_whole_block(state, index, block, out)
        _on_content_block_stop(state, _BlockStop(index), out)
    _on_message_stop(state, _MessageStop(response.stopReason, response.additionalModelResponseFields), out)
    _on_metadata(state, _Metadata(response.usage, response.metrics), out)
    state.done = True


def _on_whole_block(state: ConverseState, index: int, block: _WholeBlock, out: list[LLMEvent]) -> None:
    if block.text is not None:
        _on_content_block_delta(state, _BlockDelta(index, _Delta(text=block.text)), out)
    if block.reasoningContent is not None:
        text = block.reasoningContent.reasoningText or _ReasoningDelta()
        delta = _ReasoningDelta(text.text, text.signature, block.reasoningContent.redactedContent)
        _on_content_block_delta(state, _BlockDelta(index, _Delta(reasoningContent=delta)), out)
    if block.toolUse is not None:
        use = block.toolUse
        _on_content_block_start(state, _BlockStart(index, _Start(toolUse=use)), out)
        state.tools[index].finish(out, input=use.input if use.input is not None else {})
    if block.toolResult is not None:
        result = block.toolResult
        _on_content_block_start(state, _BlockStart(index, _Start(toolResult=result)), out)
        state.results[index].items.extend(result.content or ())
    if block.citationsContent is not None:
        cited = block.citationsContent
        text = "".join(str(part.get("text", "")) for part in cited.content or ())
        _on_content_block_delta(state, _BlockDelta(index, _Delta(text=text)), out)
        for citation in cited.citations or ():
            _on_citation(state, index, citation, out)


def _on_content_block_delta(state: ConverseState, event: _BlockDelta, out: list[LLMEvent]) -> None:
    delta = event.delta
    if delta is None:
        return
    index = event.contentBlockIndex
    text = delta.text
    if text is not None:
        if index == state.text_index:  # hot path: more text for the open block
            if text:
                out.append(TextDelta(state.blocks.text, text))  # pyright: ignore[reportArgumentType]
        else:
            _end_reasoning(state, out)
            _end_text(state, out)
            state.blocks.text_delta(text, out, f"text-{index}")  # an ended block is refused there
            state.text_index = index
    if delta.reasoningContent is not None:
        _on_reasoning(state, index, delta.reasoningContent, out)
    if delta.toolUse is not None:
        tool = state.tools.get(index)
        if tool is None:
            raise InvalidProviderOutputError(
                f"{NAME}: toolUse delta for block {index}, which did not start a tool",
                raw=delta.toolUse.input[:200],
            )
        tool.delta(delta.toolUse.input, out)
    if delta.toolResult is not None:
        pending = state.results.get(index)
        if pending is None:
            raise InvalidProviderOutputError(
                f"{NAME}: toolResult delta for block {index}, which did not start one"
            )
        pending.items.extend(delta.toolResult)
    if delta.citation is not None:
        _on_citation(state, index, delta.citation, out)


def _on_reasoning(state: ConverseState, index: int, delta: _ReasoningDelta, out: list[LLMEvent]) -> None:
    if index == state.reasoning_index:
        if delta.text:
            out.append(ReasoningDelta(state.blocks.reasoning, delta.text))  # pyright: ignore[reportArgumentType]
    else:
        _end_text(state, out)
        _end_reasoning(state, out)
        state.blocks.reasoning_delta(delta.text or "", out, f"reasoning-{index}")
        state.reasoning_index = index
    if delta.signature:
        state.signature = (state.signature or "") + delta.signature
    if delta.redactedContent:
        state.redacted = (state.redacted or "") + delta.redactedContent


def _end_text(state: ConverseState, out: list[LLMEvent]) -> None:
    state.blocks.end_text(out)
    state.text_index = -1


def _end_reasoning(state: ConverseState, out: list[LLMEvent]) -> None:
    if state.blocks.reasoning is None:
        return
    signature, redacted = state.signature, state.redacted
    metadata = {NAMESPACE: {"signature": signature}} if signature else None
    state.blocks.end_reasoning(out, signature, redacted, metadata)
    state.signature = state.redacted = None
    state.reasoning_index = -1


def _on_citation(state: ConverseState, index: int, cite: _CitationDelta, out: list[LLMEvent]) -> None:
    location = cite.location or {}
    web = location.get("web")
    url = web.get("url") if isinstance(web, dict) else None  # type: ignore[union-attr]
    cited = "".join(str(c.get("text", "")) for c in cite.sourceContent or ()) or None
    block_id = state.blocks.text or f"text-{index}"
    metadata = {NAMESPACE: {"location": location}} if location else None
    out.append(
        Citation(
            block_id, url if isinstance(url, str) else cite.source, cite.title, None, None, cited, metadata
        )
    )


def _on_content_block_start(state: ConverseState, event: _BlockStart, out: list[LLMEvent]) -> None:
    start = event.start
    if start is None:
        return
    index = event.contentBlockIndex
    if index in state.tools or index in state.results:
        raise _violation(f"contentBlockStart for block {index}, which already started")
    if start.toolUse is not None:
        use = start.toolUse
        if use.toolUseId in state.tool_names:
            raise _violation(f"toolUseId {use.toolUseId!r} repeated")
        _close_all(state, out)
        server = use.type == "server_tool_use"
        metadata = {NAMESPACE: {"type": use.type}} if use.type and use.type != "tool_use" else None
        state.tool_names[use.toolUseId] = use.name
        if not server and use.name == state.answer_tool:
            state.tools[index] = AnswerInput(use.toolUseId, use.name, out)
            state.answered = True
            return
        state.tools[index] = ToolInput(use.toolUseId, use.name, out, server, metadata)
        state.client_tools = state.client_tools or not server
    elif start.toolResult is not None:
        result = start.toolResult
        _close_all(state, out)
        state.results[index] = _PendingResult(result.toolUseId, result.status, result.type)


def _on_content_block_stop(state: ConverseState, event: _BlockStop, out: list[LLMEvent]) -> None:
    index = event.contentBlockIndex
    tool = state.tools.get(index)
    if tool is not None:
        tool.finish(out)
        return
    pending = state.results.pop(index, None)
    if pending is not None:
        _emit_result(state, pending, out)
        return
    if index == state.reasoning_index:
        _end_reasoning(state, out)
    elif index == state.text_index:
        _end_text(state, out)


def _emit_result(state: ConverseState, pending: _PendingResult, out: list[LLMEvent]) -> None:
    items = pending.items
    value: Any = items
    if len(items) == 1:
        only = items[0]
        value = only["json"] if "json" in only else only.get("text", only)
    metadata: dict[str, Any] = {NAMESPACE: {"type": pending.type, "status": pending.status}}
    name = state.tool_names.get(pending.id, pending.type or "tool")
    out.append(ToolResult(pending.id, name, value, pending.status == "error", True, metadata))


def _close_all(state: ConverseState, out: list[LLMEvent]) -> None:
    _end_reasoning(state, out)
    _end_text(state, out)


def _on_message_stop(state: ConverseState, event: _MessageStop, out: list[LLMEvent]) -> None:
    state.stop_reason = event.stopReason or "unknown"
    if event.additionalModelResponseFields is not None:
        state.metadata = {
            **(state.metadata or {}),
            "additional_model_response_fields": event.additionalModelResponseFields,
        }
    _finish(state, out)


def _on_metadata(state: ConverseState, event: _Metadata, _out: list[LLMEvent]) -> None:
    if event.usage is not None:
        state.usage = _usage(event.usage)
    if event.metrics:
        state.metadata = {**(state.metadata or {}), "metrics": event.metrics}
    if state.stop_reason is not None:
        state.done = True  # metadata is the last event of a converse stream


_DELTA = f"{NAME} contentBlockDelta"
_OnEvent = Callable[[ConverseState, Any, list[LLMEvent]], None]
# ``:event-type`` (``None`` when a message has none) -> (payload decoder, what a malformed
# payload is called, handler)
_HANDLERS: dict[str | None, tuple[msgspec.json.Decoder[Any], str, _OnEvent]] = {
    "contentBlockDelta": (_delta_decoder, _DELTA, _on_content_block_delta),
    "contentBlockStart": (_start_decoder, f"{NAME} contentBlockStart", _on_content_block_start),
    "contentBlockStop": (_stop_decoder, f"{NAME} contentBlockStop", _on_content_block_stop),
    "messageStop": (_message_stop_decoder, f"{NAME} messageStop", _on_message_stop),
    "metadata": (_metadata_decoder, f"{NAME} metadata", _on_metadata),
}


def _finish(state: ConverseState, out: list[LLMEvent]) -> None:
    _close_all(state, out)
    for tool in state.tools.values():
        tool.finish(out)
    for pending in state.results.values():
        _emit_result(state, pending, out)
    state.results.clear()
    reason = _FINISH.get(state.stop_reason or "", "unknown")
    if reason == "stop" and state.client_tools:
        reason = "tool-calls"
    elif reason == "tool-calls" and state.answered and not state.client_tools:
        reason = "stop"  # the forced output tool answered: that is the reply
    state.reason = reason


def _int(raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    return value if isinstance(value, int) else None


def _usage(raw: dict[str, Any]) -> Usage:
    """``inputTokens`` excludes cache reads and writes (``totalTokens`` = input + output + both);
    a provider that reports it inclusive is recognised by ``totalTokens``."""
    inp, output, total = _int(raw, "inputTokens"), _int(raw, "outputTokens"), _int(raw, "totalTokens")
    read, write = _int(raw, "cacheReadInputTokens"), _int(raw, "cacheWriteInputTokens")
    if inp is not None and (read or write) and output is not None and total == inp + output:
        return Usage.from_cached(
            input_tokens=inp, output_tokens=output, cache_read=read, cache_write=write, raw=raw
        )
    return Usage.from_uncached(
        uncached_input=inp, output_tokens=output, cache_read=read, cache_write=write, raw=raw
    )


def on_halt(state: ConverseState, out: list[LLMEvent]) -> None:
    if state.stop_reason is None:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before messageStop")
    state.done = True  # messageStop already finished everything; only metadata may be missing


# 6. the Protocol value and its default route ------------------------------------------------------

ConverseProtocol: TypeAlias = Protocol[ConverseBody | dict[str, Any], EventStreamMessage, ConverseState]
"""Converse's body, frames (AWS event-stream messages) and parser state."""

PROTOCOL: ConverseProtocol = Protocol(
    name=NAME,
    build_body=build_body,
    new_state=ConverseState.for_request,
    step=step,
    on_halt=on_halt,
    accept=ACCEPT,
    native_output_schema=True,
    whole=whole,
    hosted_kinds=frozenset(HOSTED_TOOLS),
    support=SUPPORT,
)


def runtime_url(region: str, base_url: str | None = None) -> str:
    """``base_url``, else the regional ``bedrock-runtime`` endpoint (Converse and InvokeModel)."""
    return base_url or f"https://bedrock-runtime.{region}.amazonaws.com"


def route(endpoint: Endpoint | str, auth: Auth, *, name: str = NAME, **changes: Any) -> Route:
    """A Converse route. ``endpoint`` is an ``Endpoint`` or a base URL (``runtime_url(region)`` for
    AWS's regional one; ``/model/{model}/converse-stream`` is appended)."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(endpoint, "/model/{model}/converse-stream", whole_path="/model/{model}/converse")
    return Route(
        name=name,
        protocol=PROTOCOL,
        endpoint=endpoint,
        auth=auth,
        framing=EventStreamFraming(),
        **changes,
    )
