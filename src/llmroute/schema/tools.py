"""Tool definitions and tool choice."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["HostedTool", "ToolChoice", "ToolDefinition", "ToolSpec"]


class ToolDefinition(msgspec.Struct, frozen=True, omit_defaults=True):
    """A caller-executed tool: name, description and a JSON Schema for its input.

    ``kind`` ``"function"`` is an ordinary function tool. Other kinds are a provider's built-in tools
    that the caller runs (``llmroute.client_tools``: ``custom``, ``shell``, ``apply_patch``, ...),
    with their wire ``options``; only protocols that declare the kind (``Protocol.tool_kinds``)
    accept them, and their calls come back as ordinary ``tool-call`` events named ``name``."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None
    provider_metadata: dict[str, Any] | None = None
    kind: str = "function"
    options: dict[str, Any] | None = None


class HostedTool(msgspec.Struct, frozen=True, omit_defaults=True):
    """A provider-executed tool (web search, code execution, ...). ``kind`` is the canonical name;
    ``options`` are passed to the provider's own definition of it."""

    kind: str
    options: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])


ToolSpec = ToolDefinition | HostedTool


class ToolChoice(msgspec.Struct, frozen=True, omit_defaults=True):
    mode: Literal["auto", "none", "required", "tool"]
    name: str | None = None

    @classmethod
    def named(cls, name: str) -> ToolChoice:
        return cls("tool", name)

    @classmethod
    def parse(cls, value: ToolChoice | str | None) -> ToolChoice | None:
        """``"auto" | "none" | "required"``, or any other string names a tool."""
        if value is None or isinstance(value, ToolChoice):
            return value
        if value in ("auto", "none", "required"):
            return cls(value)
        return cls("tool", value)
