"""The canonical hosted ``web_search`` call/result as events, shared by the protocols that report a
search (see ``llmroute.hosted.SearchResult`` for the result shape)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from ..hosted import WEB_SEARCH, SearchResult, search_result
from ..schema.events import LLMEvent, ToolCall, ToolResult

__all__ = ["SYNTHESIZED", "emit_search", "hit_pairs", "search_from_citations"]

# provider_metadata of a search the provider ran without reporting a call (OpenRouter's ``web``
# plugin, OpenAI's search models on Chat): only its ``url_citation`` annotations show it.
SYNTHESIZED = {"llmroute": {"synthesized": "url_citation annotations"}}


def hit_pairs(hits: Any, url: str = "url") -> list[tuple[str | None, str | None]]:
    """``(url, title)`` of each object in a provider's list of hits (anything else is skipped; a
    field that is not a string reads as ``None``)."""
    if not isinstance(hits, list):
        return []
    pairs: list[tuple[str | None, str | None]] = []
    for hit in cast("list[Any]", hits):
        if isinstance(hit, dict):
            entry = cast("dict[str, Any]", hit)
            u, t = entry.get(url), entry.get("title")
            pairs.append((u if isinstance(u, str) else None, t if isinstance(t, str) else None))
    return pairs


def emit_search(
    id: str,
    call_input: Any,
    result: SearchResult,
    out: list[LLMEvent],
    *,
    is_error: bool = False,
    call_metadata: dict[str, Any] | None = None,
    result_metadata: dict[str, Any] | None = None,
) -> None:
    """A complete provider-executed ``web_search`` call and its result."""
    out.append(ToolCall(id, WEB_SEARCH, call_input, True, call_metadata))
    out.append(ToolResult(id, WEB_SEARCH, result, is_error, True, result_metadata))


def search_from_citations(
    id: str, cited: Iterable[tuple[str | None, str | None]], out: list[LLMEvent]
) -> None:
    """The search behind ``url_citation`` annotations when no call was reported: its sources are
    the cited URLs (deduplicated, first citation first); its queries are unknown."""
    emit_search(id, {}, search_result(cited), out, call_metadata=SYNTHESIZED, result_metadata=SYNTHESIZED)
