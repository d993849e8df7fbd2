"""OpenAI Responses API (``POST /responses``), streamed over SSE or as WebSocket messages.

Lowering: ``request.system`` becomes ``instructions``; system-role messages stay ``system`` input
items. Assistant history is lowered back into the items the API produced: text as ``output_text``
messages (with their ``phase``), reasoning as ``reasoning`` items (id, summary and
``encrypted_content``, so ``store: false`` reasoning round-trips), function calls, and hosted tool
calls as their own items (``web_search_call``, ``code_interpreter_call``, ...). Provider options
(namespace = the model's provider, ``"openai"``) set ``reasoning`` / ``reasoning_effort`` /
``reasoning_summary``, ``text`` / ``verbosity``, ``include``, ``store``, ``service_tier``,
``prompt_cache_key``, ``max_output_tokens`` and any other top-level body key. The Responses API has
no ``top_k``, penalties, ``seed`` or ``stop``: those generation options are not sent.

Stream: every frame is one JSON event with a ``type``. Text blocks are ``<item id>:<content
index>``, reasoning blocks ``<item id>:<summary index>``; ``url_citation`` annotations become
``citation`` events with Python ``str`` spans into their text block (validated, see
``_citation_span``), each emitted once.

Non-streamed (``stream=False``, HTTP only: the WebSocket mode always streams), the Response
object is replayed through the stream handlers: each output item as added + done (reasoning
summaries and ``reasoning_text`` as their blocks' text), then the terminal status.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..framing.sse import SSEEvent, SSEFraming
from ..hosted import SearchResult, search_result
from ..route.auth import Auth
from ..route.endpoint import Endpoint
from ..route.model import Model, Route
from ..route.protocol import Protocol, StreamState
from ..schema.content import MediaPart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.events import Citation, FinishReason, LLMEvent, Media, ReasoningDelta, TextDelta, ToolResult
from ..schema.mime import sniff_base64
from ..schema.request import LLMRequest
from ..schema.tools import HostedTool, ToolDefinition
from ..schema.usage import Usage
from ._shared import (
    Blocks,
    ToolInput,
    content_parts,
    data_url,
    decode_frame,
    json_arguments,
    ns,
    parse_tool_input,
    with_options,
)
from ._websearch import hit_pairs, search_from_citations
from .errors import stream_error

__all__ = [
    "HOSTED_ITEMS",
    "PROTOCOL",
    "ResponsesBody",
    "ResponsesState",
    "build_body",
    "on_halt",
    "route",
    "step",
    "websocket_message",
    "whole",
]

NAME = "openai-responses"

# 1. request body Structs -------------------------------------------------------------------------


class _InputText(msgspec.Struct, tag="input_text", tag_field="type"):
    text: str


class _InputImage(msgspec.Struct, kw_only=True, omit_defaults=True, tag="input_image", tag_field="type"):
    image_url: str | None = None
    file_id: str | None = None
    detail: str | None = None


class _InputFile(msgspec.Struct, kw_only=True, omit_defaults=True, tag="input_file", tag_field="type"):
    filename: str | None = None
    file_data: str | None = None
    file_url: str | None = None
    file_id: str | None = None


class _OutputText(msgspec.Struct, tag="output_text", tag_field="type"):
    text: str


_UserContent = _InputText | _InputImage | _InputFile


class _MessageItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    role: str
    content: str | list[_UserContent] | list[_OutputText]
    phase: str | None = None


class _SummaryText(msgspec.Struct, tag="summary_text", tag_field="type"):
    text: str


class _ReasoningItem(msgspec.Struct, kw_only=True, omit_defaults=True, tag="reasoning", tag_field="type"):
    id: str
    summary: list[_SummaryText]
    encrypted_content: str | None = None


class _FunctionCallItem(msgspec.Struct, kw_only=True, tag="function_call", tag_field="type"):
    call_id: str
    name: str
    arguments: str


class _FunctionCallOutputItem(msgspec.Struct, kw_only=True, tag="function_call_output", tag_field="type"):
    call_id: str
    output: str | list[_UserContent]


class _FunctionTool(msgspec.Struct, kw_only=True, omit_defaults=True, tag="function", tag_field="type"):
    name: str
    description: str | None = None
    parameters: dict[str, Any]
    strict: bool | None = None


_InputItem = _MessageItem | _ReasoningItem | _FunctionCallItem | _FunctionCallOutputItem | dict[str, Any]


class ResponsesBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    model: str
    instructions: str | None = None
    input: list[_InputItem]
    tools: list[_FunctionTool | dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    store: bool | None = None
    include: list[str] | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    service_tier: str | None = None
    prompt_cache_key: str | None = None
    stream: bool  # no default: always sent


# 2. stream event Structs ------------------------------------------------------------------------

_NO_RAW = msgspec.Raw()


class _Event(msgspec.Struct, gc=False):
    """Every stream event, flat: small fields decoded eagerly, nested objects kept raw and decoded
    by the handler that needs them (the hot path, ``output_text.delta``, never touches them)."""

    type: str = ""
    item_id: str | None = None
    content_index: int = 0
    summary_index: int = 0
    delta: str | None = None
    item: msgspec.Raw = _NO_RAW
    response: msgspec.Raw = _NO_RAW
    annotation: msgspec.Raw = _NO_RAW
    error: msgspec.Raw = _NO_RAW
    code: str | None = None
    message: str | None = None
    status: int | None = None


class _Annotation(msgspec.Struct, gc=False):
    type: str = ""
    url: str | None = None
    title: str | None = None
    start_index: int | None = None
    end_index: int | None = None
    filename: str | None = None
    file_id: str | None = None
    index: int | None = None


class _Content(msgspec.Struct, gc=False):
    type: str = ""
    text: str = ""
    refusal: str | None = None
    annotations: list[_Annotation] | None = None


class _PartAdded(msgspec.Struct, gc=False):
    """``response.content_part.added``, decoded again for its part type (``_Event`` stays small:
    every field it has costs each hot-path decode)."""

    part: _Content | None = None


class _Summary(msgspec.Struct, gc=False):
    text: str = ""


class _Item(msgspec.Struct, gc=False):
    type: str = ""
    id: str = ""
    status: str | None = None
    phase: str | None = None
    content: list[_Content] | None = None
    summary: list[_Summary] | None = None
    encrypted_content: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class _Details(msgspec.Struct, gc=False):
    reason: str | None = None


class _Response(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    status: str | None = None
    service_tier: str | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    incomplete_details: _Details | None = None


class _WholeResponse(msgspec.Struct, gc=False):
    """A non-streamed Response: its output items, each decoded by the item handlers."""

    output: list[msgspec.Raw] | None = None


_event_decoder = msgspec.json.Decoder(_Event)
_whole_decoder = msgspec.json.Decoder(_WholeResponse)
_item_decoder = msgspec.json.Decoder(_Item)
_annotation_decoder = msgspec.json.Decoder(_Annotation)
_response_decoder = msgspec.json.Decoder(_Response)
_part_added_decoder = msgspec.json.Decoder(_PartAdded)
_raw_decoder = msgspec.json.Decoder(dict[str, Any])


# 3. parser state --------------------------------------------------------------------------------


class ResponsesState(StreamState):
    __slots__ = (
        "blocks",
        "cited",
        "cited_urls",
        "function_calls",
        "phases",
        "reasoning_index",
        "reasoning_item",
        "refused",
        "searched",
        "searches",
        "text_chunks",
        "text_index",
        "text_item",
        "texts",
        "tools",
    )

    def __init__(self) -> None:
        super().__init__()
        self.blocks = Blocks()
        # (item id, content index) of the open text block and (item id, summary index) of the open
        # reasoning block, compared per delta so block ids are only built when the pair changes;
        # index -1 while none is open.
        self.text_item: str | None = None
        self.text_index = -1
        self.text_chunks: list[str] = []
        self.texts: dict[str, str] = {}  # closed text blocks, for late annotations
        self.phases: dict[str, str] = {}  # message item id -> phase
        self.reasoning_item: str | None = None
        self.reasoning_index = -1
        self.tools: dict[str, ToolInput] = {}  # item id -> streamed call
        self.cited: set[tuple[str, str, str | None, int | None, int | None]] = set()
        self.function_calls = 0
        self.searches = 0
        self.searched = False  # a web_search_call was reported (else url_citation annotations imply one)
        self.cited_urls: list[tuple[str | None, str | None]] = []
        self.refused = False


# 4. build_body ----------------------------------------------------------------------------------

_OPENAI = "openai"


def _text(parts: tuple[Any, ...]) -> str:
    return "\n\n".join(p.text for p in parts if isinstance(p, TextPart))


def _media(part: MediaPart) -> _InputImage | _InputFile:
    if part.mime_type.startswith("image/"):
        return _InputImage(image_url=data_url(part))
    if part.is_url:
        return _InputFile(file_url=part.data)  # type: ignore[arg-type]
    return _InputFile(filename=part.filename or "file", file_data=data_url(part))


def _user_content(part: Any) -> _UserContent:
    if isinstance(part, TextPart):
        return _InputText(part.text)
    if isinstance(part, MediaPart):
        return _media(part)
    raise InvalidRequestError(f"{NAME}: a user message cannot hold a {type(part).__name__}")


def _tool_output(part: ToolResultPart) -> str | list[_UserContent]:
    result = part.result
    if isinstance(result, str):
        return result
    parts = content_parts(result)
    if parts is not None:
        return [_user_content(p) for p in parts]
    return msgspec.json.encode(result).decode()


def _lower_messages(request: LLMRequest, keep_unencrypted_reasoning: bool) -> list[_InputItem]:
    items: list[_InputItem] = []
    for message in request.messages:
        if message.role == "system":
            items.append(_MessageItem(role="system", content=_text(message.content)))
        elif message.role == "assistant":
            _lower_assistant(message, items, keep_unencrypted_reasoning)
        else:
            _lower_user(message, items)
    return items


def _lower_user(message: Message, items: list[_InputItem]) -> None:
    """User and tool messages: content parts become one user message; tool results become
    ``function_call_output`` items, in order."""
    content: list[_UserContent] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            if content:
                items.append(_MessageItem(role="user", content=content))
                content = []
            if not part.provider_executed:
                items.append(_FunctionCallOutputItem(call_id=part.id, output=_tool_output(part)))
        elif isinstance(part, TextPart | MediaPart):
            content.append(_user_content(part))
        else:
            raise InvalidRequestError(f"{NAME}: a {message.role} message cannot hold a {type(part).__name__}")
    if content:
        items.append(_MessageItem(role="user", content=content))


def _lower_assistant(message: Message, items: list[_InputItem], keep_unencrypted_reasoning: bool) -> None:
    last_text_item: str | None = None  # item id of the message item at the end of ``items``
    last_reasoning: str | None = None
    hosted: dict[str, dict[str, Any]] = {}
    for part in message.content:
        if isinstance(part, TextPart):
            meta = ns(part.provider_metadata, _OPENAI)
            item_id = meta.get("item_id")
            tail = items[-1] if items else None
            if item_id is not None and item_id == last_text_item and isinstance(tail, _MessageItem):
                tail.content.append(_OutputText(part.text))  # type: ignore[union-attr, arg-type]
            else:
                items.append(
                    _MessageItem(role="assistant", content=[_OutputText(part.text)], phase=meta.get("phase"))
                )
            last_text_item, last_reasoning = item_id, None
            continue
        last_text_item = None
        if isinstance(part, ReasoningPart):
            item_id = ns(part.provider_metadata, _OPENAI).get("item_id")
            if not isinstance(item_id, str):
                continue  # reasoning from another provider cannot be sent to this one
            tail = items[-1] if items else None
            if item_id == last_reasoning and isinstance(tail, _ReasoningItem):
                if part.text:
                    tail.summary.append(_SummaryText(part.text))
                tail.encrypted_content = tail.encrypted_content or part.encrypted
            else:
                items.append(
                    _ReasoningItem(
                        id=item_id,
                        summary=[_SummaryText(part.text)] if part.text else [],
                        encrypted_content=part.encrypted,
                    )
                )
            last_reasoning = item_id
            continue
        last_reasoning = None
        if isinstance(part, ToolCallPart):
            if not part.provider_executed:
                items.append(
                    _FunctionCallItem(call_id=part.id, name=part.name, arguments=json_arguments(part.input))
                )
                continue
            item = _hosted_item(part)
            if item is not None:
                hosted[part.id] = item
                items.append(item)
        elif isinstance(part, ToolResultPart) and part.provider_executed:  # pyright: ignore[reportUnnecessaryIsInstance]
            item = hosted.get(part.id)
            if item is not None:
                _hosted_result(item, part)
    if not keep_unencrypted_reasoning:
        # Without ``store``, a reasoning item the server cannot decrypt is a dangling reference.
        items[:] = [i for i in items if not (isinstance(i, _ReasoningItem) and i.encrypted_content is None)]


def _hosted_item(part: ToolCallPart) -> dict[str, Any] | None:
    item_type = ns(part.provider_metadata, _OPENAI).get("item_type")
    spec = HOSTED_ITEMS.get(item_type) if isinstance(item_type, str) else None
    if spec is None:
        return None
    item: dict[str, Any] = {"type": item_type, "id": part.id}
    value: Any = part.input
    if item_type == "web_search_call":
        item["action"] = value
        item["status"] = "completed"
    elif isinstance(value, dict):
        for key in spec[1]:
            if key in value:
                item[key] = value[key] if key != "arguments" else json_arguments(value[key])
    return item


def _hosted_result(item: dict[str, Any], part: ToolResultPart) -> None:
    result = part.result
    if item["type"] == "web_search_call":  # the canonical result; the item's own fields are in metadata
        status = ns(part.provider_metadata, _OPENAI).get("status")
        if isinstance(status, str):
            item["status"] = status
        return
    spec = HOSTED_ITEMS[item["type"]]
    if not isinstance(result, dict):
        return
    for key in spec[2]:
        if key in result:
            item[key] = result[key]


def _web_search_tool(options: dict[str, Any]) -> dict[str, Any]:
    opts = dict(options)
    opts.pop("max_uses", None)  # no per-tool budget on this API (see ``max_tool_calls``)
    if opts.pop("blocked_domains", None):
        raise InvalidRequestError(f"{NAME}: web_search has no blocked_domains; use allowed_domains")
    tool: dict[str, Any] = {"type": opts.pop("type", "web_search")}
    allowed = opts.pop("allowed_domains", None)
    if allowed:
        filters = dict(opts.pop("filters", None) or {})
        filters["allowed_domains"] = list(allowed)
        tool["filters"] = filters
    location = opts.pop("user_location", None)
    if location:
        tool["user_location"] = location if "type" in location else {"type": "approximate", **location}
    tool.update(opts)
    return tool


def _hosted_tool(tool: HostedTool) -> dict[str, Any]:
    kind, opts = tool.kind, tool.options
    if kind == "web_search":
        return _web_search_tool(opts)
    if kind == "code_execution":
        return {"type": "code_interpreter", "container": {"type": "auto"}, **opts}
    if kind == "computer_use":
        return {"type": "computer_use_preview", **opts}
    if kind in ("file_search", "image_generation", "mcp", "local_shell"):
        return {"type": kind, **opts}
    raise InvalidRequestError(f"{NAME}: hosted tool {kind!r} is not available on the Responses API")


_HOSTED_TYPE = {"code_execution": "code_interpreter", "computer_use": "computer_use_preview"}


def _tools(request: LLMRequest) -> list[_FunctionTool | dict[str, Any]] | None:
    tools: list[_FunctionTool | dict[str, Any]] = []
    for tool in request.tools:
        if isinstance(tool, HostedTool):
            tools.append(_hosted_tool(tool))
        else:
            tools.append(_function_tool(tool))
    return tools or None


def _function_tool(tool: ToolDefinition) -> _FunctionTool:
    return _FunctionTool(
        name=tool.name, description=tool.description or None, parameters=tool.input_schema, strict=tool.strict
    )


def _tool_choice(request: LLMRequest) -> str | dict[str, Any] | None:
    choice = request.tool_choice
    if choice is None:
        return None
    if choice.mode != "tool":
        return choice.mode
    for tool in request.tools:
        if isinstance(tool, HostedTool) and tool.kind == choice.name:
            return {"type": _HOSTED_TYPE.get(tool.kind, tool.kind)}
    return {"type": "function", "name": choice.name}


def _auto_include(request: LLMRequest, include: list[str], store: Any, reasoning: dict[str, Any]) -> None:
    """Ask for what round-trips and citations need: encrypted reasoning when nothing is stored,
    search sources with web search, interpreter outputs with code execution."""
    wanted: list[str] = []
    if store is False and reasoning:
        wanted.append("reasoning.encrypted_content")
    kinds = {t.kind for t in request.tools if isinstance(t, HostedTool)}
    if "web_search" in kinds:
        wanted.append("web_search_call.action.sources")
    if "code_execution" in kinds:
        wanted.append("code_interpreter_call.outputs")
    include.extend(w for w in wanted if w not in include)


def build_body(request: LLMRequest, model: Model) -> ResponsesBody | dict[str, Any]:
    g = request.generation
    assert g is not None  # resolved by prepare()
    opts = dict(request.options_for(model.provider))
    reasoning: dict[str, Any] = dict(opts.pop("reasoning", None) or {})
    effort, summary = opts.pop("reasoning_effort", None), opts.pop("reasoning_summary", None)
    if effort is not None:
        reasoning["effort"] = effort
    if summary is not None:
        reasoning["summary"] = summary
    text: dict[str, Any] = dict(opts.pop("text", None) or {})
    verbosity = opts.pop("verbosity", None)
    if verbosity is not None:
        text["verbosity"] = verbosity
    out = request.output_schema
    if out is not None:
        fmt: dict[str, Any] = {
            "type": "json_schema",
            "name": out.name,
            "schema": out.schema,
            "strict": out.strict,
        }
        if out.description:
            fmt["description"] = out.description
        text["format"] = fmt
    store = opts.pop("store", None)
    include: list[str] = list(opts.pop("include", None) or [])
    _auto_include(request, include, store, reasoning)
    max_tokens = opts.pop("max_output_tokens", None)
    body = ResponsesBody(
        model=model.id,
        instructions="\n\n".join(p.text for p in request.system) if request.system else None,
        input=_lower_messages(request, keep_unencrypted_reasoning=store is not False),
        tools=_tools(request),
        tool_choice=_tool_choice(request),
        store=store,
        include=include or None,
        reasoning=reasoning or None,
        text=text or None,
        max_output_tokens=max_tokens if max_tokens is not None else g.max_tokens,
        temperature=g.temperature,
        top_p=g.top_p,
        service_tier=opts.pop("service_tier", None),
        prompt_cache_key=opts.pop("prompt_cache_key", None),
        stream=g.stream is not False,
    )
    return with_options(body, opts)


# 5. step / on_halt ------------------------------------------------------------------------------

# Hosted output item type -> (tool name, tool-call input keys, tool-result keys).
HOSTED_ITEMS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "web_search_call": ("web_search", ("action",), ("status", "sources")),
    "file_search_call": ("file_search", ("queries",), ("status", "results")),
    "code_interpreter_call": ("code_execution", ("code", "container_id"), ("status", "outputs")),
    "image_generation_call": ("image_generation", (), ("status", "result", "revised_prompt")),
    "mcp_call": ("mcp", ("server_label", "name", "arguments"), ("status", "output", "error")),
    "mcp_list_tools": ("mcp_list_tools", ("server_label",), ("tools", "error")),
    "computer_call": ("computer_use", ("call_id", "action", "pending_safety_checks"), ("status",)),
    "local_shell_call": ("local_shell", ("call_id", "action"), ("status",)),
}


def step(state: ResponsesState, frame: SSEEvent, out: list[LLMEvent]) -> None:
    ev = decode_frame(_event_decoder, frame.data, "openai-responses event")
    kind = ev.type
    if kind != "response.output_text.delta":  # the hot path skips this block
        if kind != "response.refusal.delta":
            handler = _HANDLERS.get(kind)
            if handler is not None:
                handler(state, ev, out)
            elif kind == "response.content_part.added":
                _on_content_added(state, ev, frame.data, out)
            return
        state.refused = True  # refusal text is message text: handled below like output_text
    delta = ev.delta
    if delta:
        if state.text_index != ev.content_index or state.text_item != ev.item_id:
            _open_text(state, ev.item_id, ev.content_index, out)
        out.append(TextDelta(state.blocks.text, delta))  # type: ignore[arg-type]
        state.text_chunks.append(delta)


def whole(state: ResponsesState, body: bytes, out: list[LLMEvent]) -> None:
    """A whole Response, as the events a stream of it would have carried."""
    response = msgspec.Raw(body)
    items = decode_frame(_whole_decoder, body, "openai-responses response").output or []
    _on_created(state, _Event("response.created", response=response), out)
    for raw in items:
        ev = _Event("response.output_item.added", item=raw)
        _on_item_added(state, ev, out)
        item = decode_frame(_item_decoder, raw, "openai-responses item")
        if item.type == "reasoning":
            parts = [(i, s.text) for i, s in enumerate(item.summary or ())]
            parts += [(i, c.text) for i, c in enumerate(item.content or ()) if c.type == "reasoning_text"]
            for index, text in parts:
                _reasoning_delta(state, _Event(item_id=item.id, delta=text), index, out)
        _on_item_done(state, ev, out)
    _on_terminal(state, _Event("response.completed", response=response), out)


def _open_text(state: ResponsesState, item_id: str | None, index: int, out: list[LLMEvent]) -> None:
    _close_text(state, out)
    state.text_item, state.text_index = item_id, index
    item_id = item_id or "msg"
    meta: dict[str, Any] = {"item_id": item_id}
    phase = state.phases.get(item_id)
    if phase is not None:
        meta["phase"] = phase
    state.blocks.text_delta("", out, id=f"{item_id}:{index}", metadata={_OPENAI: meta})


def _close_text(state: ResponsesState, out: list[LLMEvent]) -> None:
    block = state.blocks.text
    if block is not None:
        state.blocks.end_text(out)
        state.texts[block] = "".join(state.text_chunks)
        state.text_item, state.text_index = None, -1
        state.text_chunks = []


def _text_of(state: ResponsesState, block: str) -> str:
    if block == state.blocks.text:
        text = "".join(state.text_chunks)
        state.text_chunks = [text]  # joined once per annotation burst, not once per annotation
        return text
    return state.texts.get(block, "")


def _open_reasoning(state: ResponsesState, item_id: str, index: int, out: list[LLMEvent]) -> None:
    if state.reasoning_index == index and state.reasoning_item == item_id:
        return
    blocks = state.blocks
    blocks.end_reasoning(out)
    state.reasoning_item, state.reasoning_index = item_id, index
    blocks.reasoning_delta("", out, id=f"{item_id}:{index}", metadata={_OPENAI: {"item_id": item_id}})


def _end_reasoning(state: ResponsesState, out: list[LLMEvent], item: _Item | None = None) -> None:
    if state.blocks.reasoning is not None:
        if item is None:
            state.blocks.end_reasoning(out)
        else:
            state.blocks.end_reasoning(out, None, item.encrypted_content, {_OPENAI: {"item_id": item.id}})
        state.reasoning_item, state.reasoning_index = None, -1


def _on_created(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    if ev.response and state.metadata is None:
        response = decode_frame(_response_decoder, ev.response, "openai-responses response")
        state.metadata = {"id": response.id, "model": response.model}


def _on_item_added(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    item = decode_frame(_item_decoder, ev.item, "openai-responses item")
    kind = item.type
    if kind == "message":
        if item.phase:
            state.phases[item.id] = item.phase
    elif kind == "function_call":
        _close_text(state, out)
        _end_reasoning(state, out)
        state.tools[item.id] = ToolInput(
            item.call_id or item.id, item.name or "", out, metadata={_OPENAI: {"item_id": item.id}}
        )
        if item.arguments:
            state.tools[item.id].delta(item.arguments, out)
    elif kind in HOSTED_ITEMS:
        _close_text(state, out)
        _end_reasoning(state, out)
        state.tools[item.id] = _hosted_input(item.id, kind, out)


def _hosted_input(item_id: str, kind: str, out: list[LLMEvent]) -> ToolInput:
    return ToolInput(
        item_id, HOSTED_ITEMS[kind][0], out, provider_executed=True, metadata={_OPENAI: {"item_type": kind}}
    )


_TEXT_PARTS = ("output_text", "refusal")


def _on_content_added(state: ResponsesState, ev: _Event, data: bytes, out: list[LLMEvent]) -> None:
    # A message's text or refusal opens its block; a reasoning item's ``reasoning_text`` part is
    # the reasoning block its deltas open.
    part = decode_frame(_part_added_decoder, data, "openai-responses event").part
    if part is not None and part.type not in _TEXT_PARTS:
        return
    _end_reasoning(state, out)
    _open_text(state, ev.item_id, ev.content_index, out)


def _on_content_done(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    if state.text_index == ev.content_index and state.text_item == ev.item_id:
        _close_text(state, out)


def _on_summary_part(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    _close_text(state, out)
    _open_reasoning(state, ev.item_id or "rs", ev.summary_index, out)


def _on_summary_delta(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    _reasoning_delta(state, ev, ev.summary_index, out)


def _on_reasoning_text_delta(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    _reasoning_delta(state, ev, ev.content_index, out)


def _reasoning_delta(state: ResponsesState, ev: _Event, index: int, out: list[LLMEvent]) -> None:
    delta = ev.delta
    if delta:
        item_id = ev.item_id or "rs"
        if state.reasoning_index != index or state.reasoning_item != item_id:
            _open_reasoning(state, item_id, index, out)
        out.append(ReasoningDelta(state.blocks.reasoning, delta))  # type: ignore[arg-type]


def _on_arguments_delta(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    tool = state.tools.get(ev.item_id or "")
    if tool is not None and ev.delta:
        tool.delta(ev.delta, out)


def _on_item_done(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    item = decode_frame(_item_decoder, ev.item, "openai-responses item")
    kind = item.type
    if kind == "message":
        _on_message_done(state, item, out)
    elif kind == "reasoning":
        _close_text(state, out)
        if state.reasoning_item != item.id:
            _open_reasoning(state, item.id, 0, out)  # no summary: the block still carries the item
        _end_reasoning(state, out, item)
    elif kind == "function_call":
        tool = state.tools.pop(item.id, None)
        if tool is None:
            tool = ToolInput(
                item.call_id or item.id, item.name or "", out, metadata={_OPENAI: {"item_id": item.id}}
            )
        tool.finish(out, raw=item.arguments)
        state.function_calls += 1
    elif kind in HOSTED_ITEMS:
        _on_hosted_done(state, kind, item.id, ev.item, out)


def _on_message_done(state: ResponsesState, item: _Item, out: list[LLMEvent]) -> None:
    if state.text_item == item.id:
        _close_text(state, out)
    for index, content in enumerate(item.content or ()):
        block = f"{item.id or 'msg'}:{index}"
        text = content.text or content.refusal or ""
        if block not in state.texts and text:
            # text only in the final item (no deltas streamed, or a whole body): one block
            _open_text(state, item.id, index, out)
            out.append(TextDelta(block, text))
            state.text_chunks.append(text)
            _close_text(state, out)
        if content.type == "refusal":
            state.refused = True
        for annotation in content.annotations or ():
            _cite(state, block, annotation, out, text)


def _on_hosted_done(
    state: ResponsesState, kind: str, item_id: str, raw: msgspec.Raw, out: list[LLMEvent]
) -> None:
    data = decode_frame(_raw_decoder, raw, "openai-responses item")
    name, input_keys, result_keys = HOSTED_ITEMS[kind]
    call_input: dict[str, Any] = {k: data[k] for k in input_keys if data.get(k) is not None}
    result: Any = {k: data[k] for k in result_keys if data.get(k) is not None}
    meta: dict[str, Any] = {"item_type": kind}
    if kind == "web_search_call":
        action: dict[str, Any] = data.get("action") or {}
        call_input = {k: v for k, v in action.items() if k != "sources"}
        result = _search_result(action)
        meta.update((k, data[k]) for k in ("status", "action") if k in data)  # sources as sent
        state.searched = True
        if action.get("type") == "search":
            state.searches += 1
    elif kind == "mcp_call" and isinstance(call_input.get("arguments"), str):
        call_input["arguments"] = parse_tool_input(call_input["arguments"])
    tool = state.tools.pop(item_id, None) or _hosted_input(item_id, kind, out)
    tool.finish(out, input=call_input)
    is_error = data.get("status") in ("failed", "incomplete") or bool(data.get("error"))
    out.append(ToolResult(item_id, name, result, is_error, True, {_OPENAI: meta}))
    image = data.get("result") if kind == "image_generation_call" else None
    if isinstance(image, str) and image:
        out.append(_generated_image(item_id, image, data.get("output_format")))


def _generated_image(item_id: str, image: str, output_format: Any) -> Media:
    """An ``image_generation_call`` result as the media the model produced: the type its bytes
    announce, else the one ``output_format`` names, else PNG (the tool's default format)."""
    named = (
        f"image/{'jpeg' if output_format == 'jpg' else output_format}"
        if isinstance(output_format, str)
        else None
    )
    mime = sniff_base64(image) or named or "image/png"
    return Media(f"{item_id}:image", mime, image, {_OPENAI: {"item_id": item_id}})


def _search_result(action: dict[str, Any]) -> SearchResult:
    """A ``web_search_call`` action -> the canonical result: ``action.sources`` (present with
    ``include: ["web_search_call.action.sources"]``) and the page an ``open_page``/``find`` action
    read; the queries from ``query``/``queries``."""
    pairs = hit_pairs(action.get("sources"))
    url = action.get("url")
    if isinstance(url, str):
        pairs.append((url, None))
    queries = action.get("queries")
    return search_result(pairs, [action.get("query"), *(queries if isinstance(queries, list) else ())])  # pyright: ignore[reportUnknownArgumentType]


def _on_annotation(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    annotation = decode_frame(_annotation_decoder, ev.annotation, "openai-responses annotation")
    block = f"{ev.item_id or 'msg'}:{ev.content_index}"
    _cite(state, block, annotation, out, _text_of(state, block))


def _cite(state: ResponsesState, block: str, a: _Annotation, out: list[LLMEvent], text: str) -> None:
    key = (
        block,
        a.type,
        a.url or a.file_id,
        a.start_index if a.start_index is not None else a.index,
        a.end_index,
    )
    if key in state.cited:
        return
    state.cited.add(key)
    start, end = _citation_span(text, a.start_index, a.end_index, a.url)
    cited = text[start:end] if start is not None and end is not None else None
    meta: dict[str, Any] = {"type": a.type}
    if a.file_id:
        meta["file_id"] = a.file_id
    if a.type == "url_citation":
        state.cited_urls.append((a.url, a.title))
    out.append(Citation(block, a.url, a.title or a.filename, start, end, cited, {_OPENAI: meta}))


def _is_marker(segment: str, url: str) -> bool:
    return segment.startswith("([") and segment.endswith("))") and url in segment


def _plausible(segment: str, url: str) -> bool:
    return bool(segment) and (url in segment or segment[0] in "([")


def _utf16_to_index(text: str, units: int) -> int:
    count = 0
    for i, ch in enumerate(text):
        if count >= units:
            return i
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def _citation_span(
    text: str, start: int | None, end: int | None, url: str | None
) -> tuple[int | None, int | None]:
    """Annotation indices are characters; validate them against the text (the span covers the
    ``([domain](url))`` marker). Candidates, best first: code points, then UTF-16 units (they differ
    after astral characters) as an exact marker, then as a plausible span, then the URL located in
    the text, else no span (see reference/websearch.md §2.5)."""
    if start is None or end is None or end < start or not text:
        return None, None
    if url is None:  # file citations: keep the provider's span when it fits the text
        return (start, end) if end <= len(text) else (None, None)
    if end <= len(text) and _is_marker(text[start:end], url):
        return start, end
    candidates = [(start, end)]
    if any(ord(ch) > 0xFFFF for ch in text):
        candidates.append((_utf16_to_index(text, start), _utf16_to_index(text, end)))
    valid = [(s, e) for s, e in candidates if e <= len(text)]
    for test in (_is_marker, _plausible):
        for s, e in valid:
            if test(text[s:e], url):
                return s, e
    found = text.find(url)
    if found >= 0:
        return found, found + len(url)
    return None, None


def _usage(raw: dict[str, Any], searches: int) -> Usage:
    details: dict[str, Any] = raw.get("input_tokens_details") or {}
    out_details: dict[str, Any] = raw.get("output_tokens_details") or {}
    return Usage.from_cached(
        input_tokens=raw.get("input_tokens"),
        output_tokens=raw.get("output_tokens"),
        cache_read=details.get("cached_tokens"),
        cache_write=details.get("cache_write_tokens"),
        reasoning=out_details.get("reasoning_tokens"),
        web_search_requests=searches or None,
        raw=raw,
    )


_INCOMPLETE: dict[str, FinishReason] = {"max_output_tokens": "length", "content_filter": "content-filter"}


def _on_terminal(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    response = (
        decode_frame(_response_decoder, ev.response, "openai-responses response")
        if ev.response
        else _Response()
    )
    state.metadata = {**(state.metadata or {}), "id": response.id, "model": response.model}
    if response.service_tier:
        state.metadata["service_tier"] = response.service_tier
    if response.usage is not None:
        state.usage = _usage(response.usage, state.searches)
    status = response.status or ev.type.removeprefix("response.")
    if status == "failed":
        raise stream_error(response.error or {"message": "response failed"}, NAME)
    _close_all(state, out)
    if state.cited_urls and not state.searched:  # OpenRouter's web plugin reports no call
        state.searched = True
        search_from_citations(f"ws_{response.id or 'response'}", state.cited_urls, out)
    if status == "incomplete":
        details = response.incomplete_details
        state.reason = _INCOMPLETE.get(details.reason or "", "unknown") if details else "unknown"
    elif state.refused:
        state.reason = "content-filter"
    else:
        state.reason = "tool-calls" if state.function_calls else "stop"
    state.done = True


def _on_error(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    error: dict[str, Any] = {}
    if ev.error:
        error = decode_frame(_raw_decoder, ev.error, "openai-responses error")
    if ev.code or ev.message:
        error = {"code": ev.code, "message": ev.message, **error}
    raise stream_error(error, NAME, status=ev.status)


def _close_all(state: ResponsesState, out: list[LLMEvent]) -> None:
    _close_text(state, out)
    _end_reasoning(state, out)
    for tool in state.tools.values():
        tool.finish(out)
    state.tools.clear()


_HANDLERS: dict[str, Callable[[ResponsesState, _Event, list[LLMEvent]], None]] = {
    "response.created": _on_created,
    "response.in_progress": _on_created,
    "response.output_item.added": _on_item_added,
    "response.output_item.done": _on_item_done,
    "response.content_part.done": _on_content_done,
    "response.reasoning_summary_part.added": _on_summary_part,
    "response.reasoning_summary_text.delta": _on_summary_delta,
    "response.reasoning_text.delta": _on_reasoning_text_delta,
    "response.function_call_arguments.delta": _on_arguments_delta,
    "response.output_text.annotation.added": _on_annotation,
    "response.completed": _on_terminal,
    "response.done": _on_terminal,
    "response.incomplete": _on_terminal,
    "response.failed": _on_terminal,
    "error": _on_error,
}


def on_halt(state: ResponsesState, out: list[LLMEvent]) -> None:
    if not state.done:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before response.completed")
    _close_all(state, out)


# 6. the Protocol value and its default route ---------------------------------------------------

PROTOCOL = Protocol(
    name=NAME,
    build_body=build_body,
    new_state=lambda _request: ResponsesState(),
    step=step,
    on_halt=on_halt,
    native_output_schema=True,
    whole=whole,
)


_TRANSPORT_ONLY = ("stream", "background")


def websocket_message(body: bytes) -> bytes:
    """The HTTP body as the WebSocket mode's ``response.create`` message (no ``stream``)."""
    data: dict[str, Any] = _raw_decoder.decode(body)
    for key in _TRANSPORT_ONLY:
        data.pop(key, None)
    return msgspec.json.encode({"type": "response.create", **data})


def route(base_url: str, auth: Auth, *, name: str = NAME, **changes: Any) -> Route:
    return Route(
        name=name,
        protocol=PROTOCOL,
        endpoint=Endpoint(base_url, "/responses"),
        auth=auth,
        framing=SSEFraming(),
        **changes,
    )
