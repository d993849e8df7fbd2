"""Messages and their content parts."""

from __future__ import annotations

import base64
from typing import Any, Literal

import msgspec

__all__ = [
    "ApprovalRequestPart",
    "ApprovalResponsePart",
    "AssistantPart",
    "MediaPart",
    "Message",
    "Part",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
]

Role = Literal["system", "user", "assistant", "tool"]


class TextPart(msgspec.Struct, frozen=True, tag="text", tag_field="type", omit_defaults=True):
    text: str
    """The text."""
    provider_metadata: dict[str, Any] | None = None
    """Provider-specific data by namespace, as the response carried it: sent back untouched next turn."""


class MediaPart(msgspec.Struct, frozen=True, tag="media", tag_field="type", omit_defaults=True):
    """An image, document or audio: an input, or in an assistant message media the model produced.
    ``data`` is raw bytes, a base64 string, or an http(s) URL."""

    mime_type: str
    """Its MIME type (``image/png``, ``application/pdf``, ``audio/wav``, ...)."""
    data: bytes | str
    """Raw bytes, a base64 string, or an http(s) URL."""
    filename: str | None = None
    """A file name, for providers that show or need one (documents)."""
    provider_metadata: dict[str, Any] | None = None
    """Provider-specific data by namespace, as the response carried it: sent back untouched next turn."""

    @property
    def is_url(self) -> bool:
        return isinstance(self.data, str) and self.data.startswith(("http://", "https://", "gs://"))

    def base64(self) -> str:
        """The payload as base64 text (URLs are returned unchanged)."""
        if isinstance(self.data, bytes):
            return base64.b64encode(self.data).decode("ascii")
        return self.data


class ReasoningPart(msgspec.Struct, frozen=True, tag="reasoning", tag_field="type", omit_defaults=True):
    """Model reasoning. ``signature`` / ``encrypted`` must round-trip untouched into the next request."""

    text: str
    """The reasoning text (or its summary)."""
    signature: str | None = None
    """The provider's signature over the reasoning; must round-trip untouched."""
    encrypted: str | None = None
    """Reasoning the provider returned encrypted; must round-trip untouched."""
    provider_metadata: dict[str, Any] | None = None
    """Provider-specific data by namespace, as the response carried it: sent back untouched next turn."""


class ToolCallPart(msgspec.Struct, frozen=True, tag="tool-call", tag_field="type", omit_defaults=True):
    id: str
    """The call's id; the ``ToolResultPart`` answering it carries the same."""
    name: str
    """The tool's name."""
    input: Any
    """The arguments (a JSON value, or the raw text when it was not JSON)."""
    provider_executed: bool = False
    """A hosted tool's call, run by the provider."""
    provider_metadata: dict[str, Any] | None = None
    """Provider-specific data by namespace, as the response carried it: sent back untouched next turn."""


class ToolResultPart(msgspec.Struct, frozen=True, tag="tool-result", tag_field="type", omit_defaults=True):
    """A tool's output. ``result`` is text, any JSON value, or a tuple of Text/Media parts."""

    id: str
    """The id of the call this answers."""
    name: str
    """The tool's name."""
    result: Any
    """Text, any JSON value, or a tuple of Text/Media parts."""
    is_error: bool = False
    """The tool failed; ``result`` says how."""
    provider_executed: bool = False
    """A hosted tool's result, reported by the provider (in the assistant message)."""
    provider_metadata: dict[str, Any] | None = None
    """Provider-specific data by namespace, as the response carried it: sent back untouched next turn."""


class ApprovalRequestPart(
    msgspec.Struct, frozen=True, tag="approval-request", tag_field="type", omit_defaults=True
):
    """An ``ApprovalRequest`` kept in the assistant message, so the history sent back carries it."""

    id: str
    """The request's id."""
    name: str
    """The tool the provider wants to run."""
    input: Any
    """The arguments it would run it with."""
    provider_metadata: dict[str, Any] | None = None
    """Provider-specific data by namespace, as the response carried it: sent back untouched next turn."""


class ApprovalResponsePart(
    msgspec.Struct, frozen=True, tag="approval-response", tag_field="type", omit_defaults=True
):
    """The caller's answer to the approval request ``request_id`` (in a user message)."""

    request_id: str
    """The ``ApprovalRequest.id`` answered."""
    approve: bool
    """Whether the call may run."""
    reason: str | None = None
    """Why, for the provider (optional)."""
    provider_metadata: dict[str, Any] | None = None
    """Provider-specific data by namespace, as the response carried it: sent back untouched next turn."""


Part = (
    TextPart
    | MediaPart
    | ReasoningPart
    | ToolCallPart
    | ToolResultPart
    | ApprovalRequestPart
    | ApprovalResponsePart
)
AssistantPart = TextPart | MediaPart | ReasoningPart | ToolCallPart | ToolResultPart | ApprovalRequestPart


class Message(msgspec.Struct, frozen=True, omit_defaults=True):
    role: Role
    """Who speaks: ``system``, ``user``, ``assistant`` or ``tool``."""
    content: tuple[Part, ...]
    """The message's parts, in order."""
    provider_metadata: dict[str, Any] | None = None
    """Provider-specific data by namespace, as the response carried it: sent back untouched next turn."""
