"""Cited answers by construction: ``render_cited(answer)`` writes ``[Source](url)`` after each cited
span and a final ``## Sources`` list, both from the grounding itself, so no URL in the result was
typed by a model. Every cited result passes ``check_citations(result, allowed_urls=<the grounding's
URLs>)`` (a blank answer is ``NO_RESULTS``, which passes once ``searched`` is at least 1).

How: a cited span that is nothing but the model's own link to the cited URL (OpenAI's
``([site](url))``) is replaced by the citation; the model's text is sanitised and neutralised (``markdown.neutralize``: its own links,
HTML are escaped and a ``## Sources`` line disarmed, so nothing it typed can pose as a citation or hide
one); each citation is then placed where it renders as a link: after trailing whitespace is
skipped back, never inside a code span, fence, backslash or backtick run (it moves to their end), and
as its own paragraph after a fenced block. Sources whose URL could not be cited safely (not http(s),
a placeholder host or token, or characters that would break the link) are dropped. An answer with
text but nothing citable is ``UngroundedAnswerError``: no unsourced answer is ever rendered.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Any, Final
from urllib.parse import urlsplit

import msgspec

from ..schema.errors import InvalidProviderOutputError
from ..terminal import sanitize, sanitize_mapped
from .answer import CitedSpan, GroundedAnswer, marker_groups, splice
from .contract import NO_RESULTS, SOURCES_HEADING, check_citations, url_key, url_problem
from .markdown import SOURCE_TEXT, Region, escape_label, neutralize, safe_destination, scan

__all__ = ["UngroundedAnswerError", "render_cited"]


class UngroundedAnswerError(InvalidProviderOutputError):
    """The provider answered but gave no grounding that can be cited. Code ``UNGROUNDED_ANSWER``."""

    def __init__(self, message: str, **kwargs: Any) -> None:
        kwargs.setdefault("code", "UNGROUNDED_ANSWER")
        super().__init__(message, **kwargs)


def _citable(url: str | None) -> bool:
    return url is not None and url_problem(url) is None and sanitize(url) == url and safe_destination(url)


def _title(title: str | None, url: str) -> str:
    return escape_label(sanitize(title or "")) or escape_label(sanitize(urlsplit(url).hostname or url))


# A span that is nothing but the model's own link, maybe in parentheses: OpenAI's ``([site](url))``.
_MODEL_LINK: Final = re.compile(r"\(?\[[^\[\]\n]*\]\(([^\s()]*(?:\([^\s()]*\)[^\s()]*)*)\)\)?")


def _drop_model_links(text: str, citations: list[CitedSpan], url_of: dict[int, str]) -> tuple[str, list[int]]:
    """``text`` without the cited spans that are only the model's link to a URL the span cites (the
    citation takes their place, so the URL shown is the grounding's), and where each position
    ``0..len(text)`` lands (a dropped span's positions land where it was)."""
    cuts: list[tuple[int, int]] = []
    for c in sorted(citations, key=lambda c: (c.start or 0, c.end or 0)):
        if c.start is None or c.end is None or c.end <= c.start or (cuts and c.start < cuts[-1][1]):
            continue
        link = _MODEL_LINK.fullmatch(text, c.start, c.end)
        if link is not None and url_key(link.group(1)) in {url_key(url_of[i]) for i in c.sources}:
            start = c.start  # with the spaces before it: the citation brings its own
            while start > (cuts[-1][1] if cuts else 0) and text[start - 1] in " \t":
                start -= 1
            cuts.append((start, c.end))
    if not cuts:
        return text, list(range(len(text) + 1))
    out: list[str] = []
    where: list[int] = []
    prev = removed = 0
    for a, b in cuts:
        out.append(text[prev:a])
        where.extend(range(prev - removed, a - removed))
        where.extend([a - removed] * (b - a))
        removed += b - a
        prev = b
    out.append(text[prev:])
    where.extend(range(prev - removed, len(text) + 1 - removed))
    return "".join(out), where


def render_cited(answer: GroundedAnswer) -> str:
    """The answer as Markdown with ``[Source](url)`` citations and a final ``## Sources`` list.

    Citations without a span, and an answer with sources but no citations, cite at the end of the
    text (the answer as a whole). A blank answer is ``NO_RESULTS``. Raises ``UngroundedAnswerError``
    when there is text but no citable source, ``ValueError`` when a span does not fit the text."""
    answer.validate()
    if not answer.text.strip():
        return NO_RESULTS
    # One URL per comparison key; a source index maps to the URL cited for it.
    url_of: dict[int, str] = {}
    by_key: dict[str, str] = {}
    for n, source in enumerate(answer.sources):
        if source.url is not None and _citable(source.url):
            url_of[n] = by_key.setdefault(url_key(source.url), source.url)
    if not url_of:
        raise UngroundedAnswerError(
            f"the answer has text but no citable source ({len(answer.sources)} sources from the provider)",
            provider=answer.provider,
        )
    whole = len(answer.text)
    citations = [
        CitedSpan(c.start, c.end, kept) if c.end is not None and c.end > 0 else CitedSpan(whole, whole, kept)
        for c in answer.citations
        if (kept := tuple(i for i in c.sources if i in url_of))
    ]
    if not citations:
        if answer.citations:  # the provider cited, but none of what it cited can be shown
            raise UngroundedAnswerError("no cited source has a citable URL", provider=answer.provider)
        citations = [CitedSpan(whole, whole, tuple(url_of))]
    groups = marker_groups(msgspec.structs.replace(answer, citations=tuple(citations)))

    bare, to_bare = _drop_model_links(answer.text, citations, url_of)
    clean, to_clean = sanitize_mapped(bare)
    text, to_text = neutralize(clean, SOURCES_HEADING)
    parsed = scan(text)
    if parsed.unclosed:
        text += parsed.unclosed
        parsed = scan(text)
    regions = parsed.regions
    starts = [r.start for r in regions]

    placed: dict[int, list[str]] = {}
    block_at: set[int] = set()
    for pos, indices in groups:
        p, block = _place(text, to_text[to_clean[to_bare[pos]]], regions, starts)
        urls = placed.setdefault(p, [])
        for i in indices:
            if url_of[i] not in urls:
                urls.append(url_of[i])
        if block:
            block_at.add(p)
    inserts: list[tuple[int, str]] = []
    for p in sorted(placed):
        links = " ".join(f"[{SOURCE_TEXT}]({u})" for u in placed[p])
        if p in block_at:
            inserts.append((p, ("\n" if p and text[p - 1] not in "\r\n" else "") + links + "\n\n"))
        else:
            inserts.append((p, " " + links))
    body = splice(text, inserts).rstrip()

    cited = list(dict.fromkeys(u for p in sorted(placed) for u in placed[p]))
    title_of: dict[str, str] = {}  # the first non-blank title among the sources sharing a URL
    for n, source in enumerate(answer.sources):
        if n in url_of and source.title and source.title.strip():
            title_of.setdefault(url_of[n], source.title)
    entries = "\n".join(f"- [{_title(title_of.get(u), u)}]({u})" for u in cited)
    rendered = f"{body}\n\n{SOURCES_HEADING}\n\n{entries}\n"
    report = check_citations(rendered, allowed_urls=[s.url for s in answer.sources if s.url])
    if not report.ok:  # a construction bug, never an unsourced answer
        raise UngroundedAnswerError(
            f"cited rendering broke the citation contract: {report.violations[0].detail}"
        )
    return rendered


def _place(text: str, p: int, regions: tuple[Region, ...], starts: list[int]) -> tuple[int, bool]:
    """Where a citation meant for position ``p`` renders as a link, and whether it must be its own
    paragraph (after a fenced block)."""
    while p > 0 and text[p - 1].isspace():
        p -= 1
    while p > 0 and text[p - 1] == "\\":
        p -= 1
    while 0 < p < len(text) and text[p - 1] == "`" and text[p] == "`":
        p += 1
    if p == 0:
        p = len(text.rstrip())
    block = False
    r = bisect_left(starts, p) - 1  # the last region starting before p (regions are disjoint)
    if r >= 0:
        region = regions[r]
        if p < region.end or (region.block and p == region.end):
            p, block = region.end, region.block
    return p, block
