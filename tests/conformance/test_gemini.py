"""Gemini (API key, Code Assist, Vertex) on its real recorded bytes, plus the grounding edge cases
of ../shared/reference/websearch.md §1 and §8 as constructed streams."""

from __future__ import annotations

import base64
import contextlib
import copy
import json
from typing import Any

import msgspec
import pytest

import llmroute
from llmroute.hosted import code_execution, file_search, url_context, web_search
from llmroute.protocols._offsets import byte_span_to_str
from llmroute.protocols.gemini_schema import sanitize_schema
from llmroute.providers import google, vertex
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    event_order_problems,
)
from tests.helpers import CASSETTES, replay_events, replay_generate

GEMINI = google.configure(api_key="test-key")
SSE = {"content-type": ["text/event-stream"]}
URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


# -- turning a recorded body back into our request (the inverse of the lowering, written here) ------


def _meta(part: dict[str, Any]) -> dict[str, Any] | None:
    sig = part.get("thoughtSignature")
    return {"google": {"thoughtSignature": sig}} if sig else None


def request_from_body(body: dict[str, Any], model: llmroute.Model) -> llmroute.LLMRequest:
    messages: list[llmroute.Message] = []
    for content in body["contents"]:
        if content["role"] == "model":
            parts: list[Any] = []
            for p in content["parts"]:
                if "functionCall" in p:
                    call = p["functionCall"]
                    parts.append(
                        llmroute.ToolCallPart(
                            call["id"], call["name"], call["args"], provider_metadata=_meta(p)
                        )
                    )
                elif p.get("thought"):
                    parts.append(llmroute.ReasoningPart(p["text"], provider_metadata=_meta(p)))
                else:
                    parts.append(llmroute.TextPart(p["text"], _meta(p)))
            messages.append(llmroute.Message("assistant", tuple(parts)))
        elif any("functionResponse" in p for p in content["parts"]):
            results = []
            for p in content["parts"]:
                fr = p["functionResponse"]
                response = fr["response"]
                value = response["content"] if "content" in response else response.get("return_value")
                with contextlib.suppress(TypeError, ValueError):
                    value = json.loads(value)
                results.append(llmroute.ToolResultPart(fr["id"], fr["name"], value))
            messages.append(llmroute.tool_message(*results))
        else:
            user: list[Any] = []
            for p in content["parts"]:
                if "inlineData" in p:
                    user.append(llmroute.MediaPart(p["inlineData"]["mimeType"], p["inlineData"]["data"]))
                else:
                    user.append(p["text"])
            messages.append(llmroute.user(*user))
    tools: list[Any] = []
    for tool in body.get("tools") or []:
        for fn in tool.get("functionDeclarations") or []:
            schema = fn.get("parameters") or fn.get("parameters_json_schema")
            tools.append(llmroute.ToolDefinition(fn["name"], fn.get("description", ""), schema))
        if "googleSearch" in tool:
            tools.append(web_search())
        if "urlContext" in tool:
            tools.append(url_context())
        if "fileSearch" in tool:
            tools.append(file_search(**tool["fileSearch"]))
    choice = None
    if "toolConfig" in body:
        cfg = body["toolConfig"]["functionCallingConfig"]
        names = cfg.get("allowedFunctionNames")
        choice = names[0] if names else {"AUTO": "auto", "ANY": "required", "NONE": "none"}[cfg["mode"]]
    g = body.get("generationConfig") or {}
    options: dict[str, Any] = {}
    if "thinkingConfig" in g:
        options["include_thoughts"] = g["thinkingConfig"]["includeThoughts"]
    if "responseModalities" in g:
        options["response_modalities"] = g["responseModalities"]
    system = body.get("systemInstruction")
    return llmroute.request(
        model=model,
        system=[p["text"] for p in system["parts"]] if system else None,
        messages=messages,
        tools=tools,
        tool_choice=choice,
        generation=llmroute.GenerationOptions(
            max_tokens=g.get("maxOutputTokens"), temperature=g.get("temperature")
        ),
        provider_options={"google": options} if options else None,
    )


def model_for(interaction: Interaction) -> llmroute.Model:
    return GEMINI.gemini(interaction.request.url.split("/models/")[1].split(":")[0])


def streamed(cassette: Cassette) -> list[tuple[int, Interaction]]:
    """The streamGenerateContent interactions. The file-search recording also holds the store
    creation, the document upload and the store deletion (not LLM calls): they are skipped here."""
    return [
        (i, it) for i, it in enumerate(cassette.interactions) if ":streamGenerateContent" in it.request.url
    ]


def single(interaction: Interaction) -> Cassette:
    return Cassette([interaction])


# name, interaction -> (text or prefix, reasoning prefix, [(tool, input)], reason, input, output, reasoning tokens)
Expected = tuple[str, str, list[tuple[str, Any]], str, int, int, int]
EXPECTED: dict[tuple[str, int], Expected] = {
    ("streams-text", 0): ("Hello!", "", [], "stop", 11, 18, 16),
    ("streams-tool-call", 0): ("", "", [("get_weather", {"city": "Paris"})], "tool-calls", 55, 60, 45),
    ("drives-a-tool-loop", 0): ("", "", [("get_weather", {"city": "Paris"})], "tool-calls", 61, 55, 40),
    ("drives-a-tool-loop", 1): (
        "The weather in Paris is sunny with a temperature of 22 degrees.",
        "",
        [],
        "stop",
        148,
        15,
        0,
    ),
    ("gemini-2-5-flash-image", 0): ("jiggling restroom prison", "", [], "stop", 291, 111, 106),
    ("test_google_model_stream", 0): ("The capital of France is Paris.\n", "", [], "stop", 13, 8, 0),
    ("test_google_model_iter_stream", 0): (
        "",
        "",
        [("get_capital", {"country": "France"})],
        "tool-calls",
        52,
        5,
        0,
    ),
    ("test_google_model_iter_stream", 1): (
        "",
        "",
        [("get_temperature", {"city": "Paris"})],
        "tool-calls",
        64,
        5,
        0,
    ),
    ("test_google_model_iter_stream", 2): ("The temperature in Paris is 30°C.\n", "", [], "stop", 79, 12, 0),
    ("test_google_model_thinking_part_iter", 0): (
        "This is a great question! Safely crossing the street",
        "**Clarifying User Goals**",
        [],
        "stop",
        34,
        469 + 787,
        787,
    ),
    ("test_google_model_web_fetch_tool_stream", 0): (
        "Pydantic AI Gateway is now available!",
        "",
        [("url_context", {"urls": ["https://ai.pydantic.dev"]})],
        "stop",
        32 + 4610,  # the fetched page counts as input (toolUsePromptTokenCount)
        25 + 37,
        37,
    ),
    ("test_google_model_web_search_tool_stream", 0): (
        "### Weather in San Francisco is Mild and Partly Cloudy Today",
        "",
        [("web_search", {"queries": ["weather in San Francisco today"]})],
        "stop",
        17 + 102,
        241 + 412,
        412,
    ),
    ("test_google_streaming_tool_call_thought_signature", 0): (
        "",
        "",
        [("get_country", {})],
        "tool-calls",
        29,
        212,
        202,
    ),
    ("test_google_streaming_tool_call_thought_signature", 1): (
        "The capital of Mexico is Mexico City.",
        "",
        [],
        "stop",
        257,
        8,
        0,
    ),
    ("test_google_model_file_search_tool_stream", 3): (
        "The capital of France is Paris. The city is well-known for its famous landmarks, including the Eiffel Tower.",
        "",
        [
            (
                "file_search",
                {"language": "PYTHON", "code": 'print(file_search.query(query="Capital of France"))\n'},
            )
        ],
        "stop",
        15 + 770,
        37 + 742,
        742,
    ),
}

RECORDINGS = sorted((CASSETTES / "opencode/gemini").glob("*.yaml")) + sorted(
    p
    for p in (CASSETTES / "pydantic-ai/test_google").glob("*.yaml")
    if p.stem.endswith(("stream", "iter", "signature"))
)
CASES = [(path, i) for path in RECORDINGS for i, _ in streamed(Cassette.load(path))]


def test_every_streamed_recording_has_an_expectation() -> None:
    assert {(p.stem, i) for p, i in CASES} == set(EXPECTED)


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "index"), CASES, ids=lambda v: getattr(v, "stem", str(v)))
async def test_recording_parses_to_expected_response(path: Any, index: int) -> None:
    interaction = Cassette.load(path).interactions[index]
    request = request_from_body(interaction.request.json(), model_for(interaction))
    response, _ = await replay_generate(single(interaction), request)
    text, reasoning, calls, reason, input_tokens, output_tokens, reasoning_tokens = EXPECTED[
        (path.stem, index)
    ]
    assert response.text.startswith(text) and (text or not response.text)
    assert response.reasoning.startswith(reasoning) and (reasoning or not response.reasoning)
    assert [(c.name, c.input) for c in response.tool_calls] == calls
    assert response.finish_reason == reason
    usage = response.usage
    assert usage is not None and usage.provider_metadata is not None
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (
        input_tokens,
        output_tokens,
        reasoning_tokens,
    )
    assert event_order_problems(response.events) == []
    # the thought signatures come back exactly where they were on the wire
    wire = [
        json.loads(line[6:])
        for line in interaction.response.body.split(b"\r\n\r\n")
        if line.startswith(b"data:")
    ]
    signatures = [
        (("call" if "functionCall" in p else "text"), p["thoughtSignature"])
        for chunk in wire
        for p in chunk["candidates"][0]["content"]["parts"]
        if "thoughtSignature" in p
    ]
    ours = [
        (
            "call" if isinstance(p, llmroute.ToolCallPart) else "text",
            p.provider_metadata["google"]["thoughtSignature"],
        )
        for p in response.message.content
        if p.provider_metadata and "thoughtSignature" in p.provider_metadata.get("google", {})
    ]
    assert ours == signatures


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "index"), CASES, ids=lambda v: getattr(v, "stem", str(v)))
@pytest.mark.parametrize("seed", range(4))
async def test_events_do_not_depend_on_chunk_boundaries(path: Any, index: int, seed: int) -> None:
    interaction = Cassette.load(path).interactions[index]
    request = request_from_body(interaction.request.json(), model_for(interaction))
    whole = await replay_events(single(interaction), request, Chunking.whole())
    assert (
        await replay_events(single(interaction), request, Chunking.random(seed, max_size=1 + 9 * seed))
        == whole
    )
    if seed == 0 and len(interaction.response.body) < 12_000:
        assert await replay_events(single(interaction), request, Chunking.bytewise()) == whole


@pytest.mark.anyio
@pytest.mark.parametrize("path", sorted((CASSETTES / "opencode/gemini").glob("*.yaml")), ids=lambda p: p.stem)
async def test_lowering_reproduces_every_opencode_request_exactly(path: Any) -> None:
    for interaction in Cassette.load(path).interactions:
        recorded = interaction.request.json()
        prepared = await llmroute.Client().prepare(request_from_body(recorded, model_for(interaction)))
        assert prepared.url == interaction.request.url
        assert prepared.headers["x-goog-api-key"] == "test-key"
        assert json.loads(prepared.body) == recorded


@pytest.mark.anyio
async def test_tool_loop_second_request_is_our_lowering_of_the_first_response() -> None:
    """opencode drives-a-tool-loop: step 1's response (with its thoughtSignature on the call) plus
    the tool result, lowered by us, is the recorded second request (call ids are ours: Gemini 2.5
    sends none, opencode named its call ``tool_0``)."""
    cassette = Cassette.load(CASSETTES / "opencode/gemini/drives-a-tool-loop.yaml")
    first, second = cassette.interactions
    request = request_from_body(first.request.json(), model_for(first))
    response, _ = await replay_generate(single(first), request)
    (call,) = response.tool_calls
    history = (
        *request.messages,
        *response.messages,
        llmroute.tool_message(
            llmroute.ToolResultPart(call.id, call.name, {"temperature": 22, "condition": "sunny"})
        ),
    )
    prepared = await llmroute.Client().prepare(msgspec.structs.replace(request, messages=history))
    recorded = json.loads(second.request.body.replace(b'"tool_0"', json.dumps(call.id).encode()))
    assert json.loads(prepared.body) == recorded


def _sig(value: str) -> bytes:
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_"))


def _normalise_pydantic(contents: list[dict[str, Any]], ids: dict[str, str]) -> list[dict[str, Any]]:
    """pydantic-ai's wire differs from ours in three declared ways: its call ids are random, the
    google-genai SDK re-encodes thoughtSignature as urlsafe base64 (same bytes), and it sends
    ``response: {"return_value": x}`` where we send ``{"name", "content"}``."""
    out = copy.deepcopy(contents)
    for content in out:
        for part in content["parts"]:
            for key in ("functionCall", "functionResponse"):
                if key in part and "id" in part[key]:
                    part[key]["id"] = ids.get(part[key]["id"], part[key]["id"])
            if "thoughtSignature" in part:
                part["thoughtSignature"] = _sig(part["thoughtSignature"])
            if "functionResponse" in part:
                response = part["functionResponse"]["response"]
                part["functionResponse"]["response"] = response.get("return_value", response.get("content"))
    return out


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "results"),
    [
        ("test_google_streaming_tool_call_thought_signature", ["Mexico"]),
        ("test_google_model_iter_stream", ["Paris", "30°C"]),
    ],
)
async def test_pydantic_tool_loops_are_reproduced_from_our_responses(name: str, results: list[str]) -> None:
    cassette = Cassette.load(CASSETTES / f"pydantic-ai/test_google/{name}.yaml")
    first = cassette.interactions[0]
    request = request_from_body(first.request.json(), model_for(first))
    history = list(request.messages)
    ids: dict[str, str] = {}
    for n, result in enumerate(results):
        response, _ = await replay_generate(single(cassette.interactions[n]), request)
        (call,) = response.tool_calls
        history += [
            *response.messages,
            llmroute.tool_message(llmroute.ToolResultPart(call.id, call.name, result)),
        ]
        request = msgspec.structs.replace(request, messages=tuple(history))
        recorded = cassette.interactions[n + 1].request.json()
        recorded_calls = [
            p["functionCall"]["id"] for c in recorded["contents"] for p in c["parts"] if "functionCall" in p
        ]
        ids[recorded_calls[-1]] = call.id
        prepared = json.loads((await llmroute.Client().prepare(request)).body)
        assert _normalise_pydantic(prepared["contents"], {}) == _normalise_pydantic(recorded["contents"], ids)


@pytest.mark.anyio
async def test_hosted_search_parts_do_not_leak_into_the_next_request() -> None:
    """web_search_tool_stream: the follow-up (recorded, non-streamed) request holds the model's
    text only; our lowering of the streamed response drops the provider-executed search parts."""
    cassette = Cassette.load(
        CASSETTES / "pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml"
    )
    first, second = cassette.interactions
    request = request_from_body(first.request.json(), model_for(first))
    response, _ = await replay_generate(single(first), request)
    assert any(p.provider_executed for p in response.message.content if isinstance(p, llmroute.ToolCallPart))
    follow_up = msgspec.structs.replace(
        request, messages=(*request.messages, *response.messages, llmroute.user("how about Mexico City?"))
    )
    prepared = json.loads((await llmroute.Client().prepare(follow_up)).body)
    assert prepared["contents"] == second.request.json()["contents"]
    assert prepared["tools"] == [{"googleSearch": {}}]


# -- grounding on real recordings -----------------------------------------------------------------

GROUNDED = [
    ("test_google_model_web_search_tool_stream", 0, 9),
    ("test_google_model_web_fetch_tool_stream", 0, 1),
    ("test_google_model_file_search_tool_stream", 3, 2),
]


def _chunks(body: bytes) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for frame in body.split(b"\r\n\r\n"):
        if frame.startswith(b"data:"):
            grounding = json.loads(frame[6:])["candidates"][0].get("groundingMetadata", {})
            found = grounding.get("groundingChunks") or found
    return found


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "index", "count"), GROUNDED)
@pytest.mark.parametrize("chunking", [Chunking.whole(), Chunking.random(7, 23)], ids=["whole", "random"])
async def test_grounding_citations_point_at_the_cited_text(
    name: str, index: int, count: int, chunking: Chunking
) -> None:
    interaction = Cassette.load(CASSETTES / f"pydantic-ai/test_google/{name}.yaml").interactions[index]
    request = request_from_body(interaction.request.json(), model_for(interaction))
    response, _ = await replay_generate(single(interaction), request, chunking)
    sources = _chunks(interaction.response.body)
    urls = {(c.get("web") or c.get("retrievedContext") or {}).get("uri") for c in sources}
    assert len(response.citations) == count
    for citation in response.citations:
        text = response.text_blocks[citation.block_id]
        assert citation.start is not None and citation.end is not None
        assert text[citation.start : citation.end] == citation.cited_text
        assert citation.url in urls
    # citations come after the text they cite
    kinds = [type(e).__name__ for e in response.events]
    assert kinds.index("Citation") > max(i for i, k in enumerate(kinds) if k == "TextEnd")


@pytest.mark.anyio
async def test_web_search_recording_surfaces_hosted_call_and_sources() -> None:
    name = "test_google_model_web_search_tool_stream"
    interaction = Cassette.load(CASSETTES / f"pydantic-ai/test_google/{name}.yaml").interactions[0]
    response, _ = await replay_generate(
        single(interaction), request_from_body(interaction.request.json(), model_for(interaction))
    )
    (call,) = response.tool_calls
    (result,) = response.tool_results
    assert call.provider_executed and result.provider_executed and result.id == call.id
    assert call.name == result.name == "web_search"
    sources = result.result["sources"]
    assert [s["title"] for s in sources] == [
        "Weather information for San Francisco, CA, US",
        "timeanddate.com",
        "weather.gov",
        "wunderground.com",
        "accuweather.com",
    ]
    assert result.result["queries"] == ["weather in San Francisco today"]
    assert all(set(s) == {"url", "title"} for s in sources)  # the canonical shape, nothing else
    assert sources[1]["url"].startswith("https://vertexaisearch.cloud.google.com/grounding-api-redirect/")
    google = result.provider_metadata["google"]
    assert "renderedContent" in google["searchEntryPoint"]
    recorded = json.loads(interaction.response.body.decode().split("data: ")[-1])  # the grounded chunk
    assert google["groundingChunks"] == recorded["candidates"][0]["groundingMetadata"]["groundingChunks"]
    assert response.usage is not None and response.usage.web_search_requests == 1
    # the °F / °C in the answer are 2 UTF-8 bytes: every span past the first one shifts
    spans = [(c.start, c.end) for c in response.citations]
    assert spans[0] == (235, 371)  # wire bytes 235-375
    assert response.citations[-1].cited_text == "The chance of rain remains low throughout the day."


NON_STREAMED = [
    ("test_google_model_web_search_tool", 0),
    ("test_google_model_web_search_tool", 1),
    ("test_google_model_web_fetch_tool", 0),
    ("test_google_model_web_search_tool_stream", 1),
]
WHOLE = llmroute.GenerationOptions(stream=False)


def test_every_non_streamed_recording_is_replayed() -> None:
    found = {
        (path.stem, i)
        for path in (CASSETTES / "pydantic-ai/test_google").glob("*.yaml")
        for i, it in enumerate(Cassette.load(path).interactions)
        if it.request.url.endswith(":generateContent")
    }
    assert found == set(NON_STREAMED)


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "index"), NON_STREAMED)
async def test_non_streamed_recording_replays_with_stream_false(name: str, index: int) -> None:
    """``:generateContent`` (no ``alt=sse``) with the recorded contents and tools; the whole body
    folds to its parts, grounding (the canonical web_search result, chunk i = source i), citations
    at the cited text, usage and finish."""
    interaction = Cassette.load(CASSETTES / f"pydantic-ai/test_google/{name}.yaml").interactions[index]
    recorded = interaction.request.json()
    request = msgspec.structs.replace(request_from_body(recorded, model_for(interaction)), generation=WHOLE)
    prepared = await llmroute.Client().prepare(request)
    assert prepared.url == interaction.request.url  # :generateContent, no alt=sse
    assert prepared.headers["accept"] == "application/json"
    sent = json.loads(prepared.body)
    # pydantic-ai sends an empty generationConfig and a role on systemInstruction; the rest is ours
    assert {k: sent[k] for k in ("contents", "tools")} == {k: recorded[k] for k in ("contents", "tools")}
    body = json.loads(interaction.response.body)
    candidate = body["candidates"][0]
    response, transport = await replay_generate(single(interaction), request)
    assert transport.requests[0].url.path.endswith(":generateContent")
    assert event_order_problems(response.events) == []
    parts = candidate["content"]["parts"]
    assert response.text == "".join(p.get("text", "") for p in parts if not p.get("thought"))
    assert response.finish_reason == "stop" and candidate["finishReason"] == "STOP"
    usage, raw = response.usage, body["usageMetadata"]
    assert usage is not None and usage.input_tokens == raw["promptTokenCount"] + raw.get(
        "toolUsePromptTokenCount", 0
    )
    assert usage.output_tokens == raw["candidatesTokenCount"] + raw.get("thoughtsTokenCount", 0)
    grounding = candidate.get("groundingMetadata")
    searches = [r for r in response.tool_results if r.name == "web_search"]
    if grounding and grounding.get("webSearchQueries"):
        (result,) = searches
        assert result.result == {
            "sources": [
                {"url": c["web"].get("uri"), "title": c["web"].get("title")}
                for c in grounding["groundingChunks"]
            ],
            "queries": grounding["webSearchQueries"],
        }
        assert result.provider_metadata["google"]["groundingChunks"] == grounding["groundingChunks"]
        assert response.citations
    else:
        assert searches == []
    urls = {(c.get("web") or {}).get("uri") for c in (grounding or {}).get("groundingChunks", [])}
    for citation in response.citations:
        text = response.text_blocks[citation.block_id]
        assert text[citation.start : citation.end] == citation.cited_text
        assert citation.url in urls


def whole_body(interaction: Interaction) -> bytes:
    """The one GenerateContentResponse a stream adds up to: every part in order, the last finish,
    usage, ids, and grounding merged field by field (later non-empty fields win)."""
    chunks = [
        json.loads(line[6:])
        for line in interaction.response.body.split(b"\r\n\r\n")
        if line.startswith(b"data:")
    ]
    parts: list[Any] = []
    grounding: dict[str, Any] = {}
    candidate: dict[str, Any] = {"index": 0}
    out: dict[str, Any] = {}
    for c in chunks:
        cand = c["candidates"][0]
        parts += (cand.get("content") or {}).get("parts", [])
        grounding.update({k: v for k, v in (cand.get("groundingMetadata") or {}).items() if v})
        candidate.update({k: v for k, v in cand.items() if k in ("finishReason", "urlContextMetadata")})
        out.update({k: v for k, v in c.items() if k != "candidates"})
    candidate["content"] = {"role": "model", "parts": parts}
    if grounding:
        candidate["groundingMetadata"] = grounding
    return json.dumps({**out, "candidates": [candidate]}).encode()


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "index"), CASES, ids=lambda v: getattr(v, "stem", str(v)))
async def test_streamed_and_non_streamed_forms_of_a_recording_agree(path: Any, index: int) -> None:
    interaction = Cassette.load(path).interactions[index]
    request = request_from_body(interaction.request.json(), model_for(interaction))
    streamed_response, _ = await replay_generate(single(interaction), request)
    whole = Interaction(
        RecordedRequest(
            "POST",
            interaction.request.url.replace(":streamGenerateContent?alt=sse", ":generateContent"),
            {},
            b"",
        ),
        RecordedResponse(200, {"content-type": ["application/json"]}, whole_body(interaction)),
    )
    unstreamed, _ = await replay_generate(
        Cassette([whole]), msgspec.structs.replace(request, generation=WHOLE)
    )
    assert event_order_problems(unstreamed.events) == []
    for field in ("message", "citations", "tool_results", "usage", "finish_reason"):
        assert getattr(unstreamed, field) == getattr(streamed_response, field), field


@pytest.mark.anyio
async def test_code_assist_non_streamed_uses_generate_content_and_unwraps_the_envelope() -> None:
    """``v1internal:generateContent`` answers ``{"response": {...}, "traceId"}``: the same events as
    the plain Gemini body."""
    interaction = Cassette.load(
        CASSETTES / "pydantic-ai/test_google/test_google_model_web_search_tool.yaml"
    ).interactions[0]
    request = msgspec.structs.replace(
        request_from_body(interaction.request.json(), model_for(interaction)), generation=WHOLE
    )
    plain, _ = await replay_generate(single(interaction), request)
    model = google.code_assist(access_token="ya29.static", project="p").gemini("gemini-2.5-pro")
    url = "https://cloudcode-pa.googleapis.com/v1internal:generateContent"
    envelope = json.dumps({"response": json.loads(interaction.response.body), "traceId": "t1"}).encode()
    wrapped = Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": ["application/json"]}, envelope),
            )
        ]
    )
    ours, transport = await replay_generate(wrapped, msgspec.structs.replace(request, model=model))
    assert str(transport.requests[0].url) == url  # no alt=sse
    assert (
        json.loads(transport.requests[0].content)["request"]["contents"]
        == interaction.request.json()["contents"]
    )
    assert ours.events == plain.events


# -- constructed streams: websearch.md §1 and §8 --------------------------------------------------


def _cassette(body: bytes, url: str = URL) -> Cassette:
    return Cassette([Interaction(RecordedRequest("POST", url, {}, b""), RecordedResponse(200, SSE, body))])


def sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\r\n\r\n" for c in chunks)


def chunk(
    *parts: dict[str, Any], finish: str | None = None, grounding: Any = None, usage: Any = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    if grounding is not None:
        candidate["groundingMetadata"] = grounding
    out: dict[str, Any] = {"candidates": [candidate], "responseId": "r1", "modelVersion": "gemini-2.5-flash"}
    if usage is not None:
        out["usageMetadata"] = usage
    return out


async def run(body: bytes, chunking: Chunking | None = None) -> llmroute.LLMResponse:
    request = llmroute.request(model=GEMINI.gemini("gemini-2.5-flash"), prompt="x")
    response, _ = await replay_generate(_cassette(body), request, chunking, retry=llmroute.RetryPolicy.none())
    assert event_order_problems(response.events) == []
    return response


@pytest.mark.anyio
async def test_a_blank_frame_between_chunks_is_skipped_not_an_error() -> None:
    first, last = chunk({"text": "Hel"}), chunk({"text": "lo"}, finish="STOP")
    plain = await run(sse(first, last))
    blank = await run(sse(first) + b"data:  \r\n\r\n" + sse(last))
    assert blank.text == plain.text == "Hello"
    assert blank.events == plain.events


REDIRECT = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQH-"
FIXTURE_TEXT = "Der Eiffelturm ist 330 m hoch. Er wurde 1889 eröffnet 🗼. 東京タワーは333mです。"
FIXTURE_GROUNDING = {
    "webSearchQueries": ["Eiffelturm Höhe Eröffnung", "東京タワー 高さ"],
    "searchEntryPoint": {"renderedContent": "<div>…</div>"},
    "groundingChunks": [
        {"web": {"uri": REDIRECT + "aaa", "title": "toureiffel.paris"}},
        {"web": {"uri": REDIRECT + "bbb", "title": "wikipedia.org", "domain": "de.wikipedia.org"}},
        {"web": {"uri": REDIRECT + "ccc", "title": "tokyotower.co.jp"}},
    ],
    "groundingSupports": [
        {"segment": {"endIndex": 30, "text": "Der Eiffelturm ist 330 m hoch."}, "groundingChunkIndices": [0]},
        {
            "segment": {"startIndex": 31, "endIndex": 60, "text": "Er wurde 1889 eröffnet 🗼."},
            "groundingChunkIndices": [1, 0],
        },
        {
            "segment": {"startIndex": 61, "endIndex": 92, "text": "東京タワーは333mです。"},
            "groundingChunkIndices": [2],
        },
    ],
}
FIXTURE_USAGE = {
    "promptTokenCount": 21,
    "candidatesTokenCount": 38,
    "totalTokenCount": 402,
    "thoughtsTokenCount": 211,
    "toolUsePromptTokenCount": 132,
}
# websearch.md §1.5: three events, grounding on the last one
FIXTURE_STREAM = sse(
    chunk({"text": "Der Eiffelturm ist 330 m hoch."}, usage={"promptTokenCount": 21, "totalTokenCount": 21}),
    chunk({"text": " Er wurde 1889 eröffnet 🗼."}, usage={"promptTokenCount": 21, "totalTokenCount": 21}),
    chunk(
        {"text": " 東京タワーは333mです。"}, finish="STOP", grounding=FIXTURE_GROUNDING, usage=FIXTURE_USAGE
    ),
)


def with_markers(response: llmroute.LLMResponse) -> str:
    """gemini-cli style ``[n]`` markers at each cited span's end (websearch.md §1.3)."""
    urls = [s["url"] for s in response.tool_results[0].result["sources"]]
    text = response.text
    ends: dict[int, list[int]] = {}
    for c in response.citations:
        assert c.end is not None
        ends.setdefault(c.end, []).append(urls.index(c.url) + 1)
    for end in sorted(ends, reverse=True):
        text = text[:end] + "".join(f"[{n}]" for n in sorted(set(ends[end]))) + text[end:]
    return text


def test_byte_offsets_become_str_indices() -> None:
    data = FIXTURE_TEXT.encode()
    assert len(FIXTURE_TEXT) == 70 and len(data) == 92
    assert byte_span_to_str(data, 0, 30) == (0, 30)
    assert byte_span_to_str(data, 31, 60) == (31, 56)
    assert byte_span_to_str(data, 61, 92) == (57, 70)
    for word in ("é", "世界", "🙂", "eröffnet 🗼"):
        text = f"a {word} b"
        start = len(b"a ")
        assert byte_span_to_str(text.encode(), start, start + len(word.encode())) == (2, 2 + len(word))


def test_byte_offsets_inside_a_character_snap_back_and_out_of_range_clamps() -> None:
    data = FIXTURE_TEXT.encode()
    assert byte_span_to_str(data, 61, 62) == (57, 57)  # 62 is inside 東: snapped, no U+FFFD, no raise
    assert byte_span_to_str(data, 62, 92) == (57, 70)
    assert byte_span_to_str(data, 31, 59) == (31, 55)  # 59 is inside 🗼 (4 bytes)
    assert byte_span_to_str(data, 80, 500) == (byte_span_to_str(data, 80, 80)[0], 70)
    assert byte_span_to_str(data, -5, 3) == (0, 3)


@pytest.mark.anyio
@pytest.mark.parametrize("chunking", [Chunking.whole(), Chunking.bytewise(), Chunking.random(3, 5)], ids=str)
async def test_fixture_stream_citations_markers_and_hosted_search(chunking: Chunking) -> None:
    response = await run(FIXTURE_STREAM, chunking)
    assert response.text == FIXTURE_TEXT
    spans = [(c.start, c.end, c.url) for c in response.citations]
    assert spans == [
        (0, 30, REDIRECT + "aaa"),
        (31, 56, REDIRECT + "bbb"),
        (31, 56, REDIRECT + "aaa"),
        (57, 70, REDIRECT + "ccc"),
    ]
    assert [response.text[c.start : c.end] for c in response.citations] == [
        c.cited_text for c in response.citations
    ]
    assert with_markers(response) == (
        "Der Eiffelturm ist 330 m hoch.[1] Er wurde 1889 eröffnet 🗼.[1][2] 東京タワーは333mです。[3]"
    )
    # redirect URIs are kept as the url; the title (a bare domain) and any domain ride along
    assert response.citations[1].title == "wikipedia.org"
    assert response.citations[1].provider_metadata == {
        "google": {"chunk_index": 1, "source_type": "web", "domain": "de.wikipedia.org"}
    }
    (call,) = response.tool_calls
    queries = ["Eiffelturm Höhe Eröffnung", "東京タワー 高さ"]
    assert (call.name, call.input, call.provider_executed) == ("web_search", {"queries": queries}, True)
    (result,) = response.tool_results
    assert result.result == {
        "sources": [
            {"url": REDIRECT + "aaa", "title": "toureiffel.paris"},
            {"url": REDIRECT + "bbb", "title": "wikipedia.org"},
            {"url": REDIRECT + "ccc", "title": "tokyotower.co.jp"},
        ],
        "queries": queries,
    }
    assert result.provider_metadata["google"]["groundingChunks"][1] == {
        "web": {"uri": REDIRECT + "bbb", "title": "wikipedia.org", "domain": "de.wikipedia.org"}
    }
    usage = response.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.web_search_requests) == (
        21 + 132,
        38 + 211,
        211,
        2,
    )


def _one_chunk_grounded(
    parts: list[dict[str, Any]], supports: list[dict[str, Any]], chunks: Any = None
) -> bytes:
    grounding = {
        "webSearchQueries": ["q"],
        "groundingChunks": chunks
        if chunks is not None
        else [{"web": {"uri": "https://a.example/", "title": "a.example"}}],
        "groundingSupports": supports,
    }
    return sse(chunk(*parts, finish="STOP", grounding=grounding))


@pytest.mark.anyio
@pytest.mark.parametrize("part_index", [None, 1])
async def test_thought_part_first_with_and_without_part_index(part_index: int | None) -> None:
    """python-genai#961: partIndex omitted although the answer is part 1 behind a thought part."""
    answer = "Tokyo Tower: 333 m — 東京タワー."
    segment: dict[str, Any] = {
        "startIndex": 13,
        "endIndex": len(answer.encode()),
        "text": "333 m — 東京タワー.",
    }
    if part_index is not None:
        segment["partIndex"] = part_index
    body = _one_chunk_grounded(
        [{"text": "Let me think about 東京 first…", "thought": True}, {"text": answer}],
        [{"segment": segment, "groundingChunkIndices": [0]}],
    )
    response = await run(body)
    assert response.reasoning == "Let me think about 東京 first…"
    (citation,) = response.citations
    assert response.text_blocks[citation.block_id] == answer
    assert (citation.start, citation.end) == (13, len(answer))
    assert answer[citation.start : citation.end] == "333 m — 東京タワー."


@pytest.mark.anyio
async def test_omitted_start_index_duplicate_and_out_of_range_chunk_indices() -> None:
    body = _one_chunk_grounded(
        [{"text": "Café crème."}],
        [
            {
                "segment": {"endIndex": len(b"Caf\xc3\xa9 cr\xc3\xa8me."), "text": "Café crème."},
                "groundingChunkIndices": [0, 0, 5, -1],
            }
        ],
    )
    response = await run(body)
    (citation,) = response.citations  # 0 once; 5 and -1 point past groundingChunks
    assert (citation.start, citation.end, citation.url) == (0, 11, "https://a.example/")


@pytest.mark.anyio
async def test_supports_without_grounding_chunks_bind_nothing() -> None:
    """googleapis/dotnet-genai#230: chunks empty while supports reference indices."""
    body = _one_chunk_grounded(
        [{"text": "Hello"}], [{"segment": {"endIndex": 5}, "groundingChunkIndices": [0]}], chunks=[]
    )
    response = await run(body)
    assert response.citations == ()
    assert response.tool_results[0].result == {"sources": [], "queries": ["q"]}  # the call still shows


@pytest.mark.anyio
async def test_web_search_sources_are_the_grounding_chunks_one_for_one() -> None:
    """Source i is chunk i (gemini-cli numbers ``[i+1]`` by chunk): a repeated URL stays, a chunk
    without uri/title gives None, and the chunks as sent stay in provider_metadata."""
    chunks = [
        {"web": {"uri": "https://a.example/", "title": "a.example", "domain": "a.example"}},
        {"web": {"uri": "https://a.example/", "title": "a.example"}},
        {"web": {"title": "no uri"}},
        {"web": {}},
    ]
    body = _one_chunk_grounded(
        [{"text": "Hello world"}], [{"segment": {"endIndex": 5}, "groundingChunkIndices": [1, 2]}], chunks
    )
    response = await run(body)
    (result,) = response.tool_results
    assert result.name == "web_search"
    assert result.result == {
        "sources": [
            {"url": "https://a.example/", "title": "a.example"},
            {"url": "https://a.example/", "title": "a.example"},
            {"url": None, "title": "no uri"},
            {"url": None, "title": None},
        ],
        "queries": ["q"],
    }
    assert result.provider_metadata == {"google": {"groundingChunks": chunks}}
    assert [(c.url, c.provider_metadata["google"]["chunk_index"]) for c in response.citations] == [
        ("https://a.example/", 1),
        (None, 2),
    ]


@pytest.mark.anyio
async def test_short_segment_text_is_located_by_offsets_not_by_text() -> None:
    """CherryHQ/cherry-studio#13646: ``**`` occurs many times; the byte offsets decide."""
    text = "**A** and **B** — **ö**"
    start = text.encode().index("**ö**".encode()) + 3 + 1  # the closing ** after ö
    body = _one_chunk_grounded(
        [{"text": text}],
        [
            {
                "segment": {"startIndex": start, "endIndex": start + 2, "text": "**"},
                "groundingChunkIndices": [0],
            }
        ],
    )
    (citation,) = (await run(body)).citations
    assert (citation.start, citation.end) == (len(text) - 2, len(text))


@pytest.mark.anyio
async def test_multi_part_text_uses_the_named_part() -> None:
    """Text, generated code, text: partIndex 2 names the second answer part (offsets part-relative)."""
    parts = [
        {"text": "Sum: "},
        {"executableCode": {"language": "PYTHON", "code": "print(1+1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
        {"text": "Zwei ist die Lösung."},
    ]
    second = "Zwei ist die Lösung."
    body = _one_chunk_grounded(
        parts,
        [
            {
                "segment": {
                    "partIndex": 3,
                    "startIndex": 9,
                    "endIndex": len(second.encode()),
                    "text": "die Lösung.",
                },
                "groundingChunkIndices": [0],
            }
        ],
    )
    response = await run(body)
    (citation,) = response.citations
    assert response.text_blocks[citation.block_id] == second
    assert second[citation.start : citation.end] == "die Lösung."
    code_call = next(c for c in response.tool_calls if c.name == "code_execution")
    code_result = next(r for r in response.tool_results if r.name == "code_execution")
    assert code_call.provider_executed and code_result.id == code_call.id and not code_result.is_error


@pytest.mark.anyio
async def test_a_code_result_pairs_only_with_its_own_pending_call() -> None:
    """Each codeExecutionResult takes the one call awaiting it; a second result (no call of its
    own) is not attached to the earlier, already answered call."""
    body = sse(
        chunk(
            {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_FAILED", "output": "boom"}},
            {"executableCode": {"language": "PYTHON", "code": "print(2)"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
            {"text": "Done."},
            finish="STOP",
        )
    )
    response = await run(body)
    calls = [c.id for c in response.tool_calls if c.name == "code_execution"]
    results = [(r.id, r.is_error) for r in response.tool_results if r.name == "code_execution"]
    assert len(calls) == 2 and len(set(calls)) == 2
    assert results[0] == (calls[0], False) and results[2] == (calls[1], False)
    orphan, failed = results[1]
    assert failed and orphan not in calls


@pytest.mark.anyio
async def test_grounding_split_across_chunks_early_metadata_and_trailing_usage_chunk() -> None:
    """Queries early (promptfoo#9436), chunks/supports on an earlier chunk than finishReason
    (vercel/ai#13123), empty metadata later, then a usage-only chunk without candidates."""
    text = "Größe: 324 m."
    body = sse(
        chunk({"text": "Größe:"}, grounding={"webSearchQueries": ["eiffel höhe"]}),
        chunk(
            {"text": " 324 m."},
            grounding={
                "groundingChunks": [{"web": {"uri": REDIRECT + "x", "title": "toureiffel.paris"}}],
                "groundingSupports": [
                    {"segment": {"endIndex": len(text.encode()), "text": text}, "groundingChunkIndices": [0]}
                ],
            },
        ),
        chunk(finish="STOP", grounding={}),
        {
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 7, "totalTokenCount": 12},
            "responseId": "r1",
        },
    )
    response = await run(body, Chunking.random(1, 7))
    (citation,) = response.citations
    assert (citation.start, citation.end, citation.cited_text) == (0, len(text), text)
    assert response.tool_calls[0].input == {"queries": ["eiffel höhe"]}
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (
        5,
        7,
    )


@pytest.mark.anyio
async def test_model_that_does_not_search_has_no_hosted_call() -> None:
    response = await run(sse(chunk({"text": "No need to search."}, finish="STOP", grounding={})))
    assert response.tool_calls == () and response.citations == ()


@pytest.mark.anyio
async def test_usage_is_not_double_counted_across_chunks() -> None:
    usage = {
        "promptTokenCount": 10,
        "candidatesTokenCount": 1,
        "thoughtsTokenCount": 4,
        "cachedContentTokenCount": 6,
    }
    final = {**usage, "candidatesTokenCount": 3}
    response = await run(
        sse(
            chunk({"text": "a"}, usage=usage),
            chunk({"text": "b"}, usage=usage),
            chunk({"text": "c"}, finish="STOP", usage=final),
        )
    )
    u = response.usage
    assert u is not None
    assert (
        u.input_tokens,
        u.output_tokens,
        u.reasoning_tokens,
        u.cache_read_tokens,
        u.non_cached_input_tokens,
    ) == (10, 7, 4, 6, 4)


# -- finish reasons, errors, blocks ------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content-filter"),
        ("RECITATION", "content-filter"),
        ("PROHIBITED_CONTENT", "content-filter"),
        ("SPII", "content-filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("OTHER", "unknown"),
    ],
)
async def test_finish_reason_mapping(wire: str, reason: str) -> None:
    response = await run(sse(chunk({"text": "x"}, finish=wire)))
    assert response.finish_reason == reason


@pytest.mark.anyio
async def test_several_function_calls_in_one_stream_and_stop_becomes_tool_calls() -> None:
    body = sse(
        chunk({"text": "Checking."}),
        chunk(
            {"functionCall": {"name": "a", "args": {"x": "é"}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "b", "args": {}}},
        ),
        chunk({"functionCall": {"name": "a", "args": {"x": "世界"}, "id": "given"}}, finish="STOP"),
    )
    response = await run(body)
    assert [(c.id, c.name, c.input) for c in response.tool_calls] == [
        ("call_r1_0", "a", {"x": "é"}),
        ("call_r1_1", "b", {}),
        ("given", "a", {"x": "世界"}),
    ]
    assert response.tool_calls[0].provider_metadata == {"google": {"thoughtSignature": "c2ln"}}
    assert response.finish_reason == "tool-calls"
    kinds = [type(e).__name__ for e in response.events]
    assert kinds.index("TextEnd") < kinds.index("ToolInputStart")


@pytest.mark.anyio
async def test_prompt_blocked_is_a_content_filter_finish() -> None:
    body = sse(
        {
            "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
            "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
        }
    )
    response = await run(body)
    assert response.finish_reason == "content-filter"
    assert response.steps[0].usage is not None
    assert response.events[-1].provider_metadata == {
        "id": None,
        "model": None,
        "block_reason": "PROHIBITED_CONTENT",
    }


@pytest.mark.anyio
async def test_stream_without_finish_reason_is_an_invalid_output_error() -> None:
    with pytest.raises(llmroute.InvalidProviderOutputError):
        await run(sse(chunk({"text": "cut"})))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (
            {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"},
            llmroute.RateLimitError,
        ),
        (
            {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"},
            llmroute.ProviderInternalError,
        ),
    ],
)
async def test_error_frame_mid_stream_is_typed(error: dict[str, Any], kind: type[Exception]) -> None:
    with pytest.raises(kind):
        await run(sse(chunk({"text": "partial"}), {"error": error}))


@pytest.mark.anyio
async def test_text_signature_arriving_mid_block_round_trips_on_the_text_part() -> None:
    """Gemini 3 may put the signature on a later chunk, even an empty-text one."""
    body = sse(
        chunk({"text": "thinking", "thought": True}),
        chunk({"text": "Hello"}),
        chunk({"text": " world"}),
        chunk({"text": "", "thoughtSignature": "c2lnLXRleHQ="}, finish="STOP"),
    )
    response = await run(body)
    reasoning, text = response.message.content
    assert isinstance(reasoning, llmroute.ReasoningPart) and isinstance(text, llmroute.TextPart)
    assert text == llmroute.TextPart("Hello world", {"google": {"thoughtSignature": "c2lnLXRleHQ="}})
    follow = llmroute.request(
        model=GEMINI.gemini("gemini-3-pro-preview"), messages=[*response.messages, llmroute.user("more")]
    )
    body_out = json.loads((await llmroute.Client().prepare(follow)).body)
    assert body_out["contents"][0] == {
        "role": "model",
        "parts": [
            {"text": "thinking", "thought": True},
            {"text": "Hello world", "thoughtSignature": "c2lnLXRleHQ="},
        ],
    }


@pytest.mark.anyio
async def test_recorded_reasoning_round_trips_as_thought_parts() -> None:
    interaction = Cassette.load(
        CASSETTES / "pydantic-ai/test_google/test_google_model_thinking_part_iter.yaml"
    ).interactions[0]
    request = request_from_body(interaction.request.json(), model_for(interaction))
    response, _ = await replay_generate(single(interaction), request)
    follow = msgspec.structs.replace(
        request, messages=(*request.messages, *response.messages, llmroute.user("ok"))
    )
    contents = json.loads((await llmroute.Client().prepare(follow)).body)["contents"]
    model_turn = contents[1]
    assert model_turn["role"] == "model"
    thought, answer = model_turn["parts"]
    assert thought["thought"] is True and thought["text"] == response.reasoning
    wire = interaction.response.body.decode()
    assert answer["text"] == response.text and answer["thoughtSignature"] in wire


# -- body lowering -------------------------------------------------------------------------------


async def body_of(request: llmroute.LLMRequest) -> dict[str, Any]:
    return json.loads((await llmroute.Client().prepare(request)).body)


@pytest.mark.anyio
async def test_generation_thinking_output_schema_and_hosted_tools() -> None:
    model = GEMINI.gemini("gemini-2.5-pro", thinking_budget=1024, include_thoughts=True)
    request = llmroute.request(
        model=model,
        system="Be brief.",
        prompt=[
            "Look:",
            llmroute.image(b"\x89PNG", "image/png"),
            llmroute.MediaPart("application/pdf", "gs://b/doc.pdf"),
        ],
        tools=[web_search(), url_context(), code_execution()],
        generation=llmroute.GenerationOptions(
            max_tokens=100,
            temperature=0.5,
            top_p=0.9,
            top_k=40,
            stop=("END",),
            seed=7,
            presence_penalty=0.1,
            frequency_penalty=0.2,
        ),
        provider_options={
            "google": {
                "safety_settings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}]
            }
        },
    )
    request = msgspec.structs.replace(
        request,
        output_schema=llmroute.OutputSchema(
            "answer",
            {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
        ),
    )
    body = await body_of(request)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "Look:"},
                {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(b"\x89PNG").decode()}},
                {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/doc.pdf"}},
            ],
        }
    ]
    assert body["tools"] == [{"googleSearch": {}}, {"urlContext": {}}, {"codeExecution": {}}]
    assert body["generationConfig"] == {
        "maxOutputTokens": 100,
        "temperature": 0.5,
        "topP": 0.9,
        "topK": 40,
        "stopSequences": ["END"],
        "seed": 7,
        "presencePenalty": 0.1,
        "frequencyPenalty": 0.2,
        "responseMimeType": "application/json",
        "responseSchema": {"type": "object", "properties": {"a": {"type": "string"}}},
        "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True},
    }
    assert body["safetySettings"][0]["threshold"] == "BLOCK_NONE"
    assert model.route.protocol.native_output_schema


@pytest.mark.anyio
async def test_tool_choice_and_tool_results_lowering() -> None:
    tool = llmroute.ToolDefinition(
        "get", "Get it.", {"type": "object", "properties": {"k": {"type": "string"}}}
    )
    history = [
        llmroute.user("go"),
        llmroute.assistant(
            llmroute.ToolCallPart("c1", "get", {"k": "v"}), llmroute.ToolCallPart("c2", "get", {"k": "w"})
        ),
        llmroute.tool_message(
            llmroute.ToolResultPart("c1", "get", "ok"),
            llmroute.ToolResultPart("c2", "get", "boom", is_error=True),
        ),
    ]
    for choice, config in [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        ("get", {"mode": "ANY", "allowedFunctionNames": ["get"]}),
    ]:
        body = await body_of(
            llmroute.request(model=GEMINI.gemini("m"), messages=history, tools=[tool], tool_choice=choice)
        )
        assert body["toolConfig"] == {"functionCallingConfig": config}
    assert body["contents"][2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "get", "response": {"name": "get", "content": "ok"}, "id": "c1"}},
            {"functionResponse": {"name": "get", "response": {"name": "get", "error": "boom"}, "id": "c2"}},
        ],
    }


@pytest.mark.anyio
async def test_unsupported_hosted_tool_is_a_clear_error() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="image_generation"):
        await body_of(
            llmroute.request(
                model=GEMINI.gemini("m"), prompt="x", tools=[llmroute.HostedTool("image_generation")]
            )
        )
    with pytest.raises(llmroute.InvalidRequestError, match="max_uses"):
        await body_of(llmroute.request(model=GEMINI.gemini("m"), prompt="x", tools=[web_search(max_uses=3)]))


def test_schema_sanitiser() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "$defs": {
            "Pet": {
                "type": "object",
                "properties": {"name": {"type": "string", "format": "email"}},
                "required": ["name", "ghost"],
            }
        },
        "properties": {
            "pet": {"$ref": "#/$defs/Pet", "description": "The pet."},
            "maybe": {
                "anyOf": [{"type": "integer", "format": "int64"}, {"type": "null"}],
                "description": "n",
            },
            "kind": {"const": "cat"},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}, "examples": [["a"]]},
            "level": {"type": "integer", "enum": [1, 2]},
            "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            "self": {"$ref": "#/$defs/Missing"},
        },
        "required": ["pet", "kind"],
    }
    assert sanitize_schema(schema) == {
        "type": "object",
        "properties": {
            "pet": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "description": "The pet.",
            },
            "maybe": {"type": "integer", "format": "int64", "description": "n", "nullable": True},
            "kind": {"enum": ["cat"]},
            "tags": {"type": "array", "items": {"type": "string"}, "nullable": True},
            "level": {"type": "integer", "description": "Allowed values: 1, 2."},
            "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
            "self": {"type": "object"},
        },
        "required": ["pet", "kind"],
    }
    recursive = {
        "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
        "$ref": "#/$defs/N",
    }
    deep = sanitize_schema(recursive)
    for _ in range(10):
        deep = deep["properties"]["next"]
    assert deep["type"] == "object"  # recursion is cut, never infinite


def test_schema_sanitiser_ref_siblings_win_and_all_of_merges() -> None:
    pet = {"type": "object", "description": "Any pet.", "properties": {"a": {"type": "string"}}}
    schema = {"$defs": {"Pet": pet}, "$ref": "#/$defs/Pet", "description": "This pet."}
    assert sanitize_schema(schema)["description"] == "This pet."  # a $ref's sibling overrides
    merged = sanitize_schema(
        {
            "allOf": [
                {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
                {"properties": {"x": {"type": "string"}, "y": {"type": "integer"}}, "required": ["x", "y"]},
            ]
        }
    )
    assert merged["required"] == ["x", "y"]  # merged once each, in order
    assert set(merged["properties"]) == {"x", "y"}
    # the node's own properties and required sit beside allOf's (pydantic emits this for a
    # model extending another): neither side is lost
    extended = sanitize_schema(
        {
            "type": "object",
            "allOf": [{"properties": {"base": {"type": "string"}}, "required": ["base"]}],
            "properties": {"own": {"type": "integer"}},
            "required": ["own"],
        }
    )
    assert extended["properties"] == {"base": {"type": "string"}, "own": {"type": "integer"}}
    assert extended["required"] == ["base", "own"]


@pytest.mark.anyio
async def test_api_key_env_fallback_and_missing_key_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    request = llmroute.request(model=google.configure().gemini("gemini-2.5-flash"), prompt="x")
    with pytest.raises(llmroute.AuthenticationError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        await llmroute.Client().prepare(request)
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google-env")
    assert (await llmroute.Client().prepare(request)).headers["x-goog-api-key"] == "from-google-env"
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini-env")
    prepared = await llmroute.Client().prepare(request)
    assert prepared.headers["x-goog-api-key"] == "from-gemini-env"
    assert "from-gemini-env" not in repr(prepared)
    assert prepared.url == URL


# -- Code Assist and Vertex ----------------------------------------------------------------------

CODE_ASSIST_URL = "https://cloudcode-pa.googleapis.com/v1internal:streamGenerateContent?alt=sse"


def tokens() -> Any:
    issued: list[str] = []

    async def provider() -> str:
        issued.append(f"ya29.token-{len(issued)}")
        return issued[-1]

    provider.issued = issued  # type: ignore[attr-defined]
    return provider


@pytest.mark.anyio
async def test_code_assist_prepared_request_wraps_the_gemini_body() -> None:
    provider = tokens()
    model = google.code_assist(access_token=provider, project="my-proj").gemini("gemini-2.5-flash")
    request = llmroute.request(model=model, system="S", prompt="東京タワーの高さは?", tools=[web_search()])
    client = llmroute.Client()
    prepared = await client.prepare(request)
    assert prepared.url == CODE_ASSIST_URL
    assert prepared.headers["authorization"] == "Bearer ya29.token-0"
    assert "x-goog-api-key" not in prepared.headers
    assert prepared.headers["accept"] == "text/event-stream"
    plain = await client.prepare(
        llmroute.request(
            model=GEMINI.gemini("gemini-2.5-flash"),
            system="S",
            prompt="東京タワーの高さは?",
            tools=[web_search()],
        )
    )
    assert json.loads(prepared.body) == {
        "model": "gemini-2.5-flash",
        "project": "my-proj",
        "request": json.loads(plain.body),
    }
    # the token provider is asked on every request (so it can refresh)
    assert (await client.prepare(request)).headers["authorization"] == "Bearer ya29.token-1"
    assert "ya29" not in repr(prepared)


def _wrap_frames(body: bytes) -> bytes:
    out = b""
    for frame in body.split(b"\r\n\r\n"):
        if frame.startswith(b"data: "):
            out += b'data: {"response": ' + frame[6:] + b', "traceId": "5c2f0e7a"}\r\n\r\n'
            out += b"data:  \r\n\r\n"  # a blank frame between chunks is skipped, not an error
    return out


CODE_ASSIST_CASES = [
    ("opencode/gemini/drives-a-tool-loop.yaml", 0),
    ("pydantic-ai/test_google/test_google_model_thinking_part_iter.yaml", 0),
    ("pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml", 0),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("rel", "index"), CODE_ASSIST_CASES)
async def test_code_assist_unwraps_every_frame_to_identical_events(rel: str, index: int) -> None:
    interaction = Cassette.load(CASSETTES / rel).interactions[index]
    request = request_from_body(interaction.request.json(), model_for(interaction))
    plain = await replay_events(single(interaction), request)
    model = google.code_assist(access_token="ya29.static", project="p").gemini(model_for(interaction).id)
    wrapped = _cassette(_wrap_frames(interaction.response.body), CODE_ASSIST_URL)
    ours = await replay_events(wrapped, msgspec.structs.replace(request, model=model), Chunking.random(5, 40))
    assert ours == plain


@pytest.mark.anyio
async def test_code_assist_grounded_fixture_and_error_frame() -> None:
    """websearch.md §1.6: a wrapped grounded answer; an error object is not wrapped."""
    inner = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "東京タワーは333mです。"}]},
                "finishReason": "STOP",
                "groundingMetadata": {
                    "webSearchQueries": ["東京タワー 高さ"],
                    "groundingChunks": [{"web": {"uri": REDIRECT + "ccc", "title": "tokyotower.co.jp"}}],
                    "groundingSupports": [
                        {
                            "segment": {"endIndex": 31, "text": "東京タワーは333mです。"},
                            "groundingChunkIndices": [0],
                        }
                    ],
                },
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 9,
            "candidatesTokenCount": 11,
            "totalTokenCount": 140,
            "thoughtsTokenCount": 120,
        },
        "modelVersion": "gemini-2.5-flash",
    }
    model = google.code_assist(access_token="ya29.static", project="p").gemini("gemini-2.5-flash")
    body = sse({"response": inner, "traceId": "5c2f0e7a1b9d4c3e"})
    response, transport = await replay_generate(
        _cassette(body, CODE_ASSIST_URL), llmroute.request(model=model, prompt="x")
    )
    (citation,) = response.citations
    assert (citation.start, citation.end, response.text) == (0, 13, "東京タワーは333mです。")
    assert transport.requests[0].headers["authorization"] == "Bearer ya29.static"
    error = sse({"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}})
    with pytest.raises(llmroute.RateLimitError):
        await replay_generate(
            _cassette(error, CODE_ASSIST_URL),
            llmroute.request(model=model, prompt="x"),
            retry=llmroute.RetryPolicy.none(),
        )


def test_code_assist_is_a_composition_of_the_gemini_protocol() -> None:
    from llmroute.protocols import gemini

    protocol = google.code_assist(access_token="t", project="p").gemini("m").route.protocol
    assert protocol.name == "gemini-code-assist"
    assert protocol.on_halt is gemini.PROTOCOL.on_halt and protocol.new_state is gemini.PROTOCOL.new_state


def test_code_assist_needs_a_project_and_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    with pytest.raises(llmroute.NoRouteError, match="project="):
        google.code_assist(access_token="t")
    with pytest.raises(llmroute.AuthenticationError, match="access_token="):
        google.code_assist(project="p")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("location", "host"),
    [
        ("us-central1", "https://us-central1-aiplatform.googleapis.com"),
        ("global", "https://aiplatform.googleapis.com"),
    ],
)
async def test_vertex_prepared_request(location: str, host: str) -> None:
    provider = tokens()
    model = vertex.configure(project="proj-1", location=location, access_token=provider).gemini(
        "gemini-2.5-pro", include_thoughts=True
    )
    prepared = await llmroute.Client().prepare(llmroute.request(model=model, prompt="hi"))
    assert prepared.url == (
        f"{host}/v1/projects/proj-1/locations/{location}/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert prepared.headers["authorization"] == "Bearer ya29.token-0"
    assert json.loads(prepared.body) == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
    }


def test_vertex_env_fallbacks_and_missing_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.delenv("GOOGLE_CLOUD_LOCATION", raising=False)
    with pytest.raises(llmroute.NoRouteError, match=r"project= \(or GOOGLE_CLOUD_PROJECT\) and location="):
        vertex.configure(access_token="t")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "envproj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    v = vertex.configure(access_token="t")
    assert (
        v.base_url
        == "https://europe-west4-aiplatform.googleapis.com/v1/projects/envproj/locations/europe-west4/publishers/google"
    )
    # without google-auth installed (with it, ADC is asked: tests/unit/test_environment.py)
    monkeypatch.setattr("llmroute.providers.vertex.has_google_auth", lambda: False)
    with pytest.raises(llmroute.AuthenticationError, match="access_token="):
        vertex.configure()
