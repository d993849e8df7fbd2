"""Reasoning on OpenAI Chat beyond ``reasoning_content``: OpenRouter ``reasoning_details`` (both
ways) and Mistral's ``thinking`` content chunks.

Text / summary fragments (also sent as ``reasoning``), signatures and encrypted blobs. Fragments of
one detail are merged; the merged list rides on reasoning-end (``provider_metadata
["reasoning_details"]``) so the next request can send it back untouched
(``ChatQuirks.send_reasoning_details``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...schema.content import Message, ReasoningPart
from ...schema.events import LLMEvent
from .wire import ContentChunk

if TYPE_CHECKING:
    from .state import ChatState

__all__ = [
    "ContentChunk",
    "details_text",
    "on_content_chunks",
    "end_reasoning",
    "on_reasoning_details",
    "reasoning_details_out",
]

_MERGED_TEXT = ("text", "summary")


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def reasoning_details_out(message: Message) -> list[dict[str, Any]] | None:
    """OpenRouter reasoning details as received (signatures and encrypted blobs intact); a part
    without them (reasoning from another provider) is sent as plain reasoning text."""
    details: list[dict[str, Any]] = []
    for part in message.content:
        if not isinstance(part, ReasoningPart):
            continue
        kept = (part.provider_metadata or {}).get("reasoning_details")
        if isinstance(kept, list):
            details.extend(d for d in kept if isinstance(d, dict))  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        elif part.text:
            detail: dict[str, Any] = {"type": "reasoning.text", "text": part.text}
            if part.signature:
                detail["signature"] = part.signature
            details.append(detail)
    return details or None


def details_text(details: list[Any]) -> str | None:
    """Reasoning text carried only in ``reasoning_details`` (``reasoning`` field absent)."""
    parts = [
        value
        for detail in details
        for key in _MERGED_TEXT
        if isinstance(value := _obj(detail).get(key), str) and value
    ]
    return "".join(parts) or None


def on_reasoning_details(state: ChatState, details: list[Any], out: list[LLMEvent]) -> None:
    for raw in details:
        detail = _obj(raw)
        if not any(detail.get(key) for key in ("text", "summary", "data", "signature")):
            continue  # the empty opener some upstreams send
        state.blocks.end_text(out)
        state.blocks.reasoning_delta("", out)  # encrypted-only reasoning still gets a block
        _merge_detail(state.reasoning_details, detail)


def _merge_detail(merged: list[dict[str, Any]], detail: dict[str, Any]) -> None:
    last = merged[-1] if merged else None
    kind = detail.get("type")
    if (
        last is None
        or kind not in ("reasoning.text", "reasoning.summary")
        or last.get("type") != kind
        or last.get("index") != detail.get("index")
    ):
        merged.append({k: v for k, v in detail.items() if v is not None})
        return
    for key, value in detail.items():
        if key in _MERGED_TEXT and isinstance(value, str):
            last[key] = str(last.get(key) or "") + value
        elif value is not None and value != "":
            last[key] = value


def end_reasoning(state: ChatState, out: list[LLMEvent]) -> None:
    blocks = state.blocks
    if blocks.reasoning is None:
        return
    details = state.reasoning_details
    if not details:
        blocks.end_reasoning(out)
        return
    state.reasoning_details = []
    signature: str | None = None
    encrypted: str | None = None
    for detail in details:
        if isinstance(value := detail.get("signature"), str) and value:
            signature = value
        if (
            detail.get("type") == "reasoning.encrypted"
            and isinstance(value := detail.get("data"), str)
            and value
        ):
            encrypted = value
    blocks.end_reasoning(out, signature, encrypted, {"reasoning_details": details})


def on_content_chunks(
    state: ChatState,
    chunks: list[ContentChunk],
    out: list[LLMEvent],
    on_text: Callable[[ChatState, str, list[LLMEvent]], None],
) -> None:
    """``thinking`` chunks are reasoning, ``text`` chunks message text (through ``on_text``)."""
    for chunk in chunks:
        if chunk.type == "thinking":
            pieces = chunk.thinking
            text = pieces if isinstance(pieces, str) else "".join(p.text or "" for p in pieces or ())
            if text:
                state.blocks.end_text(out)  # text and reasoning are never open together
                state.blocks.reasoning_delta(text, out)
        elif chunk.type == "text" and chunk.text:
            on_text(state, chunk.text, out)
