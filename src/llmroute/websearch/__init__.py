"""LLM-grounded web search on top of the core: one citation-friendly result from whichever provider
the user has credentials for, the citation contract, output hygiene and the server-side ``web_search``
tool. The shared data model is ``GroundedAnswer`` (``websearch.answer``)."""

from .answer import CitedSpan, GroundedAnswer, Source
from .backends import SearchBackend, SearchHit, SearchOutcome, SearchQuery
from .sanitize import StreamSanitizer, sanitize
from .server_tool import Engine, Injection, ServerWebSearch

__all__ = [
    "CitedSpan",
    "Engine",
    "GroundedAnswer",
    "Injection",
    "SearchBackend",
    "SearchHit",
    "SearchOutcome",
    "SearchQuery",
    "ServerWebSearch",
    "Source",
    "StreamSanitizer",
    "sanitize",
]
