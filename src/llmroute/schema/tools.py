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
    """The name the model calls the tool by (and its calls come back under)."""
    description: str = ""
    """What the tool does and when to use it, for the model."""
    input_schema: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the tool's arguments (an object)."""
    strict: bool | None = None
    """Ask the provider to hold the arguments to ``input_schema`` exactly (OpenAI strict mode);
    ``None``: the provider's default. Not sent, with a ``RequestWarning``, where nothing enforces it."""
    provider_metadata: dict[str, Any] | None = None
    """Provider-specific hints by namespace (``{"anthropic": {"cache_control": {...}}}``: a cache
    breakpoint on this tool)."""
    kind: str = "function"
    """``"function"``, or the kind of a provider-defined tool the caller runs (``custom``,
    ``shell``, ``apply_patch``, ...)."""
    options: dict[str, Any] | None = None
    """Wire options of a provider-defined ``kind`` (unused for ``"function"``)."""


class HostedTool(msgspec.Struct, frozen=True, omit_defaults=True):
    """A provider-executed tool (web search, code execution, ...). ``kind`` is the canonical name;
    ``options`` are passed to the provider's own definition of it."""

    kind: str
    """The canonical kind (``"web_search"``, ``"code_execution"``, ...; ``llmroute.hosted`` builds
    them); a route without that kind refuses it with an ``InvalidRequestError``."""
    options: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    """Passed to the provider's own definition of the tool."""


ToolSpec = ToolDefinition | HostedTool


class ToolChoice(msgspec.Struct, frozen=True, omit_defaults=True):
    """Whether the model must call a tool: ``ToolChoice.parse("auto" | "none" | "required" | name)``."""

    mode: Literal["auto", "none", "required", "tool"]
    """``auto``: the model decides; ``none``: no tool call; ``required``: some tool; ``tool``: the
    tool ``name``."""
    name: str | None = None
    """The tool to call, when ``mode`` is ``"tool"``."""

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
