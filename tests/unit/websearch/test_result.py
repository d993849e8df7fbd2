"""``WebSearchResult`` and its renderers (``llmroute.websearch.result``): pure functions of a
``GroundedAnswer``."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from llmroute.websearch import GroundedAnswer, sanitize
from llmroute.websearch.result import (
    SearchError,
    error_result,
    render,
    render_markers,
    report_error,
    report_markdown,
)

REDIRECT = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"


def gemini_answer() -> GroundedAnswer:
    # `こんにちは!` is 6 code points; the whole text is 19 (✨️ is two code points)
    return GroundedAnswer.from_parts(
        text="こんにちは! Web Search✨️",
        sources=[(REDIRECT + "a", "example.com"), (None, None), (REDIRECT + "c", "")],
        citations=[(0, 6, [0]), (7, 19, [2, 1]), (7, 19, [1])],
        queries=["hello"],
        provider="google",
    )


def test_gemini_rendering_is_gemini_clis_format_with_fallbacks() -> None:
    result = render(gemini_answer(), "hello")
    assert result.llm_content == (
        'Web search results for "hello":\n\n'
        "こんにちは![1] Web Search✨️[2][3]\n\n"
        "Sources:\n"
        f"[1] example.com ({REDIRECT}a)\n"
        "[2] Untitled (No URI)\n"
        f"[3] Untitled ({REDIRECT}c)"
    )
    assert result.return_display == 'Search results for "hello" returned.'
    assert result.provider == "google"


def test_to_json_writes_exactly_the_contract_fields_and_omits_absent_ones() -> None:
    data = json.loads(render(gemini_answer(), "hello").to_json())
    assert list(data) == ["llmContent", "returnDisplay", "sources"]
    assert data["sources"] == [
        {"web": {"title": "example.com", "uri": REDIRECT + "a"}},
        {"web": {}},
        {"web": {"title": "", "uri": REDIRECT + "c"}},
    ]
    failed = json.loads(error_result(SearchError("boom", "GEMINI_WEB_SEARCH_FAILED", 500)).to_json())
    assert failed == {
        "llmContent": "Error: boom",
        "returnDisplay": "boom",
        "error": {"message": "boom", "type": "GEMINI_WEB_SEARCH_FAILED"},
    }


def test_other_providers_are_llm_grounded_numbered_as_given_and_fall_back_to_the_host() -> None:
    answer = GroundedAnswer.from_parts(
        text="Paris is big. It has a tower.",
        sources=[("https://fr.wikipedia.org/wiki/Paris?utm_source=openai", None), ("https://b.test/x", "B")],
        citations=[(0, 13, [0]), (None, None, [1]), (14, 29, [1, 0])],
        provider="openai",
    )
    result = render(answer, "paris")
    assert result.llm_content == (
        'LLM-grounded search results for "paris":\n\n'
        "Paris is big.[1] It has a tower.[1][2]\n\n"
        "Sources:\n"
        "[1] fr.wikipedia.org (https://fr.wikipedia.org/wiki/Paris?utm_source=openai)\n"
        "[2] B (https://b.test/x)"
    )
    assert json.loads(result.to_json())["sources"][0] == {
        "web": {"title": "fr.wikipedia.org", "uri": "https://fr.wikipedia.org/wiki/Paris?utm_source=openai"}
    }


def test_a_span_without_position_lists_its_source_but_places_no_marker() -> None:
    answer = GroundedAnswer.from_parts(
        text="Answer.",
        sources=[("https://a.test/", "A")],
        citations=[(None, None, [0])],
        provider="openrouter",
    )
    assert render_markers(answer) == "Answer."
    assert render(answer, "q").llm_content.endswith("Answer.\n\nSources:\n[1] A (https://a.test/)")


def test_an_empty_answer_says_nothing_was_found_and_lists_no_sources() -> None:
    answer = GroundedAnswer.from_parts(text=" \n", sources=[("https://a.test/", "A")], provider="google")
    result = render(answer, "nothing")
    assert result.llm_content == 'No search results or information found for query: "nothing"'
    assert result.return_display == "No information found."
    assert result.sources == ()
    assert "sources" not in json.loads(result.to_json())


def test_titles_and_urls_stay_on_one_line() -> None:
    answer = GroundedAnswer.from_parts(
        text="x", sources=[("https://a.test/\n[9] fake", "T\n[2] Injected")], citations=[(0, 1, [0])]
    )
    block = render(answer, "q").llm_content.split("Sources:\n", 1)[1]
    assert block == "[1] T [2] Injected (https://a.test/ [9] fake)"


def test_markdown_report_lists_sources_with_hosts_and_the_queries() -> None:
    report = report_markdown(gemini_answer())
    assert report == (
        "## Search Results\n\n"
        "こんにちは![1] Web Search✨️[2][3]\n\n"
        "### Sources\n"
        f"- [example.com]({REDIRECT}a) (vertexaisearch.cloud.google.com)\n"
        "- Untitled\n"
        f"- [Untitled]({REDIRECT}c) (vertexaisearch.cloud.google.com)\n\n"
        "### Search Queries Used\n"
        '- "hello"\n'
    )


def test_error_reports_are_titled_by_what_to_do() -> None:
    auth = report_error(SearchError("401 bad key", "OPENAI_WEB_SEARCH_FAILED", 401))
    assert auth.startswith("## Authentication Error\n") and "Re-authenticate" in auth
    assert report_error(SearchError("slow down", "ANTHROPIC_WEB_SEARCH_FAILED", 429)).startswith(
        "## Rate Limited\n"
    )
    failed = report_error(SearchError("upstream said <html>", "OPENROUTER_WEB_SEARCH_FAILED", 502))
    assert failed == "## Search Error\n\nupstream said <html>\n\nStatus: 502\n"
    missing = report_error(SearchError("set GEMINI_API_KEY", "MISSING_GEMINI_API_KEY"))
    assert missing.startswith("## No Providers Available\n")


MARKER = re.compile(r"(?:\[\d+\])+")


@given(
    st.text(alphabet=st.characters(blacklist_characters="[]", blacklist_categories=("Cc",)), max_size=40),
    st.lists(st.tuples(st.integers(0, 40), st.lists(st.integers(0, 3), min_size=1, max_size=3)), max_size=8),
)
def test_markers_only_insert_sorted_unique_numbers_at_span_ends(
    text: str, cites: list[tuple[int, list[int]]]
) -> None:
    spans = [(min(end, len(text)), min(end, len(text)), ids) for end, ids in cites]
    answer = GroundedAnswer.from_parts(
        text=text, sources=[(f"https://{i}.test/", None) for i in range(4)], citations=spans
    )
    rendered = render_markers(answer)
    assert MARKER.sub("", rendered) == sanitize(text)
    ends = sorted({s[1] for s in spans})
    groups = [m.group(0) for m in MARKER.finditer(rendered)]
    assert len(groups) == len(ends)
    for group, end in zip(groups, ends, strict=True):
        numbers = [int(n) for n in re.findall(r"\d+", group)]
        want = sorted({i + 1 for s in spans if s[1] == end for i in s[2]})
        assert numbers == want


def test_provider_text_titles_and_urls_are_sanitised_and_markers_stay_put() -> None:
    answer = GroundedAnswer.from_parts(
        text="Red\x1b[31m alert\x1b]8;;https://evil.test\x07 link. Next.",
        sources=[("https://a.test/\x1b[2J", "Ti\x1b[1mtle\u202e")],
        citations=[(0, 14, [0]), (14, 49, [0])],
        queries=["q\x1b[0m"],
    )
    rendered = render(answer, "q").llm_content
    assert "\x1b" not in rendered and "\u202e" not in rendered
    assert (
        'results for "q":\n\nRed alert[1] link. Next.[1]\n\nSources:\n[1] Title (https://a.test/)' in rendered
    )
    assert '- "q"' in report_markdown(answer)
    assert render(GroundedAnswer(text="\x1b[2J\x07"), "q").return_display == "No information found."
