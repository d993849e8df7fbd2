"""The citation contract: what a search answer must look like before an agent shows it to a person.

``check_citations(text, searched=..., allowed_urls=...)`` checks every rule on every call and returns a
``CitationReport`` listing each violation with its rule id, a readable detail and, where there is one,
the position in ``text``. Rules (ids are stable; see ``RULES``):

- ``sources-heading``: a line that is exactly ``## Sources``, trailing spaces aside (outside code).
- ``inline-citation``: at least one ``[Source](http(s)://…)`` before it, outside code spans, fenced
  code and HTML; an image ``![Source](…)`` does not count, nor does a non-http(s) destination.
- ``forbidden-host``: no cited URL on example.com/.org/.net, foo.com, bar.com, your-source.com or a
  subdomain of one.
- ``forbidden-token``: no cited URL containing (any case) ``...``, ``…``, ``TODO``, ``PLACEHOLDER`` or
  ``your-source``.
- ``set-equality``: the inline URL set equals the ``## Sources`` URL set, both ways; each source is
  listed once and every source line has a URL.
- ``url-compare``: URLs are compared byte for byte after trimming trailing ``.,;:!?)]`` (no case
  folding); a pair that differs only in case is reported under this id.
- ``sources-last``: nothing but the source list after ``## Sources`` (no prose, heading or code).
- ``search-evidence``: when ``searched`` is given it must be at least 1.
- ``provenance``: when ``allowed_urls`` is given, every cited URL is one of them.

``NO_RESULTS`` as the whole answer passes when ``searched`` is at least 1, and only then.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Collection
from typing import Final, Literal, Protocol, get_args
from urllib.parse import urlsplit

import msgspec

from ..terminal import sanitize
from .markdown import SOURCE_TEXT, Link, Region, lines, scan

__all__ = [
    "NO_RESULTS",
    "RULES",
    "CitationReport",
    "RuleId",
    "Violation",
    "check_citations",
    "url_key",
    "url_problem",
]

RuleId = Literal[
    "sources-heading",
    "inline-citation",
    "forbidden-host",
    "forbidden-token",
    "set-equality",
    "url-compare",
    "sources-last",
    "search-evidence",
    "provenance",
]
RULES: Final[tuple[RuleId, ...]] = get_args(RuleId)  # in the order the checker runs them
NO_RESULTS: Final = "NO_RESULTS"
SOURCES_HEADING: Final = "## Sources"

_FORBIDDEN_HOSTS: Final = (
    "example.com",
    "example.org",
    "example.net",
    "foo.com",
    "bar.com",
    "your-source.com",
)
_FORBIDDEN_TOKENS: Final = ("...", "…", "todo", "placeholder", "your-source")
_TRIM: Final = ".,;:!?)]"
_BARE_URL: Final = re.compile(r"https?://[^\s<>`\"']+", re.IGNORECASE)
_AUTOLINK: Final = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>")
_SOURCE_ENTRY: Final = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)| {0,3}(?:\[|<|https?://)", re.I)
_CONTINUATION: Final = re.compile(r"(?: {2,}|\t)\S")  # an indented line under an entry (a description)
_DETAIL_URL_MAX: Final = 200


class Violation(msgspec.Struct, frozen=True, omit_defaults=True):
    """One broken rule; the position fields are all ``None`` for a rule about the answer as a whole."""

    rule: RuleId
    """The rule broken."""
    detail: str
    """What is wrong, in a sentence."""
    start: int | None = None
    """Where the offending text starts (a ``str`` index)."""
    end: int | None = None
    """Where it ends, exclusive."""
    line: int | None = None
    """Its 1-based line."""


class CitationReport(msgspec.Struct, frozen=True):
    """What ``check_citations`` found in an answer."""

    violations: tuple[Violation, ...]
    """Every broken rule, in rule order."""
    inline_urls: tuple[str, ...]
    """URLs cited inline, as written, in order of first appearance, each once (by comparison key)."""
    source_urls: tuple[str, ...]
    """URLs of the sources list, the same way."""

    @property
    def ok(self) -> bool:
        return not self.violations

    def rules(self) -> tuple[RuleId, ...]:
        """The ids of the broken rules, each once, in rule order."""
        return tuple(dict.fromkeys(v.rule for v in self.violations))


def url_key(url: str) -> str:
    """How cited URLs are compared: byte for byte after trimming trailing ``.,;:!?)]``."""
    return url.rstrip(_TRIM)


def _show(url: str) -> str:
    url = sanitize(url)
    return url if len(url) <= _DETAIL_URL_MAX else url[: _DETAIL_URL_MAX - 1] + "…"


def url_problem(url: str) -> tuple[RuleId, str] | None:
    """Why ``url`` may not be cited (``inline-citation``: not http(s); ``forbidden-host``;
    ``forbidden-token``), or ``None``."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
    except ValueError:
        return "inline-citation", f"{_show(url)!r} is not a valid URL"
    if parts.scheme.lower() not in ("http", "https") or not host:
        return "inline-citation", f"{_show(url)!r} is not an http(s) URL"
    for forbidden in _FORBIDDEN_HOSTS:
        if host == forbidden or host.endswith("." + forbidden):
            return "forbidden-host", f"{_show(url)!r} is on {forbidden}, a placeholder host"
    lowered = url.lower()
    for token in _FORBIDDEN_TOKENS:
        if token in lowered:
            return "forbidden-token", f"{_show(url)!r} contains the placeholder {token!r}"
    return None


class _Text:
    """Offsets to 1-based line numbers."""

    def __init__(self, text: str) -> None:
        self.starts = [s for s, _, _ in lines(text)]

    def line(self, offset: int) -> int:
        lo, hi = 0, len(self.starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.starts[mid] <= offset:
                lo = mid + 1
            else:
                hi = mid
        return max(lo, 1)


def _inside(regions: tuple[Region, ...], start: int, end: int) -> bool:
    """Does ``[start, end)`` overlap a region? (``regions`` sorted and disjoint.)"""
    r = bisect_left(regions, (end,)) - 1  # the last region starting before end
    return r >= 0 and regions[r].end > start


def check_citations(
    text: str,
    *,
    searched: int | None = None,
    allowed_urls: Collection[str] | None = None,
) -> CitationReport:
    """Check ``text`` against every rule of the citation contract (see the module docstring)."""
    where = _Text(text)
    found: list[Violation] = []

    def add(rule: RuleId, detail: str, start: int | None = None, end: int | None = None) -> None:
        found.append(Violation(rule, detail, start, end, where.line(start) if start is not None else None))

    if searched is not None and searched < 1:
        add("search-evidence", f"the answer rests on {searched} successful searches; at least 1 is required")
    if text.strip() == NO_RESULTS:
        if searched is None:
            add("search-evidence", f"{NO_RESULTS} is accepted only when at least one search ran (searched=)")
        return _report(found, (), ())

    parsed = scan(text)
    heading = _find_heading(text, parsed.regions)
    if heading is None:
        add("sources-heading", f"no line is exactly {SOURCES_HEADING!r}")
    cut = heading[0] if heading is not None else len(text)

    # Inline citations: [Source](…) links before the heading.
    inline: list[tuple[str, Link]] = []
    for link in parsed.links:
        if link.start >= cut or link.label != SOURCE_TEXT:
            continue
        problem = url_problem(link.url)
        if problem is not None and problem[0] == "inline-citation":
            add("inline-citation", f"[Source] link {problem[1]}", link.start, link.end)
            continue
        inline.append((link.url, link))
    if not inline:
        add(
            "inline-citation",
            "no [Source](http(s)://…) citation outside code and HTML"
            + (" before the Sources heading" if heading is not None else ""),
        )

    # The Sources list.
    listed: list[tuple[str, int, int]] = []
    if heading is not None:
        listed = _sources_section(text, heading[1], parsed.regions, parsed.links, add)

    # URL rules on every cited URL.
    seen_bad: set[str] = set()
    for url, start, end in [(u, lk.start, lk.end) for u, lk in inline] + listed:
        problem = url_problem(url)
        # a non-http(s) entry under Sources is caught by set-equality (no inline twin can exist)
        if problem is not None and problem[0] != "inline-citation" and url not in seen_bad:
            seen_bad.add(url)
            add(problem[0], problem[1], start, end)

    # Set equality, compared by key.
    inline_keys = {url_key(u): (lk.start, lk.end, u) for u, lk in reversed(inline)}
    listed_keys: dict[str, tuple[int, int, str]] = {}
    for url, start, end in listed:
        key = url_key(url)
        if key in listed_keys:
            add("set-equality", f"{_show(url)!r} is listed under Sources more than once", start, end)
        else:
            listed_keys[key] = (start, end, url)
    if heading is not None:
        _compare_sets(inline_keys, listed_keys, add)

    if allowed_urls is not None:
        allowed = {url_key(u) for u in allowed_urls}
        reported: set[str] = set()
        for key, (start, end, url) in [*inline_keys.items(), *listed_keys.items()]:
            if key not in allowed and key not in reported:
                reported.add(key)
                add("provenance", f"{_show(url)!r} is not a URL this search returned", start, end)

    inline_urls = tuple(dict.fromkeys(u for _, _, u in sorted(inline_keys.values())))
    source_urls = tuple(u for _, _, u in listed_keys.values())
    return _report(found, inline_urls, source_urls)


def _report(found: list[Violation], inline: tuple[str, ...], listed: tuple[str, ...]) -> CitationReport:
    order = {rule: n for n, rule in enumerate(RULES)}
    ranked = sorted(found, key=lambda v: (order[v.rule], v.start if v.start is not None else -1))
    return CitationReport(tuple(ranked), inline, listed)


def _find_heading(text: str, regions: tuple[Region, ...]) -> tuple[int, int] | None:
    """The first ``## Sources`` line (trailing spaces and tabs allowed) outside code/HTML:
    ``(start, end)`` of the line."""
    for start, end, line in lines(text):
        if line.rstrip() == SOURCES_HEADING and not _inside(regions, start, end):
            return start, end
    return None


def _sources_section(
    text: str,
    body_start: int,
    regions: tuple[Region, ...],
    links: tuple[Link, ...],
    add: _Add,
) -> list[tuple[str, int, int]]:
    """The URLs listed after the heading, and ``sources-last`` / ``set-equality`` violations for lines
    that are not source entries."""
    listed: list[tuple[str, int, int]] = []
    blocks = tuple(r for r in regions if r.block)
    for region in blocks:
        if region.end > body_start:
            add("sources-last", "code or HTML after the Sources heading", region.start, region.end)
    # Everything below is found per line by bisection, so a long list stays linear.
    spans = sorted(
        [(lk.start, lk.end, lk.url) for lk in links if lk.start >= body_start]
        + [(r.start, r.end, None) for r in regions if not r.block and r.start >= body_start]
    )
    span_starts = [sp[0] for sp in spans]
    for start, end, line in lines(text[body_start:]):
        start, end = start + body_start, end + body_start
        body = line.rstrip("\r\n")
        if not body.strip() or _inside(blocks, start, end):
            continue
        entry = _SOURCE_ENTRY.match(body) is not None and not body.lstrip().startswith("#")
        if not entry and (not listed or not _CONTINUATION.match(body)):
            add("sources-last", "prose or a heading after the Sources list", start, start + len(body))
            continue
        here = spans[bisect_left(span_starts, start) : bisect_left(span_starts, end)]
        urls: list[tuple[str, int, int]] = []
        for a, b, url in here:
            if url is not None:
                urls.append((url, a, b))
            elif auto := _AUTOLINK.fullmatch(text, a, b):  # an autolink; code spans list nothing
                urls.append((auto.group(1), a, b))
        for m in _BARE_URL.finditer(text, start, end):
            k = bisect_left(span_starts, m.start() + 1) - 1
            if k < 0 or spans[k][1] <= m.start():  # not inside a link, code span or autolink
                urls.append((m.group().rstrip(_TRIM), m.start(), m.end()))
        if not urls and entry:
            add("set-equality", "a source entry without a URL", start, start + len(body))
        listed += sorted(urls, key=lambda u: u[1])
    return listed


class _Add(Protocol):
    def __call__(
        self, rule: RuleId, detail: str, start: int | None = None, end: int | None = None
    ) -> None: ...


def _compare_sets(
    inline: dict[str, tuple[int, int, str]],
    listed: dict[str, tuple[int, int, str]],
    add: _Add,
) -> None:
    folded_listed = {k.casefold(): k for k in listed}
    folded_inline = {k.casefold(): k for k in inline}
    for key, (start, end, url) in inline.items():
        if key in listed:
            continue
        twin = folded_listed.get(key.casefold())
        if twin is not None:
            add(
                "url-compare",
                f"{_show(url)!r} and the Sources entry {_show(listed[twin][2])!r} differ in case; "
                "URLs must be byte-identical",
                start,
                end,
            )
        else:
            add("set-equality", f"{_show(url)!r} is cited inline but not listed under Sources", start, end)
    for key, (start, end, url) in listed.items():
        if key not in inline and key.casefold() not in folded_inline:
            add("set-equality", f"{_show(url)!r} is listed under Sources but never cited inline", start, end)
