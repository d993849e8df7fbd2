"""``anthropic_messages``, the wire shapes: sections 1-2 of the six (quirks, constants
and request body Structs; stream event Structs)."""

from __future__ import annotations

from typing import Any

import msgspec

NAME = "anthropic-messages"


# 1. quirks, constants and request body Structs ----------------------------------------------------

DEFAULT_MAX_TOKENS = 4096
MAX_CACHE_BREAKPOINTS = 4
NAMESPACE = "anthropic"  # provider_metadata key for everything that must round-trip

Block = Any  # one of the block Structs below, or a raw dict (server-tool blocks)


class Text(msgspec.Struct, kw_only=True, omit_defaults=True, tag="text", tag_field="type"):
    text: str
    citations: list[Any] | None = None
    cache_control: dict[str, str] | None = None


class Image(msgspec.Struct, kw_only=True, omit_defaults=True, tag="image", tag_field="type"):
    source: dict[str, Any]
    cache_control: dict[str, str] | None = None


class Document(msgspec.Struct, kw_only=True, omit_defaults=True, tag="document", tag_field="type"):
    source: dict[str, Any]
    title: str | None = None
    context: str | None = None
    citations: dict[str, Any] | None = None
    cache_control: dict[str, str] | None = None


class ToolUse(msgspec.Struct, kw_only=True, omit_defaults=True, tag="tool_use", tag_field="type"):
    id: str
    name: str
    input: Any
    cache_control: dict[str, str] | None = None


class ToolResult(msgspec.Struct, kw_only=True, omit_defaults=True, tag="tool_result", tag_field="type"):
    tool_use_id: str
    content: str | list[Any]
    is_error: bool = False
    cache_control: dict[str, str] | None = None


class Thinking(msgspec.Struct, kw_only=True, tag="thinking", tag_field="type"):
    thinking: str
    signature: str


class RedactedThinking(msgspec.Struct, kw_only=True, tag="redacted_thinking", tag_field="type"):
    data: str


class MessageOut(msgspec.Struct):
    role: str
    content: list[Block]


class Tool(msgspec.Struct, kw_only=True, omit_defaults=True):
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
    system: list[Text] | None = None
    messages: list[MessageOut]
    tools: list[Any] | None = None  # Tool or a hosted-tool dict
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


class Delta(msgspec.Struct):
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


class BlockIn(msgspec.Struct):
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


class MessageIn(msgspec.Struct):
    """``message_start.message``, and a whole non-streamed Message (or an ``error`` object sent
    with HTTP 200). Programmatic tool-calling follow-ups stream the whole message here: content,
    stop reason and usage, with no block events."""

    type: str = ""
    id: str | None = None
    model: str | None = None
    content: list[BlockIn] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    container: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class Event(msgspec.Struct):
    type: str = ""
    index: int = 0
    delta: Delta | None = None
    content_block: BlockIn | None = None
    message: MessageIn | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
