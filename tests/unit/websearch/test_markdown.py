"""``websearch.markdown``: the scanner the checker and the renderer share."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmroute.websearch.contract import check_citations
from llmroute.websearch.markdown import neutralize, scan

U = "https://a.test/"


@pytest.mark.parametrize(
    ("text", "region"),
    [
        (f"<script>\n[Source]({U})\n</script>\nafter", f"<script>\n[Source]({U})\n</script>\n"),
        (f"<!--\n[Source]({U})\n-->\nafter", f"<!--\n[Source]({U})\n-->\n"),
        (f"<?php\n[Source]({U})\n?>\nafter", f"<?php\n[Source]({U})\n?>\n"),
        (f"<!DOCTYPE\n[Source]({U})>\nafter", f"<!DOCTYPE\n[Source]({U})>\n"),
        (f"<![CDATA[\n[Source]({U})\n]]>\nafter", f"<![CDATA[\n[Source]({U})\n]]>\n"),
        (f"<table>\n[Source]({U})\n\nafter", f"<table>\n[Source]({U})\n"),
        (f'<my-tag a="1">\n[Source]({U})\n\nafter', f'<my-tag a="1">\n[Source]({U})\n'),
    ],
    ids=["type1", "type2", "type3", "type4", "type5", "type6", "type7"],
)
def test_html_blocks_hide_links_until_their_end(text: str, region: str) -> None:
    parsed = scan(text)
    assert [text[r.start : r.end] for r in parsed.regions if r.block] == [region]
    assert parsed.links == ()
    assert scan(text, html=False).links != ()  # read as text, the link is live


def test_type7_html_cannot_interrupt_a_paragraph() -> None:
    text = f"para\n<my-tag>\n[Source]({U})"
    assert [lk.url for lk in scan(text).links] == [U]


def test_unclosed_constructs_report_their_closer() -> None:
    assert scan("x\n````py\ncode").unclosed == "\n````"
    assert scan("<!-- open\n").unclosed == "-->"
    assert scan("<div>\nno blank line").unclosed == ""  # ends at the end of the text anyway


def test_link_destinations_titles_and_balanced_parentheses() -> None:
    links = scan("[a](https://x.test/a_(b) \"t\") [b](https://x.test/(c) 't') [c](https://x.test/ (p))").links
    assert [(lk.label, lk.url) for lk in links] == [
        ("a", "https://x.test/a_(b)"),
        ("b", "https://x.test/(c)"),
        ("c", "https://x.test/"),
    ]
    assert scan("[a](https://x.test/(b) [c](https://y.test)").links[-1].url == "https://y.test"


TEXT = st.lists(
    st.sampled_from(["a", " ", "\n", "\n\n", "`", "``", "```", "\\", "[", "]", "(", ")", "<", ">", "!", "<b>", "<!--",
                     "-->", "## Sources", "[Source](https://evil.test/)", "<div>", "é", "🗼", "- "]),
    max_size=40,
).map("".join)  # fmt: skip


@settings(max_examples=400)
@given(TEXT)
def test_neutralized_text_has_no_live_link_or_html_and_maps_every_position(text: str) -> None:
    out, where = neutralize(text, "## Sources")
    parsed = scan(out)
    assert parsed.links == ()
    assert not any(out[r.start] == "<" for r in parsed.regions)  # no HTML region left, only code
    assert all(out[r.start : r.end].lstrip(" ")[0] in "`~" for r in parsed.regions)  # code only
    assert "sources-heading" in check_citations(out.rstrip()).rules()  # no "## Sources" line, even stripped
    assert len(where) == len(text) + 1 and len(out) - where[-1] in (0, 1)  # 1: a colon added at the end
    for i, ch in enumerate(text):
        assert out[where[i]] == ch or (out[where[i]] in "\\:" and out[where[i] + 1] == ch)
    # only backslashes were added, and a colon after a "## Sources" line
    assert out.replace("\\", "").replace("## Sources:", "## Sources") == text.replace("\\", "").replace(
        "## Sources:", "## Sources"
    )
