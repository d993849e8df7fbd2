"""The canonical hosted ``web_search`` result (``llmroute.hosted.search_result``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from llmroute.hosted import search_result

URLS = st.one_of(st.none(), st.sampled_from(["https://a.test/", "https://b.test/", "https://c.test/x"]))
TITLES = st.one_of(st.none(), st.sampled_from(["A", "B", "Ç"]))


def test_sources_deduplicate_by_url_in_provider_order_and_a_later_duplicate_fills_a_missing_title() -> None:
    result = search_result(
        [
            ("https://a.test/", None),
            ("https://b.test/", "B"),
            ("https://a.test/", "A"),
            ("https://a.test/", "Z"),
        ],
        ["q1", "", "  ", "q2", "q1", None, 3],
    )
    assert result == {
        "sources": [{"url": "https://a.test/", "title": "A"}, {"url": "https://b.test/", "title": "B"}],
        "queries": ["q1", "q2"],
    }


def test_sources_without_a_url_are_never_merged_and_dedupe_false_keeps_every_source() -> None:
    pairs = [(None, "x"), (None, "x"), ("https://a.test/", None), ("https://a.test/", None)]
    assert search_result(pairs)["sources"] == [
        {"url": None, "title": "x"},
        {"url": None, "title": "x"},
        {"url": "https://a.test/", "title": None},
    ]
    assert search_result(pairs, dedupe=False)["sources"] == [{"url": u, "title": t} for u, t in pairs]


@given(st.lists(st.tuples(URLS, TITLES), max_size=12), st.lists(st.text(max_size=3), max_size=6))
def test_shape_and_order_hold_for_any_input(
    pairs: list[tuple[str | None, str | None]], queries: list[str]
) -> None:
    result = search_result(pairs, queries)
    assert set(result) == {"sources", "queries"}
    urls = [s["url"] for s in result["sources"] if s["url"] is not None]
    assert urls == list(dict.fromkeys(u for u, _ in pairs if u is not None))  # first appearance, once
    assert sum(s["url"] is None for s in result["sources"]) == sum(u is None for u, _ in pairs)
    for source in result["sources"]:
        titles = [t for u, t in pairs if u == source["url"] and t is not None]
        if source["url"] is not None:
            assert source["title"] == (titles[0] if titles else None)
    assert result["queries"] == list(dict.fromkeys(q for q in queries if q.strip()))
