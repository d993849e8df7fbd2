"""``gemini``, the parser state: section 3 of the six."""

from __future__ import annotations

from typing import Any

import msgspec

from ...route.protocol import StreamState
from .._partial_json import PathWriter
from .._shared import ToolInput
from .wire import GroundingChunk, GroundingMetadata, Support, UrlMetadata

# 3. parser state ----------------------------------------------------------------------------------


class PartText:
    """One logical part as the non-streamed response would hold it: consecutive streamed deltas of
    the same kind are one part. ``kind`` is ``text``, ``thought`` or ``other`` (calls, code); only
    ``text`` parts keep their ``chunks`` (grounding spans point into answer text alone)."""

    __slots__ = ("_final", "block_id", "chunks", "kind", "signature")

    def __init__(self, kind: str, block_id: str, signature: str | None) -> None:
        self.kind = kind
        self.block_id = block_id
        self.chunks: list[str] = []
        self.signature = signature
        self._final: tuple[str, bytes] | None = None

    def final(self) -> tuple[str, bytes]:
        """The whole text and its UTF-8 bytes (once the stream has ended)."""
        if self._final is None:
            text = "".join(self.chunks)
            self._final = (text, text.encode())
        return self._final


class MergedGrounding:
    """Field-wise merge across chunks: the latest non-empty value of each field wins."""

    __slots__ = ("chunks", "entry_point", "queries", "retrieval", "supports")

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.chunks: list[GroundingChunk] = []
        self.supports: list[Support] = []
        self.entry_point: dict[str, Any] | None = None
        self.retrieval: dict[str, Any] | None = None

    def merge(self, g: GroundingMetadata) -> None:
        if g.web_search_queries:
            self.queries = g.web_search_queries
        if g.grounding_chunks:
            self.chunks = g.grounding_chunks
        if g.grounding_supports:
            self.supports = g.grounding_supports
        if g.search_entry_point:
            self.entry_point = g.search_entry_point
        if g.retrieval_metadata:
            self.retrieval = g.retrieval_metadata


class StreamedCall:
    """A function call whose arguments arrive as ``partialArgs`` pieces."""

    __slots__ = ("tool", "writer")

    def __init__(self, tool: ToolInput) -> None:
        self.tool = tool
        self.writer = PathWriter()


class GeminiState(StreamState):
    __slots__ = (
        "block_reason",
        "call_ids",
        "counter",
        "file_search_id",
        "finish_message",
        "finish_reason",
        "grounding",
        "hosted",
        "local_calls",
        "open",
        "parts",
        "pending_code_id",
        "raw_usage",
        "response_id",
        "started",
        "streamed",
        "url_context",
    )

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[PartText] = []
        self.open: PartText | None = None  # the open text/reasoning block
        self.counter = 0  # block ids
        self.local_calls = 0
        self.call_ids: set[str] = set()  # ids the provider gave its function calls
        self.hosted = 0
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.block_reason: str | None = None
        self.raw_usage: msgspec.Raw | None = None
        self.grounding = MergedGrounding()
        self.url_context: list[UrlMetadata] = []
        self.response_id: str | None = None
        self.file_search_id: str | None = None
        self.pending_code_id: str | None = None  # the code call awaiting its codeExecutionResult
        self.started = False
        self.streamed: StreamedCall | None = None  # the call whose arguments are streaming
