"""Search backends for the server-side ``web_search`` tool: a model with only its search capability.

``SearchBackend`` is the protocol; ``backend_for(model)`` picks the built-in one:

- GLM: its ``web_search`` chat tool (``enable``, ``search_engine``, ``search_result: true``,
  ``search_query``, ``count``, ``search_recency_filter``); hits from the top-level ``web_search``
  array (merged across chunks by the Chat protocol, kept under ``provider_metadata["glm"]``),
  deduplicated by URL, hits without ``link`` dropped.
- Any other model (Gemini ``googleSearch``, OpenAI / Anthropic / OpenRouter web search): the hosted
  ``web_search`` tool alone, recency asked for in the prompt, hits from the canonical hosted search
  result (``hosted.SearchResult``).

A failed call raises the core's ``LLMError`` (``QuotaExceededError`` for GLM's ``1113`` / HTTP 429,
never retried); the tool turns it into a recoverable result for the main model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol, cast
from urllib.parse import urlsplit

import msgspec

from .. import build, hosted
from ..route.executor import ExecutionContext, run_step
from ..schema.cost import Cost
from ..schema.errors import InvalidProviderOutputError
from ..schema.events import ToolResult
from ..schema.request import LLMRequest
from ..schema.response import LLMResponse, ResponseBuilder
from ..schema.tools import HostedTool
from ..schema.usage import Usage

__all__ = [
    "RECENCY",
    "HostedSearchBackend",
    "GLMSearchBackend",
    "Recency",
    "SearchBackend",
    "SearchHit",
    "SearchOutcome",
    "SearchQuery",
    "backend_for",
]

Recency = Literal["oneDay", "oneWeek", "oneMonth", "oneYear", "noLimit"]
RECENCY: tuple[Recency, ...] = ("oneDay", "oneWeek", "oneMonth", "oneYear", "noLimit")
DEFAULT_COUNT = 10

_SYSTEM = (
    "You are a web search backend. Search the web for the user's query and summarise what the "
    "results say, concisely and factually, with dates where known."
)
_RECENCY_PROMPT: dict[str, str] = {
    "oneDay": "Only use results from the past day.",
    "oneWeek": "Only use results from the past week.",
    "oneMonth": "Only use results from the past month.",
    "oneYear": "Only use results from the past year.",
}


class SearchQuery(msgspec.Struct, frozen=True):
    """One search a backend runs."""

    query: str
    """What to search for."""
    recency: Recency = "noLimit"
    """Only results from this recent period (``noLimit``: any age)."""
    count: int = DEFAULT_COUNT
    """How many results to ask for."""


class SearchHit(msgspec.Struct, frozen=True):
    """One result as the main model sees it; ``source`` is the site / publisher name."""

    title: str | None
    """The result's title (``None``: none given)."""
    url: str
    """Its URL."""
    source: str | None = None
    """The site or publisher name."""
    date: str | None = None
    """Its publication date, as the backend gave it."""


class SearchOutcome(msgspec.Struct, frozen=True):
    """What a backend found: its answer text, the hits, and what the backend call cost."""

    summary: str
    """The backend's answer text."""
    hits: tuple[SearchHit, ...] = ()
    """The results it found."""
    usage: Usage | None = None
    """The backend call's token counts."""
    model: str | None = None
    """The model that answered."""
    cost: Cost | None = None
    """What the backend call cost (``None``: unknown, or a custom backend that does not say)."""


class SearchBackend(Protocol):
    """Runs one search. ``ctx`` is the chain's execution context (HTTP client, timeouts, retry)."""

    async def search(self, ctx: ExecutionContext, query: SearchQuery) -> SearchOutcome: ...


async def _run(ctx: ExecutionContext, request: LLMRequest) -> LLMResponse:
    model = request.model
    builder = ResponseBuilder(
        keep_events=False, provider=getattr(model, "provider", None), model_id=getattr(model, "id", None)
    )
    async for batch in run_step(ctx, request):
        for event in batch:
            builder.add(event)
    response = builder.build()
    if response.errors:
        error = response.errors[0]
        raise InvalidProviderOutputError(
            f"search backend reported an error: {error.message}", code=error.code
        )
    return response


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _unique(hits: Iterable[SearchHit], count: int) -> tuple[SearchHit, ...]:
    seen: set[str] = set()
    out: list[SearchHit] = []
    for hit in hits:
        if hit.url not in seen:
            seen.add(hit.url)
            out.append(hit)
    return tuple(out[:count])


class GLMSearchBackend:
    """GLM's chat ``web_search`` tool (see the module docstring)."""

    __slots__ = ("model",)

    def __init__(self, model: Any) -> None:
        self.model = model

    async def search(self, ctx: ExecutionContext, query: SearchQuery) -> SearchOutcome:
        tool = hosted.web_search(
            search_query=query.query, count=query.count, search_recency_filter=query.recency
        )
        return await _search(ctx, self.model, query.query, tool, _glm_hits, query.count)


async def _search(
    ctx: ExecutionContext,
    model: Any,
    prompt: str,
    tool: HostedTool,
    hits: Callable[[LLMResponse], Iterable[SearchHit]],
    count: int,
) -> SearchOutcome:
    """One search call through ``model`` with its hosted ``tool``; the hits its results name."""
    request = build.request(model, system=_SYSTEM, prompt=prompt, tools=[tool])
    response = await _run(ctx, request)
    return SearchOutcome(
        response.text, _unique(hits(response), count), response.usage, model.id, response.cost
    )


def _search_results(response: LLMResponse) -> Iterable[ToolResult]:
    """The provider-executed ``web_search`` results of a response."""
    return (r for r in response.tool_results if r.provider_executed and r.name == hosted.WEB_SEARCH)


def _glm_hits(response: LLMResponse) -> Iterable[SearchHit]:
    for result in _search_results(response):
        glm: Any = (result.provider_metadata or {}).get("glm")
        raw: Any = cast(dict[str, Any], glm).get("web_search") if isinstance(glm, dict) else None
        if not isinstance(raw, list):
            continue
        for item in cast(list[Any], raw):
            if not isinstance(item, dict):
                continue
            hit = cast(dict[str, Any], item)
            url = _str(hit.get("link"))
            if url is not None:
                yield SearchHit(
                    _str(hit.get("title")), url, _str(hit.get("media")), _str(hit.get("publish_date"))
                )


class HostedSearchBackend:
    """The model's own hosted web search (Gemini ``googleSearch`` and the like), nothing else."""

    __slots__ = ("model",)

    def __init__(self, model: Any) -> None:
        self.model = model

    async def search(self, ctx: ExecutionContext, query: SearchQuery) -> SearchOutcome:
        prompt = query.query
        hint = _RECENCY_PROMPT.get(query.recency)
        if hint:
            prompt = f"{prompt}\n\n{hint}"
        return await _search(ctx, self.model, prompt, hosted.web_search(), _hosted_hits, query.count)


def _hosted_hits(response: LLMResponse) -> Iterable[SearchHit]:
    for result in _search_results(response):
        value = result.result
        if not isinstance(value, dict):
            continue
        for source in cast(hosted.SearchResult, value).get("sources") or ():
            url = _str(source.get("url"))
            if url is not None:
                title = _str(source.get("title"))
                yield SearchHit(title, url, _site(url, title))


_GROUNDING_REDIRECT = "vertexaisearch.cloud.google.com"


def _site(url: str, title: str | None) -> str | None:
    """The source site: the URL's host, except behind Gemini's opaque grounding redirect, whose
    title is the bare domain."""
    host = urlsplit(url).hostname
    return title if host == _GROUNDING_REDIRECT else host


def backend_for(model: Any) -> SearchBackend:
    """GLM models search with GLM's tool; every other model with its hosted web search."""
    if getattr(model, "provider", None) == "glm":
        return GLMSearchBackend(model)
    return HostedSearchBackend(model)
