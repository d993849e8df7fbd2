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
from collections.abc import Iterator
from typing import Final, NamedTuple

__all__ = [
    "Link",
    "Region",
    "closing_suffix",
    "find_links",
    "lines",
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
_ATTR: Final = r"""(?:\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)"""
_OPEN_TAG: Final = rf"<[A-Za-z][A-Za-z0-9-]*{_ATTR}*\s*/?>"
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
    rf"{_OPEN_TAG}|{_CLOSE_TAG}|<!--.*?-->|<\?.*?\?>|<![A-Za-z][^>]*>|<!\[CDATA\[.*?\]\]>"
    r"|<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*>|<[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)*>",
    re.DOTALL,
)
_ESCAPABLE: Final = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_TITLE: Final = re.compile(
    r"""[ \t]*(?:\r\n|\r|\n)?[ \t]*(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\((?:[^()\\]|\\.)*\))?[ \t]*\)"""
)


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


def _scan_inline(text: str, a: int, b: int, regions: list[Region], links: list[Link], html: bool) -> None:
    i = a
    bang = False  # the previous character was an unescaped "!"
    while i < b:
        ch = text[i]
        if ch == "\\" and i + 1 < b and text[i + 1] in _ESCAPABLE:
            i += 2
            bang = False
            continue
        if ch == "`":
            j = i
            while j < b and text[j] == "`":
                j += 1
            width = j - i
            close = re.compile(rf"(?<!`)`{{{width}}}(?!`)").search(text, j, b)
            if close is not None:
                regions.append(Region(i, close.end(), False))
                i = close.end()
            else:
                i = j
            bang = False
            continue
        if ch == "<" and html:
            m = _INLINE_HTML.match(text, i, b)
            if m is not None:
                regions.append(Region(i, m.end(), False))
                i = m.end()
                bang = False
                continue
        if ch == "[":
            link = _parse_link(text, i, b)
            if link is not None:
                if not bang:
                    links.append(link)
                i = link.end
                bang = False
                continue
        bang = ch == "!"
        i += 1


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
        c = text[k]
        if c == "\\" and k + 1 < b and text[k + 1] in _ESCAPABLE:
            k += 2
            continue
        if c in "`<>" or c.isspace() or ord(c) < 0x20 or c == "\x7f":
            break
        if c == "(":
            depth += 1
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


def find_links(text: str) -> tuple[Link, ...]:
    """Every ``[label](url)`` link outside code and HTML, images excluded."""
    return scan(text).links


def closing_suffix(text: str) -> str:
    """What to append so that no fenced code block or HTML block stays open at the end of ``text``."""
    return scan(text).unclosed


_LIVE: Final = frozenset("[]<>")


def neutralize(text: str, heading: str) -> tuple[str, list[int]]:
    """``text`` with every unescaped ``[``, ``]``, ``<`` and ``>`` outside code backslash-escaped (no
    link, image, autolink or HTML a model typed stays live; the rendered text looks the same), and
    any line that is exactly ``heading`` escaped too. Also returns where each original position
    ``0..len(text)`` is in the result (before an escape added there: an insertion at the mapped
    position lands where it would have in ``text``)."""
    regions = scan(text, html=False).regions
    escape_at: list[int] = []
    r = 0
    backslashes = 0
    for i, ch in enumerate(text):
        while r < len(regions) and regions[r].end <= i:
            r += 1
        if r < len(regions) and regions[r].start <= i:
            backslashes = 0
            continue
        if ch in _LIVE and backslashes % 2 == 0:
            escape_at.append(i)
        backslashes = backslashes + 1 if ch == "\\" else 0
    for start, _, line in lines(text):
        if line.rstrip("\r\n") == heading and not any(g.start <= start < g.end for g in regions):
            escape_at.append(start)
    escape_at.sort()
    out: list[str] = []
    prev = 0
    for pos in escape_at:
        out += (text[prev:pos], "\\")
        prev = pos
    out.append(text[prev:])
    where: list[int] = []
    k = 0
    for i in range(len(text) + 1):
        while k < len(escape_at) and escape_at[k] < i:
            k += 1
        where.append(i + k)
    return "".join(out), where
