"""The normalised event stream: ``LLMEvent`` is a tagged union on ``type``.

Ordering every protocol keeps: a block's ``*-start`` precedes its deltas and its ``*-end`` follows
them; streamed tool input ends with exactly one parsed ``tool-call``; hosted tools surface as
``tool-call`` + ``tool-result`` with ``provider_executed=True``; open blocks close before
``step-finish``; a completed response ends with exactly one ``finish``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, ClassVar, Literal

import msgspec

from .attempt import Attempt
from .errors import InvalidProviderOutputError
from .notices import RequestWarning
from .usage import Usage

__all__ = [
    "ApprovalRequest",
    "Citation",
    "Finish",
    "FinishReason",
    "LLMEvent",
    "Media",
    "ProviderError",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "StepFinish",
    "StepStart",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ToolCall",
    "ToolError",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "ToolResult",
]

FinishReason = Literal["stop", "length", "tool-calls", "content-filter", "error", "unknown"]

Meta = dict[str, Any] | None


class _Event(msgspec.Struct, frozen=True, gc=False, omit_defaults=True, tag_field="type"):
    """Each event class declares its wire tag twice, as msgspec's ``tag`` and as a ``Literal``
    class variable, so ``if event.type == "text-delta": event.text`` narrows under a type checker
    (a test keeps the two equal)."""

    type: ClassVar[str]


class StepStart(_Event, frozen=True, tag="step-start"):
    type: ClassVar[Literal["step-start"]] = "step-start"
    index: int = 0
    provider_metadata: Meta = None
    target: str | None = None
    """Through a ``Router``: the name of the target answering this step."""
    attempts: tuple[Attempt, ...] = ()
    """Through a ``Router``: the targets that failed for this step before ``target`` answered."""
    warnings: tuple[RequestWarning, ...] = ()
    """Options this step's route did not send (``PreparedRequest.warnings``)."""


class StepFinish(_Event, frozen=True, tag="step-finish"):
    type: ClassVar[Literal["step-finish"]] = "step-finish"
    index: int = 0
    reason: FinishReason = "unknown"
    usage: Usage | None = None
    provider_metadata: Meta = None


class TextStart(_Event, frozen=True, tag="text-start"):
    type: ClassVar[Literal["text-start"]] = "text-start"
    id: str
    provider_metadata: Meta = None


class TextDelta(_Event, frozen=True, tag="text-delta"):
    type: ClassVar[Literal["text-delta"]] = "text-delta"
    id: str
    text: str
    provider_metadata: Meta = None


class TextEnd(_Event, frozen=True, tag="text-end"):
    type: ClassVar[Literal["text-end"]] = "text-end"
    id: str
    provider_metadata: Meta = None


class ReasoningStart(_Event, frozen=True, tag="reasoning-start"):
    type: ClassVar[Literal["reasoning-start"]] = "reasoning-start"
    id: str
    provider_metadata: Meta = None


class ReasoningDelta(_Event, frozen=True, tag="reasoning-delta"):
    type: ClassVar[Literal["reasoning-delta"]] = "reasoning-delta"
    id: str
    text: str
    provider_metadata: Meta = None


class ReasoningEnd(_Event, frozen=True, tag="reasoning-end"):
    """Closes a reasoning block; carries what must round-trip (signature / encrypted content)."""

    type: ClassVar[Literal["reasoning-end"]] = "reasoning-end"
    id: str
    signature: str | None = None
    encrypted: str | None = None
    provider_metadata: Meta = None


class ToolInputStart(_Event, frozen=True, tag="tool-input-start"):
    type: ClassVar[Literal["tool-input-start"]] = "tool-input-start"
    id: str
    name: str
    provider_executed: bool = False
    provider_metadata: Meta = None


class ToolInputDelta(_Event, frozen=True, tag="tool-input-delta"):
    type: ClassVar[Literal["tool-input-delta"]] = "tool-input-delta"
    id: str
    name: str
    text: str
    provider_metadata: Meta = None


class ToolInputEnd(_Event, frozen=True, tag="tool-input-end"):
    type: ClassVar[Literal["tool-input-end"]] = "tool-input-end"
    id: str
    name: str
    provider_metadata: Meta = None


class ToolCall(_Event, frozen=True, tag="tool-call"):
    """A complete tool call. ``input`` is the parsed JSON value (the raw text if it was not JSON)."""

    type: ClassVar[Literal["tool-call"]] = "tool-call"
    id: str
    name: str
    input: Any
    provider_executed: bool = False
    provider_metadata: Meta = None


class ToolResult(_Event, frozen=True, tag="tool-result"):
    type: ClassVar[Literal["tool-result"]] = "tool-result"
    id: str
    name: str
    result: Any
    is_error: bool = False
    provider_executed: bool = False
    provider_metadata: Meta = None


class ToolError(_Event, frozen=True, tag="tool-error"):
    """A tool call that failed; the model reads ``message`` (as an error ``tool-result``).
    ``exception`` is what a local handler raised (``None`` otherwise): for the caller, never
    serialised (drop it with ``msgspec.structs.replace(event, exception=None)`` before encoding)."""

    type: ClassVar[Literal["tool-error"]] = "tool-error"
    id: str
    name: str
    message: str
    provider_metadata: Meta = None
    exception: Any = None


class Citation(_Event, frozen=True, tag="citation"):
    """Binds a source to ``text[start:end]`` of text block ``block_id`` (Python str indices,
    end exclusive; ``None`` when the provider gives no span)."""

    type: ClassVar[Literal["citation"]] = "citation"
    block_id: str
    url: str | None = None
    title: str | None = None
    start: int | None = None
    end: int | None = None
    cited_text: str | None = None
    provider_metadata: Meta = None


class ApprovalRequest(_Event, frozen=True, tag="approval-request"):
    """The provider asks the caller to approve a call before it runs it (OpenAI Responses MCP
    ``mcp_approval_request``). Answer in the next request with ``llmroute.approval(request, ok)``
    (an ``ApprovalResponsePart``); the request itself stays in the assistant message."""

    type: ClassVar[Literal["approval-request"]] = "approval-request"
    id: str
    name: str
    input: Any
    provider_metadata: Meta = None


class Finish(_Event, frozen=True, tag="finish"):
    type: ClassVar[Literal["finish"]] = "finish"
    reason: FinishReason = "unknown"
    usage: Usage | None = None
    provider_metadata: Meta = None


class ProviderError(_Event, frozen=True, tag="provider-error"):
    type: ClassVar[Literal["provider-error"]] = "provider-error"
    message: str
    code: str | None = None
    retryable: bool = False
    provider_metadata: Meta = None


class Media(_Event, frozen=True, tag="media"):
    """A whole image or audio clip the model produced (Gemini inline data, a Responses
    ``image_generation_call`` result): base64 ``data`` and its ``mime_type`` (read from the bytes
    when the provider names none). It lands in the assistant message as a ``MediaPart``."""

    type: ClassVar[Literal["media"]] = "media"
    id: str
    mime_type: str
    data: str
    provider_metadata: Meta = None

    def to_bytes(self) -> bytes:
        """The decoded payload; text that is not base64 is an ``InvalidProviderOutputError``."""
        try:
            return base64.b64decode(self.data, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidProviderOutputError(f"media {self.id!r}: data is not base64") from None


LLMEvent = (
    StepStart
    | StepFinish
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolInputStart
    | ToolInputDelta
    | ToolInputEnd
    | ToolCall
    | ToolResult
    | ToolError
    | Citation
    | Media
    | ApprovalRequest
    | Finish
    | ProviderError
)
