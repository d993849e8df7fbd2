"""LLM-grounded web search on top of the core: one citation-friendly result from whichever provider
the user has credentials for, the citation contract, output hygiene and the server-side ``web_search``
tool. The shared data model is ``GroundedAnswer`` (``websearch.answer``)."""

from .answer import CitedSpan, GroundedAnswer, Source
from .cited import UngroundedAnswerError, render_cited
from .contract import CitationReport, Violation, check_citations
from .intent import SearchIntent, classify_intent, system_hint
from .limits import LimitExceeded, SearchLimits
from .prompt import grounded_prompt, search_prompt
from .sanitize import StreamSanitizer, sanitize

__all__ = [
    "CitationReport",
    "CitedSpan",
    "GroundedAnswer",
    "LimitExceeded",
    "SearchIntent",
    "SearchLimits",
    "Source",
    "StreamSanitizer",
    "UngroundedAnswerError",
    "Violation",
    "check_citations",
    "classify_intent",
    "grounded_prompt",
    "render_cited",
    "sanitize",
    "search_prompt",
    "system_hint",
]
