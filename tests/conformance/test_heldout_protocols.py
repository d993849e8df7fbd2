"""Protocol defects 4,149 held-out recordings found (issue #42), each on recorded bytes or on the
shape the provider documents: every test failed before its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

import llmroute
from llmroute.providers import azure, google
from llmroute.testing import Cassette, Chunking, Interaction, RecordedRequest, RecordedResponse
from tests.helpers import load, replay_events, replay_generate

CHUNKINGS = [Chunking.whole(), Chunking.random(7, 16), Chunking.bytewise()]


# -- Azure Chat: the first chunk is a prompt-filter report with an empty id and model ---------------

AZURE = "vercel-ai/openai/chat/azure-model-router.1.chunks.yaml"


@pytest.mark.anyio
@pytest.mark.parametrize("chunking", CHUNKINGS, ids=str)
async def test_azure_streams_report_the_response_id_and_model(chunking: Chunking) -> None:
    body = load(AZURE).interactions[0].response.body.decode()
    chunks: list[dict[str, Any]] = [
        json.loads(line[5:])
        for line in body.splitlines()
        if line.startswith("data:") and "[DONE]" not in line
    ]
    assert chunks[0]["id"] == "" and chunks[0]["model"] == "" and "prompt_filter_results" in chunks[0]
    model = azure.configure("vercel-fixtures", api_key="az-test").chat("model-router")
    events = await replay_events(AZURE, llmroute.request(model, prompt="x"), chunking)
    finish = next(e for e in events if isinstance(e, llmroute.StepFinish))
    assert finish.provider_metadata == {"id": chunks[1]["id"], "model": chunks[1]["model"]}
    assert finish.usage is not None and finish.usage.model == "gpt-5-nano-2025-08-07"


# -- Gemini: code execution and Gemini 3 server-side tool parts keep what must go back ------------

GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-flash-preview:generateContent"


def _gemini(parts: list[dict[str, Any]]) -> Cassette:
    body = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-3-flash-preview",
        "responseId": "resp-1",
    }
    response = RecordedResponse(200, {"content-type": ["application/json"]}, json.dumps(body).encode())
    return Cassette([Interaction(RecordedRequest("POST", GEMINI_URL, {}, b""), response)])


async def _next_turn_parts(parts: list[dict[str, Any]]) -> tuple[llmroute.LLMResponse, list[dict[str, Any]]]:
    """The answer made of ``parts``, and the model turn the next request sends back for it."""
    model = google.configure("g-test").model("gemini-3-flash-preview")
    request = llmroute.request(model, prompt="x", generation=llmroute.GenerationOptions(stream=False))
    response, _ = await replay_generate(_gemini(parts), request)
    follow = llmroute.request(model, messages=[*request.messages, *response.messages, llmroute.user("go on")])
    async with llmroute.Client() as client:
        body = json.loads((await client.prepare(follow)).body)
    return response, body["contents"][1]["parts"]


# The shape Gemini documents for code execution (ai.google.dev/gemini-api/docs/code-execution), with
# the thought signatures Gemini 3 puts on its parts (ai.google.dev/gemini-api/docs/thought-signatures).
CODE_PARTS: list[dict[str, Any]] = [
    {
        "executableCode": {"language": "PYTHON", "code": "print(sum(range(101)))"},
        "thoughtSignature": "c2lnLWNvZGU=",
    },
    {
        "codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "5050\n"},
        "thoughtSignature": "c2lnLXJlcw==",
    },
    {"text": "The sum is 5050."},
]


@pytest.mark.anyio
async def test_gemini_code_execution_parts_keep_their_thought_signatures() -> None:
    response, sent = await _next_turn_parts(CODE_PARTS)
    assert [r.name for r in response.tool_results] == ["code_execution"]
    assert sent[:2] == CODE_PARTS[:2]  # code and result go back with their signatures
    assert sent[2]["text"] == "The sum is 5050."


# Gemini 3 with built-in tools beside function declarations (``toolConfig.
# includeServerSideToolInvocations``): the server's own calls arrive as ``toolCall``/``toolResponse``
# parts (google-genai ``types.Part.tool_call`` / ``tool_response``: id, toolType, args / response),
# which "the client is expected to echo back".
SERVER_PARTS: list[dict[str, Any]] = [
    {
        "toolCall": {
            "id": "tc_1",
            "toolType": "GOOGLE_SEARCH_WEB",
            "args": {"queries": ["weather in Paris"]},
        },
        "thoughtSignature": "c2lnLWNhbGw=",
    },
    {
        "toolResponse": {
            "id": "tc_1",
            "toolType": "GOOGLE_SEARCH_WEB",
            "response": {"results": ["Sunny, 21 C"]},
        }
    },
    {
        "functionCall": {"id": "fc_1", "name": "book_table", "args": {"city": "Paris"}},
        "thoughtSignature": "c2lnLWZj",
    },
]


@pytest.mark.anyio
async def test_gemini_3_server_tool_parts_are_hosted_calls_sent_back_as_they_came() -> None:
    response, sent = await _next_turn_parts(SERVER_PARTS)
    hosted = [c for c in response.tool_calls if c.provider_executed]
    assert [(c.id, c.name, c.input) for c in hosted] == [
        ("tc_1", "google_search_web", {"queries": ["weather in Paris"]})
    ]
    results = [r for r in response.tool_results if r.provider_executed]
    assert [(r.id, r.result) for r in results] == [("tc_1", {"results": ["Sunny, 21 C"]})]
    assert response.text == ""  # no empty text block read from the parts
    assert not [e for e in response.events if isinstance(e, llmroute.TextStart)]
    assert [c.name for c in response.tool_calls if not c.provider_executed] == ["book_table"]
    assert sent == SERVER_PARTS  # no {"text": ""} in their place


# -- Code Assist: a Google Cloud backend without the Gemini API's File Search stores ---------------


@pytest.mark.anyio
async def test_code_assist_refuses_file_search_by_name_before_sending() -> None:
    from llmroute.protocols import gemini_code_assist
    from llmroute.route.auth import NoAuth
    from llmroute.route.model import Model

    route = gemini_code_assist.route("https://cloudcode-pa.googleapis.com", NoAuth(), project="p")
    model = Model("gemini-2.5-pro", route, "google")
    search = llmroute.request(model, prompt="x", tools=[llmroute.hosted.web_search()])
    files = llmroute.request(
        model, prompt="x", tools=[llmroute.hosted.file_search(file_search_store_names=["fileSearchStores/s"])]
    )
    async with llmroute.Client() as client:
        assert "googleSearch" in json.loads((await client.prepare(search)).body)["request"]["tools"][0]
        with pytest.raises(llmroute.InvalidRequestError, match="has no hosted 'file_search' tool") as raised:
            await client.prepare(files)
    assert raised.value.param == "tools[0]"


# -- a @tool given to llmroute.request(tools=...) is run by generate() -----------------------------

LOOP = "opencode/openai-compatible-chat/xai-grok-4-3-drives-a-tool-loop.yaml"


@pytest.mark.anyio
@pytest.mark.parametrize("also_passed", [False, True])
async def test_a_tool_given_to_the_request_is_run_by_generate(also_passed: bool) -> None:
    from llmroute.providers import xai

    ran: list[str] = []

    def get_weather(city: str) -> str:
        ran.append(city)
        return f"Sunny in {city}"

    weather = llmroute.tool(get_weather, name="get_weather", description="Weather")
    body = load(LOOP).interactions[0].request.json()
    request = llmroute.request(
        xai.configure("xai-test").chat(body["model"]), prompt="weather?", tools=[weather]
    )
    options: dict[str, Any] = {"tools": [weather]} if also_passed else {}
    response, _ = await replay_generate(LOOP, request, **options)
    assert len(ran) == 1 and len(response.steps) == 2  # before: one step ending on an unanswered call
    assert response.finish_reason == "stop"
    assert [r.name for r in response.tool_results] == ["get_weather"]
