"""Gemini grounding: ``groundingMetadata`` and ``urlContextMetadata`` -> hosted calls + citations.

Grounding usually arrives with the last chunk, sometimes earlier, and may be split across chunks:
it is merged field-wise (``MergedGrounding``) and, once the stream ends, becomes the canonical
hosted ``web_search`` call/result (or ``file_search`` / ``url_context``) plus ``citation`` events.
Support segments are UTF-8 *byte* offsets into one part's text; they become Python ``str`` indices
of the text block emitted for that part (``PartText``, kept per part for exactly this). The
grounding Structs are stream event Structs (``wire``); ``MergedGrounding`` and ``PartText`` are
parser state (``state``): this module only turns them into events.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...hosted import WEB_SEARCH, search_result
from ...schema.events import Citation, LLMEvent, ToolResult
from .._offsets import byte_span_in
from .._shared import ToolInput
from .state import GeminiState, PartText
from .wire import GroundingChunk, Segment, Source

__all__ = ["NS", "emit_grounding", "hosted_id"]

NS = "google"  # provider_metadata namespace for what must round-trip (thought signatures)


# -- grounding -> events ---------------------------------------------------------------------------


def hosted_id(state: GeminiState, kind: str) -> str:
    n = state.hosted
    state.hosted += 1
    return f"{kind}_{state.response_id}_{n}" if state.response_id else f"{kind}_{n}"


class _Span(msgspec.Struct):
    block_id: str
    start: int | None
    end: int | None
    text: str


def _locate(segment: Segment, parts: list[PartText]) -> _Span | None:
    """Which emitted text block a support segment covers, and where (``str`` indices).

    Candidates, in order: the part ``partIndex`` names (when it is answer text); the first answer
    part (``partIndex`` is omitted when it is 0, even behind thought parts); all answer text
    concatenated. The first whose slice equals ``segment.text`` wins; else the first candidate."""
    answers = [p for p in parts if p.kind == "text"]
    if not answers or segment.end_index is None:
        return None
    start, end = segment.start_index or 0, segment.end_index
    options: list[list[PartText]] = []
    index = segment.part_index
    if index is not None and 0 <= index < len(parts) and parts[index].kind == "text":
        options.append([parts[index]])
    if [answers[0]] not in options:
        options.append([answers[0]])
    if len(answers) > 1:
        options.append(answers)
    spans = [_span_in(option, start, end) for option in options]
    if segment.text is not None:
        for span in spans:
            if span.text == segment.text:
                return span
    return spans[0]


def _span_in(parts: list[PartText], start: int, end: int) -> _Span:
    """Byte offsets into the concatenated text of ``parts`` -> a span of one block (clipped to it)."""
    finals = [part.final() for part in parts]
    n, s, e = byte_span_in([data for _, data in finals], start, end)
    if e < s or (e == s and end <= start):
        return _Span(parts[n].block_id, None, None, "")
    # A span that only snapping emptied (both offsets inside one character) still marks its place.
    return _Span(parts[n].block_id, s, e, finals[n][0][s:e])


def _source(chunk: GroundingChunk) -> tuple[str, Source] | None:
    if chunk.web is not None:
        return "web", chunk.web
    if chunk.retrieved_context is not None:
        return "retrieved_context", chunk.retrieved_context
    if chunk.maps is not None:
        return "maps", chunk.maps
    return None


def _source_dict(kind: str, source: Source, index: int) -> dict[str, Any]:
    item: dict[str, Any] = {"type": kind, "url": source.uri, "title": source.title}
    if source.domain:
        item["domain"] = source.domain
    if source.text is not None:
        item["text"] = source.text
    if source.file_search_store is not None:
        item["file_search_store"] = source.file_search_store
    item["chunk_index"] = index
    return item


def emit_grounding(state: GeminiState, out: list[LLMEvent]) -> None:
    g = state.grounding
    sources = [(i, s) for i, c in enumerate(g.chunks) if (s := _source(c)) is not None]
    web = [(i, s) for i, (kind, s) in sources if kind == "web"]
    if state.url_context:
        id = hosted_id(state, "url_context")
        urls = [u.retrieved_url for u in state.url_context]
        tool = ToolInput(id, "url_context", out, provider_executed=True)
        tool.finish(out, input={"urls": urls})
        result = [{"url": u.retrieved_url, "status": u.url_retrieval_status} for u in state.url_context]
        out.append(ToolResult(id, "url_context", result, provider_executed=True))
    if g.queries or (web and not state.url_context):
        _emit_search(state, out)
    elif sources and not state.url_context:
        id = state.file_search_id
        if id is None:
            id = hosted_id(state, "file_search")
            ToolInput(id, "file_search", out, provider_executed=True).finish(out, input={})
        result = {"sources": [_source_dict(kind, s, i) for i, (kind, s) in sources]}
        out.append(ToolResult(id, "file_search", result, provider_executed=True))
    _emit_citations(state, out)


def _emit_search(state: GeminiState, out: list[LLMEvent]) -> None:
    """The canonical ``web_search`` call/result: source *i* is grounding chunk *i* (no
    deduplication, so ``[i+1]`` markers number chunks as gemini-cli does). The chunks as sent
    (``web.domain``, ``retrievedContext``, ...), ``searchEntryPoint`` and ``retrievalMetadata`` stay
    in the result's ``provider_metadata["google"]``."""
    g = state.grounding
    id = hosted_id(state, WEB_SEARCH)
    ToolInput(id, WEB_SEARCH, out, provider_executed=True).finish(out, input={"queries": list(g.queries)})
    pairs = [(found[1].uri, found[1].title) if (found := _source(c)) else (None, None) for c in g.chunks]
    meta: dict[str, Any] = {"groundingChunks": msgspec.to_builtins(g.chunks)}
    if g.entry_point is not None:
        meta["searchEntryPoint"] = g.entry_point
    if g.retrieval:
        meta["retrievalMetadata"] = g.retrieval
    result = search_result(pairs, g.queries, dedupe=False)
    out.append(ToolResult(id, WEB_SEARCH, result, provider_executed=True, provider_metadata={NS: meta}))


def _emit_citations(state: GeminiState, out: list[LLMEvent]) -> None:
    chunks = state.grounding.chunks
    for support in state.grounding.supports:
        segment = support.segment
        if segment is None or not support.grounding_chunk_indices:
            continue
        span = _locate(segment, state.parts)
        if span is None:
            continue
        scores = support.confidence_scores or []
        for n, index in enumerate(dict.fromkeys(support.grounding_chunk_indices)):
            if not 0 <= index < len(chunks):
                continue  # indices may point past groundingChunks
            found = _source(chunks[index])
            if found is None:
                continue
            kind, source = found
            meta: dict[str, Any] = {"chunk_index": index, "source_type": kind}
            if source.domain:
                meta["domain"] = source.domain
            if n < len(scores):
                meta["confidence"] = scores[n]
            if source.file_search_store is not None:
                meta["file_search_store"] = source.file_search_store
            cited = segment.text if segment.text is not None else (span.text or None)
            out.append(
                Citation(span.block_id, source.uri, source.title, span.start, span.end, cited, {NS: meta})
            )
