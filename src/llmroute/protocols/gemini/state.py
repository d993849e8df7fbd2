"""``gemini``, the parser state: section 3 of the six."""

from __future__ import annotations

import msgspec

from ...route.protocol import StreamState
from .._partial_json import PathWriter
from .._shared import ToolInput
from ..gemini_grounding import MergedGrounding, PartText, UrlMetadata

# 3. parser state ----------------------------------------------------------------------------------


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
