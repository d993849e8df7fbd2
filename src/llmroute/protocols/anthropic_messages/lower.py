"""``anthropic_messages``, request -> body: section 4 of the six (``build_body`` and its
lowering helpers)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from ...schema.content import MediaPart, Message, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ...schema.errors import InvalidRequestError
from ...schema.request import LLMRequest, ModelRef
from ...schema.tools import HostedTool, ToolDefinition
from .._output_tool import described_schema, native_schema, with_output_tool
from .._shared import (
    breakpoint_ttl,
    cache_targets,
    content_parts,
    lower_hosted,
    lower_tools,
    ns,
    parse_tool_input,
    result_text,
    with_options,
)
from ..anthropic_server_tools import lower_code_execution, lower_mcp, lower_web_fetch, lower_web_search
from .parse import HOSTED_ITEMS
from .wire import (
    DEFAULT_MAX_TOKENS,
    MAX_CACHE_BREAKPOINTS,
    NAME,
    NAMESPACE,
    AnthropicBody,
    Block,
    Document,
    Image,
    MessageOut,
    RedactedThinking,
    Text,
    Thinking,
    Tool,
    ToolResult,
    ToolUse,
)

# 4. build_body ------------------------------------------------------------------------------------


def _text_bytes(part: MediaPart) -> str:
    raw = part.data if isinstance(part.data, bytes) else base64.b64decode(part.data)
    return raw.decode("utf-8")


def _lower_media(part: MediaPart) -> Block:
    mime = part.mime_type
    extra = ns(part.provider_metadata, NAMESPACE)
    url = {"type": "url", "url": part.data} if part.is_url else None
    if mime.startswith("image/"):
        return Image(source=url or {"type": "base64", "media_type": mime, "data": part.base64()})
    if mime == "application/pdf":
        source = url or {"type": "base64", "media_type": mime, "data": part.base64()}
    elif mime.startswith("text/") and url is None:
        source = {"type": "text", "media_type": "text/plain", "data": _text_bytes(part)}
    else:
        where = "by URL" if url else "inline"
        raise InvalidRequestError(f"{NAME}: {mime} is not accepted {where} (images, PDF and text only)")
    return Document(
        source=source,
        title=extra.get("title") or part.filename,
        context=extra.get("context"),
        citations=extra.get("citations"),
    )


def _with_cache_hint(block: Block, part: Part | ToolDefinition) -> Block:
    hint = ns(part.provider_metadata, NAMESPACE).get("cache_control")
    if isinstance(hint, dict):
        _set_cache(block, hint)  # pyright: ignore[reportUnknownArgumentType]
    return block


def _tool_input(value: Any) -> Any:
    """Anthropic wants an object; a raw (unparsed) argument string is decoded when possible, and
    any other value is kept as ``{"input": value}`` (as Gemini does) so nothing is lost."""
    if isinstance(value, str):
        value = parse_tool_input(value)
    return value if isinstance(value, dict) else {"input": value}  # pyright: ignore[reportUnknownVariableType]


def _lower_tool_result(part: ToolResultPart) -> ToolResult:
    """A client tool's result; content given as parts (text and images) stays parts."""
    parts = content_parts(part.result)
    if parts is not None:
        content: str | list[Any] = [
            Text(text=p.text) if isinstance(p, TextPart) else _lower_media(p) for p in parts
        ]
    else:
        content = result_text(part.result)
    return ToolResult(tool_use_id=part.id, content=content, is_error=part.is_error)


def _user_block(part: Part) -> Block:
    if isinstance(part, TextPart):
        return _with_cache_hint(Text(text=part.text), part)
    if isinstance(part, MediaPart):
        return _with_cache_hint(_lower_media(part), part)
    if isinstance(part, ToolResultPart) and not part.provider_executed:
        return _with_cache_hint(_lower_tool_result(part), part)
    raise InvalidRequestError(f"{NAME}: a user message cannot hold a {type(part).__name__}")


def _server_call(part: ToolCallPart, meta: dict[str, Any]) -> dict[str, Any]:
    kind = meta.get("type") or "server_tool_use"
    block: dict[str, Any] = {"type": kind, "id": part.id, "name": part.name, "input": _tool_input(part.input)}
    if kind == "mcp_tool_use":
        block["server_name"] = meta.get("server_name")
    return block


def _result_type(name: str) -> str | None:
    """The result block type a server tool's result goes back as, by the tool's name."""
    kind = f"{name}_tool_result"
    return kind if kind in HOSTED_ITEMS else None


def _server_result(part: ToolResultPart, meta: dict[str, Any]) -> dict[str, Any]:
    kind = meta.get("type") or _result_type(part.name)
    if kind is None:
        raise InvalidRequestError(f"{NAME}: no result block type for hosted tool {part.name!r}")
    # web search results carry the canonical shape; the block's own content rides in the metadata
    content = meta.get("content", part.result)
    block: dict[str, Any] = {"type": kind, "tool_use_id": part.id, "content": content}
    if kind in ("mcp_tool_result", "tool_result"):
        block["is_error"] = part.is_error
    return block


def assistant_block(part: Part) -> Block | None:
    meta = ns(part.provider_metadata, NAMESPACE)
    if isinstance(part, TextPart):
        if not part.text:
            return None  # Anthropic rejects empty text blocks
        citations = meta.get("citations")
        return _with_cache_hint(Text(text=part.text, citations=citations or None), part)
    if isinstance(part, ReasoningPart):
        if meta.get("type") == "redacted_thinking":
            data = part.encrypted or meta.get("data")
            return RedactedThinking(data=data) if data else None
        signature = part.signature or meta.get("signature")
        return Thinking(thinking=part.text, signature=signature) if signature else None
    if isinstance(part, ToolCallPart):
        if part.provider_executed:
            return _with_cache_hint(_server_call(part, meta), part) if meta else None
        return _with_cache_hint(ToolUse(id=part.id, name=part.name, input=_tool_input(part.input)), part)
    if isinstance(part, ToolResultPart) and part.provider_executed:
        return _with_cache_hint(_server_result(part, meta), part) if meta else None
    if isinstance(part, MediaPart):
        return None  # media another provider's model produced: Anthropic assistant turns hold none
    raise InvalidRequestError(f"{NAME}: an assistant message cannot hold a {type(part).__name__}")


def _system_update(message: Message) -> MessageOut:
    text = "\n".join(p.text for p in message.content if isinstance(p, TextPart))
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return MessageOut("user", [Text(text=f"<system-update>\n{escaped}\n</system-update>")])


def _lower_messages(request: LLMRequest) -> tuple[list[Text] | None, list[MessageOut]]:
    system = [_with_cache_hint(Text(text=p.text), p) for p in request.system]
    messages: list[MessageOut] = []
    for message in request.messages:
        role = message.role
        if role == "system":
            if messages:  # mid-conversation operator update: Anthropic has no system role in messages
                messages.append(_system_update(message))
            else:
                system.extend(
                    _with_cache_hint(Text(text=p.text), p) for p in message.content if isinstance(p, TextPart)
                )
        elif role == "assistant":
            blocks = [b for b in (assistant_block(p) for p in message.content) if b is not None]
            if blocks:
                messages.append(MessageOut("assistant", blocks))
        else:  # user, and tool results (which Anthropic carries in a user message)
            messages.append(MessageOut("user", [_user_block(p) for p in message.content]))
    return system or None, messages


def _lower_tools(request: LLMRequest) -> tuple[list[Any] | None, list[dict[str, Any]] | None]:
    """The wire tools, and the MCP servers hosted ``mcp`` tools lower into (not tools on the wire)."""
    servers: list[dict[str, Any]] = []
    tools: list[Any] = lower_tools(request.tools, _lower_tool, lambda tool: _lower_hosted(tool, servers))
    return tools or None, servers or None


def _lower_tool(tool: ToolDefinition) -> Tool:
    out = Tool(
        name=tool.name,
        description=tool.description or None,
        input_schema=tool.input_schema,
        strict=tool.strict,
    )
    return _with_cache_hint(out, tool)


def _lower_tool_choice(request: LLMRequest, disable_parallel: Any) -> dict[str, Any] | None:
    choice = request.tool_choice
    if choice is None:
        out: dict[str, Any] | None = None if disable_parallel is None else {"type": "auto"}
    elif choice.mode == "tool":
        out = {"type": "tool", "name": choice.name}
    else:
        out = {"type": {"auto": "auto", "required": "any", "none": "none"}[choice.mode]}
    if out is not None and disable_parallel is not None and out["type"] != "none":
        out["disable_parallel_tool_use"] = bool(disable_parallel)
    return out


def _thinking(value: Any) -> dict[str, Any] | None:
    """``thinking``: an int budget, ``"adaptive"``/``"disabled"``, or the wire dict (``budgetTokens``
    accepted for ``budget_tokens``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidRequestError("anthropic thinking: give a budget (int), 'adaptive', 'disabled' or a dict")
    if isinstance(value, int):
        return {"type": "enabled", "budget_tokens": value}
    if isinstance(value, str):
        if value in ("adaptive", "disabled"):
            return {"type": value}
        raise InvalidRequestError(
            f"anthropic thinking {value!r}: use a budget (int), 'adaptive' or 'disabled'"
        )
    if isinstance(value, dict):
        items: dict[Any, Any] = value  # pyright: ignore[reportUnknownVariableType]
        out: dict[str, Any] = {
            ("budget_tokens" if k == "budgetTokens" else str(k)): v for k, v in items.items()
        }
        out.setdefault("type", "enabled")
        if out["type"] == "enabled" and not isinstance(out.get("budget_tokens"), int):
            raise InvalidRequestError("anthropic thinking {'type': 'enabled'} needs an int budget_tokens")
        return out
    raise InvalidRequestError(f"anthropic thinking: unsupported value of type {type(value).__name__}")


# -- cache breakpoints


def _has_cache(block: Any) -> bool:
    if isinstance(block, dict):
        return "cache_control" in block
    return getattr(block, "cache_control", None) is not None


def _set_cache(block: Any, control: dict[str, str]) -> None:
    if isinstance(block, dict):
        block["cache_control"] = control
    else:
        block.cache_control = control


def _cacheable(block: Any) -> bool:
    if isinstance(block, Thinking | RedactedThinking):
        return False
    return not (isinstance(block, Text) and not block.text)


def _apply_cache(request: LLMRequest, body: AnthropicBody) -> None:
    """Breakpoints from ``request.cache`` in ``cache_targets`` order (last tool, last system block,
    then the last cacheable block of each of the latest messages), at most four in all: manual hints
    count towards the four, and a target already holding one spends nothing."""
    policy = request.cache
    if policy is None:
        return
    ttl = breakpoint_ttl(policy)
    control = {"type": "ephemeral"} if ttl is None else {"type": "ephemeral", "ttl": ttl}
    every: list[Any] = [*(body.tools or ()), *(body.system or ())]
    every.extend(b for m in body.messages for b in m.content)
    budget = MAX_CACHE_BREAKPOINTS - sum(1 for b in every if _has_cache(b))
    targets = cache_targets(
        policy, tools=bool(body.tools), system=bool(body.system), messages=len(body.messages)
    )
    for target in targets:
        if budget <= 0:
            break
        if isinstance(target, int):
            content = body.messages[target].content
            block = next((b for b in reversed(content) if _cacheable(b)), None)
        elif target == "tools":
            block = body.tools[-1] if body.tools else None
        else:
            block = body.system[-1] if body.system else None
        if block is not None and not _has_cache(block):
            _set_cache(block, control)
            budget -= 1


def build_body(request: LLMRequest, model: ModelRef) -> AnthropicBody | dict[str, Any]:
    g = request.generation
    assert g is not None  # resolved by prepare()
    # the "anthropic" namespace is the Messages API's own: every route speaking it reads it (Bedrock too)
    options = {**request.options_for(NAMESPACE), **request.options_for(model.provider)}
    thinking = _thinking(options.pop("thinking", None))
    output_config: dict[str, Any] | None = options.pop("output_config", None)
    effort = options.pop("effort", None)
    if effort is not None:
        output_config = {**(output_config or {}), "effort": effort}
    native = native_schema(request, model.id)
    if native is not None:
        output_config = {
            **(output_config or {}),
            "format": {"type": "json_schema", "schema": described_schema(native)},
        }
    thinks = thinking is not None and thinking.get("type") != "disabled"
    request = with_output_tool(request, model.id, NAME, thinking=thinks)
    system, messages = _lower_messages(request)
    tools, servers = _lower_tools(request)
    extra_servers = options.pop("mcp_servers", None)
    if extra_servers:
        servers = [*(servers or ()), *extra_servers]
    choice = _lower_tool_choice(request, options.pop("disable_parallel_tool_use", None))
    body = AnthropicBody(
        model=model.id,
        system=system,
        messages=messages,
        tools=tools,
        tool_choice=choice if (tools or servers) else None,
        mcp_servers=servers,
        stream=g.stream is not False,
        max_tokens=g.max_tokens or DEFAULT_MAX_TOKENS,
        temperature=g.temperature,
        top_p=g.top_p,
        top_k=g.top_k,
        stop_sequences=list(g.stop) if g.stop else None,
        thinking=thinking,
        output_config=output_config,
    )
    _apply_cache(request, body)
    return with_options(body, options)


def reshape_body(
    body: AnthropicBody | dict[str, Any], *, drop: Iterable[str] = (), add: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A built body as a dict without the ``drop`` keys and with ``add`` set: what an envelope
    (Bedrock: no ``model``/``stream``, ``anthropic_version`` in the body) needs."""
    data: dict[str, Any] = dict(body) if isinstance(body, dict) else msgspec.to_builtins(body)
    for key in drop:
        data.pop(key, None)
    if add:
        data = {**add, **data}
    return data


def envelope(
    anthropic_version: str, drop: Iterable[str] = ("model", "stream")
) -> Callable[[AnthropicBody | dict[str, Any], LLMRequest, ModelRef], dict[str, Any]]:
    """A ``wrap_body`` for ``Protocol.wrapped``: e.g. ``envelope("bedrock-2023-05-31")``."""
    dropped = tuple(drop)

    def wrap(body: AnthropicBody | dict[str, Any], _request: LLMRequest, _model: ModelRef) -> dict[str, Any]:
        return reshape_body(body, drop=dropped, add={"anthropic_version": anthropic_version})

    return wrap


# -- hosted tools: one lowering each (see anthropic_server_tools), offered through HOSTED_TOOLS


def _lower_hosted(tool: HostedTool, servers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A hosted tool's wire definition; ``None`` when it lowers into ``servers`` (MCP) instead."""
    return lower_hosted(HOSTED_TOOLS, tool, NAME, servers)


# each kind's lowering (in ``anthropic_server_tools``) takes the tool and the MCP servers list
HOSTED_TOOLS: dict[str, Callable[..., Any]] = {
    "web_search": lower_web_search,
    "web_fetch": lower_web_fetch,
    "code_execution": lower_code_execution,
    "mcp": lower_mcp,
}
