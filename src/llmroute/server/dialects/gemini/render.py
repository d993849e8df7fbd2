"""A run's events -> Gemini's answer: ``GenerateContentResponse`` chunks (``streamGenerateContent``
with ``alt=sse``) and the whole response, built by one part builder so both say the same.

A hosted search (Gemini's own, another upstream's, or the gateway's ``web_search``) is the
candidate's ``groundingMetadata`` (queries, chunks, and supports from the citations, as UTF-8 byte
offsets into the answer text). Reasoning another upstream must see again (an Anthropic signature, a
Responses ``encrypted_content``) is packed (``server.carry``) into the ``thoughtSignature`` of its
thought part and, because gemini-cli drops thought parts from the history it sends back, of the
next function call too; Gemini's own signatures pass through as they are.
"""

from __future__ import annotations

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
    TextDelta,
    TextEnd,
    ToolCall,
    ToolResult,
)
from ....schema.response import LLMResponse
from ....schema.usage import Usage
from ... import carry
from ...failure import Failure
from .decode import NS

__all__ = ["Parts", "Stream", "error_body", "response", "usage_metadata"]

_encode = msgspec.json.Encoder().encode

_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "tool-calls": "STOP", "content-filter": "SAFETY"}

# HTTP status -> google.rpc status (the ``status`` of Gemini's error object)
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """Gemini's error object: ``{"error": {"code", "message", "status"}}``."""
    return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}


def usage_metadata(value: Usage | None) -> dict[str, Any] | None:
    """Gemini's ``usageMetadata``: ``candidatesTokenCount`` leaves out the thoughts."""
    if value is None:
        return None
    prompt = value.input_tokens or 0
    output = value.output_tokens or 0
    thoughts = value.reasoning_tokens or 0
    out: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": max(0, output - thoughts),
        "totalTokenCount": prompt + output,
    }
    if thoughts:
        out["thoughtsTokenCount"] = thoughts
    if value.cache_read_tokens:
        out["cachedContentTokenCount"] = value.cache_read_tokens
    return out


class Parts:
    """The candidate's parts, built event by event; ``add`` returns the parts that event adds (a
    stream sends them as one chunk). ``hidden``: the gateway's own tools (its web search), shown as
    grounding."""

    def __init__(self, hidden: Collection[str] = ()) -> None:
        self.hidden = hidden
        self.parts: list[dict[str, Any]] = []
        self.finish: Finish | None = None
        self.text_bytes = 0  # UTF-8 length of the answer text so far (grounding offsets)
        self._blocks: dict[str, tuple[int, str]] = {}  # text block -> (its byte offset, its text)
        self._pending: list[carry.Carried] = []  # foreign reasoning not yet put on a call
        self._queries: list[str] = []
        self._chunks: list[dict[str, Any]] = []
        self._supports: list[dict[str, Any]] = []
        self._searches: dict[str, Any] = {}  # gateway search call id -> its input

    def add(self, event: LLMEvent) -> list[dict[str, Any]]:
        new: list[dict[str, Any]] = []
        if isinstance(event, TextDelta):
            start, text = self._blocks.get(event.id, (self.text_bytes, ""))
            self._blocks[event.id] = (start, text + event.text)
            self.text_bytes += len(event.text.encode())
            new.append({"text": event.text})
        elif isinstance(event, ReasoningDelta):
            new.append({"text": event.text, "thought": True})
        elif isinstance(event, ReasoningEnd):
            signature = carry.of_reasoning(event, NS)
            if signature is not None:
                new.append({"text": "", "thought": True, "thoughtSignature": signature})
                if carry.unpack(signature) is not None:
                    self._pending.append(
                        carry.Carried(event.signature, event.encrypted, event.provider_metadata)
                    )
        elif isinstance(event, TextEnd):
            sig = (event.provider_metadata or {}).get(NS, {}).get("thoughtSignature")
            if isinstance(sig, str):
                new.append({"text": "", "thoughtSignature": sig})
        elif isinstance(event, ToolCall):
            new.extend(self._call(event))
        elif isinstance(event, ToolResult):
            self._result(event)
        elif isinstance(event, Citation):
            self._citation(event)
        elif isinstance(event, Finish):
            self.finish = event
        self.parts.extend(new)
        return new

    def _call(self, event: ToolCall) -> list[dict[str, Any]]:
        if event.name in self.hidden and not event.provider_executed:
            self._searches[event.id] = event.input
            query = _mapping(event.input).get("query")
            if isinstance(query, str):
                self._queries.append(query)
            return []
        if event.provider_executed:
            given = _mapping(event.input)
            if event.name == "code_execution" and "code" in given:
                return [{"executableCode": given}]
            queries = given.get("queries") or (
                [given["query"]] if isinstance(given.get("query"), str) else []
            )
            self._queries.extend(q for q in cast("list[Any]", queries) if isinstance(q, str))
            return []
        call: dict[str, Any] = {"name": event.name, "args": _object(event.input), "id": event.id}
        part: dict[str, Any] = {"functionCall": call}
        meta = dict(event.provider_metadata or {})
        native = meta.pop(NS, None)
        if meta or self._pending:
            part["thoughtSignature"] = carry.pack(
                carry.Carried(
                    provider_metadata=event.provider_metadata, call=event.id, before=tuple(self._pending)
                )
            )
            self._pending = []
        elif isinstance(native, dict) and isinstance(
            sig := cast("dict[str, Any]", native).get("thoughtSignature"), str
        ):
            part["thoughtSignature"] = sig
        return [part]

    def _result(self, event: ToolResult) -> None:
        if event.id in self._searches and not event.provider_executed:
            value = _mapping(event.result)
            hits = value.get("hits")
            for hit in cast("list[Any]", hits if isinstance(hits, list) else []):
                if isinstance(hit, dict):
                    entry = cast("dict[str, Any]", hit)
                    self._chunks.append({"web": {"uri": entry.get("url"), "title": entry.get("title")}})
            return
        if not event.provider_executed:
            return
        result = _mapping(event.result)
        if event.name == "code_execution" and result:
            self.parts.append({"codeExecutionResult": result})
            return
        if event.name != "web_search" or not result:
            return
        raw = (event.provider_metadata or {}).get(NS)
        chunks = cast("dict[str, Any]", raw).get("groundingChunks") if isinstance(raw, dict) else None
        if isinstance(chunks, list):
            self._chunks.extend(cast("list[dict[str, Any]]", chunks))
            return
        sources = result.get("sources")
        for source in cast("list[Any]", sources if isinstance(sources, list) else []):
            if isinstance(source, dict):
                entry = cast("dict[str, Any]", source)
                self._chunks.append({"web": {"uri": entry.get("url"), "title": entry.get("title")}})

    def _citation(self, event: Citation) -> None:
        block = self._blocks.get(event.block_id)
        if block is None or event.start is None or event.end is None:
            return
        offset, text = block
        start = offset + len(text[: event.start].encode())
        end = offset + len(text[: event.end].encode())
        index = next(
            (i for i, c in enumerate(self._chunks) if c.get("web", {}).get("uri") == event.url),
            None,
        )
        if index is None:
            self._chunks.append({"web": {"uri": event.url, "title": event.title}})
            index = len(self._chunks) - 1
        segment = {"startIndex": start, "endIndex": end, "text": text[event.start : event.end]}
        self._supports.append({"segment": segment, "groundingChunkIndices": [index]})

    def grounding(self) -> dict[str, Any] | None:
        if not (self._queries or self._chunks):
            return None
        out: dict[str, Any] = {"webSearchQueries": self._queries, "groundingChunks": self._chunks}
        if self._supports:
            out["groundingSupports"] = self._supports
        return out

    def finish_reason(self) -> str:
        return _FINISH.get(self.finish.reason if self.finish is not None else "stop", "OTHER")


def _object(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {"input": value}


def _mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else empty."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _candidate(parts: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"content": {"role": "model", "parts": parts}, "index": 0, **extra}


def _last(built: Parts, parts: list[dict[str, Any]]) -> dict[str, Any]:
    candidate = _candidate(parts, finishReason=built.finish_reason())
    grounding = built.grounding()
    if grounding is not None:
        candidate["groundingMetadata"] = grounding
    return candidate


def response(result: LLMResponse, model: str, hidden: Collection[str]) -> dict[str, Any]:
    """The whole ``GenerateContentResponse``: every step's parts, as the stream builds them."""
    built = Parts(hidden)
    for event in result.events:
        built.add(event)
    out: dict[str, Any] = {"candidates": [_last(built, built.parts)], "modelVersion": model}
    meta = usage_metadata(result.usage)
    if meta is not None:
        out["usageMetadata"] = meta
    out["responseId"] = uuid.uuid4().hex[:24]
    return out


class Stream:
    """``streamGenerateContent?alt=sse``: one chunk per upstream read that added parts, then a last
    chunk with the finish reason, grounding and usage."""

    def __init__(self, model: str, hidden: Collection[str]) -> None:
        self.model = model
        self.parts = Parts(hidden)
        self.id = uuid.uuid4().hex[:24]
        self._batch: list[dict[str, Any]] = []

    def _chunk(self, candidate: dict[str, Any], usage: Usage | None = None) -> bytes:
        body: dict[str, Any] = {"candidates": [candidate]}
        meta = usage_metadata(usage)
        if meta is not None:
            body["usageMetadata"] = meta
        body["modelVersion"] = self.model
        body["responseId"] = self.id
        return b"data: " + _encode(body) + b"\r\n\r\n"

    def opening(self) -> bytes:
        return b""

    def event(self, event: LLMEvent, out: list[bytes]) -> None:
        new = self.parts.add(event)
        if new:
            out.append(self._chunk(_candidate(new)))

    def end(self, finish: Finish | None, cost: Cost | None = None) -> bytes:
        if finish is not None:
            self.parts.finish = finish
        return self._chunk(_last(self.parts, []), finish.usage if finish is not None else None)

    def failed(self, failure: Failure) -> bytes:
        return b"data: " + _encode(error_body(failure.status, failure.message)) + b"\r\n\r\n"
