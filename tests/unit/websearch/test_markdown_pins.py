"""websearch/markdown.py pinned through the checker's verdict: for each code-fence, HTML-block, code-span
and link edge case, whether a ``[Source](…)`` there counts as a citation (CommonMark decides), plus
what a construct left open needs to close and how ``neutralize`` escapes."""

from __future__ import annotations

import pytest

from llmroute.websearch.contract import check_citations
from llmroute.websearch.markdown import escape_label, neutralize, safe_destination, scan

A = "https://docs.python.org/3/"
LINK = f"[Source]({A})"


def counts(before: str) -> bool:
    """Does the ``[Source]`` link in ``before`` count as the answer's inline citation?"""
    report = check_citations(f"{before}\n\n## Sources\n\n- {A}\n")
    return "inline-citation" not in report.rules()


HIDDEN = {
    # fenced code
    "backtick fence": f"```\n{LINK}\n```",
    "tilde fence": f"~~~\n{LINK}\n~~~",
    "fence indented 3": f"   ```\n{LINK}\n```",
    "fence with info": f"```python\n{LINK}\n```",
    "longer closing fence": f"```\n{LINK}\n`````",
    "closing fence indented 3 with trailing spaces": f"```\n{LINK}\n   ```  ",
    "a shorter fence does not close": f"````\n```\n{LINK}\n````",
    "a tilde does not close a backtick fence": f"```\n~~~\n{LINK}\n```",
    "unclosed fence runs to the end": f"```\n{LINK}",
    # HTML blocks
    "script block": f"<script>\n{LINK}\n</script>",
    "SCRIPT upper case": f"<SCRIPT>\n{LINK}\n</SCRIPT>",
    "pre block": f"<pre>\n{LINK}\n</pre>",
    "style block": f"<style>\n{LINK}\n</style>",
    "textarea block": f"<textarea>\n{LINK}\n</textarea>",
    "script ended on a later line, blank lines inside": f"<script>\n\n{LINK}\n\n</script>",
    "comment block": f"<!--\n{LINK}\n-->",
    "a comment block takes the rest of its closing line": f"<!-- a --> {LINK}",
    "an unclosed comment block runs to the end": f"<!-- {LINK}",
    "processing instruction": f"<?php\n{LINK}\n?>",
    "declaration": f"<!DOCTYPE html\n{LINK}\n>",
    "cdata": f"<![CDATA[\n{LINK}\n]]>",
    "div block": f"<div>\n{LINK}\n</div>",
    "DIV upper case": f"<DIV class='x'>\n{LINK}",
    "closing block tag": f"</table>\n{LINK}",
    "self-closing block tag": f"<hr/>\n{LINK}",
    "block tag indented 3": f"   <section>\n{LINK}",
    "type 7 custom tag on its own line": f'<custom-tag a="1">\n{LINK}',
    "type 7 closing tag": f"</custom-tag>\n{LINK}",
    # inline
    "code span": f"`{LINK}`",
    "double backtick span": f"``a ` {LINK}``",
    "inline tag": f"<span title='{LINK}'>x</span>",
    "inline comment": f"a <!-- {LINK} --> b",
    "inline processing instruction": f"a <? {LINK} ?> b",
    "inline cdata": f"a <![CDATA[ {LINK} ]]> b",
    "inline declaration": f"a <!X {LINK}> b",
    "image": f"!{LINK}",
    "escaped bracket": f"\\{LINK}",
}


@pytest.mark.parametrize("text", list(HIDDEN.values()), ids=list(HIDDEN))
def test_hidden_citations_do_not_count(text: str) -> None:
    assert not counts(text)


VISIBLE = {
    "plain": LINK,
    "after a closed fence": f"```\ncode\n```\n{LINK}",
    "after a closed longer fence": f"````\n```\n````\n{LINK}",
    "fence with a backtick in its info string is not a fence": f"``` a`b\n{LINK}\n```",
    "four-space-indented fence is not a fence": f"    ```\n{LINK}",
    "two backticks are not a fence": f"``\n{LINK}",
    "after a script block ended on its line": f"<script>x</script>\n{LINK}",
    "after an html block ended by a blank line": f"<div>\nx\n\n{LINK}",
    "after a comment closed on its line": f"<!-- note -->\n{LINK}",
    "after an inline comment": f"x <!-- a --> {LINK}",
    "after a processing instruction block": f"<?x\n?>\n{LINK}",
    "after a declaration block": f"<!X\n>\n{LINK}",
    "after a cdata block": f"<![CDATA[\n]]>\n{LINK}",
    "a type 7 tag cannot interrupt a paragraph": f"text\n<custom-tag>\n{LINK}",
    "an unknown tag name with text after it is inline": f"<custom-tag> x\n{LINK}",
    "a block tag name prefix is not a block tag": f"<divx>\n\n{LINK}",
    "scripts prefix is not script": f"<scripts> y\n{LINK}",
    "after a code span": f"`code` {LINK}",
    "an unmatched backtick is text": f"` {LINK}",
    "a code span of another width does not close": f"`` ` {LINK}",
    "after an inline tag": f"<b>bold</b> {LINK}",
    "after an autolink": f"<https://x.test/a> {LINK}",
    "after an email autolink": f"<me@x.test> {LINK}",
    "an escaped backtick opens no span": f"\\` {LINK} `",
    "an escaped bang is no image": f"\\!{LINK}",
    "double escaped bracket": f"\\\\{LINK}",
    "a lone less-than is text": f"a < b {LINK}",
    "an unclosed comment is text": f"a <!-- {LINK}",
    "an unclosed inline cdata is text": f"a <![CDATA[ {LINK}",
    "an unclosed inline declaration is text": f"a <!X {LINK}",
    "a heading ends the html paragraph": f"<custom-tag> x\n# Title {LINK}",
    "in a list after a paragraph": f"text\n- {LINK}",
    "in a block quote": f"> {LINK}",
    "with a title": f'[Source]({A} "Python docs")',
    "with a title on the next line": f"[Source]({A}\n'docs')",
    "with a parenthesised title": f"[Source]({A} (docs))",
    "with balanced parentheses in the destination": "[Source](https://en.wikipedia.org/wiki/Python_(language))",
    "with an escaped parenthesis": "[Source](https://x.test/a\\)b)",
}


@pytest.mark.parametrize("text", list(VISIBLE.values()), ids=list(VISIBLE))
def test_visible_citations_count(text: str) -> None:
    assert counts(text), check_citations(f"{text}\n\n## Sources\n\n- {A}\n")


@pytest.mark.parametrize(
    "text",
    [
        "[Source](https://x.test/a`b)",
        "[Source](https://x.test/a<b)",
        "[Source](https://x.test/a b)",
        "[Source](https://x.test/(a)",
        "[Source](https://x.test/a",
        "[Source](https://x.test/a 'title)",
        "[Source](" + "(" * 33 + "x" + ")" * 33 + ")",
        "[So`urce](https://x.test/)",
        "[Source]",
        "[Source] (https://x.test/)",
    ],
)
def test_destinations_that_are_not_links(text: str) -> None:
    assert scan(text).links == ()


def test_link_fields() -> None:
    (link,) = scan('x [S\\]ource](https://x.test/a_(b)_c "t") y').links
    assert (link.start, link.label, link.url) == (2, "S]ource", "https://x.test/a_(b)_c")
    assert link.end == len('x [S\\]ource](https://x.test/a_(b)_c "t")')
    (deep,) = scan("[S](" + "(" * 32 + "x" + ")" * 32 + ")").links
    assert deep.url == "(" * 32 + "x" + ")" * 32


def test_regions_and_blocks() -> None:
    text = "a `b` c\n```\nx\n```\n<div>\ny\n\nz <i>w</i>\n"
    regions = scan(text).regions
    assert [(text[r.start : r.end], r.block) for r in regions] == [
        ("`b`", False),
        ("```\nx\n```\n", True),
        ("<div>\ny\n", True),
        ("<i>", False),
        ("</i>", False),
    ]
    assert scan(text, html=False).regions == regions[:2]


@pytest.mark.parametrize(
    ("text", "closer"),
    [
        ("```\ncode", "\n```"),
        ("````\ncode\n", "````"),
        ("~~~\ncode\r", "~~~"),
        ("<script>\nx", "\n</script>"),
        ("<PRE>\nx\n", "</pre>"),
        ("<!--\nx", "\n-->"),
        ("<?x\ny", "\n?>"),
        ("<!X\ny", "\n>"),
        ("<![CDATA[\ny", "\n]]>"),
        ("<div>\nx", ""),
        ("```\nx\n```", ""),
        ("<script>x</script>", ""),
        ("plain", ""),
    ],
)
def test_what_closes_an_open_construct(text: str, closer: str) -> None:
    assert scan(text).unclosed == closer


def test_neutralize_escapes_live_characters_and_disarms_the_heading() -> None:
    text = "[a](b) <i> `[c]` \\[d]\n## Sources\n```\n## Sources\n[e]\n```\n  <x>\n"
    out, where = neutralize(text, "## Sources")
    assert out == "\\[a\\](b) \\<i> `[c]` \\[d\\]\n## Sources:\n```\n## Sources\n[e]\n```\n  \\<x>\n"
    assert len(where) == len(text) + 1
    inserted = [i for i in range(len(text)) if out[where[i]] != text[i]]
    assert [(text[i], out[where[i]]) for i in inserted] == [
        ("[", "\\"),
        ("]", "\\"),
        ("<", "\\"),
        ("]", "\\"),
        ("\n", ":"),
        ("<", "\\"),
    ]
    assert all(out[where[i] + 1] == text[i] for i in inserted)
    assert where[-1] == len(out)
    assert neutralize("## Sources  \n", "## Sources")[0] == "## Sources:  \n"
    assert neutralize("    <x>\n", "## Sources")[0] == "    \\<x>\n"
    assert neutralize("     x <y>", "## Sources")[0] == "     x \\<y>"


# -- where runs (paragraphs) end: a code span never crosses into the next block ---------------------

NEW_BLOCK_PREFIXES = [
    "# ",
    "#\t",
    "###### ",
    "   # ",
    "- ",
    "-\t",
    "* ",
    "+ ",
    "1. ",
    "1) ",
    "1.\t",
    "123456789. ",
    "> ",
]


@pytest.mark.parametrize("prefix", NEW_BLOCK_PREFIXES)
def test_a_new_block_ends_the_paragraph_so_a_code_span_cannot_cross_it(prefix: str) -> None:
    assert counts(f"`x\n{prefix}{LINK} `")


def test_a_bare_heading_marker_starts_a_new_block() -> None:
    assert counts(f"`x\n#\n{LINK} `")


@pytest.mark.parametrize("not_a_block", ["####### ", "#x ", "    # ", "-x ", "1234567890. ", "1x "])
def test_lines_that_continue_the_paragraph(not_a_block: str) -> None:
    assert not counts(f"`x\n{not_a_block}{LINK} `")


@pytest.mark.parametrize("blank", ["\n", " \n", "\t\n", " \t \n", "\r\n", "\r"])
def test_blank_lines_end_a_paragraph(blank: str) -> None:
    eol = "\r\n" if blank == "\r\n" else "\r" if blank == "\r" else "\n"
    assert counts(f"`x{eol}{blank}{LINK} `")
    # and let a type 7 HTML block start after them (it cannot interrupt a paragraph)
    assert not counts(f"text{eol}{blank}<custom-tag>{eol}{LINK}")


def test_a_blank_last_line_without_a_line_ending() -> None:
    text = f"{LINK}\n   "
    assert scan(text).links[0].url == A


def test_a_paragraph_after_an_html_block_is_its_own_run() -> None:
    assert counts(f"`x\n<!-- c -->\n{LINK} `")
    assert counts(f"`x\n<script>s</script>\n{LINK} `")


def test_lines_split_on_every_line_ending() -> None:
    from llmroute.websearch.markdown import lines

    assert list(lines("a\r\nb\rc\nd")) == [(0, 3, "a\r\n"), (3, 5, "b\r"), (5, 7, "c\n"), (7, 8, "d")]


@pytest.mark.parametrize("tag", ["script", "pre", "style", "textarea"])
def test_type_1_blocks_run_past_blank_lines_until_their_closing_tag(tag: str) -> None:
    assert not counts(f"<{tag}>\n\n{LINK}\n</{tag}>")
    assert not counts(f"<{tag} id='x'>\n\n{LINK}\n</{tag}>")
    assert not counts(f"<{tag}\n\n{LINK}\n</{tag}>")
    assert counts(f"<{tag}>\n\n</{tag.upper()}>\n{LINK}")


def test_an_indented_fence_with_a_backtick_in_its_info_is_not_a_fence() -> None:
    assert counts(f"   ``` a`b\n{LINK}\n```")


@pytest.mark.parametrize("title", ['""', "''", "()"])
def test_empty_titles(title: str) -> None:
    assert counts(f"[Source]({A} {title})")


def test_inline_html_region_bounds() -> None:
    from llmroute.websearch.markdown import Region

    text = "x <!-- a --> y <!-- b --> <? c ?> <![CDATA[d]]> <!X e> <i> </i> <https://a.test/> <me@a.test> z"
    spans = [text[r.start : r.end] for r in scan(text).regions]
    assert spans == ["<!-- a -->", "<!-- b -->", "<? c ?>", "<![CDATA[d]]>", "<!X e>", "<i>", "</i>",
                     "<https://a.test/>", "<me@a.test>"]  # fmt: skip
    assert all(not r.block for r in scan(text).regions)
    assert scan("x <!-- a --> y <!-- b").regions == (Region(2, 12, False),)


def test_code_span_region_bounds() -> None:
    text = "a `b` c ``d`e`` f ` g `` h ``` i"
    assert [text[r.start : r.end] for r in scan(text).regions] == ["`b`", "``d`e``"]
    text = "\\`a` `b`"  # an escaped backtick opens nothing; the next pair is a span
    assert [text[r.start : r.end] for r in scan(text).regions] == ["` `"]
    text = "`a` `b` `c`"
    assert [text[r.start : r.end] for r in scan(text).regions] == ["`a`", "`b`", "`c`"]


def test_html_block_region_bounds() -> None:
    from llmroute.websearch.markdown import Region

    assert scan("<div>\na\nb").regions == (Region(0, 9, True),)  # to the end, no blank line
    assert scan("<div>\na\n\nb").regions == (Region(0, 8, True),)  # the blank line is not in it
    assert scan("<script>x</script>\nb").regions == (Region(0, 19, True),)
    assert scan("<script>\nx\n</SCRIPT>\nb").regions == (Region(0, 21, True),)


@pytest.mark.parametrize(
    "title",
    [
        ' \t\n \t"t"',
        "\r\n'docs'",
        "\r(docs)",
        '"a\\"b"',
        "'a\\'b'",
        "(a\\)b)",
        '"' + "t" * 1024 + '"',
        "'" + "t" * 1024 + "'",
        "(" + "t" * 1024 + ")",
    ],
)
def test_titles_that_make_a_link(title: str) -> None:
    assert counts(f"[Source]({A} {title})")


@pytest.mark.parametrize(
    "text",
    ['[Source](x "a") b "c")', "[Source](x 'a') b 'c')", "[Source](x (a)) b (c))"],
)
def test_a_title_ends_at_its_first_closing_quote(text: str) -> None:
    (link,) = scan(text).links
    assert link.end == 15  # after the first title and its ")"


def test_titles_that_do_not_make_a_link() -> None:
    assert scan("[Source](x (a(b)) y)").links == ()
    assert scan('[Source](x "' + "t" * 1025 + '")').links == ()


def test_block_edges() -> None:
    from llmroute.websearch.markdown import Region

    assert scan("<div>\n  ").regions == (Region(0, 6, True),)  # a blank last line ends the block
    assert not counts(f"   <script>\n\n{LINK}\n</script>")  # type 1 indented 3: still type 1
    assert [r for r in scan("x <!doctype y> z").regions] == [Region(2, 14, False)]


def test_an_html_block_on_the_last_line() -> None:
    from llmroute.websearch.markdown import Region

    assert scan("<div>").regions == (Region(0, 5, True),)
    assert scan("x\n\n<div>\n").regions == (Region(3, 9, True),)


def test_an_even_run_of_backslashes_escapes_nothing() -> None:
    assert not counts(f"\\\\\\\\!{LINK}")  # four backslashes, then an image
    assert counts(f"\\\\\\!{LINK}")  # three: the bang is escaped, the link counts


def test_an_open_type_1_block_ending_in_a_cr() -> None:
    assert scan("<pre>\nx\r").unclosed == "</pre>"


# -- safe_destination / escape_label: what the answer renderers may put inside ``[..](..)``

U = "https://x.example/"

SAFE_DESTINATIONS = {
    U: True,
    "http://x.example/": True,
    "HTTPS://x.example/a": True,
    f"{U}(a)": True,
    f"{U}((a)b)": True,
    "ftp://x.example/": False,
    "javascript:alert(1)": False,
    "https:///no-host": False,
    "http://[::1/": False,  # urlsplit raises ValueError
    f"{U}a b": False,
    f"{U}a\tb": False,
    **{f"{U}a{ch}b": False for ch in "`<>\\\"'"},
    f"{U}a)": False,
    f"{U})(": False,
    f"{U}(a": False,
}


@pytest.mark.parametrize(("url", "ok"), SAFE_DESTINATIONS.items(), ids=repr)
def test_safe_destination(url: str, ok: bool) -> None:
    assert safe_destination(url) is ok


def test_escape_label() -> None:
    assert escape_label("a [b] `c` <d> \\e") == "a \\[b\\] \\`c\\` \\<d\\> \\\\e"
    assert escape_label("  two\n  lines ") == "two lines"


# -- _parse_link's destination scan, title and label, seen as scan(...).links (start, end, label, url)

END = -1  # the link is all of the text

LINK_SHAPES: dict[str, tuple[tuple[int, int, str, str], ...]] = {
    f"[a]({U}p\\)q)": ((0, END, "a", f"{U}p\\)q"),),  # an escaped ")" stays in the url
    f"[a]({U}p\\))": ((0, END, "a", f"{U}p\\)"),),
    f"[a]({U}p\\ )": ((0, END, "a", f"{U}p\\"),),  # "\ " is no escape: the space ends it
    f"[a]({U}p\\)": (),  # the only ")" is escaped: unclosed
    f"[a]({U}p\\": (),
    f"[a]({U}p": (),
    f"[a]({U}p\x01q)": (),
    f"[a]({U}p\x02q)": (),
    f"[a]({U}p\x1fq)": (),
    f"[a]({U}p\x7fq)": (),
    f"[a]({U}p>q)": (),
    f"[a]({U}p(q )": (),  # unbalanced when the space ends it
    f"[a]({U}(p)q)": ((0, END, "a", f"{U}(p)q"),),
    "[a](" + "(" * 32 + ")" * 32 + ")": ((0, END, "a", "(" * 32 + ")" * 32),),
    "[a](" + "(" * 33 + ")" * 33 + ")": (),
    f'[a]({U} "t" )': ((0, END, "a", U),),
    f'[a]({U} "t"\t)': ((0, END, "a", U),),
    f'[a]({U} "t\\")': (),  # the title's closing quote is escaped
    f"[a]({U} 't\\')": (),
    f"[a]({U} (t\\))": (),
    f"[a]({U} (t)) )": ((0, len(U) + 9, "a", U),),
    f"[]({U})": ((0, END, "", U),),
    f"[a]b]({U})": (),
    f"[a\\]({U})": (),
    f"[a < b]({U})": (),
    f"[a > b]({U})": (),
    f"[[x]({U})": ((1, END, "x", U),),
    f"<[x]({U})": ((1, END, "x", U),),
    f"x\\[a]({U})": (),
    f"[x]({U}) wow!": ((0, len(U) + 5, "x", U),),  # not an image: the "!" is at the very end
}


@pytest.mark.parametrize(("text", "links"), LINK_SHAPES.items(), ids=repr)
def test_link_shapes(text: str, links: tuple[tuple[int, int, str, str], ...]) -> None:
    assert scan(text).links == tuple((s, len(text) if e == END else e, lab, url) for s, e, lab, url in links)


@pytest.mark.parametrize(
    "text",
    [
        f"\\\\`[x]({U})`",  # an escaped backslash leaves the backtick live
        f"<`[x]({U})`",  # a "<" that opens no HTML leaves the backtick live
        f"\\``[x]({U})`",  # an escaped first backtick shortens the run to one
        f"`a` \\``[x]({U})`",  # ... also after an earlier span of that width
        f"`a`\\[x]({U})",  # an escape right after a code span still escapes
    ],
    ids=repr,
)
def test_code_spans_after_escapes_hide_links(text: str) -> None:
    assert scan(text).links == ()


NEUTRALIZED = {
    "[x\\": "\\[x\\",  # the trailing backslash escapes nothing before it
    f"\\[x]({U})": f"\\[x\\]({U})",  # already escaped: left alone
    f"`a`[x]({U})": f"`a`\\[x\\]({U})",  # right after a code span
    "`x\n<div>`": "`x\n\\<div>`",  # a line opening with "<" escapes even in a code span
    "`x\n   <div>`": "`x\n   \\<div>`",
    "`x\n    <div>`": "`x\n    <div>`",  # indented 4: no HTML block can start there
}


@pytest.mark.parametrize(("text", "out"), NEUTRALIZED.items(), ids=repr)
def test_neutralize_edges(text: str, out: str) -> None:
    assert neutralize(text)[0] == out
