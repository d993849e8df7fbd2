"""LLM-grounded web search on top of the core: one citation-friendly result from whichever provider
the user has credentials for, the citation contract, output hygiene and the server-side ``web_search``
tool. The shared data model is ``GroundedAnswer`` (``websearch.answer``); the tool's result is
``WebSearchResult`` (``websearch.result``)."""

from ..terminal import StreamSanitizer, sanitize
from .answer import CitedSpan, GroundedAnswer, Source
from .backends import SearchBackend, SearchHit, SearchOutcome, SearchQuery
from .cited import UngroundedAnswerError, render_cited
from .contract import CitationReport, Violation, check_citations
from .extract import AnswerBuilder, collect, fold
from .intent import SearchIntent, classify_intent, system_hint
from .limits import LimitExceeded, SearchLimits
from .prompt import grounded_prompt, search_prompt
from .result import ErrorType, SearchError, WebSearchResult
from .search import GroundedSearch
from .server_tool import Engine, Injection, ServerWebSearch

__all__ = [
    "AnswerBuilder",
    "CitationReport",
    "CitedSpan",
    "Engine",
    "ErrorType",
    "GroundedAnswer",
    "GroundedSearch",
    "Injection",
    "LimitExceeded",
    "SearchBackend",
    "SearchError",
    "SearchHit",
    "SearchIntent",
    "SearchLimits",
    "SearchOutcome",
    "SearchQuery",
    "ServerWebSearch",
    "Source",
    "StreamSanitizer",
    "UngroundedAnswerError",
    "Violation",
    "WebSearchResult",
    "check_citations",
    "classify_intent",
    "collect",
    "fold",
    "grounded_prompt",
    "render_cited",
    "sanitize",
    "search_prompt",
    "system_hint",
]
