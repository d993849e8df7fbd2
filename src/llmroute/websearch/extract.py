"""Fold a stream of llmroute events into a ``GroundedAnswer``.

The protocols already did the provider-specific work: Gemini's UTF-8 byte offsets are ``str``
indices into one text block, Anthropic's block-level citations span their whole block, OpenAI and
OpenRouter annotations are character spans (``None`` when the provider gave none), and every
provider's search is one canonical hosted ``web_search`` result. What is left is provider-neutral:
concatenate the answer's text blocks (reasoning is never part of it), move each citation's span
from its block onto the whole text, and number the sources:

- ``google``: source *n* is grounding chunk *n-1* (the ``web_search`` result lists the chunks in
  order; a citation names its chunk in ``provider_metadata["google"]["chunk_index"]``);
- every other provider: the cited URLs, deduplicated in first-citation order (a title the citation
  lacks is taken from the search result that returned the URL).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from typing import Any, cast

from ..hosted import WEB_SEARCH
from ..schema.events import Citation, Finish, LLMEvent, StepFinish, TextDelta, TextStart, ToolResult
from ..schema.usage import Usage
from .answer import CitedSpan, GroundedAnswer, Source

__all__ = ["AnswerBuilder", "collect", "fold"]

_BY_CHUNK = "google"


class AnswerBuilder:
    """Feed events with ``add`` (in stream order), then ``build()`` the answer."""

    __slots__ = ("_blocks", "_citations", "_order", "_queries", "_searched", "_usage", "model", "provider")

    def __init__(self, provider: str | None = None, model: str | None = None) -> None:
        self.provider = provider
        self.model = model
        self._blocks: dict[str, list[str]] = {}
        self._order: list[str] = []
        self._citations: list[Citation] = []
        self._searched: list[list[tuple[str | None, str | None]]] = []
        self._queries: dict[str, None] = {}
        self._usage: Usage | None = None

    def add(self, event: LLMEvent) -> None:
        if isinstance(event, TextDelta):
            self._block(event.id).append(event.text)
        elif isinstance(event, TextStart):
            self._block(event.id)
        elif isinstance(event, Citation):
            self._citations.append(event)
        elif isinstance(event, ToolResult):
            if event.name == WEB_SEARCH and event.provider_executed and not event.is_error:
                self._add_search(event.result)
        elif isinstance(event, StepFinish | Finish) and event.usage is not None:
            self._usage = event.usage

    def _block(self, id: str) -> list[str]:
        parts = self._blocks.get(id)
        if parts is None:
            parts = self._blocks[id] = []
            self._order.append(id)
        return parts

    def _add_search(self, result: Any) -> None:
        if not isinstance(result, dict):
            return
        data = cast("dict[str, Any]", result)
        pairs: list[tuple[str | None, str | None]] = []
        for s in _list(data.get("sources")):
            if isinstance(s, dict):
                entry = cast("dict[str, Any]", s)
                pairs.append((_str(entry.get("url")), _str(entry.get("title"))))
        self._searched.append(pairs)
        for q in _list(data.get("queries")):
            if isinstance(q, str) and q.strip():
                self._queries.setdefault(q)

    def build(self) -> GroundedAnswer:
        texts = {id: "".join(parts) for id, parts in self._blocks.items()}
        bases: dict[str, int] = {}
        at = 0
        for id in self._order:
            bases[id] = at
            at += len(texts[id])
        text = "".join(texts[id] for id in self._order)
        if self.provider == _BY_CHUNK:
            sources, index_of = self._chunk_sources()
        else:
            sources, index_of = self._cited_sources()
        spans: list[CitedSpan] = []
        for c in self._citations:
            index = index_of(c)
            if index is None:
                continue
            start, end = _global_span(c, bases, texts)
            spans.append(CitedSpan(start, end, (index,)))
        return GroundedAnswer(
            text, tuple(sources), tuple(spans), tuple(self._queries), self.provider, self.model, self._usage
        )

    def _chunk_sources(self) -> tuple[list[Source], Any]:
        chunks = [Source(u, t) for u, t in (self._searched[-1] if self._searched else [])]
        first_by_url: dict[str, int] = {}
        for i, s in enumerate(chunks):
            if s.url is not None:
                first_by_url.setdefault(s.url, i)

        def index_of(c: Citation) -> int | None:
            meta = (c.provider_metadata or {}).get(_BY_CHUNK)
            index = cast("dict[str, Any]", meta).get("chunk_index") if isinstance(meta, dict) else None
            if isinstance(index, int) and 0 <= index < len(chunks):
                return index
            return first_by_url.get(c.url) if c.url is not None else None

        return chunks, index_of

    def _cited_sources(self) -> tuple[list[Source], Any]:
        known: dict[str, str] = {}
        for pairs in self._searched:
            for url, title in pairs:
                if url is not None and title:
                    known.setdefault(url, title)
        order: dict[str, int] = {}
        titles: list[str | None] = []
        urls: list[str] = []
        for c in self._citations:
            if c.url is None:
                continue
            i = order.get(c.url)
            if i is None:
                order[c.url] = len(urls)
                urls.append(c.url)
                titles.append(c.title or known.get(c.url))
            elif titles[i] is None and c.title:
                titles[i] = c.title
        sources = [Source(u, t) for u, t in zip(urls, titles, strict=True)]

        def index_of(c: Citation) -> int | None:
            return order.get(c.url) if c.url is not None else None

        return sources, index_of


def _global_span(c: Citation, bases: dict[str, int], texts: dict[str, str]) -> tuple[int | None, int | None]:
    """The citation's span on the whole answer text; ``(None, None)`` when it has no usable span
    (missing, backwards, at the very start, or its block carried no answer text). An empty span
    elsewhere (a Gemini support whose byte offsets snapped to one character boundary) is a
    position: its marker goes there."""
    base = bases.get(c.block_id)
    if base is None or c.start is None or c.end is None:
        return None, None
    length = len(texts[c.block_id])
    start, end = max(0, min(c.start, length)), max(0, min(c.end, length))
    if end < start or end == 0:
        return None, None
    return base + start, base + end


def _list(value: Any) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def fold(
    events: Iterable[LLMEvent], *, provider: str | None = None, model: str | None = None
) -> GroundedAnswer:
    """The answer in ``events`` (a finished stream, in order)."""
    builder = AnswerBuilder(provider, model)
    for event in events:
        builder.add(event)
    return builder.build()


async def collect(
    events: AsyncIterable[LLMEvent], *, provider: str | None = None, model: str | None = None
) -> GroundedAnswer:
    """``fold`` over an async stream (``client.stream(request)``)."""
    builder = AnswerBuilder(provider, model)
    async for event in events:
        builder.add(event)
    return builder.build()
