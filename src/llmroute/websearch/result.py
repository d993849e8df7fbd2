"""``WebSearchResult``: what the ``websearch_grounded`` tool returns, and its pure renderers.

Every rendering is a function of a ``GroundedAnswer`` (or of a ``SearchError``): the model-facing
text with ``[n]`` markers and a ``Sources:`` list (gemini-cli's format, kept for every provider),
the one-line display, the ``{"web": {"title", "uri"}}`` sources, and the Markdown report. The cost
is linear in the answer text plus the number of citations.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec

from ..terminal import StreamSanitizer, sanitize, sanitize_mapped
from .answer import GroundedAnswer, Source, marker_groups, splice
from .markdown import escape_label, link_destination, neutralize

__all__ = [
    "ErrorType",
    "SearchError",
    "WebSearchResult",
    "error_result",
    "render",
    "render_markers",
    "report_error",
    "report_markdown",
    "sources_block",
]

ErrorType = Literal[
    "INVALID_TOOL_ARGUMENTS",
    "INVALID_QUERY",
    "NO_PROVIDERS_AVAILABLE",
    "MISSING_GEMINI_API_KEY",
    "GEMINI_WEB_SEARCH_FAILED",
    "MISSING_OPENAI_AUTH",
    "OPENAI_WEB_SEARCH_FAILED",
    "OPENAI_OAUTH_WEB_SEARCH_FAILED",
    "MISSING_OPENROUTER_API_KEY",
    "OPENROUTER_WEB_SEARCH_FAILED",
    "MISSING_ANTHROPIC_API_KEY",
    "ANTHROPIC_WEB_SEARCH_FAILED",
    "QUERY_TOO_LONG",
    "PROMPT_TOO_LARGE",
    "RESPONSE_TOO_LARGE",
    "SEARCH_TIMEOUT",
    "UNGROUNDED_ANSWER",
]
"""The ``error.type`` values of a failed search: the tool contract's error codes, and the
``websearch.limits`` codes when a size or time limit was passed; ``UNGROUNDED_ANSWER`` when
``style="cited"`` and the answer has no source that can be cited."""

# The Gemini answer is numbered by grounding chunk and headed as gemini-cli heads it; every other
# provider's answer is numbered by first citation and says it was LLM-grounded.
_GEMINI = "google"


class SearchError(msgspec.Struct, frozen=True, omit_defaults=True):
    """Why a search gave no answer."""

    message: str
    """What went wrong, for the model; never holds a credential."""
    type: ErrorType
    """The contract's error code."""
    status: int | None = None
    """The provider's HTTP status, when there was one (the Markdown report titles 401/403 and 429 by it)."""
    provider: str | None = None
    """The provider that failed last."""
    display: str | None = None
    """What the user is shown (``returnDisplay``) when the contract words it apart from ``message``
    (bad arguments: the one sentence, without the details the model reads)."""


class WebSearchResult(msgspec.Struct, frozen=True, omit_defaults=True):
    """The tool's result; ``to_json()`` writes only the contract's fields (not ``answer``,
    ``provider``)."""

    llm_content: str
    """What the model reads: the answer with numbered citations and its sources."""
    return_display: str
    """What the user is shown."""
    sources: tuple[Source, ...] = ()
    """The sources as numbered in ``llm_content`` (source *n* is ``sources[n-1]``)."""
    error: SearchError | None = None
    """Why the search failed (``None``: it did not)."""
    answer: GroundedAnswer | None = None
    """The normalised answer (extra context, not in the contract's JSON)."""
    provider: str | None = None
    """Who answered (extra context, not in the contract's JSON)."""

    def to_builtins(self) -> dict[str, Any]:
        """``{"llmContent", "returnDisplay", "sources": [{"web": {"title", "uri"}}], "error":
        {"message", "type"}}``, absent fields omitted."""
        out: dict[str, Any] = {"llmContent": self.llm_content, "returnDisplay": self.return_display}
        if self.sources:
            out["sources"] = [{"web": _web(s)} for s in self.sources]
        if self.error is not None:
            out["error"] = {"message": self.error.message, "type": self.error.type}
        return out

    def to_json(self) -> str:
        return msgspec.json.encode(self.to_builtins()).decode()


def _web(source: Source) -> dict[str, str]:
    web: dict[str, str] = {}
    if source.title is not None:
        web["title"] = source.title
    if source.url is not None:
        web["uri"] = source.url
    return web


def _one_line(text: str) -> str:
    """A provider-supplied title, URL or query, sanitised and on one line (a title must not start
    a fake list entry)."""
    return " ".join(sanitize(text).split())


def host_of(url: str | None) -> str | None:
    """The URL's host (``None`` when there is none): the display fallback for a missing title."""
    if not url:
        return None
    try:
        return urlsplit(url).hostname or None
    except ValueError:
        return None


def _title(source: Source, numbered_by_chunk: bool) -> str:
    if source.title:
        return _one_line(source.title)
    host = None if numbered_by_chunk else host_of(source.url)
    return host or "Untitled"


def render_markers(answer: GroundedAnswer) -> str:
    """``answer.text`` with ``[n]`` after each cited span: at each end position the unique source
    numbers of every citation ending there, ascending (``[1][2]``). The provider's text is
    sanitised as one stream, so the result without its markers is ``sanitize(answer.text)``."""
    clean = StreamSanitizer()
    text = answer.text
    out: list[str] = []
    prev = 0
    for pos, ids in marker_groups(answer):
        out.append(clean.feed(text[prev:pos]))
        out.append("".join(f"[{i + 1}]" for i in ids))
        prev = pos
    out.append(clean.feed(text[prev:]))
    out.append(clean.close())
    return "".join(out)


def sources_block(answer: GroundedAnswer) -> str:
    """``\\n\\nSources:\\n[1] Title (uri)`` ... (empty when there are no sources)."""
    if not answer.sources:
        return ""
    by_chunk = answer.provider == _GEMINI
    lines = [
        f"[{n}] {_title(s, by_chunk)} ({_one_line(s.url) if s.url else 'No URI'})"
        for n, s in enumerate(answer.sources, 1)
    ]
    return "\n\nSources:\n" + "\n".join(lines)


def render(answer: GroundedAnswer, query: str) -> WebSearchResult:
    """The tool result for a provider's answer to ``query``."""
    if not sanitize(answer.text).strip():
        return WebSearchResult(
            f'No search results or information found for query: "{query}"',
            "No information found.",
            answer=answer,
            provider=answer.provider,
        )
    if answer.provider == _GEMINI:
        heading, sources = "Web search results for", answer.sources
    else:  # a cited URL without a title is shown by its host, in the list and in ``sources``
        heading = "LLM-grounded search results for"
        sources = tuple(Source(s.url, s.title or host_of(s.url)) for s in answer.sources)
    content = f'{heading} "{query}":\n\n{render_markers(answer)}{sources_block(answer)}'
    return WebSearchResult(
        content,
        f'Search results for "{query}" returned.',
        sources,
        answer=answer,
        provider=answer.provider,
    )


def error_result(error: SearchError) -> WebSearchResult:
    """The tool result for a failed search: the model reads ``Error: <message>``."""
    display = error.display or error.message
    return WebSearchResult(f"Error: {error.message}", display, error=error, provider=error.provider)


# Headings of the report a model's own text must not pose as (neutralised with a colon).
_REPORT_HEADINGS = ("## Search Results", "## Sources", "### Sources", "### Search Queries Used")


def _markdown_text(answer: GroundedAnswer) -> str:
    """The answer's text as inert Markdown with ``[n]`` markers: sanitised, its own links, images,
    HTML and report headings neutralised (``markdown.neutralize``), then the markers placed (a marker
    before ``(`` or ``:`` gets a backslash there, so it cannot become a link or a definition)."""
    clean, to_clean = sanitize_mapped(answer.text)
    text, to_text = neutralize(clean, *_REPORT_HEADINGS)
    inserts: list[tuple[int, str]] = []
    for pos, ids in marker_groups(answer):
        at = to_text[to_clean[pos]]
        marker = "".join(f"[{i + 1}]" for i in ids)
        inserts.append((at, marker + ("\\" if text[at : at + 1] in ("(", ":") else "")))
    return splice(text, inserts)


def _source_line(source: Source, by_chunk: bool) -> str:
    """``- [Title](url) (host)``; a URL that cannot be a safe link (not http(s), or one that would
    break out of its link) is shown as code, not linked."""
    title = escape_label(_title(source, by_chunk))
    url = source.url
    if not url:
        return f"- {title}"
    link = link_destination(url) if sanitize(url) == url else None
    if link is not None:
        host = host_of(url)
        return f"- [{title}]({link})" + (f" ({escape_label(host)})" if host else "")
    shown = _one_line(url).replace("`", "")
    return f"- {title} (`{shown}`, not linked)"


def report_markdown(answer: GroundedAnswer) -> str:
    """The Markdown report of an answer: ``## Search Results``, the text with markers,
    ``### Sources`` (``- [Title](url) (host)``) and ``### Search Queries Used``. Nothing the
    provider wrote renders as a link, image or HTML except the http(s) source links."""
    parts = ["## Search Results", "", _markdown_text(answer).strip() or "No information found."]
    if answer.sources:
        parts += ["", "### Sources"]
        by_chunk = answer.provider == _GEMINI
        parts += [_source_line(s, by_chunk) for s in answer.sources]
    if answer.queries:
        parts += ["", "### Search Queries Used"]
        parts += [f'- "{escape_label(_one_line(q))}"' for q in answer.queries]
    return "\n".join(parts) + "\n"


def report_error(error: SearchError) -> str:
    """The Markdown report of a failure, titled by what the user can do about it."""
    if error.type == "NO_PROVIDERS_AVAILABLE" or error.type.startswith("MISSING_"):
        title = "## No Providers Available"
    elif error.status in (401, 403):
        title = "## Authentication Error"
    elif error.status == 429:
        title = "## Rate Limited"
    else:
        title = "## Search Error"
    lines = [title, "", sanitize(error.message)]
    if title == "## Search Error" and error.status is not None:
        lines += ["", f"Status: {error.status}"]
    if error.status in (401, 403):
        lines += ["", "Re-authenticate (refresh the stored login or set a valid API key) and try again."]
    elif error.status == 429:
        lines += ["", "The provider is rate limiting requests; wait and try again."]
    return "\n".join(lines) + "\n"
