"""LLM-grounded web search on top of the core: one citation-friendly result from whichever provider
the user has credentials for, the citation contract, output hygiene and the server-side ``web_search``
tool. The shared data model is ``GroundedAnswer`` (``websearch.answer``); the tool's result is
``WebSearchResult`` (``websearch.result``)."""

from .answer import CitedSpan, GroundedAnswer, Source
from .extract import AnswerBuilder, collect, fold
from .result import ErrorType, SearchError, WebSearchResult
from .sanitize import StreamSanitizer, sanitize
from .search import GroundedSearch

__all__ = [
    "AnswerBuilder",
    "CitedSpan",
    "ErrorType",
    "GroundedAnswer",
    "GroundedSearch",
    "SearchError",
    "Source",
    "StreamSanitizer",
    "WebSearchResult",
    "collect",
    "fold",
    "sanitize",
]
