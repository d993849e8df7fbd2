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
    provider_metadata: dict[str, Any] | None = None


class MediaPart(msgspec.Struct, frozen=True, tag="media", tag_field="type", omit_defaults=True):
    """An image, document or audio: an input, or in an assistant message media the model produced.
    ``data`` is raw bytes, a base64 string, or an http(s) URL."""

    mime_type: str
    data: bytes | str
    filename: str | None = None
    provider_metadata: dict[str, Any] | None = None

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
    signature: str | None = None
    encrypted: str | None = None
    provider_metadata: dict[str, Any] | None = None


class ToolCallPart(msgspec.Struct, frozen=True, tag="tool-call", tag_field="type", omit_defaults=True):
    id: str
    name: str
    input: Any
    provider_executed: bool = False
    provider_metadata: dict[str, Any] | None = None


class ToolResultPart(msgspec.Struct, frozen=True, tag="tool-result", tag_field="type", omit_defaults=True):
    """A tool's output. ``result`` is text, any JSON value, or a tuple of Text/Media parts."""

    id: str
    name: str
    result: Any
    is_error: bool = False
    provider_executed: bool = False
    provider_metadata: dict[str, Any] | None = None


class ApprovalRequestPart(
    msgspec.Struct, frozen=True, tag="approval-request", tag_field="type", omit_defaults=True
):
    """An ``ApprovalRequest`` kept in the assistant message, so the history sent back carries it."""

    id: str
    name: str
    input: Any
    provider_metadata: dict[str, Any] | None = None


class ApprovalResponsePart(
    msgspec.Struct, frozen=True, tag="approval-response", tag_field="type", omit_defaults=True
):
    """The caller's answer to the approval request ``request_id`` (in a user message)."""

    request_id: str
    approve: bool
    reason: str | None = None
    provider_metadata: dict[str, Any] | None = None


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
    content: tuple[Part, ...]
    provider_metadata: dict[str, Any] | None = None
