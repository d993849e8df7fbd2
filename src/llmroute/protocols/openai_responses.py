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
``citation`` events with validated ``str`` spans into their text block, each emitted once. Items that
call a tool (function, custom, client built-in and hosted calls, their outputs, MCP approval
requests) are read and lowered back by ``openai_responses_items``. Unknown event types are skipped
(also when their fields have shapes of their own); items that carry no call are kept raw in the
step metadata (``other_items``).

Non-streamed (``stream=False``, HTTP only: the WebSocket mode always streams), the Response
object is replayed through the stream handlers: each output item as added + done (reasoning
summaries and ``reasoning_text`` as their blocks' text), then the terminal status.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeAlias

import msgspec

from ..framing.sse import SSEEvent, SSEFraming
from ..route.auth import Auth
from ..route.classify import from_stream_event
from ..route.decoding import DECODE_ERRORS
from ..route.endpoint import Endpoint
from ..route.model import Route
from ..route.protocol import Protocol, StreamState
from ..schema.content import (
    ApprovalRequestPart,
    ApprovalResponsePart,
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.events import (
    LLMEvent,
    ReasoningDelta,
    TextDelta,
)
from ..schema.request import LLMRequest, ModelRef
from ..schema.tools import HostedTool, ToolDefinition
from ..schema.usage import Usage
from . import openai_responses_finish as finish
from . import openai_responses_items as calls
from ._shared import (
    Blocks,
    ToolInput,
    content_parts,
    data_url,
    decode_frame,
    json_arguments,
    lower_hosted,
    ns,
    with_options,
)
from ._websearch import search_from_citations
from .openai_usage import responses_usage

__all__ = [
    "HOSTED_ITEMS",
    "HOSTED_TOOLS",
    "NAME",
    "PROTOCOL",
    "ResponsesBody",
    "ResponsesProtocol",
    "ResponsesQuirks",
    "ResponsesState",
    "build_body",
    "make_protocol",
    "on_halt",
    "route",
    "step",
    "websocket_message",
    "whole",
]

NAME = "openai-responses"

# 1. quirks, constants and request body Structs ----------------------------------------------------

_OPENAI = "openai"  # the provider_metadata namespace


class ResponsesQuirks(msgspec.Struct, frozen=True):
    """Declared differences between Responses servers. ``hosted_custom_tools``: ``custom_tool_call``
    (and ``x_search_call``) items are the server's own tools, already run (xAI's x_search and
    friends), not freeform tools handed to the client (OpenAI). ``hosted_kinds``: the server's own
    hosted tool kinds beyond OpenAI's (xAI ``x_search``)."""

    hosted_custom_tools: bool = False
    hosted_kinds: tuple[str, ...] = ()  # more hosted tool kinds, sent as ``{"type": kind, **options}``
    hosted_remove: tuple[str, ...] = ()
    """Kinds of OpenAI's ``HOSTED_TOOLS`` this server does not run (xAI: ``shell``): refused like
    any kind a route lacks, so a kind OpenAI gains later is not offered here by default."""


_NO_QUIRKS = ResponsesQuirks()


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
    strict: bool  # always sent: the server's default is not relied on (see ``function_strict``)


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


# 2. stream event Structs --------------------------------------------------------------------------

_NO_RAW = msgspec.Raw()


class _Event(msgspec.Struct, gc=False):
    """Every stream event, flat: small fields decoded eagerly, nested objects kept raw and decoded
    by the handler that needs them (the hot path, ``output_text.delta``, never touches them)."""

    type: str = ""
    item_id: str | None = None
    output_index: int = -1
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


class _EventType(msgspec.Struct, gc=False):
    type: str = ""


class Annotation(msgspec.Struct, gc=False):
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
    annotations: list[Annotation] | None = None


class _PartAdded(msgspec.Struct, gc=False):
    """``response.content_part.added``, decoded again for its part type (``_Event`` stays small:
    every field it has costs each hot-path decode)."""

    part: _Content | None = None


class _Summary(msgspec.Struct, gc=False):
    text: str = ""


class OutputItem(msgspec.Struct, gc=False):
    type: str = ""
    id: str = ""
    status: str | None = None
    phase: str | None = None
    content: list[_Content] | None = None
    summary: list[_Summary] | None = None
    encrypted_content: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | dict[str, Any] | None = None  # an object on tool_search_call
    input: str | None = None  # custom_tool_call
    environment: dict[str, Any] | None = None  # shell_call: set when it ran in the server's container
    execution: str | None = None  # tool_search_call: "client" or "server"
    server_label: str | None = None  # mcp_approval_request


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
_type_decoder = msgspec.json.Decoder(_EventType)
_whole_decoder = msgspec.json.Decoder(_WholeResponse)
_item_decoder = msgspec.json.Decoder(OutputItem)
_annotation_decoder = msgspec.json.Decoder(Annotation)
_response_decoder = msgspec.json.Decoder(_Response)
_part_added_decoder = msgspec.json.Decoder(_PartAdded)
_raw_decoder = msgspec.json.Decoder(dict[str, Any])


# 3. parser state ----------------------------------------------------------------------------------


class ResponsesState(StreamState):
    __slots__ = (
        "added",
        "awaiting",
        "blocks",
        "call_ids",
        "called",
        "cited",
        "cited_urls",
        "client_calls",
        "item_ids",
        "phases",
        "quirks",
        "reasoning_ended",
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

    def __init__(self, quirks: ResponsesQuirks = _NO_QUIRKS) -> None:
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
        self.reasoning_ended: set[str] = set()  # reasoning items whose block has ended
        self.tools: dict[str, ToolInput] = {}  # item id -> streamed call
        # output index -> the id its item was added with: some servers give every event a new
        # item id, so parts are matched by position
        self.item_ids: dict[int, str] = {}
        self.added: set[str] = set()  # ids of the items added so far
        self.cited: set[tuple[str, str, str | None, int | None, int | None]] = set()
        self.client_calls = 0
        self.called: set[str] = set()  # item ids of the calls already completed
        self.call_ids: set[str] = set()  # ids of the calls opened: two items under one id are refused
        # hosted calls whose result is a later output item: call id -> (item id, tool name)
        self.awaiting: dict[str | None, tuple[str, str]] = {}
        self.quirks = quirks
        self.searches = 0
        self.searched = False  # a web_search_call was reported (else url_citation annotations imply one)
        self.cited_urls: list[tuple[str | None, str | None]] = []
        self.refused = False


# 4. build_body ------------------------------------------------------------------------------------


def _text(parts: tuple[Any, ...]) -> str:
    return "\n\n".join(p.text for p in parts if isinstance(p, TextPart))


def _lower_media(part: MediaPart) -> _InputImage | _InputFile:
    if part.mime_type.startswith("image/"):
        return _InputImage(image_url=data_url(part))
    if part.is_url:
        return _InputFile(file_url=part.data)  # type: ignore[arg-type]
    return _InputFile(filename=part.filename or "file", file_data=data_url(part))


def _user_content(part: Any) -> _UserContent:
    if isinstance(part, TextPart):
        return _InputText(part.text)
    if isinstance(part, MediaPart):
        return _lower_media(part)
    raise InvalidRequestError(f"{NAME}: a user message cannot hold a {type(part).__name__}")


def _lower_tool_result(part: ToolResultPart) -> str | list[_UserContent]:
    result = part.result
    if isinstance(result, str):
        return result
    parts = content_parts(result)
    if parts is not None:
        return [_user_content(p) for p in parts]
    return msgspec.json.encode(result).decode()


def _lower_messages(request: LLMRequest, keep_unencrypted_reasoning: bool) -> list[_InputItem]:
    items: list[_InputItem] = []
    # call id -> the output item type of a client built-in call, so its result answers in kind
    answers = {
        p.id: calls.CLIENT_OUTPUT[kind]
        for m in request.messages
        if m.role == "assistant"
        for p in m.content
        if isinstance(p, ToolCallPart)
        and (kind := ns(p.provider_metadata, _OPENAI).get("item_type")) in calls.CLIENT_OUTPUT
    }
    for message in request.messages:
        if message.role == "system":
            items.append(_MessageItem(role="system", content=_text(message.content)))
        elif message.role == "assistant":
            _lower_assistant(message, items, keep_unencrypted_reasoning)
        else:
            _lower_user(message, items, answers)
    return items


def _lower_user(message: Message, items: list[_InputItem], answers: dict[str, str]) -> None:
    """User and tool messages: content parts become one user message; tool results become
    ``function_call_output`` items, in order."""
    content: list[_UserContent] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            if content:
                items.append(_MessageItem(role="user", content=content))
                content = []
            if part.id in answers:
                items.append(calls.builtin_output(answers[part.id], part))
            elif not part.provider_executed:
                items.append(_FunctionCallOutputItem(call_id=part.id, output=_lower_tool_result(part)))
        elif isinstance(part, TextPart | MediaPart):
            content.append(_user_content(part))
        elif isinstance(part, ApprovalResponsePart):
            if content:
                items.append(_MessageItem(role="user", content=content))
                content = []
            items.append(calls.approval_response_item(part))
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
            item = calls.call_item(part, hosted)
            if item is not None:
                items.append(item)
            elif not part.provider_executed:
                items.append(
                    _FunctionCallItem(call_id=part.id, name=part.name, arguments=json_arguments(part.input))
                )
        elif isinstance(part, ApprovalRequestPart):
            items.append(calls.approval_request_item(part))
        elif isinstance(part, ToolResultPart) and part.provider_executed:
            item = calls.hosted_result(hosted.get(part.id), part)
            if item is not None:  # a server-run call's output item
                items.append(item)
    if not keep_unencrypted_reasoning:
        # Without ``store``, a reasoning item the server cannot decrypt is a dangling reference.
        items[:] = [i for i in items if not (isinstance(i, _ReasoningItem) and i.encrypted_content is None)]


def _lower_tools(request: LLMRequest, quirks: ResponsesQuirks) -> list[_FunctionTool | dict[str, Any]] | None:
    tools: list[_FunctionTool | dict[str, Any]] = []
    for tool in request.tools:
        if isinstance(tool, HostedTool):
            tools.append(_lower_hosted(tool, quirks))
        elif tool.kind == "function":
            tools.append(_lower_tool(tool))
        else:
            tools.append(calls.lower_builtin_tool(tool))
    return tools or None


def _lower_tool(tool: ToolDefinition) -> _FunctionTool:
    return _FunctionTool(
        name=tool.name,
        description=tool.description or None,
        parameters=tool.input_schema,
        strict=calls.function_strict(tool),
    )


def _lower_hosted(tool: HostedTool, quirks: ResponsesQuirks) -> dict[str, Any]:
    if tool.kind in quirks.hosted_kinds:  # the server's own (xAI ``x_search``): options as given
        return calls.lower_as_named(tool)
    table = HOSTED_TOOLS
    if quirks.hosted_remove:
        table = {kind: lower for kind, lower in table.items() if kind not in quirks.hosted_remove}
    return lower_hosted(table, tool, NAME)


def _lower_tool_choice(request: LLMRequest) -> str | dict[str, Any] | None:
    choice = request.tool_choice
    if choice is None:
        return None
    if choice.mode != "tool":
        return choice.mode
    forced = next((w for t in request.tools if (w := calls.forced_tool(t, choice.name))), None)
    return forced or {"type": "function", "name": choice.name}


def build_body(
    request: LLMRequest, model: ModelRef, quirks: ResponsesQuirks = _NO_QUIRKS
) -> ResponsesBody | dict[str, Any]:
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
    fmt = calls.text_format(request)
    if fmt is not None:
        text["format"] = fmt
    store = opts.pop("store", None)
    include: list[str] = list(opts.pop("include", None) or [])
    calls.auto_include(request, include, store, reasoning)
    max_tokens = opts.pop("max_output_tokens", None)
    body = ResponsesBody(
        model=model.id,
        instructions="\n\n".join(p.text for p in request.system) if request.system else None,
        input=_lower_messages(request, keep_unencrypted_reasoning=store is not False),
        tools=_lower_tools(request, quirks),
        tool_choice=_lower_tool_choice(request),
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


HOSTED_TOOLS: dict[str, Callable[..., Any]] = {
    "web_search": calls.lower_web_search,
    "code_execution": calls.lower_code_execution,
    "shell": calls.lower_shell,  # run in OpenAI's container; the caller-run shell is a client tool
    "file_search": calls.lower_as_named,
    "image_generation": calls.lower_as_named,
    "mcp": calls.lower_as_named,
}


# 5. step / on_halt --------------------------------------------------------------------------------

# wire item type -> the handler reading a hosted call and its result from its done item
HOSTED_ITEMS: dict[str, Callable[[ResponsesState, str, str, dict[str, Any], list[LLMEvent]], None]] = {
    "web_search_call": calls.on_web_search_call,
    "file_search_call": calls.on_hosted_call,
    "code_interpreter_call": calls.on_hosted_call,
    "image_generation_call": calls.on_image_generation_call,
    "mcp_call": calls.on_mcp_call,
    "mcp_list_tools": calls.on_hosted_call,
}
_STREAMED_INPUT = ("function_call", "custom_tool_call")  # their input streams as deltas


def _decode_event(data: bytes) -> _Event | None:
    """One event; ``None`` for an event type this parser does not know whose fields have shapes
    of their own (skipped, as unknown types are). A known type with a bad shape is a typed error."""
    try:
        return _event_decoder.decode(data)
    except msgspec.ValidationError:  # not decode_frame alone: an unknown type with odd shapes is skipped
        kind = decode_frame(_type_decoder, data, f"{NAME} event").type
        if kind in _HANDLERS or kind in _STREAMED:
            decode_frame(_event_decoder, data, f"{NAME} event")  # raises, typed, with the frame
        return None
    except DECODE_ERRORS:  # the slow path reports the raw frame (and retries invalid UTF-8)
        return decode_frame(_event_decoder, data, f"{NAME} event")


# handled outside ``_HANDLERS``: the text hot path and the part that opens a text block
_STREAMED = frozenset(("response.output_text.delta", "response.refusal.delta", "response.content_part.added"))


def step(state: ResponsesState, frame: SSEEvent, out: list[LLMEvent]) -> None:
    ev = _decode_event(frame.data)
    if ev is None:
        return
    kind = ev.type
    if kind != "response.output_text.delta":  # the hot path skips this block
        if ev.output_index >= 0 and ev.item_id is not None:
            ev.item_id = state.item_ids.get(ev.output_index, ev.item_id)
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
            item_id = state.item_ids.get(ev.output_index, ev.item_id)
            if state.text_index != ev.content_index or state.text_item != item_id:
                _open_text(state, item_id, ev.content_index, out)
        out.append(TextDelta(state.blocks.text, delta))  # type: ignore[arg-type]
        state.text_chunks.append(delta)


def whole(state: ResponsesState, body: bytes, out: list[LLMEvent]) -> None:
    """A whole Response, as the events a stream of it would have carried."""
    response = msgspec.Raw(body)
    items = decode_frame(_whole_decoder, body, f"{NAME} response").output or []
    _on_created(state, _Event("response.created", response=response), out)
    for raw in items:
        ev = _Event("response.output_item.added", item=raw)
        _on_item_added(state, ev, out)
        item = _decode_item(raw)
        if item is not None and item.type == "reasoning":
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


def _end_reasoning(state: ResponsesState, out: list[LLMEvent], item: OutputItem | None = None) -> None:
    if state.blocks.reasoning is not None:
        if state.reasoning_item is not None:
            state.reasoning_ended.add(state.reasoning_item)
        if item is None:
            state.blocks.end_reasoning(out)
        else:
            state.blocks.end_reasoning(out, None, item.encrypted_content, {_OPENAI: {"item_id": item.id}})
        state.reasoning_item, state.reasoning_index = None, -1


def _on_created(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    if ev.response and state.metadata is None:
        response = decode_frame(_response_decoder, ev.response, f"{NAME} response")
        state.metadata = {"id": response.id, "model": response.model}


def _decode_item(raw: msgspec.Raw) -> OutputItem | None:
    """One output item; ``None`` for a type this parser does not know whose fields have shapes of
    their own. A known type with a bad shape is a typed error."""
    try:
        return _item_decoder.decode(raw)
    except msgspec.ValidationError:  # not decode_frame alone: an unknown type with odd shapes is skipped
        kind = decode_frame(_type_decoder, raw, f"{NAME} item").type
        if kind in calls.KNOWN_ITEMS:
            decode_frame(_item_decoder, raw, f"{NAME} item")  # raises, typed, with the item
        return None
    except DECODE_ERRORS:
        return decode_frame(_item_decoder, raw, f"{NAME} item")


def _on_item_added(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    item = _decode_item(ev.item)
    if item is None:
        return
    if ev.output_index >= 0:
        state.item_ids[ev.output_index] = item.id
    state.added.add(item.id)
    kind = item.type
    if kind == "message":
        if item.phase:
            state.phases[item.id] = item.phase
    else:
        role = calls.call_role(state, item)
        if role is None or (kind not in _STREAMED_INPUT and kind not in HOSTED_ITEMS):
            # no call, or one whose input (and final call id) only the done item carries
            return
        if item.id in state.tools or item.id in state.called:
            return  # added again (a proxy replaying events): one call, as a repeated done is
        _close_text(state, out)
        _end_reasoning(state, out)
        tool = state.tools[item.id] = calls.tool_input(state, item, role, out)
        if isinstance(item.arguments, str) and item.arguments:
            tool.delta(item.arguments, out)


_TEXT_PARTS = ("output_text", "refusal")


def _on_content_added(state: ResponsesState, ev: _Event, data: bytes, out: list[LLMEvent]) -> None:
    # A message's text or refusal opens its block; a reasoning item's ``reasoning_text`` part is
    # the reasoning block its deltas open.
    part = decode_frame(_part_added_decoder, data, f"{NAME} event").part
    if part is not None and part.type not in _TEXT_PARTS:
        return
    # An open reasoning block stays open: its item's done event (with the encrypted content) may
    # still come, after the text started (OpenRouter); it ends there, or when the response does.
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


def _on_item_done(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    item = _decode_item(ev.item)
    if item is None:
        _keep_other(state, ev.item)
        return
    item.id = state.item_ids.get(ev.output_index, item.id)
    kind = item.type
    if kind == "message":
        _on_message_done(state, item, out)
    elif kind == "reasoning":
        _on_reasoning_done(state, item, out)
    elif kind in HOSTED_ITEMS:
        if calls.first_done(state, item.id):
            data = decode_frame(_raw_decoder, ev.item, f"{NAME} item")
            HOSTED_ITEMS[kind](state, kind, item.id, data, out)
    elif kind in calls.OUTPUT_ITEMS:
        calls.on_output_done(state, item, ev.item, out)
    elif kind == "mcp_approval_request":
        _close_text(state, out)
        _end_reasoning(state, out)
        calls.on_approval_request(state, item, out)
    else:
        role = calls.call_role(state, item)
        if role is not None:
            calls.on_call_done(state, item, role, ev.item, out)
        else:  # compaction, program, a type this parser does not know: kept raw, never fatal
            _keep_other(state, ev.item)


def _on_reasoning_done(state: ResponsesState, item: OutputItem, out: list[LLMEvent]) -> None:
    """The item's reasoning block ends here, carrying its encrypted content. One already ended (a
    tool call or the next reasoning item closed it first) is not opened again."""
    if item.id in state.reasoning_ended:
        return
    if state.reasoning_item != item.id:
        _open_reasoning(state, item.id, 0, out)  # no summary: the block still carries the item
    _end_reasoning(state, out, item)


def _keep_other(state: ResponsesState, raw: msgspec.Raw) -> None:
    if state.metadata is None:
        state.metadata = {}
    state.metadata.setdefault("other_items", []).append(decode_frame(_raw_decoder, raw, f"{NAME} item"))


def _on_message_done(state: ResponsesState, item: OutputItem, out: list[LLMEvent]) -> None:
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
            calls.cite(state, block, annotation, out, text)


def _on_annotation(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    annotation = decode_frame(_annotation_decoder, ev.annotation, f"{NAME} annotation")
    block = f"{ev.item_id or 'msg'}:{ev.content_index}"
    calls.cite(state, block, annotation, out, _text_of(state, block))


def _usage(raw: dict[str, Any], searches: int, service_tier: str | None) -> Usage:
    return responses_usage(raw, searches, service_tier)


def _on_terminal(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    response = (
        decode_frame(_response_decoder, ev.response, f"{NAME} response") if ev.response else _Response()
    )
    state.metadata = {**(state.metadata or {}), "id": response.id, "model": response.model}
    if response.service_tier:
        state.metadata["service_tier"] = response.service_tier
    if response.usage is not None:
        state.usage = _usage(response.usage, state.searches, response.service_tier)
    status = response.status or ev.type.removeprefix("response.")
    if status == "failed":
        raise from_stream_event(response.error or {"message": "response failed"}, NAME)
    finish.refuse_unfinished(response.id, status)
    _close_all(state, out)
    if state.cited_urls and not state.searched:  # OpenRouter's web plugin reports no call
        state.searched = True
        search_from_citations(f"ws_{response.id or 'response'}", state.cited_urls, out)
    details = response.incomplete_details
    incomplete = details.reason if details else None
    state.reason = finish.finish_reason(status, incomplete, state.refused, state.client_calls)
    state.done = True


def _on_error(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    error: dict[str, Any] = {}
    if ev.error:
        error = decode_frame(_raw_decoder, ev.error, f"{NAME} error")
    if ev.code or ev.message:
        error = {"code": ev.code, "message": ev.message, **error}
    exc = from_stream_event(error, NAME, status=ev.status)
    code = error.get("code")
    if isinstance(code, str) and code:
        exc.code = code  # OpenAI's specific kind (previous_response_not_found), not its category
    raise exc


def _close_all(state: ResponsesState, out: list[LLMEvent]) -> None:
    _close_text(state, out)
    _end_reasoning(state, out)
    for tool in state.tools.values():
        tool.finish(out)
    state.tools.clear()


def _on_arguments_delta(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    calls.on_arguments_delta(state, ev.item_id, ev.delta, out)


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
    "response.custom_tool_call_input.delta": _on_arguments_delta,
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


# 6. the Protocol value and its default route ------------------------------------------------------

ResponsesProtocol: TypeAlias = Protocol[ResponsesBody | dict[str, Any], SSEEvent, ResponsesState]
"""Responses' body, frames (SSE events: the parser reads their names) and parser state."""


def make_protocol(quirks: ResponsesQuirks | None = None, name: str = NAME) -> ResponsesProtocol:
    declared = quirks or ResponsesQuirks()
    return Protocol(
        name=name,
        build_body=build_body if quirks is None else partial(build_body, quirks=declared),
        new_state=lambda _request: ResponsesState(declared),
        step=step,
        on_halt=on_halt,
        native_output_schema=True,
        whole=whole,
        tool_kinds=calls.TOOL_KINDS,
        hosted_kinds=frozenset(HOSTED_TOOLS).difference(declared.hosted_remove).union(declared.hosted_kinds),
        support=calls.SUPPORT,
    )


PROTOCOL = make_protocol()


_TRANSPORT_ONLY = ("stream", "background")


def websocket_message(body: bytes) -> bytes:
    """The HTTP body as the WebSocket mode's ``response.create`` message (no ``stream``)."""
    data: dict[str, Any] = _raw_decoder.decode(body)
    for key in _TRANSPORT_ONLY:
        data.pop(key, None)
    return msgspec.json.encode({"type": "response.create", **data})


def route(
    endpoint: Endpoint | str,
    auth: Auth,
    *,
    name: str = NAME,
    quirks: ResponsesQuirks | None = None,
    **changes: Any,
) -> Route:
    """A Responses route; a str ``endpoint`` is a base URL (``.../v1``, ``/responses`` is appended)."""
    return Route(
        name=name,
        protocol=PROTOCOL if quirks is None else make_protocol(quirks),
        endpoint=Endpoint(endpoint, "/responses") if isinstance(endpoint, str) else endpoint,
        auth=auth,
        framing=SSEFraming(),
        **changes,
    )
