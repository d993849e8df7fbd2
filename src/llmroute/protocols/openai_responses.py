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

Output items that call a tool: ``function_call``, ``custom_tool_call`` and the built-ins the client
runs (``CLIENT_ITEMS``: ``local_shell_call``, ``computer_call``, ``shell_call``, ``apply_patch_call``,
client ``tool_search_call``) are ``tool-call`` events for the caller (``provider_metadata["openai"]
["item_type"]`` says which, so history and results lower back as the same items); ``HOSTED_ITEMS``,
a ``shell_call`` run in the server's container and a server ``tool_search_call`` are hosted calls
whose results are the item itself or its ``*_output`` item. ``mcp_approval_request`` is an
``approval-request`` event. Unknown event types are skipped (also when their fields have shapes of
their own); items that carry no call are kept raw in the step metadata (``other_items``).

Non-streamed (``stream=False``, HTTP only: the WebSocket mode always streams), the Response
object is replayed through the stream handlers: each output item as added + done (reasoning
summaries and ``reasoning_text`` as their blocks' text), then the terminal status.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, cast

import msgspec

from ..framing.sse import SSEEvent, SSEFraming
from ..hosted import SearchResult, search_result
from ..route.auth import Auth
from ..route.classify import from_stream_event
from ..route.decoding import DECODE_ERRORS
from ..route.endpoint import Endpoint
from ..route.model import Model, Route
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
    ApprovalRequest,
    Citation,
    FinishReason,
    LLMEvent,
    Media,
    ReasoningDelta,
    TextDelta,
    ToolResult,
)
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
    result_text,
    with_options,
)
from ._websearch import hit_pairs, search_from_citations

__all__ = [
    "HOSTED_ITEMS",
    "CLIENT_ITEMS",
    "PROTOCOL",
    "ResponsesBody",
    "ResponsesQuirks",
    "TOOL_KINDS",
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


class ResponsesQuirks(msgspec.Struct, frozen=True):
    """Declared differences between Responses servers. ``hosted_custom_tools``: ``custom_tool_call``
    (and ``x_search_call``) items are the server's own tools, already run (xAI's x_search and
    friends), not freeform tools handed to the client (OpenAI). ``hosted_kinds``: the server's own
    hosted tool kinds beyond OpenAI's (xAI ``x_search``)."""

    hosted_custom_tools: bool = False
    hosted_kinds: tuple[str, ...] = ()  # more hosted tool kinds, sent as ``{"type": kind, **options}``


_NO_QUIRKS = ResponsesQuirks()


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
_item_decoder = msgspec.json.Decoder(_Item)
_annotation_decoder = msgspec.json.Decoder(_Annotation)
_response_decoder = msgspec.json.Decoder(_Response)
_part_added_decoder = msgspec.json.Decoder(_PartAdded)
_raw_decoder = msgspec.json.Decoder(dict[str, Any])


# 3. parser state --------------------------------------------------------------------------------


class ResponsesState(StreamState):
    __slots__ = (
        "awaiting",
        "blocks",
        "called",
        "cited",
        "cited_urls",
        "client_calls",
        "item_ids",
        "phases",
        "quirks",
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
        self.tools: dict[str, ToolInput] = {}  # item id -> streamed call
        # output index -> the id its item was added with: some servers give every event a new
        # item id, so parts are matched by position
        self.item_ids: dict[int, str] = {}
        self.cited: set[tuple[str, str, str | None, int | None, int | None]] = set()
        self.client_calls = 0
        self.called: set[str] = set()  # item ids of the calls already completed
        # hosted calls whose result is a later output item: call id -> (item id, tool name)
        self.awaiting: dict[str | None, tuple[str, str]] = {}
        self.quirks = quirks
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
    # call id -> the output item type of a client built-in call, so its result answers in kind
    answers = {
        p.id: _CLIENT_OUTPUT[kind]
        for m in request.messages
        if m.role == "assistant"
        for p in m.content
        if isinstance(p, ToolCallPart)
        and (kind := ns(p.provider_metadata, _OPENAI).get("item_type")) in _CLIENT_OUTPUT
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
                items.append(_builtin_output(answers[part.id], part))
            elif not part.provider_executed:
                items.append(_FunctionCallOutputItem(call_id=part.id, output=_tool_output(part)))
        elif isinstance(part, TextPart | MediaPart):
            content.append(_user_content(part))
        elif isinstance(part, ApprovalResponsePart):
            if content:
                items.append(_MessageItem(role="user", content=content))
                content = []
            answer: dict[str, Any] = {
                "type": "mcp_approval_response",
                "approval_request_id": part.request_id,
                "approve": part.approve,
            }
            if part.reason is not None:
                answer["reason"] = part.reason
            items.append(answer)
        else:
            raise InvalidRequestError(f"{NAME}: a {message.role} message cannot hold a {type(part).__name__}")
    if content:
        items.append(_MessageItem(role="user", content=content))


# client built-in call item type -> the item type that answers it
_CLIENT_OUTPUT = {
    "custom_tool_call": "custom_tool_call_output",
    "local_shell_call": "local_shell_call_output",
    "computer_call": "computer_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "tool_search_call": "tool_search_output",
}


def _builtin_output(kind: str, part: ToolResultPart) -> dict[str, Any]:
    """The caller's result for a built-in call, in the shape its output item takes: text where
    the API takes text; a value already in the API's shape (a list, an object) passes as is."""
    result = part.result
    item: dict[str, Any] = {"type": kind, "call_id": part.id}
    if kind == "shell_call_output":
        item["output"] = (
            result
            if isinstance(result, list)
            else [
                {
                    "stdout": result_text(result),
                    "stderr": "",
                    "outcome": {"type": "exit", "exit_code": 1 if part.is_error else 0},
                }
            ]
        )
    elif kind == "computer_call_output":
        media = content_parts(result)
        screenshot = next((p for p in media or () if isinstance(p, MediaPart)), None)
        item["output"] = (
            {"type": "computer_screenshot", "image_url": data_url(screenshot)}
            if screenshot is not None
            else result
        )
    elif kind == "apply_patch_call_output":
        item["status"] = "failed" if part.is_error else "completed"
        if result not in (None, ""):
            item["output"] = result_text(result)
    elif kind == "tool_search_output":
        item.update(execution="client", status="completed", tools=result if isinstance(result, list) else [])
    else:  # custom_tool_call_output, local_shell_call_output: text
        item["output"] = result_text(result)
    return item


def _builtin_call(part: ToolCallPart, kind: str) -> dict[str, Any]:
    """A client built-in call from the history, as the item the API produced."""
    meta = ns(part.provider_metadata, _OPENAI)
    item: dict[str, Any] = {"type": kind, "call_id": part.id}
    if kind == "custom_tool_call":
        item.update(
            name=part.name, input=part.input if isinstance(part.input, str) else json_arguments(part.input)
        )
        return item
    if meta.get("item_id"):
        item["id"] = meta["item_id"]
    item[CLIENT_ITEMS[kind][1]] = part.input
    item["status"] = "completed"
    if kind == "tool_search_call":
        item["execution"] = "client"
    elif kind == "computer_call":
        item["pending_safety_checks"] = []
    return item


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
                kind = ns(part.provider_metadata, _OPENAI).get("item_type")
                if kind in _CLIENT_OUTPUT:
                    items.append(_builtin_call(part, kind))
                else:
                    items.append(
                        _FunctionCallItem(
                            call_id=part.id, name=part.name, arguments=json_arguments(part.input)
                        )
                    )
                continue
            item = _hosted_item(part)
            if item is not None:
                hosted[part.id] = item
                items.append(item)
        elif isinstance(part, ApprovalRequestPart):
            items.append(
                {
                    "type": "mcp_approval_request",
                    "id": part.id,
                    "server_label": ns(part.provider_metadata, _OPENAI).get("server_label"),
                    "name": part.name,
                    "arguments": json_arguments(part.input),
                }
            )
        elif isinstance(part, ToolResultPart) and part.provider_executed:
            item = hosted.get(part.id)
            if item is not None and item["type"] in _SERVER_RUN:  # the result is an item of its own
                items.append(_server_run_output(item, part))
            elif item is not None:
                _hosted_result(item, part)
    if not keep_unencrypted_reasoning:
        # Without ``store``, a reasoning item the server cannot decrypt is a dangling reference.
        items[:] = [i for i in items if not (isinstance(i, _ReasoningItem) and i.encrypted_content is None)]


# server-run built-ins: the call and its output are separate items, matched by ``call_id``
_SERVER_RUN = ("shell_call", "tool_search_call")


def _server_run_output(call: dict[str, Any], part: ToolResultPart) -> dict[str, Any]:
    """The output item of a server-run shell or tool search, rebuilt from its result (the item's
    own fields) and the ids the parser kept."""
    meta = ns(part.provider_metadata, _OPENAI)
    value: Any = part.result
    result = cast("dict[str, Any]", value) if isinstance(value, dict) else {}
    return {"type": meta.get("item_type"), "id": meta.get("item_id"), "call_id": call["call_id"], **result}


def _hosted_item(part: ToolCallPart) -> dict[str, Any] | None:
    meta = ns(part.provider_metadata, _OPENAI)
    item_type = meta.get("item_type")
    if item_type in _SERVER_RUN:
        item: dict[str, Any] = {"type": item_type, "id": part.id, "call_id": meta.get("call_id")}
        item[CLIENT_ITEMS[item_type][1]] = part.input
        item["status"] = "completed"
        if item_type == "tool_search_call":
            item["execution"] = "server"
        return item
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


def _hosted_tool(tool: HostedTool, quirks: ResponsesQuirks) -> dict[str, Any]:
    kind, opts = tool.kind, tool.options
    if kind in quirks.hosted_kinds:
        return {"type": kind, **opts}
    if kind == "web_search":
        return _web_search_tool(opts)
    if kind == "code_execution":
        return {"type": "code_interpreter", "container": {"type": "auto"}, **opts}
    if kind == "shell":  # run in OpenAI's container; the caller-run shell is a client tool
        env = dict(opts)
        container = env.pop("container_id", None)
        if container is not None:
            return {
                "type": "shell",
                "environment": {"type": "container_reference", "container_id": container},
            }
        return {"type": "shell", "environment": {"type": "container_auto", **env}}
    if kind in ("file_search", "image_generation", "mcp"):
        return {"type": kind, **opts}
    raise InvalidRequestError(f"{NAME}: hosted tool {kind!r} is not available on the Responses API")


_HOSTED_TYPE = {"code_execution": "code_interpreter"}
# ``ToolDefinition.kind`` of a client built-in -> its wire tool type
_BUILTIN_TYPE = {
    "custom": "custom",
    "shell": "shell",
    "local_shell": "local_shell",
    "apply_patch": "apply_patch",
    "computer_use": "computer_use_preview",
    "tool_search": "tool_search",
}
TOOL_KINDS = frozenset({"function", *_BUILTIN_TYPE})


def _tools(request: LLMRequest, quirks: ResponsesQuirks) -> list[_FunctionTool | dict[str, Any]] | None:
    tools: list[_FunctionTool | dict[str, Any]] = []
    for tool in request.tools:
        if isinstance(tool, HostedTool):
            tools.append(_hosted_tool(tool, quirks))
        elif tool.kind == "function":
            tools.append(_function_tool(tool))
        else:
            tools.append(_builtin_tool(tool))
    return tools or None


def _builtin_tool(tool: ToolDefinition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": _BUILTIN_TYPE[tool.kind]}
    if tool.kind == "custom":
        out["name"] = tool.name
        if tool.description:
            out["description"] = tool.description
    elif tool.kind == "tool_search":
        out["execution"] = "client"
        if tool.description:
            out["description"] = tool.description
    out.update(tool.options or {})
    return out


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
        if isinstance(tool, ToolDefinition) and tool.name == choice.name and tool.kind != "function":
            wire = _BUILTIN_TYPE[tool.kind]
            return {"type": wire, "name": tool.name} if tool.kind == "custom" else {"type": wire}
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


def build_body(
    request: LLMRequest, model: Model, quirks: ResponsesQuirks = _NO_QUIRKS
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
        tools=_tools(request, quirks),
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
}
# Client-executed output item type -> (tool name, ``None``: the item's own; the field holding the input).
CLIENT_ITEMS: dict[str, tuple[str | None, str]] = {
    "function_call": (None, "arguments"),
    "custom_tool_call": (None, "input"),
    "local_shell_call": ("local_shell", "action"),
    "computer_call": ("computer_use", "action"),
    "shell_call": ("shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
    "tool_search_call": ("tool_search", "arguments"),
}
# on servers whose custom tools are their own (``ResponsesQuirks.hosted_custom_tools``): hosted calls
_SERVER_CUSTOM = ("custom_tool_call", "x_search_call")
# the output items of hosted calls outside ``HOSTED_ITEMS``, matched to their call by ``call_id``
_OUTPUT_ITEMS = frozenset(("shell_call_output", "tool_search_output"))
# item types with a handler: a bad shape there is an error, elsewhere the item is kept raw
_KNOWN_ITEMS = frozenset(
    {
        "message",
        "reasoning",
        "mcp_approval_request",
        *HOSTED_ITEMS,
        *CLIENT_ITEMS,
        *_OUTPUT_ITEMS,
        *_SERVER_CUSTOM,
    }
)


def _decode_event(data: bytes) -> _Event | None:
    """One event; ``None`` for an event type this parser does not know whose fields have shapes
    of their own (skipped, as unknown types are). A known type with a bad shape is a typed error."""
    try:
        return _event_decoder.decode(data)
    except msgspec.ValidationError:
        kind = decode_frame(_type_decoder, data, "openai-responses event").type
        if kind in _HANDLERS or kind in _STREAMED:
            decode_frame(_event_decoder, data, "openai-responses event")  # raises, typed, with the frame
        return None
    except DECODE_ERRORS:  # the slow path reports the raw frame (and retries invalid UTF-8)
        return decode_frame(_event_decoder, data, "openai-responses event")


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
    items = decode_frame(_whole_decoder, body, "openai-responses response").output or []
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


def _decode_item(raw: msgspec.Raw) -> _Item | None:
    """One output item; ``None`` for a type this parser does not know whose fields have shapes of
    their own. A known type with a bad shape is a typed error."""
    try:
        return _item_decoder.decode(raw)
    except msgspec.ValidationError:
        kind = decode_frame(_type_decoder, raw, "openai-responses item").type
        if kind in _KNOWN_ITEMS:
            decode_frame(_item_decoder, raw, "openai-responses item")  # raises, typed, with the item
        return None
    except DECODE_ERRORS:
        return decode_frame(_item_decoder, raw, "openai-responses item")


def _on_item_added(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    item = _decode_item(ev.item)
    if item is None:
        return
    if ev.output_index >= 0:
        state.item_ids[ev.output_index] = item.id
    kind = item.type
    if kind == "message":
        if item.phase:
            state.phases[item.id] = item.phase
    else:
        role = _role(state, item)
        if role is None or (kind not in _STREAMED_INPUT and kind not in HOSTED_ITEMS):
            # no call, or one whose input (and final call id) only the done item carries
            return
        _close_text(state, out)
        _end_reasoning(state, out)
        tool = state.tools[item.id] = _tool_input(item, role, out)
        if isinstance(item.arguments, str) and item.arguments:
            tool.delta(item.arguments, out)


def _role(state: ResponsesState, item: _Item) -> str | None:
    """Who runs an output item's call: ``"client"`` (handed to the caller), ``"hosted"`` (the server
    ran it), ``None`` for items that carry no call."""
    kind = item.type
    if kind in HOSTED_ITEMS:
        return "hosted"
    if kind == "shell_call" and str((item.environment or {}).get("type", "")).startswith("container"):
        return "hosted"  # ran in the server's container; its shell_call_output follows
    if kind == "tool_search_call" and item.execution != "client":
        return "hosted"
    if kind in _SERVER_CUSTOM and state.quirks.hosted_custom_tools:
        return "hosted"
    return "client" if kind in CLIENT_ITEMS else None


_STREAMED_INPUT = ("function_call", "custom_tool_call")  # their input streams as deltas


def _tool_name(item: _Item) -> str:
    spec = HOSTED_ITEMS.get(item.type) or CLIENT_ITEMS.get(item.type)
    return (spec[0] if spec else None) or item.name or ""


def _tool_input(item: _Item, role: str, out: list[LLMEvent]) -> ToolInput:
    if role == "hosted":
        meta: dict[str, Any] = {"item_type": item.type}
        if item.call_id is not None:
            meta["call_id"] = item.call_id  # the output item answers it by this id
        return ToolInput(item.id, _tool_name(item), out, provider_executed=True, metadata={_OPENAI: meta})
    meta = (
        {"item_id": item.id} if item.type == "function_call" else {"item_id": item.id, "item_type": item.type}
    )
    return ToolInput(item.call_id or item.id, _tool_name(item), out, metadata={_OPENAI: meta})


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
    item = _decode_item(ev.item)
    if item is None:
        _keep_other(state, ev.item)
        return
    item.id = state.item_ids.get(ev.output_index, item.id)
    kind = item.type
    if kind == "message":
        _on_message_done(state, item, out)
    elif kind == "reasoning":
        _close_text(state, out)
        if state.reasoning_item != item.id:
            _open_reasoning(state, item.id, 0, out)  # no summary: the block still carries the item
        _end_reasoning(state, out, item)
    elif kind in HOSTED_ITEMS:
        _on_hosted_done(state, kind, item.id, ev.item, out)
    elif kind in _OUTPUT_ITEMS:
        _on_output_done(state, item, ev.item, out)
    elif kind == "mcp_approval_request":
        _close_text(state, out)
        _end_reasoning(state, out)
        arguments = parse_tool_input(item.arguments) if isinstance(item.arguments, str) else item.arguments
        meta = {"item_type": kind, "server_label": item.server_label}
        out.append(ApprovalRequest(item.id, item.name or "", arguments, {_OPENAI: meta}))
        state.client_calls += 1  # the caller has to answer before the call runs: a tool-calls finish
    else:
        role = _role(state, item)
        if role is not None:
            _on_call_done(state, item, role, ev.item, out)
        else:  # compaction, program, a type this parser does not know: kept raw, never fatal
            _keep_other(state, ev.item)


def _keep_other(state: ResponsesState, raw: msgspec.Raw) -> None:
    if state.metadata is None:
        state.metadata = {}
    state.metadata.setdefault("other_items", []).append(
        decode_frame(_raw_decoder, raw, "openai-responses item")
    )


def _first_done(state: ResponsesState, item_id: str) -> bool:
    """A call item completes once: a repeated ``done`` (a proxy replaying events) is dropped, since
    yielding it again would run a tool twice."""
    if item_id in state.called:
        return False
    state.called.add(item_id)
    return True


def _on_call_done(
    state: ResponsesState, item: _Item, role: str, raw: msgspec.Raw, out: list[LLMEvent]
) -> None:
    """A client call (function, custom, or a built-in the client runs), or a hosted call outside
    ``HOSTED_ITEMS`` (server shell, server tool search, xAI's server-side tools)."""
    if not _first_done(state, item.id):
        return
    tool = state.tools.pop(item.id, None) or _tool_input(item, role, out)
    kind = item.type
    if kind == "function_call":
        tool.finish(out, raw=item.arguments if isinstance(item.arguments, str) else None)
    elif kind == "custom_tool_call" and role == "client":
        tool.finish(out, input=item.input or "")  # freeform text, never parsed
    elif kind in _SERVER_CUSTOM:
        tool.finish(out, raw=item.input if item.input is not None else json_arguments(item.arguments or {}))
        state.searched = True  # xAI's x_search family: its citations need no synthesised web_search
    else:
        field = CLIENT_ITEMS[kind][1]
        tool.finish(out, input=decode_frame(_raw_decoder, raw, "openai-responses item").get(field))
    if role == "client":
        state.client_calls += 1
    elif kind not in _SERVER_CUSTOM:  # xAI sends no output item for its server-side tools
        state.awaiting[item.call_id] = (item.id, tool.name)


def _on_output_done(state: ResponsesState, item: _Item, raw: msgspec.Raw, out: list[LLMEvent]) -> None:
    """The output item of a hosted call made earlier in this response: its result."""
    call = state.awaiting.pop(item.call_id, None)
    if call is None:
        return  # the output of a client call sent back in the input
    data = decode_frame(_raw_decoder, raw, "openai-responses item")
    result = {k: v for k, v in data.items() if k not in ("type", "id", "call_id")}
    meta = {"item_type": item.type, "item_id": item.id}
    out.append(
        ToolResult(call[0], call[1], result, item.status in ("failed", "incomplete"), True, {_OPENAI: meta})
    )


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
    if not _first_done(state, item_id):
        return
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
    tool = state.tools.pop(item_id, None) or ToolInput(
        item_id, HOSTED_ITEMS[kind][0], out, provider_executed=True, metadata={_OPENAI: {"item_type": kind}}
    )
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
        raise from_stream_event(response.error or {"message": "response failed"}, NAME)
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
        state.reason = "tool-calls" if state.client_calls else "stop"
    state.done = True


def _on_error(state: ResponsesState, ev: _Event, out: list[LLMEvent]) -> None:
    error: dict[str, Any] = {}
    if ev.error:
        error = decode_frame(_raw_decoder, ev.error, "openai-responses error")
    if ev.code or ev.message:
        error = {"code": ev.code, "message": ev.message, **error}
    raise from_stream_event(error, NAME, status=ev.status)


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


# 6. the Protocol value and its default route ---------------------------------------------------


def make_protocol(quirks: ResponsesQuirks | None = None, name: str = NAME) -> Protocol:
    declared = quirks or ResponsesQuirks()
    return Protocol(
        name=name,
        build_body=build_body if quirks is None else partial(build_body, quirks=declared),
        new_state=lambda _request: ResponsesState(declared),
        step=step,
        on_halt=on_halt,
        native_output_schema=True,
        whole=whole,
        tool_kinds=TOOL_KINDS,
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
    base_url: str, auth: Auth, *, name: str = NAME, quirks: ResponsesQuirks | None = None, **changes: Any
) -> Route:
    return Route(
        name=name,
        protocol=PROTOCOL if quirks is None else make_protocol(quirks),
        endpoint=Endpoint(base_url, "/responses"),
        auth=auth,
        framing=SSEFraming(),
        **changes,
    )
