"""``anthropic_messages``, the parser state: section 3 of the six."""

from __future__ import annotations

from typing import Any

from ...route.protocol import StreamState
from ...schema.content import ToolCallPart
from ...schema.request import LLMRequest
from .._output_tool import answer_tool_name
from .._shared import ToolInput

# 3. parser state ----------------------------------------------------------------------------------

TEXT, THINKING, REDACTED, TOOL = 0, 1, 2, 3


class OpenBlock:
    """One open content block, keyed by its Anthropic ``index``."""

    __slots__ = ("citations", "data", "id", "index", "initial", "kind", "length", "signature", "tool")

    def __init__(self, kind: int, id: str, index: int = 0) -> None:
        self.kind = kind
        self.id = id
        self.index = index
        self.length = 0  # characters of text so far (citations span the whole block)
        self.citations: list[dict[str, Any]] = []
        self.signature: str | None = None
        self.data: str | None = None
        self.tool: ToolInput | None = None
        self.initial: Any = None


class AnthropicState(StreamState):
    __slots__ = (
        "answer_tool",
        "answered",
        "called",
        "indices",
        "open",
        "raw_usage",
        "server_inputs",
        "server_names",
        "started",
        "stop_reason",
        "text",
        "tool_ids",
    )

    def __init__(self) -> None:
        super().__init__()
        self.started = False  # a message_start arrived (a second one before message_stop is an error)
        self.indices: set[int] = set()  # block indices used in this message (each opens once)
        self.tool_ids: set[str] = set()  # tool-use ids seen (each is one call)
        self.open: dict[int, OpenBlock] = {}
        self.raw_usage: dict[str, Any] = {}
        self.server_names: dict[str, str] = {}  # server tool id -> name, to name its result
        self.server_inputs: dict[str, Any] = {}  # server tool id -> its input (web search queries)
        self.stop_reason: str | None = None
        self.text: OpenBlock | None = None  # the text block most recently opened, while it is open
        self.answer_tool: str | None = None  # the forced output tool: its call is the answer's text
        self.answered = False  # the output tool answered
        self.called = False  # a caller's tool was called

    @classmethod
    def for_request(cls, request: LLMRequest) -> AnthropicState:
        """A pause_turn continuation may open with the result of a call the previous response made:
        the request's last assistant turn names it (and its query)."""
        state = cls()
        state.answer_tool = answer_tool_name(request)
        for message in request.messages[-2:]:
            if message.role == "assistant":
                for part in message.content:
                    if isinstance(part, ToolCallPart) and part.provider_executed:
                        state.server_names[part.id] = part.name
                        state.server_inputs[part.id] = part.input
        return state
