"""``openai_chat``, the parser state: section 3 of the six."""

from __future__ import annotations

from typing import Any

from ...route.protocol import StreamState
from .._shared import Blocks, ToolInput
from .wire import NAME, ChatQuirks, UrlCitation

# 3. parser state ----------------------------------------------------------------------------------


class ChatState(StreamState):
    __slots__ = (
        "audio",
        "audio_info",
        "blocks",
        "cited",
        "executed",
        "finish_reason",
        "images",
        "name",
        "pending_citations",
        "quirks",
        "reasoning_details",
        "refused",
        "searched",
        "service_tier",
        "started",
        "text_len",
        "text_starts",
        "tool_by_id",
        "tools",
        "web_seen",
    )

    def __init__(self, quirks: ChatQuirks, name: str = NAME) -> None:
        super().__init__()
        self.quirks = quirks
        self.name = name
        self.blocks = Blocks()
        self.tools: dict[int | str, ToolInput] = {}
        self.tool_by_id: dict[str, ToolInput] = {}
        self.finish_reason: str | None = None
        self.refused = False  # the model sent a refusal instead of an answer
        self.started = False
        self.text_len = 0  # characters of message content so far (annotation offsets count these)
        self.text_starts: list[tuple[int, str]] = []  # (content offset, block id) per text block
        self.pending_citations: list[UrlCitation] = []  # annotations that came before any text
        self.reasoning_details: list[dict[str, Any]] = []  # merged details of the open reasoning block
        self.executed: dict[int, tuple[str, str, bool]] = {}  # Groq: index -> (call id, name, result sent)
        self.web_seen: set[str] = set()  # GLM: search hits already surfaced
        self.cited: list[tuple[str | None, str | None]] = []  # (url, title) of url_citation annotations
        self.searched = False  # a web_search call was reported (else annotations imply one)
        self.images = 0  # images produced so far (their media ids)
        self.audio = bytearray()  # decoded audio pieces, reported whole as media at the finish
        self.audio_info: dict[str, Any] = {}  # its id and expiry
        self.service_tier: str | None = None  # the tier that served the call (Groq names it early)
