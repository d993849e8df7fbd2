"""``websearch.extract``: real recordings (Gemini, OpenAI Responses, OpenRouter, Anthropic web
search; streamed and not) replayed through the real Client and folded into a ``GroundedAnswer``,
checked against an independent reading of the recorded JSON (gemini-cli's byte-splice algorithm
for Gemini, annotation ends for OpenAI/OpenRouter, cited block ends for Anthropic); plus built
Gemini cases (non-ASCII and emoji offsets, an offset inside a character, a thought part first,
supports without chunks, duplicate and out-of-range indices) and duplicate URLs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmroute
from llmroute.providers import anthropic, google, openai, openrouter
from llmroute.testing import Cassette, Chunking
from llmroute.websearch.answer import GroundedAnswer
from llmroute.websearch.extract import fold
from llmroute.websearch.result import render, render_markers
from tests.helpers import load, replay_events, sse_cassette

pytestmark = pytest.mark.anyio

GOOGLE = "pydantic-ai/test_google/"
RESPONSES = "pydantic-ai/test_openai_responses/"


def only(rel: str, index: int) -> Cassette:
    return Cassette([load(rel).interactions[index]])


async def answer_of(
    cassette: Cassette, model: llmroute.Model, *, stream: bool, chunking: Chunking | None = None
) -> GroundedAnswer:
    request = llmroute.request(
        model=model, prompt="q", generation=llmroute.GenerationOptions(stream=False) if not stream else None
    )
    events = await replay_events(cassette, request, chunking)
    return fold(events, provider=model.provider, model=model.id)


def sse_json(body: bytes) -> list[dict[str, Any]]:
    lines = body.decode().replace("\r\n", "\n").split("\n")
    return [
        json.loads(line[6:]) for line in lines if line.startswith("data: ") and line[6:].strip() != "[DONE]"
    ]


def splice_bytes(text: str, at: dict[int, set[int]]) -> str:
    """gemini-cli's algorithm: markers spliced into the UTF-8 bytes at byte positions."""
    data = text.encode()
    for pos in sorted(at, reverse=True):
        marker = "".join(f"[{i + 1}]" for i in sorted(at[pos])).encode()
        pos = min(pos, len(data))
        data = data[:pos] + marker + data[pos:]
    return data.decode()


def splice_chars(text: str, at: dict[int, set[int]]) -> str:
    for pos in sorted(at, reverse=True):
        text = text[:pos] + "".join(f"[{i + 1}]" for i in sorted(at[pos])) + text[pos:]
    return text


# -- Gemini ------------------------------------------------------------------------------------------


def gemini_oracle(responses: list[dict[str, Any]]) -> tuple[str, list[tuple[str, str]], list[str]]:
    text = ""
    grounding: dict[str, Any] = {}
    for r in responses:
        cand = (r.get("candidates") or [{}])[0]
        for part in (cand.get("content") or {}).get("parts", []):
            if "text" in part and not part.get("thought"):
                text += part["text"]
        grounding.update({k: v for k, v in (cand.get("groundingMetadata") or {}).items() if v})
    chunks = grounding.get("groundingChunks", [])
    at: dict[int, set[int]] = {}
    for s in grounding.get("groundingSupports", []):
        ids = {i for i in s.get("groundingChunkIndices", []) if 0 <= i < len(chunks)}
        if ids:
            at.setdefault(s["segment"]["endIndex"], set()).update(ids)
    sources = [(c["web"]["uri"], c["web"]["title"]) for c in chunks]
    return splice_bytes(text, at), sources, grounding.get("webSearchQueries", [])


@pytest.mark.parametrize(
    ("rel", "index", "stream"),
    [
        (GOOGLE + "test_google_model_web_search_tool.yaml", 0, False),
        (GOOGLE + "test_google_model_web_search_tool.yaml", 1, False),
        (GOOGLE + "test_google_model_web_search_tool_stream.yaml", 0, True),
        (GOOGLE + "test_google_model_web_search_tool_stream.yaml", 1, False),
    ],
)
@pytest.mark.parametrize("chunking", [Chunking.whole(), Chunking.random(seed=3, max_size=7)])
async def test_gemini_recordings_give_gemini_clis_byte_placed_markers(
    rel: str, index: int, stream: bool, chunking: Chunking
) -> None:
    cassette = only(rel, index)
    body = cassette.interactions[0].response.body
    responses = sse_json(body) if stream else [json.loads(body)]
    want_text, want_sources, want_queries = gemini_oracle(responses)
    answer = await answer_of(
        cassette, google.configure(api_key="k").gemini("gemini-2.5-pro"), stream=stream, chunking=chunking
    )
    assert render_markers(answer) == want_text
    assert [(s.url, s.title) for s in answer.sources] == want_sources
    assert list(answer.queries) == want_queries
    assert answer.provider == "google" and answer.usage is not None
    if want_sources:
        assert "°" in answer.text and "[1]" in want_text  # the byte/char distinction is exercised


def gemini_sse(parts_then_grounding: list[dict[str, Any]], grounding: dict[str, Any]) -> Cassette:
    frames: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}]}
        for p in parts_then_grounding
    ]
    frames.append(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": ""}]},
                    "finishReason": "STOP",
                    "index": 0,
                    "groundingMetadata": grounding,
                }
            ],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 5, "totalTokenCount": 8},
        }
    )
    url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    return sse_cassette(url, frames, done=False)


def web(*names: str) -> list[dict[str, Any]]:
    return [{"web": {"uri": f"https://r.test/{n}", "title": f"{n}.test"}} for n in names]


def support(end: int, ids: list[int], start: int | None = None, **segment: Any) -> dict[str, Any]:
    seg: dict[str, Any] = {"endIndex": end, **segment}
    if start:
        seg["startIndex"] = start
    return {"segment": seg, "groundingChunkIndices": ids}


async def gemini_answer(parts: list[dict[str, Any]], grounding: dict[str, Any], query: str = "q") -> str:
    model = google.configure(api_key="k").gemini("gemini-2.5-flash")
    for chunking in (Chunking.whole(), Chunking.bytewise()):
        answer = await answer_of(gemini_sse(parts, grounding), model, stream=True, chunking=chunking)
        rendered = render(answer, query).llm_content
        if chunking.mode == "whole":
            first = rendered
        else:
            assert rendered == first
    return first


async def test_the_issues_multibyte_example() -> None:
    out = await gemini_answer(
        [{"text": "こんにちは! Web Search✨️"}],
        {
            "groundingChunks": web("a", "b", "c"),
            "groundingSupports": [support(16, [0]), support(33, [1, 2], 17)],
        },
    )
    assert out.split("\n\n")[1] == "こんにちは![1] Web Search✨️[2][3]"


EIFFEL = "Der Eiffelturm ist 330 m hoch. Er wurde 1889 eröffnet 🗼. 東京タワーは333mです。"


async def test_non_ascii_and_emoji_offsets_split_across_chunks() -> None:
    parts = [{"text": EIFFEL[:30]}, {"text": EIFFEL[30:57]}, {"text": EIFFEL[57:]}]
    grounding = {
        "webSearchQueries": ["Eiffelturm Höhe", "東京タワー 高さ"],
        "groundingChunks": web("a", "b", "c"),
        "groundingSupports": [support(30, [0]), support(60, [1, 0, 1], 31), support(92, [2], 61)],
    }
    out = await gemini_answer(parts, grounding)
    assert out.split("\n\n")[1] == (
        "Der Eiffelturm ist 330 m hoch.[1] Er wurde 1889 eröffnet 🗼.[1][2] 東京タワーは333mです。[3]"
    )


async def test_an_offset_inside_a_character_snaps_without_replacement_characters() -> None:
    out = await gemini_answer(
        [{"text": EIFFEL}], {"groundingChunks": web("a"), "groundingSupports": [support(62, [0], 31)]}
    )
    body = out.split("\n\n")[1]
    assert "\ufffd" not in body
    assert body == EIFFEL[:57] + "[1]" + EIFFEL[57:]  # byte 62 is inside 東 (bytes 61-63): snapped back


async def test_a_thought_part_before_the_answer_is_not_answer_text_and_does_not_shift_markers() -> None:
    thought = {"text": "Let me think about towers 🗼 carefully.", "thought": True}
    for extra in ({}, {"partIndex": 1}):
        seg = support(30, [0])
        seg["segment"].update(extra)
        out = await gemini_answer(
            [thought, {"text": EIFFEL}], {"groundingChunks": web("a"), "groundingSupports": [seg]}
        )
        assert out.split("\n\n")[1] == EIFFEL[:30] + "[1]" + EIFFEL[30:]
        assert "think" not in out


async def test_supports_without_chunks_and_out_of_range_indices_place_no_marker() -> None:
    out = await gemini_answer([{"text": "Plain answer."}], {"groundingSupports": [support(13, [0, 4])]})
    assert out == 'Web search results for "q":\n\nPlain answer.'
    out = await gemini_answer(
        [{"text": "Plain answer."}],
        {"groundingChunks": web("a"), "groundingSupports": [support(13, [4, 0, 0])]},
    )
    assert out.split("\n\n")[1] == "Plain answer.[1]"


async def test_no_grounding_at_all_is_an_answer_without_sources() -> None:
    out = await gemini_answer([{"text": "I know this."}], {})
    assert out == 'Web search results for "q":\n\nI know this.'


# -- OpenAI Responses --------------------------------------------------------------------------------


def responses_oracle(response: dict[str, Any]) -> tuple[str, list[str]]:
    text = ""
    at: dict[int, set[int]] = {}
    urls: dict[str, int] = {}
    for item in response["output"]:
        if item["type"] != "message":
            continue
        for content in item["content"]:
            if content["type"] != "output_text":
                continue
            for a in content.get("annotations", []):
                if a["type"] != "url_citation":
                    continue
                assert a["url"] in content["text"][a["start_index"] : a["end_index"]]
                n = urls.setdefault(a["url"], len(urls))
                at.setdefault(len(text) + a["end_index"], set()).add(n)
            text += content["text"]
    return splice_chars(text, at), list(urls)


def final_response(body: bytes, stream: bool) -> dict[str, Any]:
    if not stream:
        return json.loads(body)
    return next(e["response"] for e in sse_json(body) if e.get("type") == "response.completed")


@pytest.mark.parametrize(
    ("rel", "index", "stream"),
    [
        (RESPONSES + "test_openai_responses_model_web_search_tool.yaml", 0, False),
        (RESPONSES + "test_openai_responses_model_web_search_tool.yaml", 1, False),
        (RESPONSES + "test_openai_responses_model_web_search_tool_stream.yaml", 0, True),
        (RESPONSES + "test_openai_responses_model_builtin_tools_web_search.yaml", 0, False),
        ("vercel-ai/openai/responses/openai-web-search-tool.1.json.yaml", 0, False),
        ("vercel-ai/openai/responses/openai-web-search-tool.1.chunks.yaml", 0, True),
    ],
)
async def test_openai_annotations_become_markers_at_their_ends(rel: str, index: int, stream: bool) -> None:
    cassette = only(rel, index)
    response = final_response(cassette.interactions[0].response.body, stream)
    want_text, want_urls = responses_oracle(response)
    answer = await answer_of(cassette, openai.configure(api_key="k").responses("gpt-5"), stream=stream)
    assert render_markers(answer) == want_text
    assert [s.url for s in answer.sources] == want_urls
    assert all(s.title for s in answer.sources)
    content = render(answer, "q").llm_content
    assert content.startswith('LLM-grounded search results for "q":\n\n')
    if want_urls:
        assert "\n\nSources:\n[1] " in content


# -- OpenRouter (Chat annotations) -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_openrouter_annotations_list_their_sources(stream: bool) -> None:
    name = "test_openrouter_web_search_annotations" + ("_stream" if stream else "")
    cassette = only(f"pydantic-ai/test_openrouter/{name}.yaml", 0)
    body = cassette.interactions[0].response.body
    if stream:
        chunks = sse_json(body)
        text = "".join(
            (c["choices"][0].get("delta") or {}).get("content") or "" for c in chunks if c.get("choices")
        )
        annotations = [
            a
            for c in chunks
            if c.get("choices")
            for a in (c["choices"][0].get("delta") or {}).get("annotations")
            or c["choices"][0].get("annotations")
            or []
        ]
    else:
        message = json.loads(body)["choices"][0]["message"]
        text, annotations = message["content"], message.get("annotations", [])
    cites = [a["url_citation"] for a in annotations if a["type"] == "url_citation"]
    assert cites
    at: dict[int, set[int]] = {}
    urls: dict[str, int] = {}
    for c in cites:
        n = urls.setdefault(c["url"], len(urls))
        if c.get("end_index") and c["end_index"] > (c.get("start_index") or 0):
            at.setdefault(c["end_index"], set()).add(n)
    answer = await answer_of(cassette, openrouter.configure(api_key="k").chat("deepseek/x"), stream=stream)
    assert answer.text == text
    assert render_markers(answer) == splice_chars(text, at)
    assert [s.url for s in answer.sources] == list(urls)


# -- Anthropic ---------------------------------------------------------------------------------------


def anthropic_blocks(body: bytes, stream: bool) -> list[dict[str, Any]]:
    if not stream:
        return json.loads(body)["content"]
    blocks: dict[int, dict[str, Any]] = {}
    for e in sse_json(body):
        if e["type"] == "content_block_start":
            blocks[e["index"]] = {
                **e["content_block"],
                "citations": list(e["content_block"].get("citations") or []),
            }
        elif e["type"] == "content_block_delta":
            d, b = e["delta"], blocks[e["index"]]
            if d["type"] == "text_delta":
                b["text"] = b.get("text", "") + d["text"]
            elif d["type"] == "citations_delta":
                b["citations"].append(d["citation"])
    return [blocks[i] for i in sorted(blocks)]


@pytest.mark.parametrize(
    ("rel", "index", "stream"),
    [
        ("pydantic-ai/test_anthropic/test_anthropic_web_search_tool.yaml", 0, False),
        ("pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml", 0, True),
        ("vercel-ai/anthropic/anthropic-web-search-tool.1.json.yaml", 0, False),
        ("vercel-ai/anthropic/anthropic-web-search-tool.1.chunks.yaml", 0, True),
    ],
)
async def test_anthropic_cited_blocks_get_markers_at_their_ends(rel: str, index: int, stream: bool) -> None:
    cassette = only(rel, index)
    text = ""
    at: dict[int, set[int]] = {}
    urls: dict[str, int] = {}
    titles: dict[str, str] = {}
    queries: list[str] = []
    for block in anthropic_blocks(cassette.interactions[0].response.body, stream):
        if block["type"] == "server_tool_use" and block.get("input"):
            queries.append(block["input"]["query"])
        if block["type"] != "text":
            continue
        text += block["text"]
        for c in block.get("citations") or []:
            n = urls.setdefault(c["url"], len(urls))
            titles.setdefault(c["url"], c["title"])
            if block["text"]:
                at.setdefault(len(text), set()).add(n)
    assert urls
    answer = await answer_of(
        cassette, anthropic.configure(api_key="k").messages("claude-sonnet-4-0"), stream=stream
    )
    assert render_markers(answer) == splice_chars(text, at)
    assert [(s.url, s.title) for s in answer.sources] == [(u, titles[u]) for u in urls]
    if not stream:
        assert set(queries) <= set(answer.queries)


# -- built cases: duplicate URLs, reasoning -------------------------------------------------------


async def test_duplicate_urls_are_one_source_cited_twice_and_reasoning_is_excluded() -> None:
    from llmroute.schema.events import Citation, ReasoningDelta, ReasoningStart, TextDelta, TextStart

    events: list[Any] = [
        ReasoningStart("r"),
        ReasoningDelta("r", "thinking about https://x.test/"),
        TextStart("t1"),
        TextDelta("t1", "One. "),
        TextDelta("t1", "Two."),
        TextStart("t2"),
        TextDelta("t2", " Three."),
        Citation("t1", "https://a.test/", None, 0, 4),
        Citation("t1", "https://a.test/", "A", 5, 9),
        Citation("t2", "https://b.test/", None, 1, 7),
        Citation("t2", "https://a.test/", "A again", 0, 0),
        Citation("unknown", "https://c.test/", "C", 0, 3),
    ]
    answer = fold(events, provider="openai")
    assert answer.text == "One. Two. Three."
    assert [(s.url, s.title) for s in answer.sources] == [
        ("https://a.test/", "A"),
        ("https://b.test/", None),
        ("https://c.test/", "C"),
    ]
    assert render_markers(answer) == "One.[1] Two.[1] Three.[2]"
    assert render(answer, "q").llm_content.endswith(
        "Sources:\n[1] A (https://a.test/)\n[2] b.test (https://b.test/)\n[3] C (https://c.test/)"
    )


# -- split invariance ------------------------------------------------------------------------------


def _fold_cut(model: llmroute.Model, body: bytes, cuts: list[int]) -> GroundedAnswer:
    """Bytes cut anywhere, straight through the route's framing and protocol (fast enough for
    hypothesis), folded into the answer."""
    import itertools

    route = model.route
    state = route.protocol.new_state(llmroute.request(model=model, prompt="q"))
    decoder = route.framing.decoder()
    out: list[Any] = []
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    for a, b in itertools.pairwise(points):
        for frame in decoder.feed(body[a:b]):
            route.protocol.step(state, frame, out)
    for frame in decoder.close():
        route.protocol.step(state, frame, out)
    route.protocol.on_halt(state, out)
    return fold(out, provider=model.provider)


_SPLIT = [
    (google.configure(api_key="k").gemini("m"), GOOGLE + "test_google_model_web_search_tool_stream.yaml"),
    (
        anthropic.configure(api_key="k").messages("m"),
        "vercel-ai/anthropic/anthropic-web-search-tool.1.chunks.yaml",
    ),
    (
        openai.configure(api_key="k").responses("m"),
        "vercel-ai/openai/responses/openai-web-search-tool.1.chunks.yaml",
    ),
]
_BODIES = [(m, load(rel).interactions[0].response.body) for m, rel in _SPLIT]
_WHOLE = [_fold_cut(m, body, []) for m, body in _BODIES]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(_SPLIT) - 1), st.lists(st.integers(min_value=0, max_value=100_000), max_size=300))
def test_the_answer_does_not_depend_on_where_the_bytes_were_cut(which: int, cuts: list[int]) -> None:
    model, body = _BODIES[which]
    answer = _fold_cut(model, body, cuts)
    assert answer == _WHOLE[which]
    assert answer.citations and render_markers(answer) == render_markers(_WHOLE[which])
