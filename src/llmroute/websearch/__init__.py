"""LLM-grounded web search on top of the core: one citation-friendly result from whichever provider
the user has credentials for, the citation contract, output hygiene and the server-side ``web_search``
tool. The shared data model is ``GroundedAnswer`` (``websearch.answer``)."""

from .answer import CitedSpan, GroundedAnswer, Source
from .sanitize import StreamSanitizer, sanitize

__all__ = ["CitedSpan", "GroundedAnswer", "Source", "StreamSanitizer", "sanitize"]
