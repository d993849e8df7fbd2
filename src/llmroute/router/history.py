"""Cross-provider history: what one target produced is never sent, unconverted, to another.

Reasoning signatures, encrypted reasoning, hosted-tool blocks and provider metadata (Gemini's
``thoughtSignature``, Anthropic citations, OpenAI item ids) are only valid on the provider and
protocol that made them. When a router's targets differ in either, the events a target produced
are stamped with its origin (``provider_metadata["llmroute"]["origin"]``, on the events that
become history parts: reasoning ends, tool calls, hosted results, and text / media carrying
metadata), and before a request goes to a target, assistant parts from another origin are
converted: reasoning is dropped (it cannot be replayed elsewhere), hosted tool calls and results
are dropped, function calls, text and media keep their content without the provider metadata.
Parts without a stamp (history written by the caller) are sent as they are.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..route.embedding import EmbeddingModel
from ..route.model import Model
from ..schema.content import (
    ApprovalRequestPart,
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from ..schema.events import ApprovalRequest, LLMEvent, Media, ReasoningEnd, TextEnd, ToolCall, ToolResult

__all__ = ["NAMESPACE", "for_origin", "origin_of", "stamp"]

NAMESPACE = "llmroute"
_replace = msgspec.structs.replace
_ALWAYS = (ReasoningEnd, ToolCall)
_WITH_METADATA = (TextEnd, Media, ApprovalRequest)


def origin_of(model: Model | EmbeddingModel) -> str:
    """``provider/protocol``: where provider-specific history is valid."""
    return f"{model.provider}/{model.route.protocol.name}"


def stamp(batch: list[LLMEvent], origin: str) -> None:
    """Mark, in place, the events of ``batch`` that become provider-specific history parts."""
    for i, event in enumerate(batch):
        if isinstance(event, _ALWAYS) or (
            (isinstance(event, _WITH_METADATA) and event.provider_metadata)
            or (isinstance(event, ToolResult) and event.provider_executed)
        ):
            meta: dict[str, Any] = dict(event.provider_metadata or {})
            meta[NAMESPACE] = {"origin": origin}
            batch[i] = _replace(event, provider_metadata=meta)


def _origin(part: Part) -> str | None:
    meta = getattr(part, "provider_metadata", None)
    if not meta:
        return None
    mark: Any = meta.get(NAMESPACE)
    return mark.get("origin") if isinstance(mark, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def _convert(part: Part) -> Part | None:
    """A part from another origin, as the target may receive it (``None``: left out)."""
    if isinstance(part, ReasoningPart | ApprovalRequestPart):
        return None
    if isinstance(part, ToolCallPart | ToolResultPart):
        return None if part.provider_executed else _replace(part, provider_metadata=None)
    if isinstance(part, TextPart | MediaPart):
        return _replace(part, provider_metadata=None)
    return part


def for_origin(messages: tuple[Message, ...], origin: str) -> tuple[Message, ...]:
    """``messages`` with other origins' assistant parts converted (the same tuple when none)."""
    out: list[Message] | None = None
    for i, message in enumerate(messages):
        if message.role != "assistant" or not any(
            (o := _origin(p)) is not None and o != origin for p in message.content
        ):
            if out is not None:
                out.append(message)
            continue
        if out is None:
            out = list(messages[:i])
        parts: list[Part] = []
        for part in message.content:
            o = _origin(part)
            kept = part if o is None or o == origin else _convert(part)
            if kept is not None:
                parts.append(kept)
        if parts:
            out.append(_replace(message, content=tuple(parts)))
    return messages if out is None else tuple(out)
