"""``bedrock_converse``, the parser state: section 3 of the six."""

from __future__ import annotations

from typing import Any

from ...route.protocol import StreamState
from ...schema.request import LLMRequest
from .._output_tool import answer_tool_name
from .._shared import Blocks, ToolInput

# 3. parser state ----------------------------------------------------------------------------------


class PendingResult:
    __slots__ = ("id", "items", "status", "type")

    def __init__(self, id: str, status: str | None, type: str | None) -> None:
        self.id = id
        self.status = status
        self.type = type
        self.items: list[dict[str, Any]] = []


class ConverseState(StreamState):
    __slots__ = (
        "answer_tool",
        "answered",
        "blocks",
        "client_tools",
        "reasoning_index",
        "redacted",
        "results",
        "signature",
        "stop_reason",
        "text_index",
        "tool_names",
        "tools",
    )

    def __init__(self) -> None:
        super().__init__()
        self.blocks = Blocks()
        # contentBlockIndex of the open text / reasoning block (-1: none), compared per delta
        self.text_index = -1
        self.reasoning_index = -1
        self.tools: dict[int, ToolInput] = {}
        self.results: dict[int, PendingResult] = {}
        self.tool_names: dict[str, str] = {}  # toolUseId -> name, for provider-executed results
        self.client_tools = False
        self.signature: str | None = None  # of the open reasoning block
        self.redacted: str | None = None
        self.stop_reason: str | None = None
        self.answer_tool: str | None = None  # the forced output tool: its call is the answer's text
        self.answered = False

    @classmethod
    def for_request(cls, request: LLMRequest) -> ConverseState:
        state = cls()
        state.answer_tool = answer_tool_name(request)
        return state
