"""Anthropic's ``POST /v1/messages`` and ``/v1/messages/count_tokens`` bodies as the gateway reads
them: every documented field (the stable API and its betas), typed where the gateway lowers it,
kept raw (``msgspec.Raw`` or ``Any``) where it is only relayed to an Anthropic-speaking upstream.

Content blocks are one Struct (``Block``) whose ``type`` the decoder dispatches on, as the
library's own Anthropic parser reads them: a block type the gateway does not know is refused by
name, never dropped. Each field is the Messages API's own (platform.claude.com/docs/en/api/messages).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "Block",
    "CountTokensRequest",
    "Message",
    "MessagesRequest",
    "Metadata",
    "Probe",
    "Thinking",
    "ToolChoice",
    "ToolIn",
]


class Block(msgspec.Struct, frozen=True):
    """One content block of any type: text, image, document, search_result, tool_use, tool_result,
    thinking, redacted_thinking, server_tool_use, mcp_tool_use and the ``*_tool_result`` blocks of
    server tools, container_upload, compaction, tool_reference."""

    type: str
    text: str | None = None
    citations: Any = None  # a text block's citation list; a document's ``{"enabled": bool}``
    cache_control: dict[str, Any] | None = None
    source: Any = None  # image / document / search_result source
    title: str | None = None
    context: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    server_name: str | None = None
    caller: dict[str, Any] | None = None  # programmatic tool calling: who called the tool
    tool_use_id: str | None = None
    content: Any = None  # tool_result: str or blocks; server tool results: their own shape
    is_error: bool | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None  # redacted_thinking
    file_id: str | None = None  # container_upload
    tool_name: str | None = None  # tool_reference
    encrypted_content: str | None = None  # compaction


class Message(msgspec.Struct, frozen=True):
    """One turn: ``user``, ``assistant`` or (mid-conversation, Claude Code's ``per-turn-control``
    beta) ``system``; ``content`` a string or blocks."""

    role: Literal["user", "assistant", "system"]
    content: str | list[Block]


class ToolIn(msgspec.Struct, frozen=True):
    """A tool definition: a client tool (no ``type``, or ``custom``) or an Anthropic-defined one
    (``web_search_20250305``, ``bash_20250124``, ...) whose own options the decoder reads raw."""

    name: str
    type: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    cache_control: dict[str, Any] | None = None
    strict: bool | None = None
    defer_loading: bool | None = None
    input_examples: list[Any] | None = None
    allowed_callers: list[str] | None = None
    eager_input_streaming: bool | None = None


class ToolChoice(msgspec.Struct, frozen=True):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class Thinking(msgspec.Struct, frozen=True):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: int | None = None
    display: str | None = None  # "summarized" / "omitted"


class Metadata(msgspec.Struct, frozen=True):
    user_id: str | None = None


class _Common(msgspec.Struct, frozen=True):
    """The fields ``messages`` and ``count_tokens`` share."""

    model: str
    messages: list[Message]
    system: str | list[Block] | None = None
    tools: list[msgspec.Raw] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    output_config: dict[str, Any] | None = None  # {"effort", "format": {"type": "json_schema", ...}}
    output_format: dict[str, Any] | None = None  # the structured-outputs beta's older spelling
    cache_control: dict[str, Any] | None = None  # automatic caching: the last cacheable block
    mcp_servers: list[dict[str, Any]] | None = None
    context_management: Any = None
    speed: str | None = None
    user_profile_id: str | None = None
    workspace_id: str | None = None


class MessagesRequest(_Common, frozen=True):
    """``POST /v1/messages`` (stable and beta fields)."""

    max_tokens: int | None = None
    stream: bool = False
    metadata: Metadata | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    service_tier: Literal["auto", "standard_only"] | None = None
    container: Any = None  # an id, or {"id", "skills"}
    inference_geo: str | None = None
    diagnostics: Any = None
    compaction: Any = None
    fallbacks: Any = None
    fallback_credit_token: str | None = None
    billing_policy: Any = None
    thread: Any = None
    betas: Any = None  # the SDK turns ``betas`` into the ``anthropic-beta`` header; a body may carry it


class CountTokensRequest(_Common, frozen=True):
    """``POST /v1/messages/count_tokens``: the request without the sampling fields."""


class Probe(msgspec.Struct, frozen=True):
    """What relaying needs of a body before (instead of) decoding it whole."""

    model: str
    stream: bool = False
    tools: list[msgspec.Raw] | None = None
