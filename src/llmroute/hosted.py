"""Provider-executed (hosted) tools for ``request(tools=[...])``.

Each is a ``HostedTool(kind, options)``; every protocol maps the kinds it supports to its own wire
definition and rejects the rest with a clear ``InvalidRequestError``. Their calls and results come
back as ``tool-call`` / ``tool-result`` events with ``provider_executed=True`` and are never run
locally.

Provider web search, whatever the provider, is reported as one canonical hosted call named
``web_search`` (``WEB_SEARCH``) whose ``ToolResult.result`` is always a ``SearchResult``:
``{"sources": [{"url": str | None, "title": str | None}, ...], "queries": [str, ...]}``. The
provider's own payload (result blocks, items, grounding chunks, hits) stays in the call's and
result's ``provider_metadata`` so nothing is lost and tool loops round-trip it (see the README).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypedDict

from .schema.tools import HostedTool

__all__ = [
    "WEB_SEARCH",
    "SearchResult",
    "SearchSource",
    "search_result",
    "code_execution",
    "file_search",
    "image_generation",
    "mcp",
    "shell",
    "url_context",
    "web_fetch",
    "web_search",
    "x_search",
]


WEB_SEARCH = "web_search"


class SearchSource(TypedDict):
    url: str | None
    title: str | None


class SearchResult(TypedDict):
    """The one shape of a hosted ``web_search`` tool result."""

    sources: list[SearchSource]
    queries: list[str]


def search_result(
    sources: Iterable[tuple[str | None, str | None]], queries: Iterable[Any] = (), *, dedupe: bool = True
) -> SearchResult:
    """The canonical ``web_search`` result from ``(url, title)`` pairs in provider order.

    ``dedupe`` keeps the first source per URL (a later duplicate only fills a missing title);
    sources without a URL are never merged. Gemini passes ``dedupe=False``: its source *i* must stay
    grounding chunk *i*. Queries keep their order, without blanks or repeats."""
    out: list[SearchSource] = []
    seen: dict[str, SearchSource] = {}
    for url, title in sources:
        if dedupe and url is not None:
            first = seen.get(url)
            if first is not None:
                if first["title"] is None and title is not None:
                    first["title"] = title
                continue
        source = SearchSource(url=url, title=title)
        if url is not None:
            seen.setdefault(url, source)
        out.append(source)
    kept = list(dict.fromkeys(q for q in queries if isinstance(q, str) and q.strip()))
    return SearchResult(sources=out, queries=kept)


def _tool(kind: str, options: dict[str, Any]) -> HostedTool:
    return HostedTool(kind, {k: v for k, v in options.items() if v is not None})


def web_search(
    *,
    max_uses: int | None = None,
    allowed_domains: list[str] | None = None,
    blocked_domains: list[str] | None = None,
    user_location: dict[str, Any] | None = None,
    search_context_size: str | None = None,
    **provider_specific: Any,
) -> HostedTool:
    """Web search run by the provider (OpenAI ``web_search``, Anthropic ``web_search_2025…``,
    Gemini ``googleSearch``, OpenRouter ``web``)."""
    return _tool(
        "web_search",
        {
            "max_uses": max_uses,
            "allowed_domains": allowed_domains,
            "blocked_domains": blocked_domains,
            "user_location": user_location,
            "search_context_size": search_context_size,
            **provider_specific,
        },
    )


def web_fetch(*, max_uses: int | None = None, **provider_specific: Any) -> HostedTool:
    return _tool("web_fetch", {"max_uses": max_uses, **provider_specific})


def url_context(**provider_specific: Any) -> HostedTool:
    return _tool("url_context", provider_specific)


def code_execution(**provider_specific: Any) -> HostedTool:
    return _tool("code_execution", provider_specific)


def file_search(*, vector_store_ids: list[str] | None = None, **provider_specific: Any) -> HostedTool:
    return _tool("file_search", {"vector_store_ids": vector_store_ids, **provider_specific})


def image_generation(**provider_specific: Any) -> HostedTool:
    return _tool("image_generation", provider_specific)


def mcp(*, server_label: str, server_url: str, **provider_specific: Any) -> HostedTool:
    return _tool("mcp", {"server_label": server_label, "server_url": server_url, **provider_specific})


def shell(*, container_id: str | None = None, **environment: Any) -> HostedTool:
    """Shell commands run in the provider's container (OpenAI ``shell`` with a container
    environment: ``container_id`` reuses one, else one is made for the request, ``environment``
    keys such as ``file_ids`` or ``skills`` going with it). The caller-run shell is
    ``client_tools.shell()``."""
    return _tool("shell", {"container_id": container_id, **environment})


def x_search(**provider_specific: Any) -> HostedTool:
    """xAI's search over X posts (Responses API): ``allowed_x_handles``, ``from_date``, ..."""
    return _tool("x_search", provider_specific)
