"""The OpenAI Responses API's tool-call items (beyond function calls) and citations, both ways.

Output items that call a tool: ``function_call``, ``custom_tool_call`` and the built-ins the client
runs (``CLIENT_ITEMS``: ``local_shell_call``, ``computer_call``, ``shell_call``, ``apply_patch_call``,
client ``tool_search_call``) are ``tool-call`` events for the caller (``provider_metadata["openai"]
["item_type"]`` says which, so history and results lower back as the same items); the hosted items
(``HOSTED_FIELDS``), a ``shell_call`` run in the server's container and a server
``tool_search_call`` are hosted calls whose results are the item itself or its ``*_output`` item.

Here: the item tables; the hosted and built-in tool declarations (``lower_*``, the entries of
``openai_responses.HOSTED_TOOLS``) and ``tool_choice``; the history items that send calls, results and
MCP approvals back; the handlers reading each call item from the stream (the hosted ones are the
entries of ``openai_responses.HOSTED_ITEMS``); annotations as citations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import msgspec

from ..hosted import SearchResult, search_result
from ..route.support import AUTO_CACHE, Support, hosted_parts, no_field
from ..schema.content import (
    ApprovalRequestPart,
    ApprovalResponsePart,
    MediaPart,
    Part,
    ReasoningPart,
    ToolCallPart,
    ToolResultPart,
)
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.events import ApprovalRequest, Citation, LLMEvent, Media, ToolResult
from ..schema.mime import sniff_base64
from ..schema.request import LLMRequest
from ..schema.tools import HostedTool, ToolDefinition
from ._offsets import utf16_to_index
from ._shared import (
    ToolInput,
    content_parts,
    data_url,
    decode_frame,
    json_arguments,
    ns,
    parse_tool_input,
    result_text,
)
from ._strict import strict_compatible
from ._websearch import hit_pairs

if TYPE_CHECKING:
    from .openai_responses.state import ResponsesState
    from .openai_responses.wire import Annotation, OutputItem

__all__ = [
    "SUPPORT",
    "function_strict",
    "text_format",
    "BUILTIN_TYPE",
    "CLIENT_ITEMS",
    "CLIENT_OUTPUT",
    "HOSTED_FIELDS",
    "KNOWN_ITEMS",
    "OUTPUT_ITEMS",
    "SERVER_CUSTOM",
    "SERVER_RUN",
    "TOOL_KINDS",
    "approval_request_item",
    "approval_response_item",
    "auto_include",
    "builtin_call",
    "builtin_output",
    "call_item",
    "call_role",
    "citation_span",
    "cite",
    "first_done",
    "forced_tool",
    "generated_image",
    "hosted_item",
    "hosted_result",
    "lower_as_named",
    "lower_builtin_tool",
    "lower_code_execution",
    "lower_shell",
    "lower_web_search",
    "on_approval_request",
    "on_arguments_delta",
    "on_call_done",
    "on_hosted_call",
    "on_image_generation_call",
    "on_mcp_call",
    "on_output_done",
    "on_web_search_call",
    "search_result_of",
    "server_run_output",
    "tool_input",
]

OPENAI = "openai"  # the provider_metadata namespace
_NAME = "openai-responses"  # ``openai_responses.NAME`` (that module imports this one)
_raw_decoder = msgspec.json.Decoder(dict[str, Any])


# -- item tables -----------------------------------------------------------------------------------

# Hosted output item type -> (tool name, tool-call input keys, tool-result keys).
HOSTED_FIELDS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
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
SERVER_CUSTOM = ("custom_tool_call", "x_search_call")
# the output items of hosted calls outside ``HOSTED_FIELDS``, matched to their call by ``call_id``
OUTPUT_ITEMS = frozenset(("shell_call_output", "tool_search_output"))
# item types with a handler: a bad shape there is an error, elsewhere the item is kept raw
KNOWN_ITEMS = frozenset(
    {
        "message",
        "reasoning",
        "mcp_approval_request",
        *HOSTED_FIELDS,
        *CLIENT_ITEMS,
        *OUTPUT_ITEMS,
        *SERVER_CUSTOM,
    }
)
# client built-in call item type -> the item type that answers it
CLIENT_OUTPUT = {
    "custom_tool_call": "custom_tool_call_output",
    "local_shell_call": "local_shell_call_output",
    "computer_call": "computer_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "tool_search_call": "tool_search_output",
}
# server-run built-ins: the call and its output are separate items, matched by ``call_id``
SERVER_RUN = ("shell_call", "tool_search_call")
# ``ToolDefinition.kind`` of a client built-in -> its wire tool type
BUILTIN_TYPE = {
    "custom": "custom",
    "shell": "shell",
    "local_shell": "local_shell",
    "apply_patch": "apply_patch",
    "computer_use": "computer_use_preview",
    "tool_search": "tool_search",
}
_HOSTED_TYPE = {"code_execution": "code_interpreter"}  # hosted kinds whose wire type differs
TOOL_KINDS = frozenset({"function", *BUILTIN_TYPE})


# -- lowering: tool declarations and history items -------------------------------------------------


def lower_builtin_tool(tool: ToolDefinition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": BUILTIN_TYPE[tool.kind]}
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


def client_kind(part: ToolCallPart, custom: frozenset[str]) -> str | None:
    """The built-in item type of a client call from the history: as the parser marked it, or
    ``custom_tool_call`` when the request declares a custom tool of that name (a history written by
    hand carries no marks); ``None`` for a function call."""
    if part.provider_executed:
        return None
    kind = ns(part.provider_metadata, OPENAI).get("item_type")
    if kind in CLIENT_OUTPUT:
        return kind
    return "custom_tool_call" if part.name in custom else None


def call_item(
    part: ToolCallPart, hosted: dict[str, dict[str, Any]], custom: frozenset[str] = frozenset()
) -> dict[str, Any] | None:
    """A call from the history as the item the API produced, for all but function calls (``None``,
    as for a hosted call that cannot be replayed); hosted items are kept in ``hosted`` by id, where
    their results find them. ``custom``: the request's custom tool names."""
    if not part.provider_executed:
        kind = client_kind(part, custom)
        return builtin_call(part, kind) if kind is not None else None
    item = hosted_item(part)
    if item is not None:
        hosted[part.id] = item
    return item


def forced_tool(tool: ToolDefinition | HostedTool, name: str | None) -> dict[str, Any] | None:
    """``tool_choice`` forcing ``tool`` when it is the hosted or built-in tool ``name``."""
    if isinstance(tool, HostedTool) and tool.kind == name:
        return {"type": _HOSTED_TYPE.get(tool.kind, tool.kind)}
    if isinstance(tool, ToolDefinition) and tool.name == name and tool.kind != "function":
        wire = BUILTIN_TYPE[tool.kind]
        return {"type": wire, "name": tool.name} if tool.kind == "custom" else {"type": wire}
    return None


def auto_include(request: LLMRequest, include: list[str], store: Any, reasoning: dict[str, Any]) -> None:
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


def builtin_output(kind: str, part: ToolResultPart) -> dict[str, Any]:
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


def builtin_call(part: ToolCallPart, kind: str) -> dict[str, Any]:
    """A client built-in call from the history, as the item the API produced."""
    meta = ns(part.provider_metadata, OPENAI)
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


def server_run_output(call: dict[str, Any], part: ToolResultPart) -> dict[str, Any]:
    """The output item of a server-run shell or tool search, rebuilt from its result (the item's
    own fields) and the ids the parser kept."""
    meta = ns(part.provider_metadata, OPENAI)
    value: Any = part.result
    result = cast("dict[str, Any]", value) if isinstance(value, dict) else {}
    return {"type": meta.get("item_type"), "id": meta.get("item_id"), "call_id": call["call_id"], **result}


def hosted_item(part: ToolCallPart) -> dict[str, Any] | None:
    meta = ns(part.provider_metadata, OPENAI)
    item_type = meta.get("item_type")
    if item_type in SERVER_RUN:
        item: dict[str, Any] = {"type": item_type, "id": part.id, "call_id": meta.get("call_id")}
        item[CLIENT_ITEMS[item_type][1]] = part.input
        item["status"] = "completed"
        if item_type == "tool_search_call":
            item["execution"] = "server"
        return item
    spec = HOSTED_FIELDS.get(item_type) if isinstance(item_type, str) else None
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


def hosted_result(item: dict[str, Any] | None, part: ToolResultPart) -> dict[str, Any] | None:
    """A hosted result from the history, given its call's item (``None``: not replayable): the
    output item of a server-run call (``SERVER_RUN``), else merged into the call's own item."""
    if item is None:
        return None
    if item["type"] in SERVER_RUN:
        return server_run_output(item, part)
    result = part.result
    if item["type"] == "web_search_call":  # the canonical result; the item's own fields are in metadata
        status = ns(part.provider_metadata, OPENAI).get("status")
        if isinstance(status, str):
            item["status"] = status
    elif isinstance(result, dict):
        for key in HOSTED_FIELDS[item["type"]][2]:
            if key in result:
                item[key] = result[key]
    return None


def approval_request_item(part: ApprovalRequestPart) -> dict[str, Any]:
    return {
        "type": "mcp_approval_request",
        "id": part.id,
        "server_label": ns(part.provider_metadata, OPENAI).get("server_label"),
        "name": part.name,
        "arguments": json_arguments(part.input),
    }


def approval_response_item(part: ApprovalResponsePart) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "type": "mcp_approval_response",
        "approval_request_id": part.request_id,
        "approve": part.approve,
    }
    if part.reason is not None:
        answer["reason"] = part.reason
    return answer


def lower_web_search(tool: HostedTool) -> dict[str, Any]:
    opts = dict(tool.options)
    opts.pop("max_uses", None)  # no per-tool budget on this API (see ``max_tool_calls``)
    if opts.pop("blocked_domains", None):
        raise InvalidRequestError(f"{_NAME}: web_search has no blocked_domains; use allowed_domains")
    out: dict[str, Any] = {"type": opts.pop("type", "web_search")}
    allowed = opts.pop("allowed_domains", None)
    if allowed:
        filters = dict(opts.pop("filters", None) or {})
        filters["allowed_domains"] = list(allowed)
        out["filters"] = filters
    location = opts.pop("user_location", None)
    if location:
        out["user_location"] = location if "type" in location else {"type": "approximate", **location}
    out.update(opts)
    return out


def lower_code_execution(tool: HostedTool) -> dict[str, Any]:
    return {"type": "code_interpreter", "container": {"type": "auto"}, **tool.options}


def lower_shell(tool: HostedTool) -> dict[str, Any]:
    """Run in OpenAI's container; the caller-run shell is a client tool (``ToolDefinition``)."""
    env = dict(tool.options)
    container = env.pop("container_id", None)
    if container is not None:
        return {"type": "shell", "environment": {"type": "container_reference", "container_id": container}}
    return {"type": "shell", "environment": {"type": "container_auto", **env}}


def lower_as_named(tool: HostedTool) -> dict[str, Any]:
    """A hosted tool whose wire type is its kind, options as given (file search, MCP, ...)."""
    return {"type": tool.kind, **tool.options}


# -- the call items in the stream ------------------------------------------------------------------


def call_role(state: ResponsesState, item: OutputItem) -> str | None:
    """Who runs an output item's call: ``"client"`` (handed to the caller), ``"hosted"`` (the server
    ran it), ``None`` for items that carry no call."""
    kind = item.type
    if kind in HOSTED_FIELDS:
        return "hosted"
    if kind == "shell_call" and str((item.environment or {}).get("type", "")).startswith("container"):
        return "hosted"  # ran in the server's container; its shell_call_output follows
    if kind == "tool_search_call" and item.execution != "client":
        return "hosted"
    if kind in SERVER_CUSTOM and state.quirks.hosted_custom_tools:
        return "hosted"
    return "client" if kind in CLIENT_ITEMS else None


def _tool_name(item: OutputItem) -> str:
    spec = HOSTED_FIELDS.get(item.type) or CLIENT_ITEMS.get(item.type)
    return (spec[0] if spec else None) or item.name or ""


def tool_input(state: ResponsesState, item: OutputItem, role: str, out: list[LLMEvent]) -> ToolInput:
    """The call an output item opens; a second item under a call id already used is refused (the
    caller could answer only one of them)."""
    call_id = item.id if role == "hosted" else item.call_id or item.id
    if call_id in state.call_ids:
        raise InvalidProviderOutputError(f"{_NAME}: call id {call_id!r} repeated")
    state.call_ids.add(call_id)
    if role == "hosted":
        meta: dict[str, Any] = {"item_type": item.type}
        if item.call_id is not None:
            meta["call_id"] = item.call_id  # the output item answers it by this id
        return ToolInput(item.id, _tool_name(item), out, provider_executed=True, metadata={OPENAI: meta})
    meta = (
        {"item_id": item.id} if item.type == "function_call" else {"item_id": item.id, "item_type": item.type}
    )
    return ToolInput(call_id, _tool_name(item), out, metadata={OPENAI: meta})


def first_done(state: ResponsesState, item_id: str) -> bool:
    """A call item completes once: a repeated ``done`` (a proxy replaying events) is dropped, since
    yielding it again would run a tool twice."""
    if item_id in state.called:
        return False
    state.called.add(item_id)
    return True


def on_arguments_delta(
    state: ResponsesState, item_id: str | None, delta: str | None, out: list[LLMEvent]
) -> None:
    """A piece of a streamed call's input (function arguments, custom tool text). One for an item
    never added has no call to go to; one after the item's done is a replay, dropped as the done is."""
    tool = state.tools.get(item_id or "")
    if tool is not None and delta:
        tool.delta(delta, out)
    elif delta and item_id not in state.added and item_id not in state.called:
        raise InvalidProviderOutputError(f"{_NAME}: arguments for item {item_id!r}, which was never added")


def on_call_done(
    state: ResponsesState, item: OutputItem, role: str, raw: msgspec.Raw, out: list[LLMEvent]
) -> None:
    """A client call (function, custom, or a built-in the client runs), or a hosted call outside
    ``HOSTED_FIELDS`` (server shell, server tool search, xAI's server-side tools)."""
    if not first_done(state, item.id):
        return
    tool = state.tools.pop(item.id, None) or tool_input(state, item, role, out)
    kind = item.type
    if kind == "function_call":
        tool.finish(out, raw=item.arguments if isinstance(item.arguments, str) else None)
    elif kind == "custom_tool_call" and role == "client":
        tool.finish(out, input=item.input or "")  # freeform text, never parsed
    elif kind in SERVER_CUSTOM:
        tool.finish(out, raw=item.input if item.input is not None else json_arguments(item.arguments or {}))
        count_billed(state, kind)
        state.searched = True  # xAI's x_search family: its citations need no synthesised web_search
    else:
        field = CLIENT_ITEMS[kind][1]
        tool.finish(out, input=decode_frame(_raw_decoder, raw, f"{_NAME} item").get(field))
    if role == "client":
        state.client_calls += 1
    elif kind not in SERVER_CUSTOM:  # xAI sends no output item for its server-side tools
        state.awaiting[item.call_id] = (item.id, tool.name)


def on_output_done(state: ResponsesState, item: OutputItem, raw: msgspec.Raw, out: list[LLMEvent]) -> None:
    """The output item of a hosted call made earlier in this response: its result."""
    call = state.awaiting.pop(item.call_id, None)
    if call is None:
        return  # the output of a client call sent back in the input
    data = decode_frame(_raw_decoder, raw, f"{_NAME} item")
    result = {k: v for k, v in data.items() if k not in ("type", "id", "call_id")}
    meta = {"item_type": item.type, "item_id": item.id}
    out.append(
        ToolResult(call[0], call[1], result, item.status in ("failed", "incomplete"), True, {OPENAI: meta})
    )


def on_approval_request(state: ResponsesState, item: OutputItem, out: list[LLMEvent]) -> None:
    """``mcp_approval_request``: the caller answers before the call runs (a tool-calls finish)."""
    arguments = parse_tool_input(item.arguments) if isinstance(item.arguments, str) else item.arguments
    meta = {"item_type": item.type, "server_label": item.server_label}
    out.append(ApprovalRequest(item.id, item.name or "", arguments, {OPENAI: meta}))
    state.client_calls += 1


def _pick(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: data[k] for k in keys if data.get(k) is not None}


def _hosted_call(
    state: ResponsesState,
    kind: str,
    item_id: str,
    data: dict[str, Any],
    out: list[LLMEvent],
    call_input: dict[str, Any],
    result: Any,
    meta: dict[str, Any],
) -> None:
    """The hosted call and its result, both from the one done item."""
    name = HOSTED_FIELDS[kind][0]
    count_billed(state, kind)
    tool = state.tools.pop(item_id, None) or ToolInput(
        item_id, name, out, provider_executed=True, metadata={OPENAI: {"item_type": kind}}
    )
    tool.finish(out, input=call_input)
    is_error = data.get("status") in ("failed", "incomplete") or bool(data.get("error"))
    out.append(ToolResult(item_id, name, result, is_error, True, {OPENAI: meta}))


def count_billed(state: ResponsesState, item_type: str) -> None:
    """One more call of a hosted tool the server bills per call (``ResponsesQuirks.billed_items``)."""
    for billed, kind in state.quirks.billed_items:
        if billed == item_type:
            state.billed[kind] = state.billed.get(kind, 0) + 1


def on_hosted_call(
    state: ResponsesState, kind: str, item_id: str, data: dict[str, Any], out: list[LLMEvent]
) -> None:
    """A hosted item read by its ``HOSTED_FIELDS`` entry: the input keys and the result keys."""
    _, input_keys, result_keys = HOSTED_FIELDS[kind]
    _hosted_call(
        state,
        kind,
        item_id,
        data,
        out,
        _pick(data, input_keys),
        _pick(data, result_keys),
        {"item_type": kind},
    )


def on_web_search_call(
    state: ResponsesState, kind: str, item_id: str, data: dict[str, Any], out: list[LLMEvent]
) -> None:
    """The canonical ``web_search`` result; the item's ``status`` and ``action`` (its sources as
    sent) stay in the metadata, from where the lowering sends them back."""
    action: dict[str, Any] = data.get("action") or {}
    if not isinstance(cast(object, action), dict):
        raise InvalidProviderOutputError(
            f"{_NAME}: {kind} {item_id}: action is {type(action).__name__}, not an object"
        )
    meta: dict[str, Any] = {"item_type": kind}
    meta.update((k, data[k]) for k in ("status", "action") if k in data)
    state.searched = True
    if action.get("type") == "search" or state.quirks.web_search_every_call:
        state.searches += 1
    call_input = {k: v for k, v in action.items() if k != "sources"}
    _hosted_call(state, kind, item_id, data, out, call_input, search_result_of(action), meta)


def on_mcp_call(
    state: ResponsesState, kind: str, item_id: str, data: dict[str, Any], out: list[LLMEvent]
) -> None:
    _, input_keys, result_keys = HOSTED_FIELDS[kind]
    call_input = _pick(data, input_keys)
    if isinstance(call_input.get("arguments"), str):
        call_input["arguments"] = parse_tool_input(call_input["arguments"])
    _hosted_call(state, kind, item_id, data, out, call_input, _pick(data, result_keys), {"item_type": kind})


def on_image_generation_call(
    state: ResponsesState, kind: str, item_id: str, data: dict[str, Any], out: list[LLMEvent]
) -> None:
    """The call and its result, then the image itself as the ``media`` the model produced."""
    on_hosted_call(state, kind, item_id, data, out)
    image = data.get("result")
    if isinstance(image, str) and image:
        out.append(generated_image(item_id, image, data.get("output_format")))


def generated_image(item_id: str, image: str, output_format: Any) -> Media:
    """An ``image_generation_call`` result as the media the model produced: the type its bytes
    announce, else the one ``output_format`` names, else PNG (the tool's default format)."""
    named = (
        f"image/{'jpeg' if output_format == 'jpg' else output_format}"
        if isinstance(output_format, str)
        else None
    )
    mime = sniff_base64(image) or named or "image/png"
    return Media(f"{item_id}:image", mime, image, {OPENAI: {"item_id": item_id}})


def search_result_of(action: dict[str, Any]) -> SearchResult:
    """A ``web_search_call`` action -> the canonical result: ``action.sources`` (present with
    ``include: ["web_search_call.action.sources"]``) and the page an ``open_page``/``find`` action
    read; the queries from ``query``/``queries``."""
    pairs = hit_pairs(action.get("sources"))
    url = action.get("url")
    if isinstance(url, str):
        pairs.append((url, None))
    queries = action.get("queries")
    return search_result(pairs, [action.get("query"), *(queries if isinstance(queries, list) else ())])  # pyright: ignore[reportUnknownArgumentType]


# -- citations -------------------------------------------------------------------------------------


def _is_marker(segment: str, url: str) -> bool:
    return segment.startswith("([") and segment.endswith("))") and url in segment


def _plausible(segment: str, url: str) -> bool:
    return bool(segment) and (url in segment or segment[0] in "([")


def citation_span(
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
        candidates.append((utf16_to_index(text, start), utf16_to_index(text, end)))
    valid = [(s, e) for s, e in candidates if e <= len(text)]
    for test in (_is_marker, _plausible):
        for s, e in valid:
            if test(text[s:e], url):
                return s, e
    found = text.find(url)
    if found >= 0:
        return found, found + len(url)
    return None, None


def cite(state: ResponsesState, block: str, a: Annotation, out: list[LLMEvent], text: str) -> None:
    """One annotation of text block ``block`` as a ``citation`` event, once per annotation."""
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
    start, end = citation_span(text, a.start_index, a.end_index, a.url)
    cited = text[start:end] if start is not None and end is not None else None
    meta: dict[str, Any] = {"type": a.type}
    if a.file_id:
        meta["file_id"] = a.file_id
    if a.type == "url_citation":
        state.cited_urls.append((a.url, a.title))
    out.append(Citation(block, a.url, a.title or a.filename, start, end, cited, {OPENAI: meta}))


# -- structured output and strict function tools


def text_format(request: LLMRequest) -> dict[str, Any] | None:
    """``text.format``: the JSON-schema output, or ``json_object`` in JSON mode."""
    out = request.output_schema
    if out is None:
        return {"type": "json_object"} if request.json_mode else None
    fmt: dict[str, Any] = {
        "type": "json_schema",
        "name": out.name,
        "schema": out.schema,
        "strict": out.strict,
    }
    if out.description:
        fmt["description"] = out.description
    return fmt


def function_strict(tool: ToolDefinition) -> bool:
    """A function tool's ``strict``, always explicit: the caller's choice, else whether the schema is
    strict-compatible (``_strict``); ``strict=True`` on a schema strict mode cannot take is refused
    here rather than by the server."""
    compatible = strict_compatible(tool.input_schema)
    if tool.strict is None:
        return compatible
    if tool.strict and not compatible:
        raise InvalidRequestError(
            f"{_NAME}: tool {tool.name!r} asks for strict=True but its input_schema is not strict-compatible "
            "(every object needs additionalProperties: false and all its properties required; no allOf, "
            "not or if/then/else): fix the schema or pass strict=False",
            param="tools",
        )
    return tool.strict


# -- what Responses leaves out of a request (see ``route.support``)


def _replayable(part: Part) -> bool:
    """Whether the history lowering keeps a reasoning or hosted part: its own items only."""
    if isinstance(part, ReasoningPart):
        return isinstance(ns(part.provider_metadata, OPENAI).get("item_id"), str)
    if isinstance(part, ToolCallPart) and part.provider_executed:
        return hosted_item(part) is not None
    return not getattr(part, "provider_executed", False) or bool(ns(part.provider_metadata, OPENAI))


SUPPORT = Support(
    {
        **no_field("Responses", "top_k", "seed", "stop", "frequency_penalty", "presence_penalty"),
        "cache": AUTO_CACHE,
        "parts.reasoning": "Responses takes back only its own reasoning items (by id)",
        **hosted_parts(),
    },
    keeps_part=_replayable,
)
