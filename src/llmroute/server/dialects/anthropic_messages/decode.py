"""A client's Messages request -> an ``LLMRequest``: every field lowered into the library's model,
carried to an Anthropic-speaking upstream as the body field it is (``provider_options["anthropic"]``,
which only the Anthropic protocols read, so nothing Anthropic-only reaches another API), reported
(a ``RequestWarning``) where the upstream has no such thing and the answer means the same without
it, or refused by name where leaving it out would change the answer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import msgspec

from ....hosted import search_result
from ....protocols._websearch import hit_pairs
from ....schema.content import MediaPart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ....schema.errors import InvalidRequestError
from ....schema.options import CachePolicy, GenerationOptions
from ....schema.request import OutputSchema
from ....schema.tools import HostedTool, ToolChoice, ToolDefinition, ToolSpec
from ... import carry
from ...disposition import Dispositions, Lowered
from ...upstream import ANTHROPIC, Upstream
from ..conversation import Conversation, image_part
from .wire import Block, CountTokensRequest, Message, MessagesRequest, ToolIn

__all__ = ["GATEWAY_SEARCH", "NS", "lower"]

NS = "anthropic"  # provider_options / provider_metadata namespace the Anthropic protocols read
GATEWAY_SEARCH = "srvtoolu_llmroute_"  # id prefix of the gateway's own web_search calls shown to a client

# Anthropic-only request fields: sent as they are to an Anthropic-speaking upstream; elsewhere either
# reported (the answer means the same without them) or refused (it would not).
_REPORTED = {
    "metadata": "the request's end-user id is Anthropic's own attribution",
    "service_tier": "the capacity tier is Anthropic's own",
    "speed": "fast mode is Anthropic's own",
    "inference_geo": "the inference region is Anthropic's own",
    "diagnostics": "cache diagnostics are Anthropic's own",
    "context_management": "the upstream keeps the whole context (nothing is cleared)",
    "user_profile_id": "user profiles are Anthropic's own attribution",
    "workspace_id": "workspaces are Anthropic's own",
    "billing_policy": "billing policies are Anthropic's own",
    "fallback_credit_token": "fallback credit is Anthropic's own",
}
_REFUSED = {
    "container": "a code-execution container lives on Anthropic",
    "compaction": "compaction blocks are Anthropic's own",
    "fallbacks": "model fallbacks are Anthropic's own (route the gateway model instead)",
    "thread": "threads are Anthropic's own",
}
# Anthropic-defined tools the library lowers as hosted tools (kind by wire type prefix)
_HOSTED = {"web_search": "web_search", "web_fetch": "web_fetch", "code_execution": "code_execution"}
# options a hosted tool of another API has no field for: left out there, with a warning
_ANTHROPIC_ONLY_OPTIONS = ("max_uses", "allowed_callers", "defer_loading", "cache_control", "citations")


class _Context(Dispositions):
    """One request's lowering: where it goes, and what was left out on the way."""

    def __init__(self, upstream: Upstream, gateway_search: bool) -> None:
        super().__init__(upstream, ANTHROPIC, NS)
        self.anthropic = self.native
        self.gateway_search = gateway_search
        self.searches = False  # a client web_search tool the gateway's own search serves
        self.names: dict[str, str] = {}  # tool_use id -> tool name, for the results that answer them

    def only_anthropic(self, field: str, value: Any) -> None:
        self.carry(field, value, reported=_REPORTED, refused=_REFUSED)


def lower(
    payload: MessagesRequest | CountTokensRequest,
    model: Any,
    upstream: Upstream,
    *,
    gateway_search: bool = False,
) -> Lowered:
    """``gateway_search``: the gateway runs its own ``web_search``; a client's Anthropic web search
    tool is then served by it instead of the upstream's."""
    cx = _Context(upstream, gateway_search)
    conversation = Conversation(_system(payload.system), field="messages")
    for i, message in enumerate(payload.messages):
        _message(conversation, message, i, cx)
    tools = list(_tools(payload.tools or (), cx))
    choice = _tool_choice(payload, cx)
    generation, cache = _generation(payload, cx)
    schema = _output_schema(payload, cx)
    for field in ("context_management", "speed", "user_profile_id", "workspace_id"):
        cx.only_anthropic(field, getattr(payload, field))
    if payload.mcp_servers:
        tools.extend(_mcp(server, i) for i, server in enumerate(payload.mcp_servers))
    if isinstance(payload, MessagesRequest):
        if payload.metadata is not None and payload.metadata.user_id is not None:
            cx.only_anthropic("metadata", {"user_id": payload.metadata.user_id})
        for field in ("service_tier", "container", "inference_geo", "diagnostics", "compaction"):
            cx.only_anthropic(field, getattr(payload, field))
        for field in ("fallbacks", "fallback_credit_token", "billing_policy", "thread"):
            cx.only_anthropic(field, getattr(payload, field))
    request = conversation.request(
        model, tools=(), tool_choice=choice, generation=generation, output_schema=schema
    )
    return cx.lowered(msgspec.structs.replace(request, tools=tuple(tools), cache=cache), searches=cx.searches)


# -- the conversation -------------------------------------------------------------------------------


def _meta(block: Block) -> dict[str, Any] | None:
    """A block's cache breakpoint, as the Anthropic lowering reads it back."""
    return {NS: {"cache_control": block.cache_control}} if block.cache_control else None


def _system(system: str | list[Block] | None) -> list[TextPart]:
    if system is None:
        return []
    if isinstance(system, str):
        return [TextPart(system)] if system else []
    out: list[TextPart] = []
    for j, block in enumerate(system):
        if block.type != "text" or block.text is None:
            raise InvalidRequestError(f"system[{j}]: only text blocks are allowed here", param="system")
        out.append(TextPart(block.text, _meta(block)))
    return out


def _message(conversation: Conversation, message: Message, i: int, cx: _Context) -> None:
    content = message.content
    where = f"messages[{i}]"
    if message.role == "system":  # a mid-conversation system turn (per-turn-control beta)
        texts = [TextPart(content)] if isinstance(content, str) else list(_texts(content, where))
        conversation.instructions(texts)
    elif isinstance(content, str):
        conversation.add(message.role, (TextPart(content),))
    elif message.role == "user":
        _user(conversation, content, where, cx)
    else:
        _assistant(conversation, content, where, cx)


def _texts(blocks: list[Block], where: str) -> Iterable[TextPart]:
    for j, block in enumerate(blocks):
        if block.type != "text" or block.text is None:
            raise InvalidRequestError(f"{where}.content[{j}]: only text blocks are allowed here")
        yield TextPart(block.text, _meta(block))


def _user(conversation: Conversation, blocks: list[Block], where: str, cx: _Context) -> None:
    """A user turn: its text and media; each ``tool_result`` answers a call (a tool message)."""
    parts: list[Part] = []
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        if block.type == "tool_result":
            if parts:
                conversation.add("user", tuple(parts))
                parts = []
            _tool_result(conversation, block, at, cx)
        else:
            parts.append(_user_part(block, at))
    if parts:
        conversation.add("user", tuple(parts))


def _user_part(block: Block, at: str) -> Part:
    kind = block.type
    if kind == "text" and block.text is not None:
        return TextPart(block.text, _meta(block))
    if kind == "image":
        return _image(block, at)
    if kind == "document":
        return _document(block, at)
    raise InvalidRequestError(
        f"{at}: a {kind!r} block is not accepted in a user turn here "
        "(text, image, document and tool_result are)",
        param=at,
    )


def _source(block: Block, at: str) -> dict[str, Any]:
    source = block.source
    if not isinstance(source, dict) or not isinstance(source.get("type"), str):  # pyright: ignore[reportUnknownMemberType]
        raise InvalidRequestError(f"{at}.source: an object with a type is required", param=f"{at}.source")
    return cast("dict[str, Any]", source)


def _refuse_file(at: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"{at}.source: a file_id names a file in Anthropic's Files API; send the file inline "
        "(base64) or by URL through this model",
        param=f"{at}.source",
    )


def _image(block: Block, at: str) -> MediaPart:
    source = _source(block, at)
    kind = source["type"]
    meta = _meta(block)
    if kind == "base64":
        return MediaPart(
            str(source.get("media_type") or "image/png"), str(source.get("data") or ""), None, meta
        )
    if kind == "url":
        part = image_part(str(source.get("url") or ""), f"{at}.source.url")
        return msgspec.structs.replace(part, provider_metadata=meta)
    if kind == "file":
        raise _refuse_file(at)
    raise InvalidRequestError(f"{at}.source.type: unknown image source {kind!r}", param=f"{at}.source")


def _document(block: Block, at: str) -> MediaPart:
    source = _source(block, at)
    kind = source["type"]
    extra: dict[str, Any] = {k: v for k, v in (("title", block.title), ("context", block.context)) if v}
    if block.citations is not None:
        extra["citations"] = block.citations
    if block.cache_control:
        extra["cache_control"] = block.cache_control
    meta = {NS: extra} if extra else None
    if kind == "base64":
        mime = str(source.get("media_type") or "application/pdf")
        return MediaPart(mime, str(source.get("data") or ""), block.title, meta)
    if kind == "url":
        return MediaPart("application/pdf", str(source.get("url") or ""), block.title, meta)
    if kind == "text":
        data = str(source.get("data") or "").encode()
        return MediaPart(str(source.get("media_type") or "text/plain"), data, block.title, meta)
    if kind == "content":
        inner = source.get("content")
        text = inner if isinstance(inner, str) else "\n".join(_content_texts(inner, f"{at}.source.content"))
        return MediaPart("text/plain", text.encode(), block.title, meta)
    if kind == "file":
        raise _refuse_file(at)
    raise InvalidRequestError(f"{at}.source.type: unknown document source {kind!r}", param=f"{at}.source")


def _content_texts(value: Any, at: str) -> list[str]:
    if not isinstance(value, list):
        raise InvalidRequestError(f"{at}: a string or a list of text blocks is required", param=at)
    out: list[str] = []
    for j, item in enumerate(cast("list[Any]", value)):
        if not isinstance(item, dict) or cast("dict[str, Any]", item).get("type") != "text":
            raise InvalidRequestError(f"{at}[{j}]: only text blocks are allowed here", param=at)
        out.append(str(cast("dict[str, Any]", item).get("text") or ""))
    return out


def _blocks(value: Any, at: str) -> list[Block]:
    try:
        return msgspec.convert(value, list[Block])
    except msgspec.ValidationError as exc:
        raise InvalidRequestError(f"{at}: {exc}", param=at) from None


def _tool_result(conversation: Conversation, block: Block, at: str, cx: _Context) -> None:
    if not block.tool_use_id:
        raise InvalidRequestError(f"{at}.tool_use_id: required on a tool_result", param=f"{at}.tool_use_id")
    content = block.content
    result: str | tuple[Part, ...]
    if content is None or isinstance(content, str):
        result = content or ""
    else:
        parts: list[Part] = []
        for j, inner in enumerate(_blocks(content, f"{at}.content")):
            where = f"{at}.content[{j}]"
            if inner.type == "text" and inner.text is not None:
                parts.append(TextPart(inner.text))
            elif inner.type == "image":
                parts.append(_image(inner, where))
            elif inner.type == "document":
                parts.append(_document(inner, where))
            else:
                raise InvalidRequestError(
                    f"{where}: a {inner.type!r} block is not accepted in a tool_result here "
                    "(text, image and document are)",
                    param=where,
                )
        result = tuple(parts)
    name = cx.names.get(block.tool_use_id, "")
    part = ToolResultPart(
        block.tool_use_id, name, result, bool(block.is_error), provider_metadata=_meta(block)
    )
    conversation.add("tool", (part,), merge=True)


def _assistant(conversation: Conversation, blocks: list[Block], where: str, cx: _Context) -> None:
    """An assistant turn. The gateway's own searches (shown as server blocks) go back as the function
    call and tool result the upstream saw; a carried signature before a tool_use goes back onto it."""
    parts: list[Part] = []
    carried = _carried_calls(blocks)  # call id -> provider metadata packed in a thinking block
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        kind = block.type
        if kind == "text":
            if block.text:
                meta = _meta(block)
                if block.citations:
                    meta = {NS: {**(meta or {}).get(NS, {}), "citations": block.citations}}
                parts.append(TextPart(block.text, meta))
        elif kind == "thinking":
            packed = carry.unpack(block.signature)
            if packed is not None and packed.call is not None:
                pass  # a tool call's data (read by _carried_calls)
            elif packed is not None:
                parts.append(carry.restored(packed, block.thinking or ""))
            else:
                parts.append(ReasoningPart(block.thinking or "", block.signature or None))
        elif kind == "redacted_thinking":
            meta = {NS: {"type": "redacted_thinking"}}
            parts.append(ReasoningPart("", None, block.data, meta))
        elif kind == "tool_use":
            if not block.id or not block.name:
                raise InvalidRequestError(f"{at}: a tool_use needs an id and a name", param=at)
            cx.names[block.id] = block.name
            meta = carried.pop(block.id, None) or _meta(block)
            parts.append(ToolCallPart(block.id, block.name, _input(block.input), provider_metadata=meta))
        elif kind == "server_tool_use" and (block.id or "").startswith(GATEWAY_SEARCH):
            # the gateway ran this search: the upstream saw a function call and its result
            parts.append(ToolCallPart(block.id or "", block.name or "web_search", _input(block.input)))
        elif kind in ("server_tool_use", "mcp_tool_use"):
            info: dict[str, Any] = {"type": kind}
            if block.server_name is not None:
                info["server_name"] = block.server_name
            name = block.name or ""
            parts.append(ToolCallPart(block.id or "", name, _input(block.input), True, {NS: info}))
        elif kind == "web_search_tool_result" and (block.tool_use_id or "").startswith(GATEWAY_SEARCH):
            conversation.add("assistant", tuple(parts), merge=True)
            parts = []
            conversation.add("tool", (_gateway_search_result(block),), merge=False)
        elif kind.endswith("_tool_result"):
            parts.append(_server_result(block))
        else:
            raise InvalidRequestError(
                f"{at}: a {kind!r} block is not accepted in an assistant turn here", param=at
            )
    if parts:
        conversation.add("assistant", tuple(parts), merge=True)


def _carried_calls(blocks: list[Block]) -> dict[str, dict[str, Any]]:
    """Tool calls' provider data packed in thinking blocks (the renderer puts one after its call)."""
    out: dict[str, dict[str, Any]] = {}
    for block in blocks:
        if block.type == "thinking":
            packed = carry.unpack(block.signature)
            if packed is not None and packed.call is not None:
                out[packed.call] = packed.provider_metadata or {}
    return out


def _input(value: Any) -> Any:
    return {} if value is None else value


def _server_result(block: Block) -> ToolResultPart:
    """A server tool's result block, kept whole for an Anthropic upstream (the library's canonical
    search result for the others)."""
    kind = block.type
    info: dict[str, Any] = {"type": kind, "content": block.content}
    if block.caller is not None:
        info["caller"] = block.caller
    name = kind.removesuffix("_tool_result")
    if kind == "web_search_tool_result":
        result: Any = search_result(hit_pairs(block.content))
        name = "web_search"
    else:
        result = block.content
    content: Any = block.content
    error = bool(block.is_error) or (
        isinstance(content, dict) and str(cast("dict[str, Any]", content).get("type", "")).endswith("_error")
    )
    return ToolResultPart(block.tool_use_id or "", name, result, error, True, {NS: info})


def _gateway_search_result(block: Block) -> ToolResultPart:
    """What the upstream model read as the gateway search's result: packed in the first result's
    ``encrypted_content`` (the hits alone when it is not there)."""
    given: Any = block.content
    content: list[Any] = cast("list[Any]", given) if isinstance(given, list) else []
    first = cast("dict[str, Any]", content[0]) if content and isinstance(content[0], dict) else {}
    packed = carry.unpack(first.get("encrypted_content"))
    if packed is not None and packed.text is not None:
        try:
            value: Any = msgspec.json.decode(packed.text)
        except msgspec.DecodeError:
            value = packed.text
    else:
        value = {"hits": [{"url": u, "title": t} for u, t in hit_pairs(content)]}
    return ToolResultPart(block.tool_use_id or "", "web_search", value)


# -- tools ------------------------------------------------------------------------------------------

_tool_decoder = msgspec.json.Decoder(ToolIn)


def _tools(raw: Iterable[msgspec.Raw], cx: _Context) -> Iterable[ToolSpec]:
    for i, item in enumerate(raw):
        at = f"tools[{i}]"
        try:
            tool = _tool_decoder.decode(item)
        except msgspec.ValidationError as exc:
            raise InvalidRequestError(f"{at}: {exc}", param=at) from None
        kind = tool.type
        if kind is None or kind == "custom":
            yield _function(tool, at, cx)
            continue
        options: dict[str, Any] = msgspec.json.decode(item)
        family = next((k for k in _HOSTED if kind.startswith(k + "_")), None)
        if family == "web_search" and cx.gateway_search:
            cx.searches = True  # the gateway's own search answers it (see Lowered.searches)
            continue
        if family is not None:
            yield _hosted(_HOSTED[family], kind, options, at, cx)
            continue
        raise InvalidRequestError(
            f"{at}: the Anthropic-defined tool {kind!r} is not available through this model "
            "(client tools, web_search, web_fetch, code_execution and MCP servers are)",
            param=at,
            code="unsupported_parameter",
        )


def _function(tool: ToolIn, at: str, cx: _Context) -> ToolDefinition:
    extra = {
        k: v
        for k, v in (
            ("cache_control", tool.cache_control),
            ("defer_loading", tool.defer_loading),
            ("input_examples", tool.input_examples),
            ("allowed_callers", tool.allowed_callers),
            ("eager_input_streaming", tool.eager_input_streaming),
        )
        if v is not None
    }
    if cx.elsewhere:
        for key in ("defer_loading", "input_examples", "allowed_callers", "eager_input_streaming"):
            if key in extra:
                cx.warn(
                    f"{at}.{key}",
                    "a tool option only Anthropic has (the tool is offered as a plain function)",
                )
    schema: dict[str, Any] = (
        tool.input_schema if tool.input_schema is not None else {"type": "object", "properties": {}}
    )
    return ToolDefinition(
        tool.name, tool.description or "", schema, tool.strict, {NS: extra} if extra else None
    )


def _hosted(kind: str, wire_type: str, options: dict[str, Any], at: str, cx: _Context) -> HostedTool:
    options.pop("name", None)
    options.pop("type", None)
    if cx.elsewhere:
        for key in _ANTHROPIC_ONLY_OPTIONS:
            if key in options:
                cx.warn(f"{at}.{key}", f"{kind} there has no {key} option")
    if not cx.anthropic:
        for key in _ANTHROPIC_ONLY_OPTIONS:
            options.pop(key, None)
    else:
        options["type"] = wire_type  # the version the client asked for, on Anthropic
    return HostedTool(kind, options)


def _mcp(server: dict[str, Any], i: int) -> HostedTool:
    url, name = server.get("url"), server.get("name")
    if not isinstance(url, str) or not isinstance(name, str):
        raise InvalidRequestError(
            f"mcp_servers[{i}]: a url and a name are required", param=f"mcp_servers[{i}]"
        )
    rest = {k: v for k, v in server.items() if k not in ("url", "name", "type")}
    return HostedTool("mcp", {"server_url": url, "server_label": name, **rest})


def _tool_choice(payload: MessagesRequest | CountTokensRequest, cx: _Context) -> ToolChoice | None:
    choice = payload.tool_choice
    if choice is None:
        return None
    if choice.disable_parallel_tool_use is not None:
        if cx.elsewhere:
            cx.warn("tool_choice.disable_parallel_tool_use", "parallel tool calls are the upstream's default")
        if cx.anthropic:
            cx.options["disable_parallel_tool_use"] = choice.disable_parallel_tool_use
    if choice.type == "tool":
        if not choice.name:
            raise InvalidRequestError("tool_choice.name: required with type 'tool'", param="tool_choice.name")
        return ToolChoice.named(choice.name)
    return ToolChoice({"auto": "auto", "any": "required", "none": "none"}[choice.type])  # type: ignore[arg-type]


# -- options ----------------------------------------------------------------------------------------


def _generation(
    payload: MessagesRequest | CountTokensRequest, cx: _Context
) -> tuple[GenerationOptions, CachePolicy | None]:
    thinking = payload.thinking
    if thinking is not None:
        if thinking.type == "enabled" and thinking.budget_tokens is None:
            raise InvalidRequestError(
                "thinking.budget_tokens: required with type 'enabled'", param="thinking.budget_tokens"
            )
        if cx.anthropic:
            given: dict[str, Any] = msgspec.to_builtins(thinking)
            cx.options["thinking"] = {k: v for k, v in given.items() if v is not None}
        if cx.elsewhere and thinking.type != "disabled":
            cx.warn("thinking", "reasoning there is the model's own setting")
    config = dict(payload.output_config or {})
    effort = config.pop("effort", None)
    if effort is not None:
        if cx.anthropic:
            cx.options["effort"] = effort
        if cx.elsewhere:
            cx.warn("output_config.effort", "reasoning effort there is the model's own setting")
    for key in config:
        if key != "format":
            raise InvalidRequestError(
                f"output_config.{key}: not a field the gateway knows", param=f"output_config.{key}"
            )
    cache = None
    if payload.cache_control:
        ttl = payload.cache_control.get("ttl")
        cache = CachePolicy(tools=False, system=False, messages=1, ttl=ttl if ttl in ("5m", "1h") else None)
    if not isinstance(payload, MessagesRequest):
        return GenerationOptions(), cache
    stop = payload.stop_sequences
    generation = GenerationOptions(
        max_tokens=payload.max_tokens,
        temperature=payload.temperature,
        top_p=payload.top_p,
        top_k=payload.top_k,
        stop=tuple(stop) if stop else None,
        stream=payload.stream,
    )
    return generation, cache


def _output_schema(payload: MessagesRequest | CountTokensRequest, _cx: _Context) -> OutputSchema | None:
    fmt = (payload.output_config or {}).get("format") or payload.output_format
    if fmt is None:
        return None
    where = (
        "output_config.format"
        if payload.output_config and "format" in payload.output_config
        else "output_format"
    )
    if not isinstance(fmt, dict) or cast("dict[str, Any]", fmt).get("type") != "json_schema":
        raise InvalidRequestError(f"{where}.type: only json_schema is defined", param=where)
    schema = cast("dict[str, Any]", fmt).get("schema")
    if not isinstance(schema, dict):
        raise InvalidRequestError(f"{where}.schema: a JSON Schema object is required", param=where)
    return OutputSchema("output", cast("dict[str, Any]", schema))
