"""What an attack pass found in grounded-search rendering (issue #21): source URLs that are not safe
links, a URL that breaks out of its link, a model's own links / HTML / ``## Sources`` in the
markers-style Markdown report, the contract's heading with trailing spaces, and Gemini spans that
snap to empty. Each test failed before its fix."""

from __future__ import annotations

import re

import pytest

from llmroute.websearch import GroundedAnswer, check_citations, render_cited
from llmroute.websearch.markdown import scan
from llmroute.websearch.result import report_markdown

UNSAFE = [
    "javascript:alert(document.cookie)",
    "JavaScript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "file:///etc/passwd",
    "vbscript:msgbox(1)",
]


def _links(markdown: str) -> list[str]:
    """Every link destination a CommonMark renderer would see (outside code and HTML)."""
    return [link.url for link in scan(markdown).links]


@pytest.mark.parametrize("url", UNSAFE)
def test_a_source_url_that_is_not_http_is_not_rendered_as_a_link(url: str) -> None:
    answer = GroundedAnswer.from_parts(
        text="A claim.", sources=[(url, "Evil"), ("https://ok.test/a", "Good")], citations=[(0, 8, [0, 1])]
    )
    report = report_markdown(answer)
    assert _links(report) == ["https://ok.test/a"]
    assert "](" + url not in report
    assert "- Evil (`" in report and "not linked" in report  # still listed, as text


def test_a_url_with_a_closing_bracket_cannot_break_out_of_its_link() -> None:
    url = "https://ok.test/a)](javascript:alert(1)"
    answer = GroundedAnswer.from_parts(text="A claim.", sources=[(url, "Title")], citations=[(0, 8, [0])])
    report = report_markdown(answer)
    assert _links(report) == []
    assert "javascript" not in "".join(_links(report))


def test_a_title_cannot_open_html_or_end_its_link_label() -> None:
    answer = GroundedAnswer.from_parts(
        text="A claim.",
        sources=[("https://ok.test/a", "<img src=x onerror=alert(1)>] [x](javascript:alert(1))")],
        citations=[(0, 8, [0])],
    )
    report = report_markdown(answer)
    assert _links(report) == ["https://ok.test/a"]
    assert "<img" not in report.replace("\\<img", "")
    assert scan(report).regions == ()  # no raw HTML anywhere


def test_markers_report_neutralises_the_models_own_links_html_and_sources_heading() -> None:
    text = (
        "Safe claim. See [here](javascript:alert(1)) and <script>alert(1)</script>.\n"
        "![pixel](https://tracker.test/p.png)\n"
        "## Sources  \n"
        "### Sources\n"
        "- [fake](https://phish.test)"
    )
    answer = GroundedAnswer.from_parts(
        text=text, sources=[("https://ok.test/a", "Good")], citations=[(0, 11, [0])], provider="openai"
    )
    report = report_markdown(answer)
    assert _links(report) == ["https://ok.test/a"]  # only the source list's link is live
    assert scan(report).regions == ()  # the model's HTML is text
    assert "![pixel](" not in report  # the image is escaped
    headings = [line for line in report.splitlines() if line.rstrip() in ("## Sources", "### Sources")]
    assert headings == ["### Sources"]  # only the report's own
    assert report.count("Safe claim.[1]") == 1


def test_a_marker_followed_by_a_parenthesis_does_not_become_a_link() -> None:
    answer = GroundedAnswer.from_parts(
        text="claim(javascript:alert(1)) more",
        sources=[("https://ok.test/a", "Good")],
        citations=[(0, 5, [0])],
    )
    report = report_markdown(answer)
    assert _links(report) == ["https://ok.test/a"]
    assert "claim[1]\\(javascript" in report


def test_the_sources_heading_followed_by_spaces_is_the_heading() -> None:
    text = "Claim [Source](https://ok.test/a).\n\n## Sources   \n\n- [Ok](https://ok.test/a)\n"
    report = check_citations(text, allowed_urls=["https://ok.test/a"])
    assert report.ok, report.violations
    tabbed = text.replace("## Sources   ", "## Sources\t")
    assert check_citations(tabbed).ok


def test_cited_rendering_disarms_a_models_heading_with_trailing_spaces() -> None:
    answer = GroundedAnswer.from_parts(
        text="Claim.\n## Sources   \n- [fake](https://phish.test)",
        sources=[("https://ok.test/a", "Ok")],
        citations=[(0, 6, [0])],
    )
    rendered = render_cited(answer)
    assert check_citations(rendered, allowed_urls=["https://ok.test/a"]).ok
    assert len(re.findall(r"^## Sources\s*$", rendered, re.M)) == 1


@pytest.mark.anyio
async def test_a_real_google_source_url_with_spaces_is_linked_percent_encoded() -> None:
    # issue #42: Gemini's grounding chunk names "https://www.google.com/search?q=weather+in+San
    # Francisco, CA,+US" (a space inside): shown unlinked; a space is %20 in a URL
    import llmroute
    from llmroute.providers import google
    from llmroute.websearch.extract import fold
    from tests.helpers import replay_events

    path = "pydantic-ai/test_google/test_google_model_web_search_tool.yaml"
    model = google.configure("g-test").model("gemini-2.5-pro")
    request = llmroute.request(model, prompt="x", generation=llmroute.GenerationOptions(stream=False))
    answer = fold(await replay_events(path, request), provider="google")
    spaced = [s.url for s in answer.sources if s.url and " " in s.url]
    assert spaced == ["https://www.google.com/search?q=weather+in+San Francisco, CA,+US"]
    report = report_markdown(answer)
    assert "https://www.google.com/search?q=weather+in+San%20Francisco,%20CA,+US" in _links(report)
    assert "not linked" not in report
    assert len(_links(report)) == len([s for s in answer.sources if s.url])
