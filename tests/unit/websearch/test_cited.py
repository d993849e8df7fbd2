"""``websearch.render_cited``: citations from the grounding only, placed where they render as links,
and the result passes the citation contract for any text and any spans (property test)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmroute
from llmroute.websearch.answer import GroundedAnswer
from llmroute.websearch.cited import UngroundedAnswerError, render_cited
from llmroute.websearch.contract import check_citations

R = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQH-"
EIFFEL = GroundedAnswer.from_parts(
    text="Der Eiffelturm ist 330 m hoch. Er wurde 1889 eröffnet 🗼. 東京タワーは333mです。",
    sources=[(R + "aaa", "toureiffel.paris"), (R + "bbb", "wikipedia.org"), (R + "ccc", None)],
    citations=[(0, 30, [0]), (31, 56, [1, 0]), (57, 70, [2])],
    provider="google",
)


def _ok(answer: GroundedAnswer, rendered: str) -> None:
    report = check_citations(rendered, allowed_urls=[s.url for s in answer.sources if s.url])
    assert report.ok, (rendered, report.violations)


def test_gemini_answer_with_non_ascii_and_emoji() -> None:
    out = render_cited(EIFFEL)
    assert out == (
        f"Der Eiffelturm ist 330 m hoch. [Source]({R}aaa) Er wurde 1889 eröffnet 🗼. [Source]({R}aaa) "
        f"[Source]({R}bbb) 東京タワーは333mです。 [Source]({R}ccc)\n\n## Sources\n\n"
        f"- [toureiffel.paris]({R}aaa)\n- [wikipedia.org]({R}bbb)\n- [vertexaisearch.cloud.google.com]({R}ccc)\n"
    )
    _ok(EIFFEL, out)


A, B, EVIL = "https://a.test/x", "https://b.test/y_(z)", "https://evil.test/"


def _answer(
    text: str, citations: list[tuple[int | None, int | None, list[int]]], **kw: object
) -> GroundedAnswer:
    sources = kw.pop("sources", [(A, "A"), (B, "B")])
    return GroundedAnswer.from_parts(text=text, sources=sources, citations=citations)  # type: ignore[arg-type]


def test_model_typed_links_html_and_heading_are_neutralised() -> None:
    text = f"Claim [Source]({EVIL}) <a href='{EVIL}'>x</a> ![Source]({EVIL})\n## Sources\n- {EVIL}"
    answer = _answer(text, [(5, 5, [0])])
    out = render_cited(answer)
    _ok(answer, out)
    report = check_citations(out)
    assert report.inline_urls == (A,) and report.source_urls == (A,)
    assert f"\\[Source\\]({EVIL})" in out and "\\<a href=" in out and "\n## Sources:\n" in out


def test_citations_move_out_of_code_and_fences() -> None:
    text = "Use `pip install x` today.\n```\nprint(1)\n```\nDone."
    span_in_code = text.index("install") + 3
    in_fence = text.index("print") + 2
    answer = _answer(text, [(0, span_in_code, [0]), (0, in_fence, [1]), (0, len(text), [0])])
    out = render_cited(answer)
    _ok(answer, out)
    assert out.startswith(
        f"Use `pip install x` [Source]({A}) today.\n```\nprint(1)\n```\n[Source]({B})\n\nDone. [Source]({A})"
    )


def test_an_unclosed_fence_is_closed_before_the_citations() -> None:
    text = "Example:\n```python\nx = 1"
    answer = _answer(text, [(0, len(text), [0])])
    out = render_cited(answer)
    _ok(answer, out)
    assert out.startswith(f"Example:\n```python\nx = 1\n```\n[Source]({A})\n\n## Sources")


def test_spans_ending_after_whitespace_or_inside_backslashes_and_backticks() -> None:
    text = "First.\n\nSecond\\\\ ``x`` and ``"
    answer = _answer(text, [(0, 8, [0]), (0, text.index("\\") + 1, [1]), (0, len(text) - 1, [0])])
    out = render_cited(answer)
    _ok(answer, out)
    assert out.startswith(f"First. [Source]({A})\n\nSecond [Source]({B})\\\\ ``x`` and `` [Source]({A})")


def test_unspanned_citations_and_no_citations_cite_the_whole_answer() -> None:
    answer = _answer("Block-level claim.", [(None, None, [1])])
    assert render_cited(answer).startswith(f"Block-level claim. [Source]({B})\n\n## Sources\n\n- [B]({B})\n")
    answer = _answer("Perplexity style.", [])
    assert render_cited(answer).startswith(f"Perplexity style. [Source]({A}) [Source]({B})\n")


def test_uncitable_sources_are_dropped_and_duplicates_listed_once() -> None:
    sources = [
        ("ftp://files.test/a", "ftp"),
        ("https://www.example.com/a", "placeholder"),
        ("https://ok.test/a b", "space"),
        ("https://ok.test/`x`", "backtick"),
        (A, None),
        (A + ".", " "),  # the same URL by the contract's comparison, a blank title
        (A, "A's title"),  # the first real title of that URL wins
        (None, "no url"),
    ]
    answer = _answer("Claim.", [(0, 6, [0, 1, 2, 3, 4, 5, 6, 7])], sources=sources)
    out = render_cited(answer)
    _ok(answer, out)
    assert out == f"Claim. [Source]({A})\n\n## Sources\n\n- [A's title]({A})\n"


def test_a_span_that_is_only_the_models_link_to_the_cited_url_is_replaced() -> None:
    text = f"A lapse. ([techcrunch.com]({A})) A suit ([b.test]({B})) and ([other](https://other.test/))."
    first = (text.index("(["), text.index(")) ") + 2)
    second = (text.index("([b"), text.index(")) and") + 2)
    third = (text.index("([o"), len(text) - 1)
    answer = _answer(text, [(*first, [0]), (*second, [0]), (*third, [1])])
    out = render_cited(answer)
    _ok(answer, out)
    # the first span links to its cited URL: replaced; the second links elsewhere and the third to an
    # uncited URL: kept, escaped, cited after
    assert out.startswith(
        f"A lapse. [Source]({A}) A suit (\\[b.test\\]({B})) [Source]({A}) and "
        f"(\\[other\\](https://other.test/)) [Source]({B}).\n\n## Sources"
    )


def test_titles_are_sanitised_and_escaped() -> None:
    answer = _answer("Claim.", [(0, 6, [0])], sources=[(A, "Evil]\x1b[31m(title)\n`x` <b>")])
    out = render_cited(answer)
    _ok(answer, out)
    assert f"- [Evil\\](title) \\`x\\` \\<b\\>]({A})" in out


def test_control_sequences_in_the_text_are_removed_and_spans_still_fit() -> None:
    text = "\x1b[31mRed\x1b[0m claim.\x1b]0;title\x07 Next."
    answer = _answer(text, [(0, text.index(".") + 1, [0]), (0, len(text), [1])])
    out = render_cited(answer)
    _ok(answer, out)
    assert out.startswith(f"Red claim. [Source]({A}) Next. [Source]({B})\n")


def test_blank_answers_and_ungrounded_answers() -> None:
    assert render_cited(_answer("  \n", [])) == "NO_RESULTS"
    with pytest.raises(UngroundedAnswerError) as caught:
        render_cited(_answer("An answer with no grounding.", [], sources=[]))
    assert caught.value.code == "UNGROUNDED_ANSWER" and isinstance(caught.value, llmroute.LLMError)
    with pytest.raises(UngroundedAnswerError):
        render_cited(
            _answer("Cites only a placeholder.", [(0, 5, [0])], sources=[("https://example.com/", "x")])
        )


ALPHABET = st.sampled_from(
    ["a", "é", "🗼", " ", "\n", "\n\n", "`", "```", "~~~", "\\", "[", "]", "(", ")", "<", ">", "!", "#", "## Sources",
     "- ", "1. ", f"([a]({A}))", "<div>", "<!--", "-->", "[Source](https://evil.test/)", "\x1b[1m", "\t", "*", "|", "https://c.test/"]
)  # fmt: skip
URLS = st.sampled_from(
    [A, B, "https://c.test/", "https://d.test/p?q=1&r=(2)", "http://e.test", "ftp://x.test"]
)


@st.composite
def answers(draw: st.DrawFn) -> GroundedAnswer:
    text = "".join(draw(st.lists(ALPHABET, min_size=1, max_size=30)))
    sources = draw(
        st.lists(st.tuples(URLS, st.one_of(st.none(), st.text(max_size=5))), min_size=1, max_size=4)
    )
    n = len(text)
    spans = draw(
        st.lists(
            st.tuples(
                st.integers(0, n), st.integers(0, n), st.lists(st.integers(0, len(sources) - 1), max_size=3)
            ),
            max_size=6,
        )
    )
    citations = [(min(a, b), max(a, b), idx) for a, b, idx in spans]
    return GroundedAnswer.from_parts(text=text, sources=sources, citations=citations)


@settings(max_examples=600, deadline=None)
@given(answers())
def test_any_answer_renders_to_a_passing_cited_answer(answer: GroundedAnswer) -> None:
    citable = {n for n, s in enumerate(answer.sources) if s.url and s.url.startswith("http")}
    cited = {i for c in answer.citations for i in c.sources} & citable
    ungrounded = bool(answer.text.strip()) and (not citable or (bool(answer.citations) and not cited))
    try:
        out = render_cited(answer)
    except UngroundedAnswerError:
        assert ungrounded
        return
    assert not ungrounded
    if out == "NO_RESULTS":
        assert not answer.text.strip()
        return
    _ok(answer, out)
    assert "evil.test" not in check_citations(out).inline_urls
