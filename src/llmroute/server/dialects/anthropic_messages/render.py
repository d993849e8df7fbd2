"""A run's events -> Anthropic's answer: the streamed events (``message_start`` ... ``message_stop``)
and the whole ``message``, built by one block builder so both say the same.

What the stream guarantees, whatever the upstream (the failures other gateways' translations have
shown Claude Code): exactly one ``message_start``, carrying a ``usage`` object; blocks numbered
from 0 in the order they open, one open at a time, so a thinking delta never lands in a text block;
every thinking block that has a signature gets its ``signature_delta`` before it stops; hosted and
gateway searches as ``server_tool_use`` + ``web_search_tool_result``; the usage in
``message_delta``; a failure as an ``error`` event (what the anthropic SDKs raise from).

Reasoning or call data another upstream must see again (a Gemini thought signature, a Responses
``encrypted_content``) rides in a thinking block's ``signature`` (``server.carry``), which clients
send back untouched with the turn.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection
from typing import Any, cast

import msgspec

from ....schema.cost import Cost
from ....schema.events import (
    Citation,
    Finish,
    LLMEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    TextDelta,
    TextEnd,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    ToolResult,
)
from ....schema.response import LLMResponse
from ....schema.usage import Usage
from ... import carry
from ...failure import Failure
from ..conversation import arguments_json
from .decode import GATEWAY_SEARCH, NS

__all__ = ["Blocks", "error_body", "error_type", "message", "new_id", "usage"]

_encode = msgspec.json.Encoder().encode

_STOP = {"stop": "end_turn", "length": "max_tokens", "tool-calls": "tool_use", "content-filter": "refusal"}

# HTTP status -> Anthropic's error type (platform.claude.com/docs/en/api/errors)
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def new_id() -> str:
    return f"msg_{uuid.uuid4().hex[:24]}"


def error_type(status: int) -> str:
    return _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error object: ``{"type": "error", "error": {"type", "message"}}``."""
    return {"type": "error", "error": {"type": error_type(status), "message": message}}


def usage(value: Usage | None) -> dict[str, Any]:
    """Anthropic's usage object: its ``input_tokens`` leaves out cache reads and writes."""
    if value is None:
        return {"input_tokens": 0, "output_tokens": 0}
    total = value.input_tokens or 0
    read, write = value.cache_read_tokens, value.cache_write_tokens
    uncached = value.non_cached_input_tokens
    if uncached is None:
        uncached = max(0, total - (read or 0) - (write or 0))
    out: dict[str, Any] = {"input_tokens": uncached, "output_tokens": value.output_tokens or 0}
    if read is not None:
        out["cache_read_input_tokens"] = read
    if write is not None:
        out["cache_creation_input_tokens"] = write
    if value.web_search_requests:
        out["server_tool_use"] = {"web_search_requests": value.web_search_requests}
    return out


class _Open:
    __slots__ = ("block", "chunks", "id", "index", "kind")

    def __init__(self, kind: str, id: str, index: int, block: dict[str, Any]) -> None:
        self.kind, self.id, self.index, self.block = kind, id, index, block
        self.chunks: list[str] = []


class Blocks:
    """The answer's content blocks, built event by event; with ``out`` given to ``add``, the SSE
    events that build them are appended too. ``hidden``: the gateway's own tools (its web search),
    shown as server blocks."""

    def __init__(self, hidden: Collection[str] = ()) -> None:
        self.hidden = hidden
        self.content: list[dict[str, Any]] = []
        self.open: _Open | None = None
        self.finish: Finish | None = None
        self.stop: dict[str, Any] = {}  # the last step's Anthropic stop_reason / stop_sequence, if any
        self._reasoning: set[str] = set()  # reasoning blocks started but not yet shown
        self._searches: dict[str, Any] = {}  # gateway search call id -> its input

    # -- SSE

    @staticmethod
    def sse(type: str, body: dict[str, Any]) -> bytes:
        return b"event: " + type.encode() + b"\ndata: " + _encode({"type": type, **body}) + b"\n\n"

    def _start(self, kind: str, id: str, block: dict[str, Any], out: list[bytes] | None) -> _Open:
        self._close(out)
        index = len(self.content)
        self.content.append(block)
        self.open = _Open(kind, id, index, block)
        if out is not None:
            out.append(self.sse("content_block_start", {"index": index, "content_block": block}))
        return self.open

    def _delta(self, delta: dict[str, Any], out: list[bytes] | None) -> None:
        if out is not None and self.open is not None:
            out.append(self.sse("content_block_delta", {"index": self.open.index, "delta": delta}))

    def _close(self, out: list[bytes] | None) -> None:
        opened = self.open
        if opened is None:
            return
        self.open = None
        if out is not None:
            out.append(self.sse("content_block_stop", {"index": opened.index}))

    def _whole(self, block: dict[str, Any], out: list[bytes] | None) -> None:
        """A block that arrives complete (a search result): start and stop together."""
        self._start("whole", "", block, out)
        self._close(out)

    # -- events

    def add(self, event: LLMEvent, out: list[bytes] | None = None) -> None:
        if isinstance(event, TextDelta):
            opened = self.open
            if opened is None or opened.kind != "text" or opened.id != event.id:
                opened = self._start("text", event.id, {"type": "text", "text": ""}, out)
            opened.block["text"] += event.text
            self._delta({"type": "text_delta", "text": event.text}, out)
        elif isinstance(event, ReasoningDelta):
            opened = self.open
            if opened is None or opened.kind != "thinking" or opened.id != event.id:
                opened = self._start(
                    "thinking", event.id, {"type": "thinking", "thinking": "", "signature": ""}, out
                )
            self._reasoning.discard(event.id)
            opened.block["thinking"] += event.text
            self._delta({"type": "thinking_delta", "thinking": event.text}, out)
        elif isinstance(event, ReasoningStart):
            self._reasoning.add(event.id)
        elif isinstance(event, ReasoningEnd):
            self._end_reasoning(event, out)
        elif isinstance(event, TextEnd):
            if self.open is not None and self.open.kind == "text" and self.open.id == event.id:
                self._close(out)
        elif isinstance(event, Citation):
            self._citation(event, out)
        elif isinstance(event, ToolInputStart):
            if not event.provider_executed and event.name not in self.hidden:
                block: dict[str, Any] = {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}
                self._start("tool", event.id, block, out)
        elif isinstance(event, ToolInputDelta):
            opened = self.open
            if opened is not None and opened.kind == "tool" and opened.id == event.id:
                opened.chunks.append(event.text)
                self._delta({"type": "input_json_delta", "partial_json": event.text}, out)
        elif isinstance(event, ToolCall):
            self._call(event, out)
        elif isinstance(event, ToolResult):
            self._result(event, out)
        elif isinstance(event, StepFinish):
            self.stop = _stop_of(event.provider_metadata)
        elif isinstance(event, Finish):
            self.finish = event

    def _end_reasoning(self, event: ReasoningEnd, out: list[bytes] | None) -> None:
        opened = self.open
        shown = opened is not None and opened.kind == "thinking" and opened.id == event.id
        started = event.id in self._reasoning
        self._reasoning.discard(event.id)
        meta = event.provider_metadata
        if event.encrypted is not None and _stop_of(meta).get("type") == "redacted_thinking":
            self._close(out)
            self._whole({"type": "redacted_thinking", "data": event.encrypted}, out)
            return
        signature = carry.of_reasoning(event, NS, bare=True)
        if not shown:
            if signature is None or not (started or meta or event.encrypted):
                return  # an empty block with nothing to carry
            opened = self._start(
                "thinking", event.id, {"type": "thinking", "thinking": "", "signature": ""}, out
            )
        assert opened is not None
        if signature:
            opened.block["signature"] = signature
            self._delta({"type": "signature_delta", "signature": signature}, out)
        self._close(out)

    def _citation(self, event: Citation, out: list[bytes] | None) -> None:
        opened = self.open
        if opened is None or opened.kind != "text" or opened.id != event.block_id:
            return
        raw = (event.provider_metadata or {}).get(NS)
        citation: dict[str, Any] = (
            cast("dict[str, Any]", raw)
            if isinstance(raw, dict)
            else {
                "type": "web_search_result_location",
                "url": event.url or "",
                "title": event.title or "",
                "cited_text": event.cited_text
                or (opened.block["text"][event.start : event.end] if event.start is not None else ""),
                "encrypted_index": "",
            }
        )
        opened.block.setdefault("citations", []).append(citation)
        self._delta({"type": "citations_delta", "citation": citation}, out)

    def _call(self, event: ToolCall, out: list[bytes] | None) -> None:
        if event.name in self.hidden and not event.provider_executed:
            self._searches[event.id] = event.input
            id = GATEWAY_SEARCH + event.id
            self._server_use("server_tool_use", id, event.name, event.input, None, out)
            return
        if event.provider_executed:
            info = cast("dict[str, Any]", (event.provider_metadata or {}).get(NS) or {})
            kind = str(info.get("type") or "server_tool_use")
            self._server_use(kind, event.id, event.name, event.input, info.get("server_name"), out)
            return
        opened = self.open
        if opened is None or opened.kind != "tool" or opened.id != event.id:
            block: dict[str, Any] = {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}
            opened = self._start("tool", event.id, block, out)
        if not opened.chunks:  # arguments given whole, not streamed
            text = arguments_json(_object(event.input))
            opened.chunks.append(text)
            self._delta({"type": "input_json_delta", "partial_json": text}, out)
        opened.block["input"] = _object(event.input)
        self._close(out)
        foreign = {k: v for k, v in (event.provider_metadata or {}).items() if k != NS}
        if foreign:  # a Gemini thought signature, a custom tool's kind: carried for the next turn
            signature = carry.pack(carry.Carried(provider_metadata=foreign, call=event.id))
            self._whole({"type": "thinking", "thinking": "", "signature": signature}, out)

    def _server_use(
        self, kind: str, id: str, name: str, input: Any, server: Any, out: list[bytes] | None
    ) -> None:
        # whole in its start event: the input is complete, and SDK releases that accumulate only
        # tool_use input from deltas still read it
        block: dict[str, Any] = {"type": kind, "id": id, "name": name, "input": _object(input)}
        if server is not None:
            block["server_name"] = server
        self._whole(block, out)

    def _result(self, event: ToolResult, out: list[bytes] | None) -> None:
        if event.id in self._searches and not event.provider_executed:
            self._whole(_gateway_search_block(event), out)
            return
        if not event.provider_executed:
            return  # a client tool's result comes from the client
        info = cast("dict[str, Any]", (event.provider_metadata or {}).get(NS) or {})
        kind = info.get("type")
        if isinstance(kind, str):  # Anthropic's own block, as it came
            block: dict[str, Any] = {
                "type": kind,
                "tool_use_id": event.id,
                "content": info.get("content", event.result),
            }
            if kind in ("mcp_tool_result",):
                block["is_error"] = event.is_error
            self._whole(block, out)
        elif event.name == "web_search":
            self._whole(_search_block(event.id, event.result), out)
        # other hosted results of other APIs (code execution output, ...) have no Anthropic block

    # -- the end

    def stop_reason(self) -> tuple[str, str | None]:
        given = self.stop.get("stop_reason")
        if isinstance(given, str) and given:
            sequence = self.stop.get("stop_sequence")
            return given, sequence if isinstance(sequence, str) else None
        reason = self.finish.reason if self.finish is not None else "stop"
        return _STOP.get(reason, "end_turn"), None

    def close(self, out: list[bytes] | None = None) -> None:
        self._close(out)


def _object(value: Any) -> dict[str, Any]:
    """A call's input as the object Anthropic's ``input`` is (anything else wrapped, as the library's
    Anthropic lowering does)."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {"input": value}


def _stop_of(metadata: dict[str, Any] | None) -> dict[str, Any]:
    info = (metadata or {}).get(NS)
    return cast("dict[str, Any]", info) if isinstance(info, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list (anything else skipped)."""
    items = cast("list[Any]", value) if isinstance(value, list) else []
    return [cast("dict[str, Any]", item) for item in items if isinstance(item, dict)]


def _search_block(id: str, result: Any) -> dict[str, Any]:
    """A hosted search's canonical result (``{"sources", "queries"}``) as Anthropic's block."""
    sources = cast("dict[str, Any]", result).get("sources") if isinstance(result, dict) else None
    items = [
        {
            "type": "web_search_result",
            "url": str(s.get("url") or ""),
            "title": str(s.get("title") or ""),
            "encrypted_content": "",
            "page_age": None,
        }
        for s in _dicts(sources)
        if s.get("url")  # a search the provider ran without naming a source has no result block
    ]
    return {"type": "web_search_tool_result", "tool_use_id": id, "content": items}


def _gateway_search_block(event: ToolResult) -> dict[str, Any]:
    """The gateway's own search result: its hits as ``web_search_result`` items, the whole result the
    model read packed in the first one (so the next turn sends the upstream the same)."""
    id = GATEWAY_SEARCH + event.id
    result = event.result
    if event.is_error or not isinstance(result, dict):
        text = result if isinstance(result, str) else arguments_json(result)
        packed = carry.pack(carry.Carried(text=_encode(text).decode()))
        item = {
            "type": "web_search_result",
            "url": "",
            "title": "",
            "encrypted_content": packed,
            "page_age": None,
        }
        return {"type": "web_search_tool_result", "tool_use_id": id, "content": [item]}
    value = cast("dict[str, Any]", result)
    hits = value.get("hits")
    items = [
        {
            "type": "web_search_result",
            "url": str(h.get("url") or ""),
            "title": str(h.get("title") or ""),
            "encrypted_content": "",
            "page_age": h.get("date"),
        }
        for h in _dicts(hits)
    ]
    packed = carry.pack(carry.Carried(text=_encode(value).decode()))
    if items:
        items[0]["encrypted_content"] = packed
    else:
        items = [
            {
                "type": "web_search_result",
                "url": "",
                "title": "",
                "encrypted_content": packed,
                "page_age": None,
            }
        ]
    return {"type": "web_search_tool_result", "tool_use_id": id, "content": items}


def envelope(
    id: str,
    model: str,
    content: list[dict[str, Any]],
    stop: tuple[str | None, str | None],
    use: dict[str, Any],
) -> dict[str, Any]:
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop[0],
        "stop_sequence": stop[1],
        "usage": use,
    }


def message(response: LLMResponse, model: str, hidden: Collection[str]) -> dict[str, Any]:
    """The whole ``message``: every step's blocks, as the stream would have built them."""
    blocks = Blocks(hidden)
    for event in response.events:
        blocks.add(event)
    blocks.close()
    return envelope(new_id(), model, blocks.content, blocks.stop_reason(), usage(response.usage))


class Stream:
    """The streamed answer, for the gateway's relay loop: ``opening`` (``message_start``), ``event``
    per event, then ``end`` or ``failed``."""

    def __init__(self, model: str, hidden: Collection[str]) -> None:
        self.model = model
        self.blocks = Blocks(hidden)
        self.id = new_id()
        self.created = int(time.time())

    def opening(self) -> bytes:
        start = envelope(self.id, self.model, [], (None, None), usage(None))
        return Blocks.sse("message_start", {"message": start})

    def event(self, event: LLMEvent, out: list[bytes]) -> None:
        self.blocks.add(event, out)

    def end(self, finish: Finish | None, cost: Cost | None = None) -> bytes:
        total = finish.usage if finish is not None else None
        if finish is not None:
            self.blocks.finish = finish
        out: list[bytes] = []
        self.blocks.close(out)
        reason, sequence = self.blocks.stop_reason()
        delta = {"delta": {"stop_reason": reason, "stop_sequence": sequence}, "usage": usage(total)}
        out.append(Blocks.sse("message_delta", delta))
        out.append(Blocks.sse("message_stop", {}))
        return b"".join(out)

    def failed(self, failure: Failure) -> bytes:
        """A failure after the stream began: open blocks stay open (the answer is cut), then an error."""
        return Blocks.sse("error", {"error": error_body(failure.status, failure.message)["error"]})
