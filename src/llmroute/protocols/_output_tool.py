"""Structured output for protocols whose model may lack a JSON response mode (Anthropic Messages,
Bedrock Converse): the provider's native mode where the model has one, else a forced tool whose
input *is* the answer.

The forced tool is internal to the protocol: its call comes back as the answer's text (``text-start``
/ ``text-delta`` / ``text-end`` carrying the JSON), never as a ``tool-call``, and a turn that ends
because of it finishes with ``stop``. So ``client.stream``, ``generate``, tool loops and the gateway
all see the same answer a native JSON mode gives.

JSON mode without a schema (``LLMRequest.json_mode``) is the forced tool with an open object schema
on these protocols: the documented alternatives are weaker (an instruction is not a guarantee) or
narrower (prefilling ``{`` is not allowed with extended thinking or on the newest Claude models),
while a forced tool returns a JSON object on every model that has tools.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ..schema.errors import InvalidRequestError
from ..schema.events import LLMEvent, TextDelta, TextEnd, TextStart, ToolCall
from ..schema.request import LLMRequest, OutputSchema
from ..schema.tools import ToolChoice, ToolDefinition
from ._shared import ToolInput
from ._strict import strict_compatible

__all__ = [
    "JSON_MODE",
    "AnswerInput",
    "answer_schema",
    "answer_tool_name",
    "described_schema",
    "forced_choice",
    "native_schema",
    "output_tool",
    "with_output_tool",
]

# the schema JSON mode asks for: any object
JSON_MODE = OutputSchema("json", {"type": "object"}, "Respond with a single JSON object.", strict=False)

# Claude models with structured outputs (``output_config.format``): Claude 4.5 and later
_NATIVE_CLAUDE = re.compile(r"claude-(?:opus|sonnet|haiku)-(?:4-[5-9]|[5-9])(?!\d)")
_encoder = msgspec.json.Encoder()


def described_schema(out: OutputSchema) -> dict[str, Any]:
    """The schema with ``out.description`` as its own ``description`` (when it has none): for JSON
    modes that take a schema but no description beside it (Gemini, Anthropic ``output_config``)."""
    if not out.description or "description" in out.schema:
        return out.schema
    return {**out.schema, "description": out.description}


def answer_schema(request: LLMRequest) -> OutputSchema | None:
    """What the answer must be: ``output_schema``, or any object in JSON mode."""
    if request.output_schema is not None:
        return request.output_schema
    return JSON_MODE if request.json_mode else None


def native_schema(request: LLMRequest, model_id: str) -> OutputSchema | None:
    """``output_schema`` when the model takes it natively: a Claude 4.5+ model and a schema its
    structured outputs accept (closed objects); JSON mode has no schema to send, so never."""
    out = request.output_schema
    if out is None or not _NATIVE_CLAUDE.search(model_id):
        return None
    return out if strict_compatible(out.schema, all_required=False) else None


def output_tool(request: LLMRequest, model_id: str) -> ToolDefinition | None:
    """The forced tool answering for the model (``None``: no structured output, or native)."""
    out = answer_schema(request)
    if out is None or native_schema(request, model_id) is not None:
        return None
    taken = {t.name for t in request.tools if isinstance(t, ToolDefinition)}
    if out.name in taken:
        raise InvalidRequestError(
            f"output_schema name {out.name!r} is also a tool's name: rename one", param="output_schema"
        )
    description = out.description or f"Give the answer as the {out.name} object (this is the reply)."
    return ToolDefinition(out.name, description, out.schema)


def forced_choice(request: LLMRequest, name: str) -> ToolChoice:
    """The tool choice that makes the model answer through ``name``: forced by name, or ``required``
    (any tool) when the caller's own function tools may still be called first."""
    choice = request.tool_choice
    if choice is not None and choice.mode == "tool":
        return choice  # the caller forces one of their tools this turn
    own = any(isinstance(t, ToolDefinition) for t in request.tools)
    if own and (choice is None or choice.mode in ("auto", "required")):
        return ToolChoice("required")
    return ToolChoice.named(name)


def with_output_tool(request: LLMRequest, model_id: str, route: str, *, thinking: bool) -> LLMRequest:
    """``request`` with the forced output tool added and chosen, when one answers for the model.
    ``thinking``: extended thinking is on, which allows no forced tool choice: refused then."""
    tool = output_tool(request, model_id)
    if tool is None:
        return request
    if thinking:
        option = "output_schema" if request.output_schema is not None else "json_mode"
        raise InvalidRequestError(
            f"{route}: {option} on {model_id} is answered through a forced tool, which is not allowed "
            "with extended thinking: turn thinking off, or use a model with native structured outputs "
            "(Claude 4.5 or later, with a schema whose objects set additionalProperties: false)",
            param=option,
        )
    return msgspec.structs.replace(
        request, tools=(*request.tools, tool), tool_choice=forced_choice(request, tool.name)
    )


def answer_tool_name(request: LLMRequest) -> str | None:
    """The forced output tool's name for the parser (``None``: the answer is plain text)."""
    model_id = getattr(request.model, "id", "")
    out = answer_schema(request)
    if out is None or not isinstance(model_id, str) or native_schema(request, model_id) is not None:
        return None
    return out.name


class AnswerInput(ToolInput):
    """The forced output tool's call, emitted as the answer's text block (same interface as
    ``ToolInput``, so a parser swaps one for the other at the block's start)."""

    __slots__ = ()

    def __init__(self, id: str, name: str, out: list[LLMEvent]) -> None:
        self.id = id
        self.name = name
        self.chunks: list[str] = []
        self.done = False
        self.provider_executed = False
        self.metadata = None
        out.append(TextStart(id))

    def delta(self, text: str, out: list[LLMEvent]) -> None:
        if text:
            self.chunks.append(text)
            out.append(TextDelta(self.id, text))

    def finish(self, out: list[LLMEvent], input: Any = None, raw: str | None = None) -> ToolCall | None:
        """Close the text block; a whole input (non-streamed body) is its text."""
        if self.done:
            return None
        self.done = True
        if not self.chunks:
            text = raw if raw is not None else _encoder.encode({} if input is None else input).decode()
            out.append(TextDelta(self.id, text))
        out.append(TextEnd(self.id))
        return None
