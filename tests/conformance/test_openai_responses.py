"""OpenAI Responses on its real recorded bytes (opencode + pydantic-ai), plus constructed edge cases."""

# ruff: noqa: RUF001, RUF002, RUF003  (non-ASCII text is the point of several cases)

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

import llmroute
from llmroute import hosted
from llmroute.protocols import openai_responses
from llmroute.providers import openai
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    ReplayTransport,
    event_order_problems,
)
from tests.helpers import CASSETTES, explicit_strict

OPENCODE = sorted((CASSETTES / "opencode").glob("openai-responses*/*.yaml"))
PYDANTIC = sorted((CASSETTES / "pydantic-ai/test_openai_responses").glob("*.yaml"))
MODEL = openai.configure(api_key="sk-test").responses("gpt-5.5")


def streamed() -> list[tuple[Path, int]]:
    out: list[tuple[Path, int]] = []
    for path in [*OPENCODE, *PYDANTIC]:
        for i, interaction in enumerate(Cassette.load(path).interactions):
            if interaction.response.body.startswith(b"event:"):
                out.append((path, i))
    return out


STREAMED = streamed()


def ids(case: tuple[Path, int]) -> str:
    return f"{case[0].stem}#{case[1]}"


async def replay(
    interaction: Interaction, request: llmroute.LLMRequest | None = None, chunking: Chunking | None = None
) -> tuple[llmroute.LLMResponse, ReplayTransport]:
    transport = ReplayTransport([interaction], chunking)
    http = httpx.AsyncClient(transport=transport)
    async with llmroute.Client(http=http, retry=llmroute.RetryPolicy.none()) as client:
        response = await client.generate(request or llmroute.request(model=MODEL, prompt="x"))
    return response, transport


# (cassette stem, interaction) -> expected fold
# text (prefix), reasoning (prefix), [(tool name, provider_executed, input subset)], tool results,
# citations, finish reason, (input, output, cache read, reasoning tokens), web searches
EXPECTED: dict[str, dict[str, Any]] = {
    "round-trips-commentary-into-a-final-answer#0": dict(
        text="I’ll check the current weather in Paris.",
        calls=[("get_weather", False, {"city": "Paris"})],
        reason="tool-calls",
        usage=(86, 34, 0, 0),
    ),
    "round-trips-commentary-into-a-final-answer#1": dict(
        text="Paris is sunny.", reason="stop", usage=(140, 8, 0, 0)
    ),
    "gpt-5-5-drives-a-tool-loop#0": dict(
        text="",
        calls=[("get_weather", False, {"city": "Paris"})],
        reason="tool-calls",
        usage=(67, 18, 0, 0),
    ),
    "gpt-5-5-drives-a-tool-loop#1": dict(
        text="It’s sunny and 22°C in Paris.", reason="stop", usage=(106, 14, 0, 0)
    ),
    "gpt-5-5-streams-text#0": dict(text="Hello!", reason="stop", usage=(20, 18, 0, 10), reasoning_blocks=1),
    "gpt-5-5-streams-tool-call#0": dict(
        text="",
        calls=[("get_weather", False, {"city": "Paris"})],
        reason="tool-calls",
        usage=(61, 18, 0, 0),
    ),
    "openai-responses-gpt-5-5-image-tool-result#0": dict(
        text="jiggling restroom prison", reason="stop", usage=(227, 9, 0, 0)
    ),
    "openai-responses-gpt-5-5-reasoning#0": dict(
        text="Hello!", reason="stop", usage=(31, 21, 0, 13), reasoning_blocks=1
    ),
    "test_openai_include_raw_annotations_streaming#0": dict(
        text="The tallest mountain in Alberta is **Mount Columbia** (3,747 m / 12,294 ft). ([britannica.com]",
        calls=[
            ("web_search", True, {"type": "search"}),
            ("web_search", True, {"type": "search"}),
        ],
        results=2,
        citations=1,
        reason="stop",
        usage=(12243, 140, 0, 100),
        searches=2,
    ),
    "test_openai_include_raw_annotations_streaming#1": dict(
        text="Alberta’s tallest mountain (highest point) is **Mount Columbia**",
        calls=[("web_search", True, {"query": "tallest mountain in Alberta"})],
        results=1,
        citations=1,
        reason="stop",
        usage=(8234, 79, 0, 34),
        searches=1,
    ),
    "test_openai_include_raw_annotations_streaming#2": dict(
        text="2+2 = 4", reason="stop", usage=(20, 10, 0, 0)
    ),
    "test_openai_responses_model_web_search_tool_stream#0": dict(
        text="San Francisco weather today (Tuesday, September 16, 2025): Mostly sunny",
        calls=[("web_search", True, {"type": "search", "query": "weather: San Francisco, CA"})],
        results=1,
        reason="stop",
        usage=(9463, 582, 8320, 512),
        searches=1,
        reasoning_blocks=2,
    ),
    "test_openai_responses_stream#0": dict(
        text="",
        calls=[("get_capital", False, {"country": "France"})],
        reason="tool-calls",
        usage=(255, 16, 0, 0),
    ),
    "test_openai_responses_stream#1": dict(
        text="The capital of France is Paris.", reason="stop", usage=(278, 9, 0, 0)
    ),
    "test_openai_responses_streaming_usage#0": dict(
        text="",
        calls=[("final_result", False, {"result": 6666})],
        reason="tool-calls",
        usage=(53, 469, 0, 448),
    ),
    "test_openai_responses_thinking_with_code_execution_tool_stream#0": dict(
        text="123456^123 equals:\n180302106304044807508140927865938572807342688638559680488440159857958502360813732",
        reasoning="**Calculating a large integer**\n\nI need to compute 123456 raised to the power of 123.",
        calls=[
            ("code_execution", True, {"code": "n = pow(123456, 123)\nlen(str(n))"}),
            ("code_execution", True, {"code": "str(n)[:100], str(n)[-100:]"}),
            ("code_execution", True, {"code": "n"}),
        ],
        results=3,
        reason="stop",
        usage=(3727, 347, 3200, 128),
    ),
}


def test_every_streamed_recording_has_expectations() -> None:
    assert sorted(ids(c) for c in STREAMED) == sorted(EXPECTED)


@pytest.mark.anyio
@pytest.mark.parametrize("case", STREAMED, ids=ids)
async def test_recording_parses_to_expected_response(case: tuple[Path, int]) -> None:
    path, index = case
    want = EXPECTED[ids(case)]
    response, _ = await replay(Cassette.load(path).interactions[index])
    assert event_order_problems(response.events) == []
    assert response.text.startswith(want["text"]) and (
        response.text == want["text"] or len(want["text"]) > 10
    )
    assert response.reasoning.startswith(want.get("reasoning", ""))
    calls = [(c.name, c.provider_executed, c.input) for c in response.tool_calls]
    assert len(calls) == len(want.get("calls", []))
    for (name, executed, value), (want_name, want_executed, subset) in zip(
        calls, want.get("calls", []), strict=True
    ):
        assert (name, executed) == (want_name, want_executed)
        assert {k: value[k] for k in subset} == subset
    assert all(r.provider_executed for r in response.tool_results)
    assert len(response.tool_results) == want.get("results", 0)
    assert len(response.citations) == want.get("citations", 0)
    assert response.finish_reason == want["reason"]
    usage = response.usage
    assert usage is not None and usage.provider_metadata is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == want[
        "usage"
    ]
    assert usage.non_cached_input_tokens == usage.input_tokens - (usage.cache_read_tokens or 0)
    assert usage.web_search_requests == want.get("searches")
    reasoning_parts = [p for p in response.message.content if isinstance(p, llmroute.ReasoningPart)]
    if "reasoning_blocks" in want:
        assert len(reasoning_parts) == want["reasoning_blocks"]
    finish = response.events[-1]
    assert isinstance(finish, llmroute.Finish) and finish.reason == want["reason"] and finish.usage == usage


@pytest.mark.anyio
@pytest.mark.parametrize("case", STREAMED, ids=ids)
@pytest.mark.parametrize("seed", range(3))
async def test_events_do_not_depend_on_chunk_boundaries(case: tuple[Path, int], seed: int) -> None:
    interaction = Cassette.load(case[0]).interactions[case[1]]
    whole, _ = await replay(interaction)
    cut, _ = await replay(interaction, chunking=Chunking.random(seed, max_size=1 + 13 * seed))
    assert cut.events == whole.events
    if seed == 0 and len(interaction.response.body) < 12_000:
        bytewise, _ = await replay(interaction, chunking=Chunking.bytewise())
        assert bytewise.events == whole.events


# --- lowering: our request for a recorded body, then the recorded follow-ups from our own output ---


def request_from_body(body: dict[str, Any]) -> llmroute.LLMRequest:
    """An LLMRequest for an opencode-style Responses body, written independently of the lowering."""
    messages: list[llmroute.Message] = []
    names: dict[str, str] = {}

    def part(content: dict[str, Any]) -> Any:
        if content["type"] == "input_text":
            return llmroute.TextPart(content["text"])
        mime, data = content["image_url"].removeprefix("data:").split(";base64,")
        return llmroute.MediaPart(mime, data)

    for item in body["input"]:
        if item.get("role") == "system":
            messages.append(llmroute.system(item["content"]))
        elif item.get("role") == "user":
            messages.append(llmroute.user(*[part(c) for c in item["content"]]))
        elif item.get("role") == "assistant":
            meta = {"openai": {"phase": item["phase"]}} if "phase" in item else None
            messages.append(
                llmroute.assistant(*[llmroute.TextPart(c["text"], meta) for c in item["content"]])
            )
        elif item["type"] == "function_call":
            names[item["call_id"]] = item["name"]
            call = llmroute.ToolCallPart(item["call_id"], item["name"], json.loads(item["arguments"]))
            if messages and messages[-1].role == "assistant":
                last = messages.pop()
                messages.append(llmroute.Message("assistant", (*last.content, call)))
            else:
                messages.append(llmroute.Message("assistant", (call,)))
        elif item["type"] == "function_call_output":
            output = item["output"]
            result = json.loads(output) if isinstance(output, str) else tuple(part(c) for c in output)
            messages.append(
                llmroute.tool_message(
                    llmroute.ToolResultPart(item["call_id"], names[item["call_id"]], result)
                )
            )
    options = {k: body[k] for k in ("store", "include", "reasoning", "text") if k in body}
    choice = body.get("tool_choice")
    return llmroute.request(
        model=MODEL.with_(id=body["model"]),
        messages=messages,
        tools=[
            llmroute.ToolDefinition(t["name"], t["description"], t["parameters"], strict=t.get("strict"))
            for t in body.get("tools") or []
        ],
        tool_choice=choice["name"] if isinstance(choice, dict) else choice,
        generation=llmroute.GenerationOptions(max_tokens=body.get("max_output_tokens")),
        provider_options={"openai": options} if options else None,
    )


@pytest.mark.anyio
@pytest.mark.parametrize("path", OPENCODE, ids=lambda p: p.stem)
async def test_lowering_reproduces_every_recorded_opencode_request(path: Path) -> None:
    for interaction in Cassette.load(path).interactions:
        recorded = interaction.request.json()
        prepared = await llmroute.Client().prepare(request_from_body(recorded))
        assert prepared.url == interaction.request.url
        assert prepared.headers["authorization"] == "Bearer sk-test"
        assert json.loads(prepared.body) == explicit_strict(recorded)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("stem", "result"),
    [
        ("openai-responses/gpt-5-5-drives-a-tool-loop", {"temperature": 22, "condition": "sunny"}),
        (
            "openai-responses-phase/round-trips-commentary-into-a-final-answer",
            {"temperature": 22, "condition": "sunny"},
        ),
    ],
)
async def test_tool_loop_follow_up_is_built_from_our_own_response(stem: str, result: Any) -> None:
    """Turn 1 through our parser; turn 2 = history + ``response.messages`` + the tool result, which
    must lower to exactly the recorded second request (phase and call ids included)."""
    cassette = Cassette.load(CASSETTES / "opencode" / f"{stem}.yaml")
    first_body, second_body = (i.request.json() for i in cassette.interactions)
    first = request_from_body(first_body)
    response, _ = await replay(cassette.interactions[0], first)
    [call] = response.tool_calls
    second_system = llmroute.system(second_body["input"][0]["content"])
    follow_up = msgspec.structs.replace(
        first,
        messages=(
            second_system,
            *first.messages[1:],
            *response.messages,
            llmroute.tool_message(llmroute.ToolResultPart(call.id, call.name, result)),
        ),
    )
    prepared = await llmroute.Client().prepare(follow_up)
    assert json.loads(prepared.body) == explicit_strict(second_body)
    final, _ = await replay(cassette.interactions[1], follow_up)
    assert final.finish_reason == "stop" and final.text


@pytest.mark.anyio
async def test_store_false_reasoning_round_trips_with_encrypted_content() -> None:
    cassette = Cassette.load(CASSETTES / "opencode/openai-responses/openai-responses-gpt-5-5-reasoning.yaml")
    request = request_from_body(cassette.interactions[0].request.json())
    response, _ = await replay(cassette.interactions[0], request)
    [reasoning] = [p for p in response.message.content if isinstance(p, llmroute.ReasoningPart)]
    done = next(
        json.loads(line[5:])
        for line in cassette.interactions[0].response.body.decode().splitlines()
        if line.startswith("data:") and '"response.output_item.done"' in line and '"reasoning"' in line
    )["item"]
    assert reasoning.encrypted == done["encrypted_content"]
    follow_up = msgspec.structs.replace(
        request, messages=(*request.messages, *response.messages, llmroute.user("Again"))
    )
    body = json.loads((await llmroute.Client().prepare(follow_up)).body)
    items = body["input"]
    assert items[2] == {
        "type": "reasoning",
        "id": done["id"],
        "summary": [],
        "encrypted_content": done["encrypted_content"],
    }
    assert items[3] == {
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hello!"}],
        "phase": "final_answer",
    }
    # Without encrypted content and with store:false the reasoning item cannot be referenced: dropped.
    stripped = llmroute.Message(
        "assistant",
        tuple(
            msgspec.structs.replace(p, encrypted=None) if isinstance(p, llmroute.ReasoningPart) else p
            for p in response.message.content
        ),
    )
    body = json.loads(
        (
            await llmroute.Client().prepare(
                msgspec.structs.replace(request, messages=(*request.messages, stripped))
            )
        ).body
    )
    assert [i.get("type") for i in body["input"]] == [None, None, None]


@pytest.mark.anyio
async def test_hosted_web_search_and_reasoning_items_round_trip_as_recorded() -> None:
    """pydantic-ai's follow-up request carries the reasoning and web_search_call items of turn 1."""
    cassette = Cassette.load(
        CASSETTES
        / "pydantic-ai/test_openai_responses/test_openai_responses_model_web_search_tool_stream.yaml"
    )
    response, _ = await replay(cassette.interactions[0])
    request = llmroute.request(
        model=MODEL, messages=[*response.messages, llmroute.user("how about Mexico City?")]
    )
    ours = [i for i in json.loads((await llmroute.Client().prepare(request)).body)["input"] if "type" in i]
    recorded = [
        i
        for i in cassette.interactions[1].request.json()["input"]
        if i.get("type") in ("reasoning", "web_search_call")
    ]
    assert ours == recorded


@pytest.mark.anyio
async def test_code_interpreter_calls_round_trip_as_items() -> None:
    path = (
        CASSETTES
        / "pydantic-ai/test_openai_responses/test_openai_responses_thinking_with_code_execution_tool_stream.yaml"
    )
    response, _ = await replay(Cassette.load(path).interactions[0])
    request = llmroute.request(model=MODEL, messages=response.messages)
    items = json.loads((await llmroute.Client().prepare(request)).body)["input"]
    calls = [i for i in items if i.get("type") == "code_interpreter_call"]
    assert [c["code"] for c in calls] == [
        "n = pow(123456, 123)\nlen(str(n))",
        "str(n)[:100], str(n)[-100:]",
        "n",
    ]
    assert all(c["id"].startswith("ci_") and c["status"] == "completed" and c["container_id"] for c in calls)
    assert items[0]["type"] == "reasoning" and items[0]["summary"][0]["text"].startswith("**Calculating")


# --- citations ---


@pytest.mark.anyio
@pytest.mark.parametrize("index", [0, 1])
async def test_recorded_annotations_become_one_citation_each_covering_the_marker(index: int) -> None:
    path = CASSETTES / "pydantic-ai/test_openai_responses/test_openai_include_raw_annotations_streaming.yaml"
    interaction = Cassette.load(path).interactions[index]
    for chunking in (Chunking.whole(), Chunking.random(7, 20)):
        response, _ = await replay(interaction, chunking=chunking)
        [cite] = response.citations  # sent 4 times on the wire (added, part done, item done, completed)
        text = response.text_blocks[cite.block_id]
        assert cite.url == "https://www.britannica.com/place/Mount-Columbia?utm_source=openai"
        assert cite.title == "Mount Columbia | mountain, Alberta, Canada | Britannica"
        assert cite.start is not None and cite.end is not None
        assert text[cite.start : cite.end] == cite.cited_text == f"([britannica.com]({cite.url}))"
        assert text.endswith(cite.cited_text)  # the marker closes the answer; ’ before it is BMP


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n"
        for e in events
    )


def interaction(body: bytes) -> Interaction:
    return Interaction(
        RecordedRequest("POST", "https://api.openai.com/v1/responses", {}, b""),
        RecordedResponse(200, {"content-type": ["text/event-stream"]}, body),
    )


ZURICH = (
    "Zürich hat rund 448 000 Einwohner 🏙️ ([stadt-zuerich.ch](https://www.stadt-zuerich.ch/de/politik-und-verwaltung/"
    "statistik-und-daten.html?utm_source=openai)). Der Uetliberg ist 871 m hoch ([de.wikipedia.org]"
    "(https://de.wikipedia.org/wiki/Uetliberg?utm_source=openai))."
)
SOURCES = [
    "https://www.stadt-zuerich.ch/de/politik-und-verwaltung/statistik-und-daten.html",
    "https://de.wikipedia.org/wiki/Uetliberg",
]


def search_stream(annotations: list[tuple[int, int]], repeat_final: bool = True) -> bytes:
    """reference/websearch.md §2.3–2.4 as a stream: a search with sources, text split inside the
    emoji's grapheme cluster and inside the marker, then annotations (code point offsets)."""
    urls = [SOURCES[0] + "?utm_source=openai", SOURCES[1] + "?utm_source=openai"]
    titles = ["Statistik und Daten – Stadt Zürich", "Uetliberg – Wikipedia"]
    anns = [
        {"type": "url_citation", "start_index": s, "end_index": e, "url": u, "title": t}
        for (s, e), u, t in zip(annotations, urls, titles, strict=True)
    ]
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
    cuts = [0, 35, 41, 120, 200, len(ZURICH)]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "ws_1", "type": "web_search_call", "status": "in_progress"},
        },
        {"type": "response.web_search_call.searching", "item_id": "ws_1", "output_index": 0},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                "id": "ws_1",
                "type": "web_search_call",
                "status": "completed",
                "action": {
                    "type": "search",
                    "query": "Zürich Einwohnerzahl",
                    "sources": [{"type": "url", "url": u} for u in SOURCES],
                },
            },
        },
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**msg, "status": "in_progress", "content": []},
        },
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        *[
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 1,
                "content_index": 0,
                "delta": ZURICH[a:b],
            }
            for a, b in itertools.pairwise(cuts)
        ],
        *[
            {
                "type": "response.output_text.annotation.added",
                "item_id": "msg_1",
                "output_index": 1,
                "content_index": 0,
                "annotation_index": i,
                "annotation": a,
            }
            for i, a in enumerate(anns)
        ],
        {
            "type": "response.output_text.done",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "text": ZURICH,
        },
    ]
    final_part = {"type": "output_text", "text": ZURICH, "annotations": anns if repeat_final else []}
    events += [
        {
            "type": "response.content_part.done",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "part": final_part,
        },
        {"type": "response.output_item.done", "output_index": 1, "item": {**msg, "content": [final_part]}},
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "model": "gpt-5",
                "status": "completed",
                "usage": {
                    "input_tokens": 9120,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 412,
                    "output_tokens_details": {"reasoning_tokens": 256},
                },
            },
        },
    ]
    return sse(*events)


@pytest.mark.anyio
@pytest.mark.parametrize("seed", range(3))
async def test_non_ascii_citations_are_code_point_spans_into_the_block_and_sources_match(seed: int) -> None:
    body = search_stream([(37, 156), (187, 266)])
    response, _ = await replay(interaction(body), chunking=Chunking.random(seed, 9))
    assert event_order_problems(response.events) == []
    assert response.text == ZURICH
    [result] = response.tool_results
    assert result.result == {
        "sources": [{"url": u, "title": None} for u in SOURCES],  # action.sources carry no titles
        "queries": ["Zürich Einwohnerzahl"],
    }
    action = {
        "type": "search",
        "query": "Zürich Einwohnerzahl",
        "sources": [{"type": "url", "url": u} for u in SOURCES],
    }
    assert result.provider_metadata == {
        "openai": {"item_type": "web_search_call", "status": "completed", "action": action}
    }
    assert [c.url.removesuffix("?utm_source=openai") for c in response.citations] == SOURCES  # type: ignore[union-attr]
    first, second = response.citations
    assert (first.start, first.end, second.start, second.end) == (37, 156, 187, 266)
    for cite in response.citations:
        block = response.text_blocks[cite.block_id]
        assert block[cite.start : cite.end] == cite.cited_text  # type: ignore[misc]
        assert cite.cited_text.startswith("([") and cite.url in cite.cited_text  # type: ignore[union-attr, operator]
    assert response.usage is not None and response.usage.web_search_requests == 1


@pytest.mark.anyio
async def test_utf16_offsets_are_converted_and_hopeless_spans_dropped() -> None:
    # The emoji (U+1F3D9) is two UTF-16 units: a UTF-16 encoder would say 38-157 and 188-267.
    response, _ = await replay(interaction(search_stream([(38, 157), (188, 267)], repeat_final=False)))
    assert [(c.start, c.end) for c in response.citations] == [(37, 156), (187, 266)]
    response, _ = await replay(interaction(search_stream([(0, 5), (500, 600)], repeat_final=False)))
    first, second = response.citations
    # Not the marker: located by URL instead; out of range: also located by URL.
    assert ZURICH[first.start : first.end] == first.url  # type: ignore[misc]
    assert ZURICH[second.start : second.end] == second.url  # type: ignore[misc]


@pytest.mark.anyio
async def test_final_only_annotations_still_produce_citations_once() -> None:
    body = search_stream([(37, 156), (187, 266)])
    body = b"\n\n".join(p for p in body.split(b"\n\n") if b"annotation.added" not in p)
    response, _ = await replay(interaction(body))
    assert [(c.start, c.end) for c in response.citations] == [(37, 156), (187, 266)]


@pytest.mark.anyio
async def test_reasoning_summary_parts_are_blocks_that_lower_back_into_one_item() -> None:
    def part(event: str, index: int, **extra: Any) -> dict[str, Any]:
        return {"type": event, "item_id": "rs_1", "output_index": 0, "summary_index": index, **extra}

    body = sse(
        CREATED,
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "summary": []},
        },
        part("response.reasoning_summary_part.added", 0),
        part("response.reasoning_summary_text.delta", 0, delta="**Plan** first"),
        part("response.reasoning_summary_part.added", 1),
        part("response.reasoning_summary_text.delta", 1, delta="then ü"),
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA-enc"},
        },
        {"type": "response.completed", "response": {"status": "completed"}},
    )
    response, _ = await replay(interaction(body))
    assert event_order_problems(response.events) == []
    parts = [p for p in response.message.content if isinstance(p, llmroute.ReasoningPart)]
    assert [(p.text, p.encrypted) for p in parts] == [("**Plan** first", None), ("then ü", "gAAA-enc")]
    request = llmroute.request(
        model=MODEL, messages=[response.message], provider_options={"openai": {"store": False}}
    )
    [item] = json.loads((await llmroute.Client().prepare(request)).body)["input"]
    assert item == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [
            {"type": "summary_text", "text": "**Plan** first"},
            {"type": "summary_text", "text": "then ü"},
        ],
        "encrypted_content": "gAAA-enc",
    }


# --- terminal events and errors ---

CREATED = {"type": "response.created", "response": {"id": "r", "model": "m", "status": "in_progress"}}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("event", "error"),
    [
        (
            {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None},
            llmroute.RateLimitError,
        ),
        (
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                    "message": "too long",
                },
            },
            llmroute.ContextOverflowError,
        ),
        (
            {
                "type": "response.failed",
                "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}},
            },
            llmroute.ProviderInternalError,
        ),
    ],
)
async def test_stream_errors_are_typed(event: dict[str, Any], error: type[Exception]) -> None:
    delta = {"type": "response.output_text.delta", "item_id": "m1", "content_index": 0, "delta": "Hi"}
    with pytest.raises(error) as info:
        await replay(interaction(sse(CREATED, delta, event)))
    assert "openai" in str(info.value)


@pytest.mark.anyio
async def test_incomplete_is_length_and_truncation_is_an_error() -> None:
    delta = {"type": "response.output_text.delta", "item_id": "m1", "content_index": 0, "delta": "Hi"}
    incomplete = {
        "type": "response.incomplete",
        "response": {
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {"input_tokens": 3, "output_tokens": 5},
        },
    }
    response, _ = await replay(interaction(sse(CREATED, delta, incomplete)))
    assert (response.finish_reason, response.text) == ("length", "Hi")
    assert event_order_problems(response.events) == []
    with pytest.raises(llmroute.InvalidProviderOutputError):
        await replay(interaction(sse(CREATED, delta)))


@pytest.mark.anyio
async def test_refusal_is_text_with_content_filter_finish() -> None:
    refusal = {
        "type": "response.refusal.delta",
        "item_id": "m1",
        "content_index": 0,
        "delta": "I can’t help.",
    }
    done = {"type": "response.completed", "response": {"status": "completed"}}
    response, _ = await replay(interaction(sse(CREATED, refusal, done)))
    assert (response.finish_reason, response.text) == ("content-filter", "I can’t help.")


# --- request body ---


@pytest.mark.anyio
async def test_body_maps_tools_options_and_output_schema() -> None:
    request = llmroute.request(
        model=MODEL,
        system="Be brief.",
        prompt="Hi",
        tools=[
            hosted.web_search(
                allowed_domains=["example.org"], user_location={"country": "CH"}, search_context_size="low"
            ),
            hosted.code_execution(),
            hosted.file_search(vector_store_ids=["vs_1"]),
            llmroute.ToolDefinition("f", "d", {"type": "object"}),
        ],
        tool_choice="web_search",
        generation=llmroute.GenerationOptions(max_tokens=99, temperature=0.2, seed=3, top_k=4),
        provider_options={
            "openai": {
                "reasoning_effort": "high",
                "reasoning_summary": "auto",
                "verbosity": "low",
                "store": False,
                "service_tier": "flex",
                "prompt_cache_key": "k",
                "truncation": "auto",
            }
        },
    )
    request = msgspec.structs.replace(
        request, output_schema=llmroute.OutputSchema("answer", {"type": "object"})
    )
    body = json.loads((await llmroute.Client().prepare(request)).body)
    assert body["instructions"] == "Be brief."
    assert body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]
    assert body["tools"] == [
        {
            "type": "web_search",
            "filters": {"allowed_domains": ["example.org"]},
            "user_location": {"type": "approximate", "country": "CH"},
            "search_context_size": "low",
        },
        {"type": "code_interpreter", "container": {"type": "auto"}},
        {"type": "file_search", "vector_store_ids": ["vs_1"]},
        # an open object is not strict-compatible: strict is sent as false, never left to the server
        {
            "type": "function",
            "name": "f",
            "description": "d",
            "parameters": {"type": "object"},
            "strict": False,
        },
    ]
    assert body["tool_choice"] == {"type": "web_search"}
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["text"] == {
        "verbosity": "low",
        "format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": True},
    }
    assert body["include"] == [
        "reasoning.encrypted_content",
        "web_search_call.action.sources",
        "code_interpreter_call.outputs",
    ]
    assert (body["store"], body["service_tier"], body["prompt_cache_key"], body["truncation"]) == (
        False,
        "flex",
        "k",
        "auto",
    )
    assert (body["max_output_tokens"], body["temperature"], body["stream"]) == (99, 0.2, True)
    assert "seed" not in body and "top_k" not in body
    assert openai_responses.PROTOCOL.native_output_schema


@pytest.mark.anyio
async def test_unsupported_hosted_tool_and_option_clash_are_request_errors() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="url_context"):
        await llmroute.Client().prepare(
            llmroute.request(model=MODEL, prompt="x", tools=[hosted.url_context()])
        )
    with pytest.raises(llmroute.InvalidRequestError, match="clash"):
        await llmroute.Client().prepare(
            llmroute.request(model=MODEL, prompt="x", provider_options={"openai": {"input": []}})
        )


def test_model_defaults_to_responses() -> None:
    model = openai.configure(api_key="sk-test").model("gpt-5.5")
    assert model.route.protocol is openai_responses.PROTOCOL
    assert model.route.endpoint.url("gpt-5.5") == "https://api.openai.com/v1/responses"


@pytest.mark.anyio
async def test_reasoning_text_parts_open_no_text_block() -> None:
    """gpt-oss style raw reasoning: a ``reasoning_text`` content part is reasoning, not an (empty)
    text block overlapping it."""
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "content": []}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    body = sse(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {
            "type": "response.content_part.added",
            "item_id": "rs_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "reasoning_text", "text": ""},
        },
        {"type": "response.reasoning_text.delta", "item_id": "rs_1", "content_index": 0, "delta": "Think"},
        {"type": "response.reasoning_text.delta", "item_id": "rs_1", "content_index": 0, "delta": "ing."},
        {"type": "response.content_part.done", "item_id": "rs_1", "output_index": 0, "content_index": 0},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1, "item": message},
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        {"type": "response.output_text.delta", "item_id": "msg_1", "content_index": 0, "delta": "Hi"},
        {"type": "response.content_part.done", "item_id": "msg_1", "output_index": 1, "content_index": 0},
        {"type": "response.completed", "response": {"status": "completed"}},
    )
    response, _ = await replay(interaction(body))
    assert event_order_problems(response.events) == []
    assert [e.id for e in response.events if isinstance(e, llmroute.TextStart)] == ["msg_1:0"]
    assert [e.id for e in response.events if isinstance(e, llmroute.ReasoningStart)] == ["rs_1:0"]
    assert (response.reasoning, response.text) == ("Thinking.", "Hi")


@pytest.mark.anyio
async def test_raw_reasoning_after_later_summary_parts_stays_in_the_item_open_block() -> None:
    """Summary parts 0 and 1, then raw ``reasoning_text`` of content part 0 (servers that send both
    interleave them): content 0 shares its id with summary part 0, whose block part 1 has already
    ended. The text goes on in the item's open block, in stream order: no block opens twice and
    nothing is lost."""
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "content": []}

    def summary(index: int, delta: str) -> dict[str, Any]:
        return {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": index,
            "delta": delta,
        }

    body = sse(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        summary(0, "First. "),
        summary(1, "Second. "),
        {"type": "response.reasoning_text.delta", "item_id": "rs_1", "content_index": 0, "delta": "Raw."},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.completed", "response": {"status": "completed"}},
    )
    response, _ = await replay(interaction(body))
    assert event_order_problems(response.events) == []
    assert [e.id for e in response.events if isinstance(e, llmroute.ReasoningStart)] == ["rs_1:0", "rs_1:1"]
    assert response.reasoning == "First. Second. Raw."


@pytest.mark.anyio
async def test_a_whole_reasoning_item_with_summary_parts_and_raw_content_folds_once() -> None:
    """The same item not streamed (``stream=False``): its summary parts, then its raw content."""
    item = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [
            {"type": "summary_text", "text": "First. "},
            {"type": "summary_text", "text": "Second. "},
        ],
        "content": [{"type": "reasoning_text", "text": "Raw."}],
    }
    body = {"id": "resp_1", "status": "completed", "output": [item]}
    whole = Interaction(
        RecordedRequest("POST", "https://api.openai.com/v1/responses", {}, b""),
        RecordedResponse(200, {"content-type": ["application/json"]}, json.dumps(body).encode()),
    )
    request = llmroute.request(model=MODEL, prompt="x", generation=llmroute.GenerationOptions(stream=False))
    response, _ = await replay(whole, request)
    assert event_order_problems(response.events) == []
    assert response.reasoning == "First. Second. Raw."


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "error", "retryable"),
    [(503, llmroute.ProviderInternalError, True), (429, llmroute.RateLimitError, True)],
)
async def test_error_event_status_classifies_an_unknown_code(
    status: int, error: type[llmroute.LLMError], retryable: bool
) -> None:
    event = {"type": "error", "status": status, "code": "upstream_hiccup", "message": "try again"}
    with pytest.raises(error) as info:
        await replay(interaction(sse(CREATED, event)))
    assert info.value.retryable is retryable


@pytest.mark.anyio
async def test_web_search_actions_become_the_canonical_result_and_round_trip_as_items() -> None:
    """open_page reads one page (its URL is the source); queries come from query and queries;
    a failed search is an error result of the same shape; the next request sends the items back."""
    items = [
        {
            "id": "ws_1",
            "type": "web_search_call",
            "status": "completed",
            "action": {
                "type": "search",
                "query": "a",
                "queries": ["a", "b", " "],
                "sources": [
                    {"type": "url", "url": "https://x.test/"},
                    {"type": "url", "url": "https://x.test/"},
                ],
            },
        },
        {
            "id": "ws_2",
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "open_page", "url": "https://y.test/page"},
        },
        {
            "id": "ws_3",
            "type": "web_search_call",
            "status": "failed",
            "action": {"type": "search", "query": "c"},
        },
    ]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5", "status": "in_progress"}},
        *[
            {"type": "response.output_item.done", "output_index": i, "item": item}
            for i, item in enumerate(items)
        ],
        {"type": "response.completed", "response": {"id": "resp_1", "model": "gpt-5", "status": "completed"}},
    ]
    response, _ = await replay(interaction(sse(*events)))
    assert [(r.result, r.is_error) for r in response.tool_results] == [
        ({"sources": [{"url": "https://x.test/", "title": None}], "queries": ["a", "b"]}, False),
        ({"sources": [{"url": "https://y.test/page", "title": None}], "queries": []}, False),
        ({"sources": [], "queries": ["c"]}, True),
    ]
    assert [c.input for c in response.tool_calls] == [
        {k: v for k, v in item["action"].items() if k != "sources"} for item in items
    ]
    follow = llmroute.request(
        model=MODEL, messages=[llmroute.user("q"), *response.messages, llmroute.user("more")]
    )
    sent = (await llmroute.Client().prepare(follow)).json()["input"]
    assert [i for i in sent if i.get("type") == "web_search_call"] == [
        {
            "type": "web_search_call",
            "id": item["id"],
            "action": {k: v for k, v in item["action"].items() if k != "sources"},
            "status": item["status"],
        }
        for item in items
    ]


@pytest.mark.anyio
async def test_url_citations_without_a_search_call_report_the_search_they_imply() -> None:
    """OpenRouter's web plugin on Responses: annotations, no web_search_call item."""
    text = "See [x.test](https://x.test/a) and [y](https://y.test/)."
    anns = [
        {"type": "url_citation", "start_index": 4, "end_index": 30, "url": "https://x.test/a", "title": "X"},
        {"type": "url_citation", "start_index": 35, "end_index": 55, "url": "https://y.test/", "title": "Y"},
        {"type": "url_citation", "start_index": 4, "end_index": 30, "url": "https://x.test/a", "title": "X"},
    ]
    part = {"type": "output_text", "text": text, "annotations": anns}
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }
    body = sse(
        {"type": "response.created", "response": {"id": "resp_9", "model": "m", "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {"type": "response.completed", "response": {"id": "resp_9", "model": "m", "status": "completed"}},
    )
    response, _ = await replay(interaction(body))
    assert event_order_problems(response.events) == []
    (call,), (result,) = response.tool_calls, response.tool_results
    assert (call.name, call.provider_executed, call.id, result.id) == (
        "web_search",
        True,
        "ws_resp_9",
        "ws_resp_9",
    )
    assert result.result == {
        "sources": [{"url": "https://x.test/a", "title": "X"}, {"url": "https://y.test/", "title": "Y"}],
        "queries": [],
    }
    assert result.provider_metadata == {"llmroute": {"synthesized": "url_citation annotations"}}


# -- non-streamed (stream=False) ----------------------------------------------------------------------

WHOLE = llmroute.GenerationOptions(stream=False)
NON_STREAMED = [
    (path, i)
    for path in PYDANTIC
    for i, it in enumerate(Cassette.load(path).interactions)
    if it.request.json().get("stream") is False
]


def fold_of(body: dict[str, Any]) -> dict[str, Any]:
    """What a Response object says, written out from its JSON."""
    items = body["output"]
    texts = [c.get("text") or c.get("refusal") for i in items if i["type"] == "message" for c in i["content"]]
    searches = [i for i in items if i["type"] == "web_search_call"]
    return {
        "text": "".join(texts),
        "calls": [(i["call_id"], i["name"]) for i in items if i["type"] == "function_call"]
        + [(i["id"], "web_search") for i in searches],
        "queries": [
            list(dict.fromkeys([i["action"]["query"], *i["action"].get("queries", [])])) for i in searches
        ],
        "encrypted": [
            i["encrypted_content"] for i in items if i["type"] == "reasoning" and i.get("encrypted_content")
        ],
        "citations": [
            a["url"]
            for i in items
            if i["type"] == "message"
            for c in i["content"]
            for a in c.get("annotations", [])
        ],
        "usage": (body["usage"]["input_tokens"], body["usage"]["output_tokens"]),
    }


def ours(response: llmroute.LLMResponse) -> dict[str, Any]:
    parts = response.message.content
    return {
        "text": response.text,
        "calls": sorted(((c.id, c.name) for c in response.tool_calls), key=lambda c: c[1] == "web_search"),
        "queries": [r.result["queries"] for r in response.tool_results if r.name == "web_search"],
        "encrypted": [p.encrypted for p in parts if isinstance(p, llmroute.ReasoningPart) and p.encrypted],
        "citations": [c.url for c in response.citations],
        "usage": (response.usage.input_tokens, response.usage.output_tokens) if response.usage else None,
    }


@pytest.mark.anyio
@pytest.mark.parametrize("case", NON_STREAMED, ids=ids)
async def test_non_streamed_recording_replays_with_stream_false(case: tuple[Path, int]) -> None:
    interaction = Cassette.load(case[0]).interactions[case[1]]
    recorded = interaction.request.json()
    request = llmroute.request(model=MODEL.with_(id=recorded["model"]), prompt="x", generation=WHOLE)
    prepared = await llmroute.Client().prepare(request)
    sent = json.loads(prepared.body)
    assert (sent["stream"], "stream_options" in sent, prepared.headers["accept"]) == (
        False,
        False,
        "application/json",
    )
    response, transport = await replay(interaction, request)
    assert transport.requests[0].url.path == "/v1/responses"
    assert event_order_problems(response.events) == []
    body = json.loads(interaction.response.body)
    assert ours(response) == fold_of(body)
    calls = [i for i in body["output"] if i["type"] == "function_call"]
    assert response.finish_reason == ("tool-calls" if calls else "stop")
    for cite in response.citations:
        assert response.text_blocks[cite.block_id][cite.start : cite.end] == cite.cited_text  # type: ignore[misc]


@pytest.mark.anyio
async def test_non_streamed_web_search_tool_loop_resends_reasoning_and_search_items() -> None:
    """pydantic-ai's second request carries turn 1's reasoning (encrypted) and web_search_call
    items; our fold of the non-streamed turn 1 lowers to the same items."""
    cassette = Cassette.load(
        CASSETTES / "pydantic-ai/test_openai_responses/test_openai_responses_model_web_search_tool.yaml"
    )
    second = cassette.interactions[1].request.json()
    request = llmroute.request(model=MODEL.with_(id="gpt-5"), prompt="x", generation=WHOLE)
    response, _ = await replay(cassette.interactions[0], request)
    follow = llmroute.request(
        model=MODEL.with_(id="gpt-5"), messages=[llmroute.user("x"), *response.messages, llmroute.user("y")]
    )
    sent = json.loads((await llmroute.Client().prepare(follow)).body)["input"]
    wanted = [i for i in second["input"] if i.get("type") in ("reasoning", "web_search_call")]
    assert [i for i in sent if i.get("type") in ("reasoning", "web_search_call")] == wanted


@pytest.mark.anyio
@pytest.mark.parametrize("case", STREAMED, ids=ids)
async def test_streamed_and_non_streamed_forms_of_a_recording_agree(case: tuple[Path, int]) -> None:
    """``response.completed`` carries the whole Response: served as the body of a stream=False
    call it folds to what the stream folded to."""
    interaction = Cassette.load(case[0]).interactions[case[1]]
    events = [
        json.loads(line[5:])
        for line in interaction.response.body.decode().replace("\r\n", "\n").split("\n")
        if line.startswith("data:")
    ]
    (final,) = [e["response"] for e in events if e["type"] in ("response.completed", "response.incomplete")]
    # the items as the stream delivered them (encrypted reasoning is re-encrypted in the final event)
    final["output"] = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    whole = Interaction(
        interaction.request,
        RecordedResponse(200, {"content-type": ["application/json"]}, json.dumps(final).encode()),
    )
    streamed_response, _ = await replay(interaction)
    unstreamed, _ = await replay(whole, llmroute.request(model=MODEL, prompt="x", generation=WHOLE))
    assert event_order_problems(unstreamed.events) == []
    for field in ("message", "citations", "tool_results", "usage", "finish_reason"):
        assert getattr(unstreamed, field) == getattr(streamed_response, field), field


@pytest.mark.anyio
async def test_websocket_transport_refuses_stream_false() -> None:
    pytest.importorskip("websockets")
    model = openai.configure(api_key="sk-test").responses("gpt-5", transport="websocket")
    with pytest.raises(llmroute.InvalidRequestError, match="always streams"):
        await llmroute.Client().prepare(llmroute.request(model=model, prompt="x", generation=WHOLE))
