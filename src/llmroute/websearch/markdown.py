"""Just enough CommonMark to tell where a link would render: which parts of a Markdown answer are
code or raw HTML (where ``[Source](url)`` is shown as text, not as a link), where the ``[Source](…)``
links are, and what a model left open at the end.

The citation checker (``contract``) and the cited renderer (``cited``) share this scanner, so what the
renderer writes is exactly what the checker accepts. It follows CommonMark where it matters here
(fenced code, code spans, inline HTML and autolinks, HTML blocks, backslash escapes, images) and errs
on the side of *not* seeing a link: a destination with a backtick, ``<`` or ``>`` is not counted.
Indented code blocks are not detected (indentation is ambiguous inside lists).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from typing import Final, NamedTuple
from urllib.parse import urlsplit

__all__ = [
    "Link",
    "Region",
    "escape_label",
    "link_destination",
    "lines",
    "neutralize",
    "safe_destination",
    "scan",
]

SOURCE_TEXT: Final = "Source"


class Region(NamedTuple):
    """``text[start:end]`` is code or raw HTML. ``block``: a whole-line construct (fenced code, an
    HTML block) ending at a line boundary; otherwise inline (code span, tag, comment, autolink)."""

    start: int
    end: int
    block: bool


class Link(NamedTuple):
    """A ``[text](destination)`` link (``text[start:end]`` is all of it)."""

    start: int
    end: int
    label: str
    url: str


class Scan(NamedTuple):
    regions: tuple[Region, ...]  # sorted, disjoint
    links: tuple[Link, ...]  # every inline link outside regions, images excluded
    unclosed: str  # what closes a construct left open at the end ("" if none)


_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_FENCE_OPEN: Final = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_BLANK: Final = re.compile(r"[ \t]*(?:\r\n|\r|\n)?")
_NEW_RUN: Final = re.compile(r" {0,3}(?:#{1,6}(?:[ \t]|$)|[-*+][ \t]|\d{1,9}[.)][ \t]|>)")
_BLOCK_TAGS: Final = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|"
    "dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|head|header|"
    "hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|"
    "section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul"
)
# Bounded repetitions keep every match attempt short, so hostile text cannot make a scan quadratic
# (a tag with more than 32 attributes or a 1,024-character value is read as text).
_ATTR: Final = (
    r"""(?:\s+[A-Za-z_:][\w.:-]{0,64}(?:\s*=\s*(?:[^\s"'=<>`]{1,1024}|'[^']{0,1024}'|"[^"]{0,1024}"))?)"""
)
_OPEN_TAG: Final = rf"<[A-Za-z][A-Za-z0-9-]{{0,64}}{_ATTR}{{0,32}}\s*/?>"
_CLOSE_TAG: Final = r"</[A-Za-z][A-Za-z0-9-]*\s*>"
# HTML block starts (CommonMark types 1-7) and, for 1-5, the marker that ends them.
_HTML_1: Final = re.compile(r" {0,3}<(script|pre|style|textarea)(?:[\s>]|$)", re.IGNORECASE)
_HTML_2_5: Final = (
    (" {0,3}<!--", "-->"),
    (r" {0,3}<\?", "?>"),
    (r" {0,3}<![A-Za-z]", ">"),
    (r" {0,3}<!\[CDATA\[", "]]>"),
)
_HTML_6: Final = re.compile(rf" {{0,3}}</?(?:{_BLOCK_TAGS})(?:[\s>]|/>|$)", re.IGNORECASE)
_HTML_7: Final = re.compile(rf" {{0,3}}(?:{_OPEN_TAG}|{_CLOSE_TAG})[ \t]*(?:\r\n|\r|\n)?$")
_INLINE_HTML: Final = re.compile(
    rf"{_OPEN_TAG}|{_CLOSE_TAG}"
    r"|<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*>|<[\w.!#$%&'*+/=?^`{|}~-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){0,8}>"
)
# Comments, processing instructions, CDATA and declarations run to a closing marker, found once per
# marker and remembered (``_Closers``), not searched again from every opener.
_HTML_SPANS: Final = (("<!--", "-->"), ("<?", "?>"), ("<![CDATA[", "]]>"))
_DECLARATION: Final = re.compile(r"<![A-Za-z]")
_ESCAPABLE: Final = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_TITLE: Final = re.compile(
    r"""[ \t]*(?:\r\n|\r|\n)?[ \t]*"""
    r"""(?:"(?:[^"\\]|\\.){0,1024}"|'(?:[^'\\]|\\.){0,1024}'|\((?:[^()\\]|\\.){0,1024}\))?[ \t]*\)"""
)
_MAX_PAREN_DEPTH: Final = 32


def lines(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, line)`` for each line, ``end`` after its line ending."""
    pos = 0
    n = len(text)
    while pos < n:
        m = _LINE.match(text, pos)
        assert m is not None  # the pattern matches the empty string
        yield pos, m.end(), m.group()
        pos = m.end()


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def scan(text: str, *, html: bool = True) -> Scan:
    """The code/HTML regions and links of ``text``, and what closes a construct left open at its end.
    ``html=False`` reads ``text`` as if every ``<`` were escaped: only code is found."""
    regions: list[Region] = []
    links: list[Link] = []
    runs: list[tuple[int, int]] = []  # stretches of inline content (paragraph-like)
    it = lines(text)
    run_start: int | None = None
    run_end = 0
    unclosed = ""

    def end_run() -> None:
        nonlocal run_start
        if run_start is not None:
            runs.append((run_start, run_end))
            run_start = None

    for start, end, line in it:
        body = _strip_eol(line)
        if _BLANK.fullmatch(line):
            end_run()
            continue
        fence = _FENCE_OPEN.match(body)
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            end_run()
            mark = fence.group(1)
            close = re.compile(rf" {{0,3}}{re.escape(mark[0])}{{{len(mark)},}}[ \t]*")
            stop = None
            for _, e2, l2 in it:
                if close.fullmatch(_strip_eol(l2)):
                    stop = e2
                    break
            if stop is None:
                stop = len(text)
                unclosed = ("" if text.endswith(("\n", "\r")) else "\n") + mark
            regions.append(Region(start, stop, True))
            continue
        html_end = _html_block_end(body, in_paragraph=run_start is not None) if html else None
        if html_end is not None:
            end_run()
            stop, closer = _consume_html_block(text, end, line, html_end, it)
            if closer:
                unclosed = closer
            regions.append(Region(start, stop, True))
            continue
        if run_start is not None and _NEW_RUN.match(body):
            end_run()
        if run_start is None:
            run_start = start
        run_end = end
    end_run()
    for a, b in runs:
        _scan_inline(text, a, b, regions, links, html)
    regions.sort()
    return Scan(tuple(regions), tuple(links), unclosed)


def _html_block_end(body: str, *, in_paragraph: bool) -> str | None:
    """The end condition of the HTML block this line starts: the marker that ends it (types 1-5,
    found case-insensitively), ``""`` for "a blank line" (types 6-7), ``None`` when no HTML block
    starts here."""
    type1 = _HTML_1.match(body)
    if type1:
        return f"</{type1.group(1).lower()}>"
    for opener, marker in _HTML_2_5:
        if re.match(opener, body):
            return marker
    if _HTML_6.match(body) or (not in_paragraph and _HTML_7.match(body)):
        return ""
    return None


def _consume_html_block(
    text: str,
    end: int,
    line: str,
    until: str,
    it: Iterator[tuple[int, int, str]],
) -> tuple[int, str]:
    """Where an HTML block whose first line ends at ``end`` ends (after its last line), and the text that
    would close it if it runs to the end of ``text`` (``""`` when it ends or a blank line ends it)."""
    if until == "":
        stop = end
        for s2, e2, l2 in it:
            if _BLANK.fullmatch(l2):
                return s2, ""
            stop = e2
        return stop, ""
    if until in line.lower():
        return end, ""
    for _, e2, l2 in it:
        if until in l2.lower():
            return e2, ""
    return len(text), ("" if text.endswith(("\n", "\r")) else "\n") + until


_INLINE_SPECIAL: Final = re.compile(r"[\\`<\[]")
_BACKTICKS: Final = re.compile(r"`+")


def _escaped(text: str, i: int, a: int) -> bool:
    """Is ``text[i]`` preceded by an odd run of backslashes (within ``text[a:]``)?"""
    k = i
    while k > a and text[k - 1] == "\\":
        k -= 1
    return (i - k) % 2 == 1


class _Closers:
    """Where the next ``marker`` at or after a position is (``-1``: none before ``end``), each marker
    searched for at most once per position it could be found at."""

    def __init__(self, text: str, end: int) -> None:
        self.text, self.end = text, end
        self.found: dict[str, int] = {}

    def after(self, marker: str, start: int) -> int:
        hit = self.found.get(marker)
        if hit is None or (hit != -1 and hit < start):
            hit = self.text.find(marker, start, self.end)
            self.found[marker] = hit
        return hit


def _html_at(text: str, i: int, b: int, closers: _Closers) -> int | None:
    """The end of the inline HTML (tag, comment, PI, CDATA, declaration, autolink) at ``i``."""
    for opener, closer in _HTML_SPANS:
        if text.startswith(opener, i):
            hit = closers.after(closer, i + len(opener))
            return None if hit == -1 else hit + len(closer)
    if _DECLARATION.match(text, i, b):
        hit = closers.after(">", i + 2)
        return None if hit == -1 else hit + 1
    m = _INLINE_HTML.match(text, i, b)
    return m.end() if m is not None else None


def _scan_inline(text: str, a: int, b: int, regions: list[Region], links: list[Link], html: bool) -> None:
    # Closing backtick runs by width, in order: each opener takes the next run of its width.
    runs: dict[int, list[int]] = {}
    for m in _BACKTICKS.finditer(text, a, b):
        runs.setdefault(m.end() - m.start(), []).append(m.start())
    taken: dict[int, int] = {}  # width -> index of the next candidate closer in runs[width]
    closers = _Closers(text, b)
    i = a
    while True:
        m = _INLINE_SPECIAL.search(text, i, b)
        if m is None:
            return
        i = m.start()
        ch = text[i]
        if ch == "\\":
            i += 2 if i + 1 < b and text[i + 1] in _ESCAPABLE else 1
            continue
        if ch == "`":
            j = i
            while j < b and text[j] == "`":
                j += 1
            width = j - i
            same = runs.get(width, [])  # an escaped first backtick shortens the run
            k = taken.get(width, 0)
            while k < len(same) and same[k] < j:
                k += 1
            taken[width] = k
            if k < len(same):
                close = same[k] + width
                taken[width] = k + 1
                regions.append(Region(i, close, False))
                i = close
            else:
                i = j
            continue
        if ch == "<":
            stop = _html_at(text, i, b, closers) if html else None
            if stop is not None:
                regions.append(Region(i, stop, False))
                i = stop
            else:
                i += 1
            continue
        link = _parse_link(text, i, b)
        if link is None:
            i += 1
            continue
        image = i > a and text[i - 1] == "!" and not _escaped(text, i - 1, a)
        if not image:
            links.append(link)
        i = link.end


_DEST_PLAIN: Final = re.compile(r"[^\s`<>()\\\x00-\x1f\x7f]+")
_LABEL: Final = re.compile(r"\[((?:[^\[\]\\`<>]|\\.)*)\]\(", re.DOTALL)


def _parse_link(text: str, i: int, b: int) -> Link | None:
    """A ``[label](destination "title")`` link at ``i`` (within ``text[:b]``), or ``None``. Labels with
    nested brackets, code or HTML are not followed; destinations with a backtick or ``<``/``>``,
    whitespace or unbalanced parentheses are not links."""
    m = _LABEL.match(text, i, b)
    if m is None:
        return None
    j = m.end()
    k = j
    depth = 0
    while k < b:
        plain = _DEST_PLAIN.match(text, k, b)
        if plain is not None:
            k = plain.end()
            if k >= b:
                break
        c = text[k]
        if c == "\\" and k + 1 < b and text[k + 1] in _ESCAPABLE:
            k += 2
            continue
        if c in "`<>" or c.isspace() or ord(c) < 0x20 or c == "\x7f":
            break
        if c == "(":
            depth += 1
            if depth > _MAX_PAREN_DEPTH:
                return None
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        k += 1
    if depth != 0 or k >= b or text[k] in "`<>":
        return None
    rest = _TITLE.match(text, k, b)
    if rest is None:
        return None
    label = re.sub(r"\\(.)", r"\1", m.group(1))
    return Link(i, rest.end(), label, text[j:k])


# Every link and image needs "[" and "]", every tag, comment and autolink "<"; ">" is left alone
# (escaping one that opens a line would turn a block quote into text and change the blocks).
_LIVE_CHARS: Final = re.compile(r"[\[\]<]")


_UNSAFE_IN_URL: Final = frozenset("`<>\\\"'")
_LABEL_SPECIAL: Final = frozenset("\\[]`<>")  # what could end or break a link label


def safe_destination(url: str) -> bool:
    """Whether ``[text](url)`` stays one link to ``url``: an http(s) URL with a host (no
    ``javascript:``, ``data:`` or ``file:``), without whitespace, quotes, backslashes, backticks
    or angle brackets, and with balanced parentheses (so a ``)](`` inside cannot end the link and
    open another)."""
    try:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            return False
    except ValueError:
        return False
    depth = 0
    for ch in url:
        if ch.isspace() or ch in _UNSAFE_IN_URL:
            return False
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0


# What a URL may hold as text but a Markdown destination may not, percent-encoded (RFC 3986: a space
# is %20; quotes, angle brackets, backticks and backslashes are never literal in a URL anyway)
_ENCODED: Final = {" ": "%20", '"': "%22", "'": "%27", "<": "%3C", ">": "%3E", "`": "%60", "\\": "%5C"}


def link_destination(url: str) -> str | None:
    """``url`` as a safe link destination (``safe_destination``), its spaces and the other
    characters a link cannot hold percent-encoded (Google's ``search?q=weather+in+San Francisco``
    source pages); ``None`` when it still cannot be one (not http(s), a line break, unbalanced
    parentheses)."""
    if safe_destination(url):
        return url
    encoded = "".join(_ENCODED.get(ch, ch) for ch in url)
    return encoded if safe_destination(encoded) else None


def escape_label(text: str) -> str:
    """``text`` on one line with what could end or break a link label (or open HTML) escaped."""
    return "".join("\\" + ch if ch in _LABEL_SPECIAL else ch for ch in " ".join(text.split()))


def neutralize(text: str, *headings: str) -> tuple[str, list[int]]:
    """``text`` with every unescaped ``[``, ``]`` and ``<`` outside code backslash-escaped (no link,
    image, autolink or HTML a model typed stays live; the rendered text looks the same), and a colon
    after any line that is one of ``headings``, trailing spaces aside (the block is unchanged, the
    line no longer matches).
    Also returns where each original position ``0..len(text)`` is in the result (before a character
    added there: an insertion at the mapped position lands where it would have in ``text``)."""
    regions = scan(text, html=False).regions
    starts = [g.start for g in regions]

    def region_at(i: int) -> Region | None:
        r = bisect_right(starts, i) - 1
        return regions[r] if r >= 0 and i < regions[r].end else None

    escape = {m.start() for m in _LIVE_CHARS.finditer(text) if region_at(m.start()) is None}
    heading_ends: list[int] = []
    for start, _, line in lines(text):
        where_in = region_at(start)
        if where_in is not None and where_in.block:
            continue
        bare = line.rstrip()
        if bare in headings:  # trailing whitespace may be stripped later: disarm it too
            # a colon after it: still the same heading block, no longer exactly the heading (a space
            # would not survive a strip)
            heading_ends.append(start + len(bare))
        elif line.lstrip(" ").startswith("<") and len(line) - len(line.lstrip(" ")) <= 3:
            # A line opening with "<" may start an HTML block, which ends a paragraph and so any
            # code span that seemed to run through it: escape it even there.
            escape.add(start + len(line) - len(line.lstrip(" ")))
    inserts = sorted(
        [(i, "\\") for i in escape if not _escaped(text, i, 0)] + [(i, ":") for i in heading_ends]
    )
    out: list[str] = []
    prev = 0
    for pos, char in inserts:
        out += (text[prev:pos], char)
        prev = pos
    out.append(text[prev:])
    where: list[int] = []  # position i moves right by the number of insertions before it
    prev = 0
    for m, (pos, _) in enumerate(inserts):
        where.extend(range(prev + m, pos + 1 + m))
        prev = pos + 1
    where.extend(range(prev + len(inserts), len(text) + 1 + len(inserts)))
    return "".join(out), where
