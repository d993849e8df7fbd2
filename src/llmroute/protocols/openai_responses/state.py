"""``openai_responses``, the parser state: section 3 of the six."""

from __future__ import annotations

from ...route.protocol import StreamState
from .._shared import Blocks, ToolInput
from .wire import NO_QUIRKS, ResponsesQuirks

# 3. parser state ----------------------------------------------------------------------------------


class ResponsesState(StreamState):
    __slots__ = (
        "added",
        "awaiting",
        "billed",
        "blocks",
        "call_ids",
        "called",
        "cited",
        "cited_urls",
        "client_calls",
        "item_ids",
        "phases",
        "quirks",
        "reasoning_ended",
        "reasoning_index",
        "reasoning_item",
        "refused",
        "searched",
        "searches",
        "text_chunks",
        "text_index",
        "text_item",
        "texts",
        "tools",
    )

    def __init__(self, quirks: ResponsesQuirks = NO_QUIRKS) -> None:
        super().__init__()
        self.blocks = Blocks()
        # (item id, content index) of the open text block and (item id, summary index) of the open
        # reasoning block, compared per delta so block ids are only built when the pair changes;
        # index -1 while none is open.
        self.text_item: str | None = None
        self.text_index = -1
        self.text_chunks: list[str] = []
        self.texts: dict[str, str] = {}  # closed text blocks, for late annotations
        self.phases: dict[str, str] = {}  # message item id -> phase
        self.reasoning_item: str | None = None
        self.reasoning_index = -1
        self.reasoning_ended: set[str] = set()  # reasoning items whose block has ended
        self.tools: dict[str, ToolInput] = {}  # item id -> streamed call
        # output index -> the id its item was added with: some servers give every event a new
        # item id, so parts are matched by position
        self.item_ids: dict[int, str] = {}
        self.added: set[str] = set()  # ids of the items added so far
        self.cited: set[tuple[str, str, str | None, int | None, int | None]] = set()
        self.client_calls = 0
        self.called: set[str] = set()  # item ids of the calls already completed
        self.call_ids: set[str] = set()  # ids of the calls opened: two items under one id are refused
        # hosted calls whose result is a later output item: call id -> (item id, tool name)
        self.awaiting: dict[str | None, tuple[str, str]] = {}
        self.quirks = quirks
        self.searches = 0
        self.billed: dict[str, int] = {}  # Usage.tool_calls kind -> calls (``ResponsesQuirks.billed_items``)
        self.searched = False  # a web_search_call was reported (else url_citation annotations imply one)
        self.cited_urls: list[tuple[str | None, str | None]] = []
        self.refused = False
