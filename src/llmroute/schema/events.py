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
from .cache import CacheMiss
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
    """The step's number in the response, from 0 (one step per model call of a tool loop)."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""
    target: str | None = None
    """Through a ``Router``: the name of the target answering this step."""
    attempts: tuple[Attempt, ...] = ()
    """Through a ``Router``: the targets that failed for this step before ``target`` answered."""
    warnings: tuple[RequestWarning, ...] = ()
    """Options this step's route did not send (``PreparedRequest.warnings``)."""


class StepFinish(_Event, frozen=True, tag="step-finish"):
    type: ClassVar[Literal["step-finish"]] = "step-finish"
    index: int = 0
    """The step's number, as on its ``step-start``."""
    reason: FinishReason = "unknown"
    """Why the model stopped this step (``tool-calls`` when it asked for tools)."""
    usage: Usage | None = None
    """This step's token counts (``None`` when the provider reported none)."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""
    cache_miss: CacheMiss | None = None
    """Through a ``Router`` with affinity: why this step read less from the prompt cache than the
    session's previous call left there (``None``: it did not)."""


class TextStart(_Event, frozen=True, tag="text-start"):
    type: ClassVar[Literal["text-start"]] = "text-start"
    id: str
    """The block's id, unique within the response; its deltas and end carry the same id."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class TextDelta(_Event, frozen=True, tag="text-delta"):
    type: ClassVar[Literal["text-delta"]] = "text-delta"
    id: str
    """The open text block this text belongs to."""
    text: str
    """More of the answer's text."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class TextEnd(_Event, frozen=True, tag="text-end"):
    type: ClassVar[Literal["text-end"]] = "text-end"
    id: str
    """The text block that ends."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip. Set at
    the end when the provider sends it last (Anthropic citations)."""


class ReasoningStart(_Event, frozen=True, tag="reasoning-start"):
    type: ClassVar[Literal["reasoning-start"]] = "reasoning-start"
    id: str
    """The block's id, unique within the response; its deltas and end carry the same id."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ReasoningDelta(_Event, frozen=True, tag="reasoning-delta"):
    type: ClassVar[Literal["reasoning-delta"]] = "reasoning-delta"
    id: str
    """The open reasoning block this text belongs to."""
    text: str
    """More of the model's reasoning (or its summary)."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ReasoningEnd(_Event, frozen=True, tag="reasoning-end"):
    """Closes a reasoning block; carries what must round-trip (signature / encrypted content)."""

    type: ClassVar[Literal["reasoning-end"]] = "reasoning-end"
    id: str
    """The reasoning block that ends."""
    signature: str | None = None
    """The provider's signature over the reasoning (Anthropic, Bedrock, Gemini); sent back with it next
    turn."""
    encrypted: str | None = None
    """Reasoning the provider returns only encrypted (Responses ``encrypted_content``, Anthropic redacted
    thinking); sent back as is."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ToolInputStart(_Event, frozen=True, tag="tool-input-start"):
    type: ClassVar[Literal["tool-input-start"]] = "tool-input-start"
    id: str
    """The tool call's id (its ``tool-call`` and result carry the same)."""
    name: str
    """The tool's name."""
    provider_executed: bool = False
    """The provider runs this tool (a hosted tool), not the caller."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ToolInputDelta(_Event, frozen=True, tag="tool-input-delta"):
    type: ClassVar[Literal["tool-input-delta"]] = "tool-input-delta"
    id: str
    """The tool call being streamed."""
    name: str
    """The tool's name."""
    text: str
    """More of the arguments' JSON text."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ToolInputEnd(_Event, frozen=True, tag="tool-input-end"):
    type: ClassVar[Literal["tool-input-end"]] = "tool-input-end"
    id: str
    """The tool call whose arguments are complete."""
    name: str
    """The tool's name."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ToolCall(_Event, frozen=True, tag="tool-call"):
    """A complete tool call. ``input`` is the parsed JSON value (the raw text if it was not JSON)."""

    type: ClassVar[Literal["tool-call"]] = "tool-call"
    id: str
    """The call's id; its result answers to it."""
    name: str
    """The tool's name."""
    input: Any
    """The arguments: parsed JSON, or the raw text when it was not JSON."""
    provider_executed: bool = False
    """The provider runs this tool (a hosted tool): its result follows in the stream."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ToolResult(_Event, frozen=True, tag="tool-result"):
    type: ClassVar[Literal["tool-result"]] = "tool-result"
    id: str
    """The id of the call this answers."""
    name: str
    """The tool's name."""
    result: Any
    """What the tool returned: any JSON value, or content parts (text and images)."""
    is_error: bool = False
    """The tool failed; ``result`` says how."""
    provider_executed: bool = False
    """A hosted tool's result, reported by the provider."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ToolError(_Event, frozen=True, tag="tool-error"):
    """A tool call that failed; the model reads ``message`` (as an error ``tool-result``).
    ``exception`` is what a local handler raised (``None`` otherwise): for the caller, never
    serialised (drop it with ``msgspec.structs.replace(event, exception=None)`` before encoding)."""

    type: ClassVar[Literal["tool-error"]] = "tool-error"
    id: str
    """The id of the call that failed."""
    name: str
    """The tool's name."""
    message: str
    """What went wrong, as the model reads it."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""
    exception: Any = None
    """What a local handler raised (``None`` otherwise); never serialised."""


class Citation(_Event, frozen=True, tag="citation"):
    """Binds a source to ``text[start:end]`` of text block ``block_id`` (Python str indices,
    end exclusive; ``None`` when the provider gives no span)."""

    type: ClassVar[Literal["citation"]] = "citation"
    block_id: str
    """The text block the cited span is in."""
    url: str | None = None
    """The source's URL."""
    title: str | None = None
    """The source's title."""
    start: int | None = None
    """Where the span starts in the block's text (a Python str index; ``None``: no span given)."""
    end: int | None = None
    """Where the span ends, exclusive (``None``: no span given)."""
    cited_text: str | None = None
    """The source's text the claim rests on, when the provider quotes it."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ApprovalRequest(_Event, frozen=True, tag="approval-request"):
    """The provider asks the caller to approve a call before it runs it (OpenAI Responses MCP
    ``mcp_approval_request``). Answer in the next request with ``llmroute.approval(request, ok)``
    (an ``ApprovalResponsePart``); the request itself stays in the assistant message."""

    type: ClassVar[Literal["approval-request"]] = "approval-request"
    id: str
    """The request's id; the ``ApprovalResponsePart`` answers to it."""
    name: str
    """The tool the provider wants to run."""
    input: Any
    """The arguments it would run it with."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class Finish(_Event, frozen=True, tag="finish"):
    type: ClassVar[Literal["finish"]] = "finish"
    reason: FinishReason = "unknown"
    """Why the response ended (the last step's reason)."""
    usage: Usage | None = None
    """Token counts over every step (``None`` when no step reported any)."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class ProviderError(_Event, frozen=True, tag="provider-error"):
    type: ClassVar[Literal["provider-error"]] = "provider-error"
    message: str
    """The provider's error message, redacted."""
    code: str | None = None
    """The provider's error code or type, when it gives one."""
    retryable: bool = False
    """Whether trying again may succeed."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""


class Media(_Event, frozen=True, tag="media"):
    """A whole image or audio clip the model produced (Gemini inline data, a Responses
    ``image_generation_call`` result): base64 ``data`` and its ``mime_type`` (read from the bytes
    when the provider names none). It lands in the assistant message as a ``MediaPart``."""

    type: ClassVar[Literal["media"]] = "media"
    id: str
    """The media item's id, unique within the response."""
    mime_type: str
    """Its MIME type (``image/png``, ``audio/wav``, ...)."""
    data: str
    """The payload, base64 (``to_bytes()`` decodes it)."""
    provider_metadata: Meta = None
    """Provider-specific data by namespace (``{"anthropic": {...}}``), kept so it can round-trip."""

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
