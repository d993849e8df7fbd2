"""protocols/gemini/grounding.py pinned on constructed streams: segments without ``endIndex`` (Gemini
omits zero values), ``partIndex`` past the end / on a thought part / negative, grounding merged across
chunks (a later empty list never erases earlier data), url context, file search and citation
metadata."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.test_gemini import _one_chunk_grounded, chunk, run, sse

WEB = {"web": {"uri": "https://a.example/", "title": "a.example"}}
THOUGHT = {"text": "thinking about it", "thought": True}


def _support(segment: dict[str, Any], indices: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    return {"segment": segment, "groundingChunkIndices": [0] if indices is None else indices, **extra}


@pytest.mark.anyio
@pytest.mark.parametrize(
    "segment", [{}, {"startIndex": 2}, {"text": "Hello"}, {"partIndex": 0, "text": "Hi"}]
)
async def test_a_segment_without_end_index_binds_no_span_and_does_not_crash(segment: dict[str, Any]) -> None:
    response = await run(_one_chunk_grounded([{"text": "Hello world"}], [_support(segment)]))
    assert response.citations == ()
    assert response.text == "Hello world"
    assert [r.name for r in response.tool_results] == ["web_search"]


@pytest.mark.anyio
@pytest.mark.parametrize("part_index", [7, 2, 0, -1])
async def test_part_index_past_the_end_on_a_thought_or_negative_falls_back_to_the_first_answer(
    part_index: int,
) -> None:
    """Parts: thought (0), answer (1); partIndex 7 and 2 are past the end, 0 is the thought."""
    answer = "Die Höhe ist 330 m."
    segment = {"partIndex": part_index, "startIndex": 4, "endIndex": 10}  # "Höhe" = 4..9 bytes (ö is 2)
    response = await run(_one_chunk_grounded([THOUGHT, {"text": answer}], [_support(segment)]))
    (citation,) = response.citations
    assert response.text_blocks[citation.block_id] == answer
    assert (citation.start, citation.end, citation.cited_text) == (4, 9, "Höhe ")


@pytest.mark.anyio
async def test_segment_text_chooses_the_concatenated_answer_over_the_first_part() -> None:
    """No partIndex, two answer parts split by a thought: the text spans both parts' bytes, so the
    concatenation is the candidate whose slice equals ``segment.text`` -- clipped to the block the span
    starts in."""
    first, second = "Alpha beta. ", "Gamma delta."
    segment = {"startIndex": 6, "endIndex": len(first) + 5, "text": "beta. Gamma"}
    response = await run(
        _one_chunk_grounded([{"text": first}, THOUGHT, {"text": second}], [_support(segment)])
    )
    (citation,) = response.citations
    assert response.text_blocks[citation.block_id] == first
    assert (citation.start, citation.end) == (6, len(first))


@pytest.mark.anyio
async def test_an_offset_in_the_second_answer_part_is_rebased_to_it() -> None:
    first, second = "One. ", "Two and three."
    start = len(first) + 4  # "and" in the second part, offsets over the concatenation
    segment = {"startIndex": start, "endIndex": start + 3, "text": "and"}
    response = await run(
        _one_chunk_grounded([{"text": first}, THOUGHT, {"text": second}], [_support(segment)])
    )
    (citation,) = response.citations
    assert response.text_blocks[citation.block_id] == second
    assert (citation.start, citation.end, citation.cited_text) == (4, 7, "and")


@pytest.mark.anyio
async def test_an_empty_span_keeps_the_source_without_a_position() -> None:
    response = await run(
        _one_chunk_grounded([{"text": "Hello"}], [_support({"startIndex": 3, "endIndex": 3})])
    )
    (citation,) = response.citations
    assert (citation.start, citation.end, citation.cited_text, citation.url) == (
        None,
        None,
        None,
        "https://a.example/",
    )


@pytest.mark.anyio
async def test_grounding_split_across_chunks_later_empty_lists_do_not_erase() -> None:
    text = "Hello world"
    entry = {"renderedContent": "<div>chips</div>"}
    body = sse(
        chunk(
            {"text": "Hello"},
            grounding={
                "webSearchQueries": ["q1"],
                "groundingChunks": [WEB],
                "groundingSupports": [_support({"endIndex": 5, "text": "Hello"})],
                "searchEntryPoint": entry,
                "retrievalMetadata": {"googleSearchDynamicRetrievalScore": 0.5},
            },
        ),
        chunk(
            {"text": " world"},
            finish="STOP",
            grounding={
                "webSearchQueries": [],
                "groundingChunks": [],
                "groundingSupports": [],
                "searchEntryPoint": {},
                "retrievalMetadata": {},
            },
        ),
    )
    response = await run(body)
    assert response.text == text
    (citation,) = response.citations
    assert (citation.start, citation.end, citation.url) == (0, 5, "https://a.example/")
    (call,) = response.tool_calls
    assert call.input == {"queries": ["q1"]}
    (result,) = response.tool_results
    assert result.result == {
        "sources": [{"url": "https://a.example/", "title": "a.example"}],
        "queries": ["q1"],
    }
    assert result.provider_metadata == {
        "google": {
            "groundingChunks": [WEB],
            "searchEntryPoint": entry,
            "retrievalMetadata": {"googleSearchDynamicRetrievalScore": 0.5},
        }
    }


@pytest.mark.anyio
async def test_a_later_non_empty_field_replaces_the_earlier_one() -> None:
    other = {"web": {"uri": "https://b.example/", "title": "b.example"}}
    body = sse(
        chunk({"text": "Hi"}, grounding={"webSearchQueries": ["old"], "groundingChunks": [WEB]}),
        chunk(
            {"text": " there"},
            finish="STOP",
            grounding={
                "webSearchQueries": ["new"],
                "groundingChunks": [other],
                "groundingSupports": [_support({"endIndex": 2})],
            },
        ),
    )
    response = await run(body)
    assert response.tool_calls[0].input == {"queries": ["new"]}
    assert [c.url for c in response.citations] == ["https://b.example/"]


@pytest.mark.anyio
async def test_citation_metadata_confidence_domain_and_duplicates() -> None:
    chunks = [
        {"web": {"uri": "https://a.example/", "title": "a", "domain": "a.example"}},
        {"web": {"uri": "https://b.example/", "title": "b"}},
        {},  # a chunk with no known source kind
    ]
    support = _support({"endIndex": 5}, [1, 0, 1, 2], confidenceScores=[0.9])
    response = await run(_one_chunk_grounded([{"text": "Hello"}], [support], chunks))
    metas = [(c.url, c.cited_text, c.provider_metadata) for c in response.citations]
    assert metas == [
        (
            "https://b.example/",
            "Hello",
            {"google": {"chunk_index": 1, "source_type": "web", "confidence": 0.9}},
        ),
        (
            "https://a.example/",
            "Hello",
            {"google": {"chunk_index": 0, "source_type": "web", "domain": "a.example"}},
        ),
    ]


@pytest.mark.anyio
async def test_supports_without_segment_or_indices_are_skipped() -> None:
    supports = [{"groundingChunkIndices": [0]}, {"segment": {"endIndex": 2}}, _support({"endIndex": 2}, [])]
    response = await run(_one_chunk_grounded([{"text": "Hello"}], supports))
    assert response.citations == ()


@pytest.mark.anyio
async def test_file_search_sources_without_queries() -> None:
    chunks = [
        {"retrievedContext": {"uri": "gs://b/doc.pdf", "title": "doc.pdf", "text": "excerpt", "fileSearchStore": "stores/s1"}},
        {"maps": {"uri": "https://maps.example/p", "title": "Place", "domain": "maps.example"}},
        {"web": {"uri": "https://w.example/", "title": "w"}},
    ]  # fmt: skip
    grounding = {"groundingChunks": chunks, "groundingSupports": [_support({"endIndex": 5}, [0, 1])]}
    response = await run(sse(chunk({"text": "Hello"}, finish="STOP", grounding=grounding)))
    # a web chunk among them makes this a search (no queries needed)
    assert [r.name for r in response.tool_results] == ["web_search"]
    grounding["groundingChunks"] = chunks[:2]
    response = await run(sse(chunk({"text": "Hello"}, finish="STOP", grounding=grounding)))
    (call,) = response.tool_calls
    (result,) = response.tool_results
    assert (call.name, call.input, result.name, result.id) == ("file_search", {}, "file_search", call.id)
    assert call.id == "file_search_r1_0"
    assert result.result == {
        "sources": [
            {"type": "retrieved_context", "url": "gs://b/doc.pdf", "title": "doc.pdf", "text": "excerpt",
             "file_search_store": "stores/s1", "chunk_index": 0},
            {"type": "maps", "url": "https://maps.example/p", "title": "Place", "domain": "maps.example",
             "chunk_index": 1},
        ]
    }  # fmt: skip
    first, second = response.citations
    assert first.provider_metadata == {
        "google": {"chunk_index": 0, "source_type": "retrieved_context", "file_search_store": "stores/s1"}
    }
    assert second.provider_metadata == {
        "google": {"chunk_index": 1, "source_type": "maps", "domain": "maps.example"}
    }


@pytest.mark.anyio
async def test_url_context_call_and_result() -> None:
    meta = {
        "urlMetadata": [
            {"retrievedUrl": "https://a.example/page", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"},
            {"retrievedUrl": "https://b.example/", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_ERROR"},
        ]
    }
    first = chunk({"text": "Read it."}, finish="STOP", grounding={"groundingChunks": [WEB]})
    first["candidates"][0]["urlContextMetadata"] = meta
    response = await run(sse(first))
    (call,) = response.tool_calls
    (result,) = response.tool_results  # web chunks from the fetched pages are not a search
    assert (call.name, call.id, call.input) == (
        "url_context",
        "url_context_r1_0",
        {"urls": ["https://a.example/page", "https://b.example/"]},
    )
    assert result.result == [
        {"url": "https://a.example/page", "status": "URL_RETRIEVAL_STATUS_SUCCESS"},
        {"url": "https://b.example/", "status": "URL_RETRIEVAL_STATUS_ERROR"},
    ]
    first["candidates"][0]["groundingMetadata"]["webSearchQueries"] = ["q"]
    response = await run(sse(first))
    assert [c.name for c in response.tool_calls] == ["url_context", "web_search"]
    assert [c.id for c in response.tool_calls] == ["url_context_r1_0", "web_search_r1_1"]


@pytest.mark.anyio
async def test_a_span_inside_one_character_marks_its_place() -> None:
    """Both offsets inside 東 (3 bytes): snapping empties the span, which still says where."""
    response = await run(
        _one_chunk_grounded([{"text": "東京"}], [_support({"startIndex": 1, "endIndex": 2})])
    )
    (citation,) = response.citations
    assert (citation.start, citation.end, citation.cited_text) == (0, 0, None)
