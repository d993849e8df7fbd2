"""Anthropic Messages (``POST /v1/messages``), streamed over SSE, or not (``stream=False``: the
whole Message is read through the stream handlers, block by block).

Decisions worth knowing:

- **Citations.** Anthropic gives no offsets: it splits text blocks at citation boundaries and attaches
  ``citations`` to the block they support. So a ``Citation`` covers its whole text block:
  ``start=0``, ``end=len(block text)`` (Python ``str`` indices, end exclusive; ``None``/``None`` for an
  empty block). Because ``citations_delta`` usually arrives *before* the text it cites, citations are
  emitted when the block closes (after its last ``text-delta``, just before ``text-end``), when the
  length is known. The raw citation (``encrypted_index`` ...) is kept in ``provider_metadata`` and in
  the ``text-end`` metadata, so the text block round-trips with its citations.
- **pause_turn** maps to ``"tool-calls"``: the turn stopped inside a server-tool loop and, exactly as
  after local tool calls, the caller sends the conversation back (the assistant message included) to
  continue. ``provider_metadata["stop_reason"] == "pause_turn"`` tells the two apart.
- **Round-trip.** Thinking blocks become ``ReasoningPart(text, signature)``; ``redacted_thinking``
  becomes ``ReasoningPart("", encrypted=data)`` marked ``{"anthropic": {"type": "redacted_thinking"}}``.
  Server tools (``server_tool_use`` / ``mcp_tool_use``) and their ``*_tool_result`` blocks become
  provider-executed tool calls/results whose ``provider_metadata["anthropic"]["type"]`` names the
  block; the lowering rebuilds the same blocks (content untouched). A ``web_search_tool_result``'s
  ``result`` is the canonical ``{"sources", "queries"}`` (``llmroute.hosted.SearchResult``); the
  block's own ``content`` (``encrypted_content``, ``page_age``, ``error_code``) is kept in
  ``provider_metadata["anthropic"]["content"]`` and is what the lowering sends back. Provider-executed parts without
  Anthropic metadata (another provider's hosted tools) and reasoning without a signature cannot be
  replayed to Anthropic and are left out.
- The parser reads only the event's data (the JSON event, dispatched on its ``type``): a frame is
  those bytes (``SSEDataFraming``, the default, builds no ``SSEEvent``) or an ``SSEEvent``, so an
  envelope (Bedrock's event-stream ``{"bytes": ...}``) composes with ``Protocol.wrapped`` by handing
  it either; ``reshape_body`` drops/adds top-level body keys for such an envelope.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from typing import Any, Literal, cast

import msgspec

from ..framing.base import Framing
from ..framing.sse import SSEDataFraming, SSEEvent
from ..route.auth import Auth
from ..route.classify import from_stream_event
from ..route.decoding import DECODE_ERRORS
from ..route.endpoint import Endpoint
from ..route.model import Route
from ..route.protocol import AnyProtocol, Protocol, StreamState
from ..schema.content import MediaPart, Message, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.events import (
    Citation,
    FinishReason,
    LLMEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
)
from ..schema.request import LLMRequest, ModelRef
from ..schema.tools import HostedTool, ToolDefinition
from ..schema.usage import Usage
from ._output_tool import AnswerInput, answer_tool_name, described_schema, native_schema, with_output_tool
from ._shared import (
    ToolInput,
    cache_targets,
    content_parts,
    decode_frame,
    lower_hosted,
    lower_tools,
    ns,
    parse_tool_input,
    result_text,
    with_options,
)
from .anthropic_server_tools import (
    lower_code_execution,
    lower_mcp,
    lower_web_fetch,
    lower_web_search,
    on_server_tool_result,
    on_web_search_tool_result,
)
from .anthropic_support import SUPPORT

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "HOSTED_ITEMS",
    "HOSTED_TOOLS",
    "PROTOCOL",
    "AnthropicBody",
    "AnthropicState",
    "build_body",
    "envelope",
    "on_halt",
    "reshape_body",
    "route",
    "step",
    "whole",
]

NAME = "anthropic-messages"

# 1. quirks, constants and request body Structs ----------------------------------------------------

DEFAULT_MAX_TOKENS = 4096
MAX_CACHE_BREAKPOINTS = 4
NAMESPACE = "anthropic"  # provider_metadata key for everything that must round-trip

_Block = Any  # one of the block Structs below, or a raw dict (server-tool blocks)


class _Text(msgspec.Struct, kw_only=True, omit_defaults=True, tag="text", tag_field="type"):
    text: str
    citations: list[Any] | None = None
    cache_control: dict[str, str] | None = None


class _Image(msgspec.Struct, kw_only=True, omit_defaults=True, tag="image", tag_field="type"):
    source: dict[str, Any]
    cache_control: dict[str, str] | None = None


class _Document(msgspec.Struct, kw_only=True, omit_defaults=True, tag="document", tag_field="type"):
    source: dict[str, Any]
    title: str | None = None
    context: str | None = None
    citations: dict[str, Any] | None = None
    cache_control: dict[str, str] | None = None


class _ToolUse(msgspec.Struct, kw_only=True, omit_defaults=True, tag="tool_use", tag_field="type"):
    id: str
    name: str
    input: Any
    cache_control: dict[str, str] | None = None


class _ToolResult(msgspec.Struct, kw_only=True, omit_defaults=True, tag="tool_result", tag_field="type"):
    tool_use_id: str
    content: str | list[Any]
    is_error: bool = False
    cache_control: dict[str, str] | None = None


class _Thinking(msgspec.Struct, kw_only=True, tag="thinking", tag_field="type"):
    thinking: str
    signature: str


class _RedactedThinking(msgspec.Struct, kw_only=True, tag="redacted_thinking", tag_field="type"):
    data: str


class _MessageOut(msgspec.Struct):
    role: str
    content: list[_Block]


class _Tool(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    description: str | None = None
    input_schema: dict[str, Any]
    strict: bool | None = None
    cache_control: dict[str, str] | None = None


class AnthropicBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The Messages request. ``model``/``stream`` are optional and ``anthropic_version`` exists so
    envelopes (Bedrock, Vertex) can drop or set them with ``reshape_body``."""

    anthropic_version: str | None = None
    model: str | None = None
    system: list[_Text] | None = None
    messages: list[_MessageOut]
    tools: list[Any] | None = None  # _Tool or a hosted-tool dict
    tool_choice: dict[str, Any] | None = None
    mcp_servers: list[dict[str, Any]] | None = None
    stream: bool | None = None
    max_tokens: int
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    thinking: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None


# 2. stream event Structs --------------------------------------------------------------------------


class _Delta(msgspec.Struct):
    """Both ``content_block_delta.delta`` and ``message_delta.delta`` (flat: unknown types pass)."""

    type: str = ""
    text: str | None = None
    partial_json: str | None = None
    thinking: str | None = None
    signature: str | None = None
    citation: dict[str, Any] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    container: dict[str, Any] | None = None


class _BlockIn(msgspec.Struct):
    type: str = ""
    id: str | None = None
    name: str | None = None
    input: Any = None
    text: str | None = None
    citations: list[dict[str, Any]] | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    tool_use_id: str | None = None
    content: Any = None
    is_error: bool | None = None
    server_name: str | None = None
    caller: Any = None


class _MessageIn(msgspec.Struct):
    """``message_start.message``, and a whole non-streamed Message (or an ``error`` object sent
    with HTTP 200). Programmatic tool-calling follow-ups stream the whole message here: content,
    stop reason and usage, with no block events."""

    type: str = ""
    id: str | None = None
    model: str | None = None
    content: list[_BlockIn] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    container: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class _Event(msgspec.Struct):
    type: str = ""
    index: int = 0
    delta: _Delta | None = None
    content_block: _BlockIn | None = None
    message: _MessageIn | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


_decoder = msgspec.json.Decoder(_Event)
_EVENT = f"{NAME} event"  # what a malformed frame is called in the error
_whole_decoder = msgspec.json.Decoder(_MessageIn)


# Nearly every event of a text stream: a ``text_delta`` with nothing else. Any other key (a field
# added later, a null, anything the general Structs would read) fails this decode and takes the
# general path, so both give the same events (tests/unit/test_hot_paths.py); it builds only these
# few fields, untracked by the GC.
class _TextDeltaOnly(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: Literal["text_delta"]
    text: str


class _TextEventOnly(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: Literal["content_block_delta"]
    delta: _TextDeltaOnly
    index: int = 0


_text_decode = msgspec.json.Decoder(_TextEventOnly).decode


# 3. parser state ----------------------------------------------------------------------------------

_TEXT, _THINKING, _REDACTED, _TOOL = 0, 1, 2, 3


class _Open:
    """One open content block, keyed by its Anthropic ``index``."""

    __slots__ = ("citations", "data", "id", "index", "initial", "kind", "length", "signature", "tool")

    def __init__(self, kind: int, id: str, index: int = 0) -> None:
        self.kind = kind
        self.id = id
        self.index = index
        self.length = 0  # characters of text so far (citations span the whole block)
        self.citations: list[dict[str, Any]] = []
        self.signature: str | None = None
        self.data: str | None = None
        self.tool: ToolInput | None = None
        self.initial: Any = None


class AnthropicState(StreamState):
    __slots__ = (
        "answer_tool",
        "answered",
        "called",
        "indices",
        "open",
        "raw_usage",
        "server_inputs",
        "server_names",
        "started",
        "stop_reason",
        "text",
        "tool_ids",
    )

    def __init__(self) -> None:
        super().__init__()
        self.started = False  # a message_start arrived (a second one before message_stop is an error)
        self.indices: set[int] = set()  # block indices used in this message (each opens once)
        self.tool_ids: set[str] = set()  # tool-use ids seen (each is one call)
        self.open: dict[int, _Open] = {}
        self.raw_usage: dict[str, Any] = {}
        self.server_names: dict[str, str] = {}  # server tool id -> name, to name its result
        self.server_inputs: dict[str, Any] = {}  # server tool id -> its input (web search queries)
        self.stop_reason: str | None = None
        self.text: _Open | None = None  # the text block most recently opened, while it is open
        self.answer_tool: str | None = None  # the forced output tool: its call is the answer's text
        self.answered = False  # the output tool answered
        self.called = False  # a caller's tool was called

    @classmethod
    def for_request(cls, request: LLMRequest) -> AnthropicState:
        """A pause_turn continuation may open with the result of a call the previous response made:
        the request's last assistant turn names it (and its query)."""
        state = cls()
        state.answer_tool = answer_tool_name(request)
        for message in request.messages[-2:]:
            if message.role == "assistant":
                for part in message.content:
                    if isinstance(part, ToolCallPart) and part.provider_executed:
                        state.server_names[part.id] = part.name
                        state.server_inputs[part.id] = part.input
        return state


# 4. build_body ------------------------------------------------------------------------------------


def _text_bytes(part: MediaPart) -> str:
    raw = part.data if isinstance(part.data, bytes) else base64.b64decode(part.data)
    return raw.decode("utf-8")


def _lower_media(part: MediaPart) -> _Block:
    mime = part.mime_type
    extra = ns(part.provider_metadata, NAMESPACE)
    url = {"type": "url", "url": part.data} if part.is_url else None
    if mime.startswith("image/"):
        return _Image(source=url or {"type": "base64", "media_type": mime, "data": part.base64()})
    if mime == "application/pdf":
        source = url or {"type": "base64", "media_type": mime, "data": part.base64()}
    elif mime.startswith("text/") and url is None:
        source = {"type": "text", "media_type": "text/plain", "data": _text_bytes(part)}
    else:
        where = "by URL" if url else "inline"
        raise InvalidRequestError(f"{NAME}: {mime} is not accepted {where} (images, PDF and text only)")
    return _Document(
        source=source,
        title=extra.get("title") or part.filename,
        context=extra.get("context"),
        citations=extra.get("citations"),
    )


def _with_cache_hint(block: _Block, part: Part | ToolDefinition) -> _Block:
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


def _lower_tool_result(part: ToolResultPart) -> _ToolResult:
    """A client tool's result; content given as parts (text and images) stays parts."""
    parts = content_parts(part.result)
    if parts is not None:
        content: str | list[Any] = [
            _Text(text=p.text) if isinstance(p, TextPart) else _lower_media(p) for p in parts
        ]
    else:
        content = result_text(part.result)
    return _ToolResult(tool_use_id=part.id, content=content, is_error=part.is_error)


def _user_block(part: Part) -> _Block:
    if isinstance(part, TextPart):
        return _with_cache_hint(_Text(text=part.text), part)
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


def assistant_block(part: Part) -> _Block | None:
    meta = ns(part.provider_metadata, NAMESPACE)
    if isinstance(part, TextPart):
        if not part.text:
            return None  # Anthropic rejects empty text blocks
        citations = meta.get("citations")
        return _with_cache_hint(_Text(text=part.text, citations=citations or None), part)
    if isinstance(part, ReasoningPart):
        if meta.get("type") == "redacted_thinking":
            data = part.encrypted or meta.get("data")
            return _RedactedThinking(data=data) if data else None
        signature = part.signature or meta.get("signature")
        return _Thinking(thinking=part.text, signature=signature) if signature else None
    if isinstance(part, ToolCallPart):
        if part.provider_executed:
            return _with_cache_hint(_server_call(part, meta), part) if meta else None
        return _with_cache_hint(_ToolUse(id=part.id, name=part.name, input=_tool_input(part.input)), part)
    if isinstance(part, ToolResultPart) and part.provider_executed:
        return _with_cache_hint(_server_result(part, meta), part) if meta else None
    if isinstance(part, MediaPart):
        return None  # media another provider's model produced: Anthropic assistant turns hold none
    raise InvalidRequestError(f"{NAME}: an assistant message cannot hold a {type(part).__name__}")


def _system_update(message: Message) -> _MessageOut:
    text = "\n".join(p.text for p in message.content if isinstance(p, TextPart))
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MessageOut("user", [_Text(text=f"<system-update>\n{escaped}\n</system-update>")])


def _lower_messages(request: LLMRequest) -> tuple[list[_Text] | None, list[_MessageOut]]:
    system = [_with_cache_hint(_Text(text=p.text), p) for p in request.system]
    messages: list[_MessageOut] = []
    for message in request.messages:
        role = message.role
        if role == "system":
            if messages:  # mid-conversation operator update: Anthropic has no system role in messages
                messages.append(_system_update(message))
            else:
                system.extend(
                    _with_cache_hint(_Text(text=p.text), p)
                    for p in message.content
                    if isinstance(p, TextPart)
                )
        elif role == "assistant":
            blocks = [b for b in (assistant_block(p) for p in message.content) if b is not None]
            if blocks:
                messages.append(_MessageOut("assistant", blocks))
        else:  # user, and tool results (which Anthropic carries in a user message)
            messages.append(_MessageOut("user", [_user_block(p) for p in message.content]))
    return system or None, messages


def _lower_tools(request: LLMRequest) -> tuple[list[Any] | None, list[dict[str, Any]] | None]:
    """The wire tools, and the MCP servers hosted ``mcp`` tools lower into (not tools on the wire)."""
    servers: list[dict[str, Any]] = []
    tools: list[Any] = lower_tools(request.tools, _lower_tool, lambda tool: _lower_hosted(tool, servers))
    return tools or None, servers or None


def _lower_tool(tool: ToolDefinition) -> _Tool:
    out = _Tool(
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
    if isinstance(block, _Thinking | _RedactedThinking):
        return False
    return not (isinstance(block, _Text) and not block.text)


def _apply_cache(request: LLMRequest, body: AnthropicBody) -> None:
    """Breakpoints from ``request.cache`` in ``cache_targets`` order (last tool, last system block,
    then the last cacheable block of each of the latest messages), at most four in all: manual hints
    count towards the four, and a target already holding one spends nothing."""
    policy = request.cache
    if policy is None:
        return
    control = {"type": "ephemeral"} if policy.ttl is None else {"type": "ephemeral", "ttl": policy.ttl}
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
    options = dict(request.options_for(model.provider))
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


def reshape_body(body: Any, *, drop: Iterable[str] = (), add: dict[str, Any] | None = None) -> dict[str, Any]:
    """A built body as a dict without the ``drop`` keys and with ``add`` set: what an envelope
    (Bedrock: no ``model``/``stream``, ``anthropic_version`` in the body) needs."""
    data: dict[str, Any] = dict(body) if isinstance(body, dict) else msgspec.to_builtins(body)  # pyright: ignore[reportUnknownArgumentType]
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


# 5. step / on_halt --------------------------------------------------------------------------------

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool-calls",
    "pause_turn": "tool-calls",  # resend the conversation to continue (see the module docstring)
    "refusal": "content-filter",
}


def step(state: AnthropicState, frame: bytes | SSEEvent, out: list[LLMEvent]) -> None:
    data = frame if isinstance(frame, bytes) else frame.data
    block = state.text
    if block is not None:  # hot path: while a text block is open nearly every event adds text to it
        try:
            lean = _text_decode(data)
        except DECODE_ERRORS:
            pass
        else:
            if lean.index == block.index:
                text = lean.delta.text
                out.append(TextDelta(block.id, text))
                block.length += len(text)
                return
    event = decode_frame(_decoder, data, _EVENT)
    kind = event.type
    if kind == "content_block_delta":
        delta = event.delta
        if delta is not None and delta.type == "text_delta" and (text := delta.text) is not None:
            block = state.open.get(event.index)
            if block is not None and block.kind == _TEXT:
                out.append(TextDelta(block.id, text))
                block.length += len(text)
                return
        _on_content_block_delta(state, event, out)
        return
    handler = _HANDLERS.get(kind)
    if handler is not None:
        handler(state, event, out)
    # ping and event types added after this was written are ignored


def whole(state: AnthropicState, body: bytes, out: list[LLMEvent]) -> None:
    """A whole Message reads as a stream whose ``message_start`` carries everything."""
    message = decode_frame(_whole_decoder, body, f"{NAME} response")
    if message.type == "error":
        _on_error(state, _Event("error", error=message.error), out)
    _on_message_start(state, _Event(message=message), out)
    if message.stop_reason is None:  # no stop reason: still a finish (``unknown``), as streamed
        _on_message_delta(state, _Event(delta=_Delta()), out)
    _on_message_stop(state, _Event(), out)


def _on_message_start(state: AnthropicState, event: _Event, out: list[LLMEvent]) -> None:
    message = event.message
    if message is None:
        return
    if state.started and not state.done:
        if _benign_repeat(state, message):
            return
        raise InvalidProviderOutputError(f"{NAME}: message_start inside an open message")
    state.started = True
    state.metadata = {"id": message.id, "model": message.model}
    if message.usage:
        state.raw_usage.update(message.usage)
    for index, block in enumerate(message.content or ()):  # the message arrives whole
        _on_content_block_start(state, _Event(index=index, content_block=block), out)
        _on_content_block_stop(state, _Event(index=index), out)
    if message.stop_reason is not None:
        delta = _Delta(
            stop_reason=message.stop_reason, stop_sequence=message.stop_sequence, container=message.container
        )
        _on_message_delta(state, _Event(delta=delta), out)


def _benign_repeat(state: AnthropicState, message: _MessageIn) -> bool:
    """Some Anthropic-compatible endpoints send ``message_start`` twice: the same id again, before
    any content, is that duplicate (ignored); another id, or one after content, is a new message."""
    known = (state.metadata or {}).get("id")
    return known is not None and message.id == known and not state.indices and not message.content


def _on_content_block_start(state: AnthropicState, event: _Event, out: list[LLMEvent]) -> None:
    block = event.content_block
    if block is None:
        return
    index = event.index
    if index in state.indices:  # reopening would orphan or repeat a block the caller already saw
        raise InvalidProviderOutputError(f"{NAME}: content_block_start for used index {index}")
    state.indices.add(index)
    kind = block.type
    if kind == "text":
        opened = state.text = _Open(_TEXT, f"text-{index}", index)
        out.append(TextStart(opened.id))
        if block.text:
            out.append(TextDelta(opened.id, block.text))
            opened.length = len(block.text)
        opened.citations.extend(block.citations or ())
    elif kind in ("thinking", "redacted_thinking"):
        opened = _Open(_THINKING if kind == "thinking" else _REDACTED, f"reasoning-{index}")
        out.append(ReasoningStart(opened.id))
        if block.thinking:
            out.append(ReasoningDelta(opened.id, block.thinking))
        opened.signature = block.signature or None
        opened.data = block.data
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        opened = _Open(_TOOL, block.id or f"toolu_{index}")
        if opened.id in state.tool_ids:
            raise InvalidProviderOutputError(f"{NAME}: tool use id {opened.id!r} repeated")
        state.tool_ids.add(opened.id)
        name = block.name or ""
        meta: dict[str, Any] | None = None
        if kind != "tool_use":
            state.server_names[opened.id] = name
            info: dict[str, Any] = {"type": kind}
            if block.server_name is not None:
                info["server_name"] = block.server_name
            meta = {NAMESPACE: info}
        if kind == "tool_use" and name == state.answer_tool:
            opened.tool = AnswerInput(opened.id, name, out)
            state.answered = True
        else:
            state.called = state.called or kind == "tool_use"
            opened.tool = ToolInput(opened.id, name, out, kind != "tool_use", meta)
        opened.initial = block.input
    elif (hosted := HOSTED_ITEMS.get(kind)) is not None or kind.endswith("_tool_result"):
        # a result arrives whole; its stop event closes nothing
        (hosted or on_server_tool_result)(state, block, out)
        return
    else:
        return  # a block type this parser does not know: its deltas are ignored
    state.open[index] = opened


def _on_content_block_delta(state: AnthropicState, event: _Event, out: list[LLMEvent]) -> None:
    delta = event.delta
    block = state.open.get(event.index)
    if delta is None or block is None:
        return
    kind = delta.type
    if kind == "thinking_delta":
        if delta.thinking and block.kind == _THINKING:
            out.append(ReasoningDelta(block.id, delta.thinking))
    elif kind == "signature_delta":
        block.signature = (block.signature or "") + (delta.signature or "")
    elif kind == "input_json_delta":
        if block.tool is not None and delta.partial_json:
            block.tool.delta(delta.partial_json, out)
    elif kind == "citations_delta" and delta.citation is not None:
        block.citations.append(delta.citation)
    # text or thinking for a block not opened as that kind is ignored, like unknown deltas: emitting
    # it would put a delta under a block id that never had the matching start event


def _citation(block: _Open, raw: dict[str, Any]) -> Citation:
    url = raw.get("url") or raw.get("source")
    title = raw.get("title") or raw.get("document_title")
    cited = raw.get("cited_text")
    span = (0, block.length) if block.length else (None, None)
    return Citation(block.id, url, title, span[0], span[1], cited, {NAMESPACE: raw})


def _close_block(state: AnthropicState, block: _Open, out: list[LLMEvent]) -> None:
    kind = block.kind
    if kind == _TEXT:
        if state.text is block:
            state.text = None
        for raw in block.citations:
            out.append(_citation(block, raw))
        out.append(
            TextEnd(block.id, {NAMESPACE: {"citations": block.citations}} if block.citations else None)
        )
    elif kind == _THINKING:
        out.append(ReasoningEnd(block.id, block.signature or None))
    elif kind == _REDACTED:
        out.append(ReasoningEnd(block.id, None, block.data, {NAMESPACE: {"type": "redacted_thinking"}}))
    elif block.tool is not None:
        initial = block.initial
        if not block.tool.chunks and isinstance(initial, dict) and initial:
            call = block.tool.finish(out, input=initial)  # complete input in the start event, no deltas
        else:
            call = block.tool.finish(out)
        if call is not None and call.provider_executed:
            state.server_inputs[call.id] = call.input


def _on_content_block_stop(state: AnthropicState, event: _Event, out: list[LLMEvent]) -> None:
    block = state.open.pop(event.index, None)
    if block is not None:
        _close_block(state, block, out)


def _on_message_delta(state: AnthropicState, event: _Event, _out: list[LLMEvent]) -> None:
    delta = event.delta
    if delta is not None:
        state.stop_reason = delta.stop_reason or state.stop_reason or ""
        state.reason = _FINISH.get(state.stop_reason, "unknown")
        if state.reason == "tool-calls" and state.answered and not state.called:
            state.reason = "stop"  # the forced output tool answered: that is the reply
        meta = dict(state.metadata or {})
        meta["stop_reason"] = state.stop_reason
        if delta.stop_sequence is not None:
            meta["stop_sequence"] = delta.stop_sequence
        if delta.container is not None:
            meta["container"] = delta.container
        state.metadata = meta
    elif state.stop_reason is None:
        state.stop_reason = ""
    if event.usage:
        state.raw_usage.update({k: v for k, v in event.usage.items() if v is not None})
    if state.raw_usage:
        state.usage = _usage(dict(state.raw_usage))


def _on_message_stop(state: AnthropicState, _event: _Event, out: list[LLMEvent]) -> None:
    _close_all(state, out)
    state.done = True


def _on_error(_state: AnthropicState, event: _Event, _out: list[LLMEvent]) -> None:
    raise from_stream_event(event.error or {"message": "Anthropic Messages stream error"}, "anthropic")


_HANDLERS: dict[str, Callable[[AnthropicState, _Event, list[LLMEvent]], None]] = {
    "message_start": _on_message_start,
    "content_block_start": _on_content_block_start,
    "content_block_stop": _on_content_block_stop,
    "message_delta": _on_message_delta,
    "message_stop": _on_message_stop,
    "error": _on_error,
}

# provider-executed result blocks by type (any other ``*_tool_result`` reads as
# ``on_server_tool_result``); the handlers are in ``anthropic_server_tools``
HOSTED_ITEMS: dict[str, Callable[[AnthropicState, _BlockIn, list[LLMEvent]], None]] = {
    "web_search_tool_result": on_web_search_tool_result,
    "web_fetch_tool_result": on_server_tool_result,
    "code_execution_tool_result": on_server_tool_result,
    "bash_code_execution_tool_result": on_server_tool_result,
    "text_editor_code_execution_tool_result": on_server_tool_result,
    "mcp_tool_result": on_server_tool_result,
    "tool_result": on_server_tool_result,  # programmatic tool calling: a result its code produced
}


def _ttl_1h(split: object) -> int | None:
    """The 1-hour part of the cache writes from ``usage.cache_creation`` (the split by TTL: 1-hour
    writes cost 2x input, 5-minute ones 1.25x)."""
    if not isinstance(split, dict):
        return None
    value = cast(dict[str, Any], split).get("ephemeral_1h_input_tokens")
    return value if type(value) is int and value else None


def _usage(raw: dict[str, Any]) -> Usage:
    """Anthropic's ``input_tokens`` excludes cached input: the inclusive total adds cache reads and
    cache writes back."""
    details = raw.get("output_tokens_details")
    server = raw.get("server_tool_use")
    return Usage.from_uncached(
        uncached_input=raw.get("input_tokens"),
        output_tokens=raw.get("output_tokens"),
        cache_read=raw.get("cache_read_input_tokens"),
        cache_write=raw.get("cache_creation_input_tokens"),
        reasoning=details.get("thinking_tokens") if isinstance(details, dict) else None,  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        web_search_requests=server.get("web_search_requests") if isinstance(server, dict) else None,  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        raw=raw,
        cache_write_1h=_ttl_1h(raw.get("cache_creation")),
    )


def _close_all(state: AnthropicState, out: list[LLMEvent]) -> None:
    for index in sorted(state.open):
        _close_block(state, state.open[index], out)
    state.open.clear()


def on_halt(state: AnthropicState, out: list[LLMEvent]) -> None:
    if state.stop_reason is None and not state.done:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before message_delta / message_stop")
    _close_all(state, out)
    state.done = True


# 6. the Protocol value and its default route ------------------------------------------------------

PROTOCOL: Protocol[AnthropicBody | dict[str, Any], bytes | SSEEvent, AnthropicState] = Protocol(
    name=NAME,
    build_body=build_body,
    new_state=AnthropicState.for_request,
    step=step,
    on_halt=on_halt,
    native_output_schema=True,
    whole=whole,
    hosted_kinds=frozenset(HOSTED_TOOLS),
    support=SUPPORT,
)


def route(
    endpoint: Endpoint | str,
    auth: Auth,
    *,
    name: str = NAME,
    framing: Framing[Any] | None = None,
    protocol: AnyProtocol = PROTOCOL,
    **changes: Any,
) -> Route:
    """A Messages route. ``endpoint`` is an ``Endpoint`` or a base URL (``.../v1``, ``/messages`` is
    appended); ``framing`` defaults to SSE, events' data only (the parser never reads the event
    name); ``protocol`` may be a ``PROTOCOL.wrapped(...)`` envelope."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(endpoint, "/messages")
    return Route(
        name=name,
        protocol=protocol,
        endpoint=endpoint,
        auth=auth,
        framing=framing or SSEDataFraming(),
        **changes,
    )
