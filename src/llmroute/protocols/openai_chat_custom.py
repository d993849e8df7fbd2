"""Custom tools on OpenAI Chat Completions (``llmroute.client_tools.custom``), request side.

The model's input to a custom tool is free text, never JSON. Chat nests everything under
``custom``: the tool ``{"type": "custom", "custom": {name, description, format}}``, a call
``{"id", "type": "custom", "custom": {name, input}}``, a forced choice ``{"type": "custom",
"custom": {name}}``; the result goes back as a ``role: tool`` message, as for functions. Calls are
marked as Responses marks them (``provider_metadata["openai"]["item_type"] ==
"custom_tool_call"``), so a history moves between the two OpenAI protocols.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from ..schema.content import ToolCallPart
from ..schema.request import LLMRequest
from ..schema.tools import ToolDefinition
from ._shared import json_arguments, ns

__all__ = [
    "CUSTOM_ITEM",
    "CustomCallOut",
    "call_metadata",
    "custom_names",
    "is_custom_call",
    "lower_custom",
    "lower_custom_call",
]

OPENAI = "openai"  # the provider_metadata namespace, shared with the Responses protocol
CUSTOM_ITEM = "custom_tool_call"  # the Responses item type that marks a custom call


class _CustomInput(msgspec.Struct, kw_only=True):
    name: str
    input: str


class CustomCallOut(msgspec.Struct, kw_only=True):
    """A custom tool call in an assistant message of the history."""

    id: str
    type: str = "custom"
    custom: _CustomInput


def call_metadata() -> dict[str, Any]:
    """The ``provider_metadata`` of a custom call's ``tool-call`` event (a fresh dict each time)."""
    return {OPENAI: {"item_type": CUSTOM_ITEM}}


def custom_names(request: LLMRequest) -> frozenset[str]:
    """The names of the request's custom tools (empty, the common case, costs one pass)."""
    return frozenset(t.name for t in request.tools if isinstance(t, ToolDefinition) and t.kind == "custom")


def is_custom_call(part: ToolCallPart, names: frozenset[str]) -> bool:
    """A call of a custom tool: marked so by the parser, or named after a custom tool of the request
    (a history written by hand)."""
    return part.name in names or ns(part.provider_metadata, OPENAI).get("item_type") == CUSTOM_ITEM


def lower_custom_call(part: ToolCallPart) -> CustomCallOut:
    return CustomCallOut(id=part.id, custom=_CustomInput(name=part.name, input=json_arguments(part.input)))


def lower_custom(tool: ToolDefinition) -> dict[str, Any]:
    """The tool declaration; ``options`` (``format``, anything else) go inside ``custom``."""
    spec: dict[str, Any] = {"name": tool.name}
    if tool.description:
        spec["description"] = tool.description
    for key, value in (tool.options or {}).items():
        spec[key] = _lower_format(value) if key == "format" else value
    return {"type": "custom", "custom": spec}


def _lower_format(value: Any) -> Any:
    """``client_tools.custom`` stores the Responses grammar, flat (``{"type": "grammar", "syntax",
    "definition"}``); Chat wants it nested under ``grammar``. Text, or a grammar already nested,
    passes as is."""
    if not isinstance(value, dict):
        return value
    fmt = cast("dict[str, Any]", value)
    if fmt.get("type") != "grammar" or "grammar" in fmt:
        return fmt
    return {"type": "grammar", "grammar": {k: v for k, v in fmt.items() if k != "type"}}
