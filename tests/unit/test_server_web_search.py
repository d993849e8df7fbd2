# ruff: noqa: RUF001  (real provider text: full-width punctuation is intended)
"""The server-side ``web_search`` tool: schema per engine set, config loading, injection policy per
call chain, execution inside the tool runtime, GLM and Gemini backends on realistic / recorded bytes,
backend failures as recoverable tool errors."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmroute
from llmroute import websearch
from llmroute.providers import compatible, glm, google
from llmroute.schema.errors import ConfigError
from llmroute.schema.events import Finish, LLMEvent, ToolCall, ToolError, ToolResult
from llmroute.schema.usage import Usage
from llmroute.testing import Cassette, Chunking, Interaction, ReplayTransport
from llmroute.testing.cassette import RecordedRequest, RecordedResponse
from llmroute.websearch import Engine, SearchOutcome, SearchQuery, ServerWebSearch
from llmroute.websearch.backends import SearchHit
from llmroute.websearch.server_tool import DESCRIPTION

from ..helpers import CASSETTES, GLM_HIT_1, GLM_HIT_2, GLM_URL
from .test_tools_runtime import URL, calls_turn, of, scripted_model, sent, text_turn

# -- engines and backends used across the tests ----------------------------------------------------


class Intent(msgspec.Struct, frozen=True):
    web_search: bool
    google_preferred: bool = False


def classifier(text: str) -> Intent:
    """A stand-in for ``websearch.intent.classify_intent``: the same two flags."""
    lowered = text.lower()
    return Intent("search" in lowered or "google" in lowered, "google" in lowered)


class FakeBackend:
    def __init__(self, outcome: SearchOutcome | Exception) -> None:
        self.outcome = outcome
        self.queries: list[SearchQuery] = []

    async def search(self, ctx: Any, query: SearchQuery) -> SearchOutcome:
        self.queries.append(query)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


GLM = glm.configure("glm-test-key").chat("glm-4.7")
GEMINI = google.configure("gemini-test-key").gemini("gemini-2.5-pro")


def engines(n: int, *, default: int | None = None) -> list[Engine]:
    rows = [
        ("glm", GLM, "GLM: Chinese / domestic news"),
        ("google", GEMINI, "Gemini: global web"),
        ("bing", GLM, ""),
    ]
    return [Engine(id, model, desc, default=(i == default)) for i, (id, model, desc) in enumerate(rows[:n])]


# -- 1. the tool schema ----------------------------------------------------------------------------


def test_schema_for_one_engine() -> None:
    definition = ServerWebSearch(engines(1)).definition
    assert (definition.name, definition.description) == ("web_search", DESCRIPTION)
    assert DESCRIPTION == "Perform web search for news and web pages using configured search engines."
    schema = definition.input_schema
    assert schema["required"] == ["query"]
    assert list(schema["properties"]) == ["engine", "query", "recency", "count"]
    assert schema["properties"]["engine"] == {
        "type": "string",
        "enum": ["glm"],
        "description": "Search engine to use. glm: GLM: Chinese / domestic news. Default: glm.",
    }
    assert schema["properties"]["recency"]["enum"] == ["oneDay", "oneWeek", "oneMonth", "oneYear", "noLimit"]
    count = schema["properties"]["count"]
    assert (count["type"], count["minimum"], count["maximum"]) == ("integer", 1, 50)


def test_schema_for_two_engines_with_a_default_and_three_without() -> None:
    two = ServerWebSearch(engines(2, default=1)).definition.input_schema["properties"]["engine"]
    assert two["enum"] == ["glm", "google"]
    assert two["description"] == (
        "Search engine to use. glm: GLM: Chinese / domestic news; google: Gemini: global web. Default: google."
    )
    three = ServerWebSearch(engines(3)).definition.input_schema["properties"]["engine"]
    assert three["enum"] == ["glm", "google", "bing"]
    assert "Default" not in three["description"] and three["description"].endswith("; bing.")


def test_engine_resolution_defaults_and_errors() -> None:
    one = ServerWebSearch(engines(1))
    assert one.engine(None) == one.engines[0]
    with_default = ServerWebSearch(engines(2, default=1))
    assert with_default.engine(None) == with_default.engines[1]
    assert with_default.engine("glm") == with_default.engines[0]
    choose = ServerWebSearch(engines(3))
    assert choose.engine(None) == "web_search: choose an engine; valid engines: glm, google, bing"
    assert choose.engine("yahoo") == "web_search: unknown engine 'yahoo'; valid engines: glm, google, bing"


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        ([], "engines: at least one search engine is required"),
        ([Engine("a", GLM), Engine("a", GLM)], "engines[1].id: duplicate engine id 'a'"),
        (
            [Engine("a", GLM, default=True), Engine("b", GLM, default=True)],
            "more than one default engine (a, b)",
        ),
        ([Engine("", GLM)], "engines[0].id: an engine id is required"),
    ],
)
def test_bad_engine_sets_are_config_errors(given: list[Engine], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        ServerWebSearch(given)
    assert needle in str(info.value)
    assert isinstance(info.value, llmroute.InvalidRequestError)


CONFIG: dict[str, Any] = {
    "webSearch": {
        "engines": [
            {
                "id": "glm",
                "providerKey": "glm",
                "description": "GLM: Chinese / domestic news",
                "default": True,
            },
            {"id": "google", "providerKey": "gemini", "description": "Gemini: global web"},
        ],
        "injectPolicy": "always",
    }
}


def test_from_config_resolves_provider_keys() -> None:
    tool = ServerWebSearch.from_config(CONFIG, {"glm": GLM, "gemini": GEMINI})
    assert [(e.id, e.model, e.default) for e in tool.engines] == [
        ("glm", GLM, True),
        ("google", GEMINI, False),
    ]
    assert tool.inject_policy == "always"
    same = ServerWebSearch.from_config(json.dumps(CONFIG), {"glm": GLM, "gemini": GEMINI})
    assert same.definition == tool.definition


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (
            lambda c: c["webSearch"]["engines"][1].update(providerKey="nope"),
            "$.webSearch.engines[1].providerKey: 'nope' is not a configured model (known: gemini, glm)",
        ),
        (lambda c: c["webSearch"]["engines"][0].pop("id"), "`$.webSearch.engines[0]`"),
        (lambda c: c["webSearch"].update(injectPolicy="sometimes"), "`$.webSearch.injectPolicy`"),
        (lambda c: c["webSearch"]["engines"][0].update(extra=1), "`$.webSearch.engines[0]`"),
        (
            lambda c: c["webSearch"]["engines"][1].update(default=True),
            "$.webSearch.engines: more than one default",
        ),
    ],
)
def test_bad_config_names_the_path(mutate: Any, needle: str) -> None:
    config = json.loads(json.dumps(CONFIG))
    mutate(config)
    with pytest.raises(ConfigError) as info:
        ServerWebSearch.from_config(config, {"glm": GLM, "gemini": GEMINI})
    assert needle in str(info.value)


def test_from_config_rejects_bad_json() -> None:
    with pytest.raises(ConfigError, match="not valid JSON"):
        ServerWebSearch.from_config("{", {})


# -- 2. injection ----------------------------------------------------------------------------------


def _req(prompt: str) -> llmroute.LLMRequest:
    return llmroute.request(scripted_model(), prompt=prompt)


def _tool_names(request: llmroute.LLMRequest) -> list[str]:
    return [t.name for t in request.tools if isinstance(t, llmroute.ToolDefinition)]


def test_selective_injects_only_with_intent() -> None:
    tool = ServerWebSearch(engines(2, default=0), classify=classifier)
    with_intent = tool.apply(_req("Please search the news about GLM-5"))
    assert _tool_names(with_intent) == ["web_search"]
    assert with_intent.metadata == {
        "web_search": {"injected": True, "reason": "intent", "engines": ("glm", "google")}
    }
    without = tool.apply(_req("What is 2 + 2?"))
    assert _tool_names(without) == []
    assert without.metadata == {"web_search": {"injected": False, "reason": "no-intent", "engines": ()}}
    assert tool.decide(_req("What is 2 + 2?")) == websearch.Injection(False, "no-intent")


def test_only_the_latest_user_message_counts() -> None:
    tool = ServerWebSearch(engines(1), classify=classifier)
    history = [llmroute.user("search the web for x"), llmroute.assistant("done"), llmroute.user("thanks")]
    assert not tool.decide(llmroute.request(scripted_model(), messages=history)).injected


def test_always_injects_and_replaces_a_same_named_request_tool() -> None:
    tool = ServerWebSearch(engines(1), inject_policy="always", classify=classifier)
    client_def = llmroute.ToolDefinition("web_search", "client's own", {"type": "object"})
    other = llmroute.ToolDefinition("calc")
    applied = tool.apply(llmroute.request(scripted_model(), prompt="2 + 2?", tools=[client_def, other]))
    assert applied.tools == (other, tool.definition)
    assert tool.decide(_req("2 + 2?")) == websearch.Injection(True, "always", ("glm",))


def test_google_preferred_narrows_the_engine_enum_with_fallback() -> None:
    tool = ServerWebSearch(engines(3, default=0), classify=classifier)
    narrowed = tool.apply(_req("google it: weather in Paris"))
    (definition,) = narrowed.tools
    assert isinstance(definition, llmroute.ToolDefinition)
    assert definition.input_schema["properties"]["engine"]["enum"] == ["google"]
    # no Gemini-backed engine: all stay
    glm_only = ServerWebSearch([Engine("glm", GLM, default=True), Engine("bing", GLM)], classify=classifier)
    assert glm_only.decide(_req("google it: weather in Paris")).engines == ("glm", "bing")
    # an engine counts as Google by its route (Gemini) or by its id
    named = Engine("my-google", GLM)
    assert named.google and Engine("g", GEMINI).google and not Engine("glm", GLM).google


def test_sticky_is_set_by_a_call_and_reset_by_stop() -> None:
    tool = ServerWebSearch(engines(1), classify=classifier)
    session = tool.session(None, _req("hello"))  # type: ignore[arg-type]
    assert _tool_names(session.prepare(_req("hello"))) == []
    result = ToolResult("c1", "web_search", {"summary": ""})
    step = llmroute.StepResult(0, llmroute.assistant(), "tool-calls", None, (result,))
    session.step_finished(step)
    assert session.decision() == websearch.Injection(True, "sticky", ("glm",))
    session.step_finished(llmroute.StepResult(1, llmroute.assistant("ok"), "stop", None))
    assert session.decision() == websearch.Injection(False, "reset")
    # intent-sticky is reset by a stop step too
    intent = tool.session(None, _req("search for it"))  # type: ignore[arg-type]
    assert intent.decision().injected
    intent.step_finished(llmroute.StepResult(0, llmroute.assistant("ok"), "stop", None))
    assert not intent.decision().injected


def test_default_classifier_is_the_citation_contracts() -> None:
    tool = ServerWebSearch(engines(2, default=0))
    assert tool.decide(_req("web search: latest GLM release")).injected
    assert not tool.decide(_req("find the bug in this function")).injected
    assert tool.decide(_req("谷歌搜索 东京塔")).engines == ("google",)


# -- 3. execution inside the runtime --------------------------------------------------------------

HITS = (SearchHit("东京塔_百度百科", "https://baike.baidu.com/item/x", "百度百科", "2025-03-02"),)


async def _run(
    interactions: list[Interaction], tool: ServerWebSearch, request: llmroute.LLMRequest, **kwargs: Any
) -> tuple[list[LLMEvent], ReplayTransport]:
    transport = ReplayTransport(interactions, check_url=False)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        events = [e async for e in client.stream(request, tools=[tool], **kwargs)]
    return events, transport


@pytest.mark.anyio
async def test_a_web_search_call_runs_on_the_backend_and_the_main_model_continues() -> None:
    backend = FakeBackend(
        SearchOutcome("东京塔高333米。", HITS, Usage(input_tokens=1890, output_tokens=60), "glm-4.7")
    )
    tool = ServerWebSearch([Engine("glm", GLM, "GLM", backend=backend)], classify=classifier)
    call = ToolCall("c1", "web_search", {"query": "东京塔 高度", "recency": "oneYear", "count": 3})
    events, transport = await _run(
        [calls_turn(call), text_turn("Tokyo Tower is 333 m tall.")],
        tool,
        _req("search: how tall is Tokyo Tower?"),
    )
    assert backend.queries == [SearchQuery("东京塔 高度", "oneYear", 3)]
    (result,) = of(events, ToolResult)
    assert result.id == "c1" and not result.is_error and not result.provider_executed
    assert result.result == {
        "summary": "东京塔高333米。",
        "hits": [
            {
                "title": "东京塔_百度百科",
                "url": "https://baike.baidu.com/item/x",
                "source": "百度百科",
                "date": "2025-03-02",
            }
        ],
        "engine": "glm",
    }
    # the backend's usage is accounted on the result, apart from the main model's
    assert result.provider_metadata == {
        "web_search": {
            "engine": "glm",
            "model": "glm-4.7",
            "usage": {"input_tokens": 1890, "output_tokens": 60},
            "cost": None,  # this backend does not say what it cost, so response.cost is None
        }
    }
    (finish,) = of(events, Finish)
    assert finish.reason == "stop" and finish.usage == Usage(input_tokens=30, output_tokens=3)
    # the second request carries the call and its result; both steps offered the tool
    second = sent(transport, 1)
    assert second["messages"][-1]["content"][0]["id"] == "c1"
    assert [t["name"] for t in sent(transport, 0)["tools"]] == ["web_search"]
    assert [t["name"] for t in second["tools"]] == ["web_search"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("input", "needle"),
    [
        ({"engine": "yahoo", "query": "x"}, "unknown engine 'yahoo'; valid engines: glm, google, bing"),
        ({"query": "x"}, "choose an engine; valid engines: glm, google, bing"),
        ({"engine": "glm"}, "Invalid input for tool web_search"),
        ({"engine": "glm", "query": "x", "count": 51}, "Invalid input for tool web_search"),
        ({"engine": "glm", "query": "x", "recency": "lastDecade"}, "Invalid input for tool web_search"),
    ],
)
async def test_bad_calls_come_back_to_the_model_as_tool_errors(input: dict[str, Any], needle: str) -> None:
    backend = FakeBackend(SearchOutcome("unused"))
    rows = [Engine(e.id, e.model, e.description, backend=backend) for e in engines(3)]
    tool = ServerWebSearch(rows, inject_policy="always", classify=classifier)
    events, transport = await _run(
        [calls_turn(ToolCall("c1", "web_search", input)), text_turn("sorry")], tool, _req("x")
    )
    (error,) = of(events, ToolError)
    assert needle in error.message
    (result,) = of(events, ToolResult)
    assert result.is_error and result.result == error.message
    assert backend.queries == [] and transport.remaining == 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("failure", "needle"),
    [
        (llmroute.QuotaExceededError("glm: 余额不足 sk-secret-123"), "the search quota is exhausted"),
        (llmroute.RateLimitError("slow down"), "rate limited"),
        (llmroute.TimeoutError("late", deadline="total"), "timed out"),
        (
            llmroute.ProviderInternalError("boom sk-secret-123", http=llmroute.HttpContext(status=503)),
            "failed (ProviderInternalError, HTTP 503)",
        ),
    ],
)
async def test_backend_failures_are_recoverable_tool_errors(failure: Exception, needle: str) -> None:
    tool = ServerWebSearch([Engine("glm", GLM, backend=FakeBackend(failure))], inject_policy="always")
    events, _ = await _run(
        [calls_turn(ToolCall("c1", "web_search", {"query": "x"})), text_turn("I could not search.")],
        tool,
        _req("x"),
    )
    (error,) = of(events, ToolError)
    assert needle in error.message and "secret" not in error.message
    assert of(events, Finish)[0].reason == "stop"


@pytest.mark.anyio
async def test_server_calls_continue_only_up_to_a_cap_without_stop_when() -> None:
    backend = FakeBackend(SearchOutcome("s"))
    tool = ServerWebSearch([Engine("glm", GLM, backend=backend)], inject_policy="always")
    turns = [calls_turn(ToolCall(f"c{i}", "web_search", {"query": "x"})) for i in range(12)]
    _, transport = await _run(turns, tool, _req("x"))
    assert len(transport.requests) == 9 and len(backend.queries) == 9


@pytest.mark.anyio
async def test_a_client_tool_call_beside_a_search_ends_the_chain_for_the_caller() -> None:
    backend = FakeBackend(SearchOutcome("s"))
    tool = ServerWebSearch([Engine("glm", GLM, backend=backend)], inject_policy="always")
    request = llmroute.request(scripted_model(), prompt="x", tools=[llmroute.ToolDefinition("lookup")])
    calls = [ToolCall("c1", "web_search", {"query": "x"}), ToolCall("c2", "lookup", {})]
    events, transport = await _run([calls_turn(*calls)], tool, request)
    assert [r.id for r in of(events, ToolResult)] == ["c1"]
    assert of(events, Finish)[0].reason == "tool-calls" and transport.remaining == 0


# -- backends on realistic and recorded bytes ------------------------------------------------------


def _glm_chunk(delta: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    return {
        "id": "20251010153012a1b2c3d4e5f6a7b8",
        "created": 1760081412,
        "model": "glm-4.7",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **top,
    }


def _sse(url: str, chunks: list[dict[str, Any]], status: int = 200) -> Interaction:
    body = "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Interaction(
        RecordedRequest("POST", url, {}, b""),
        RecordedResponse(status, {"content-type": ["text/event-stream"]}, body.encode()),
    )


# GLM streams its hits on some chunks (repeated, with junk and link-less entries) beside the text.
GLM_SEARCH = _sse(
    GLM_URL,
    [
        _glm_chunk({"role": "assistant", "content": ""}, web_search=[GLM_HIT_1, "junk", {"title": "无链接"}]),
        _glm_chunk({"content": "东京塔高333米[ref_1]，"}, web_search=[GLM_HIT_1, GLM_HIT_2]),
        _glm_chunk({"content": "于1958年建成[ref_2]。"}, web_search=None),
        _glm_chunk(
            {"content": ""},
            "stop",
            usage={"prompt_tokens": 1890, "completion_tokens": 60, "total_tokens": 1950},
        ),
    ],
)
GLM_QUOTA = Interaction(
    RecordedRequest("POST", GLM_URL, {}, b""),
    RecordedResponse(
        429,
        {"content-type": ["application/json"]},
        json.dumps(
            {"error": {"code": "1113", "message": "余额不足或无可用资源包,请充值。"}}, ensure_ascii=False
        ).encode(),
    ),
)

MAIN_URL = "http://127.0.0.1:9000/v1/chat/completions"
MAIN = compatible.configure(base_url="http://127.0.0.1:9000/v1", api_key="upstream-key").model("m")


def _main_chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-DcLQeieQn9xQe2QqsLPi7rN15bnJF",
        "object": "chat.completion.chunk",
        "created": 1778031208,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        if delta is not None
        else [],
        "usage": usage,
    }


def main_calls_search(arguments: str) -> Interaction:
    """The main Chat model's tool call, shaped and split like a recorded OpenAI stream."""
    head = {
        "index": 0,
        "id": "call_tyZNHs2AudCbG4XJUEmX5Waw",
        "type": "function",
        "function": {"name": "web_search", "arguments": ""},
    }
    pieces = [arguments[i : i + 7] for i in range(0, len(arguments), 7)]
    return _sse(
        MAIN_URL,
        [
            _main_chunk({"role": "assistant", "content": None, "tool_calls": [head], "refusal": None}),
            *[_main_chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces],
            _main_chunk({}, "tool_calls"),
            _main_chunk(None, usage={"prompt_tokens": 120, "completion_tokens": 25, "total_tokens": 145}),
        ],
    )


def main_answers(text: str) -> Interaction:
    return _sse(
        MAIN_URL,
        [
            _main_chunk({"role": "assistant", "content": ""}),
            *[_main_chunk({"content": text[i : i + 5]}) for i in range(0, len(text), 5)],
            _main_chunk({}, "stop"),
            _main_chunk(None, usage={"prompt_tokens": 300, "completion_tokens": 12, "total_tokens": 312}),
        ],
    )


@pytest.mark.anyio
async def test_full_chain_main_chat_model_glm_backend_answer() -> None:
    tool = ServerWebSearch(
        [
            Engine("glm", GLM, "GLM: Chinese / domestic news", default=True),
            Engine("google", GEMINI, "Gemini"),
        ],
        classify=classifier,
    )
    args = json.dumps({"query": "东京塔 高度", "recency": "oneYear", "count": 5}, ensure_ascii=False)
    transport = ReplayTransport(
        [main_calls_search(args), GLM_SEARCH, main_answers("Tokyo Tower is 333 m tall.")]
    )
    request = llmroute.request(MAIN, prompt="Search the web: how tall is Tokyo Tower?")
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(request, tools=[tool])
    assert response.text == "Tokyo Tower is 333 m tall." and response.finish_reason == "stop"
    # the main model's usage only; GLM's rides on the tool result
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (420, 37)
    first, to_glm, second = (json.loads(r.content) for r in transport.requests)
    assert [t["function"]["name"] for t in first["tools"]] == ["web_search"]
    assert to_glm["tools"] == [
        {
            "type": "web_search",
            "web_search": {
                "enable": True,
                "search_engine": "search_std",
                "search_result": True,
                "search_query": "东京塔 高度",
                "count": 5,
                "search_recency_filter": "oneYear",
            },
        }
    ]
    assert to_glm["messages"][-1] == {"role": "user", "content": "东京塔 高度"}
    assert transport.requests[1].headers["authorization"] == "Bearer glm-test-key"
    assert transport.requests[0].headers["authorization"] == "Bearer upstream-key"
    (result,) = response.tool_results
    assert result.result == {
        "summary": "东京塔高333米[ref_1]，于1958年建成[ref_2]。",
        "hits": [
            {
                "title": GLM_HIT_1["title"],
                "url": GLM_HIT_1["link"],
                "source": "百度百科",
                "date": "2025-03-02",
            },
            {"title": GLM_HIT_2["title"], "url": GLM_HIT_2["link"], "source": None, "date": None},
        ],
        "engine": "glm",
    }
    backend = result.provider_metadata["web_search"]
    assert (backend["engine"], backend["model"]) == ("glm", "glm-4.7")
    assert (backend["usage"]["input_tokens"], backend["usage"]["output_tokens"]) == (1890, 60)
    # the tool message answers the original call id, as a Chat ``tool`` message
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_tyZNHs2AudCbG4XJUEmX5Waw"
    assert json.loads(tool_message["content"])["engine"] == "glm"
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "web_search"


@pytest.mark.anyio
async def test_glm_quota_error_is_reported_as_quota_not_retried() -> None:
    tool = ServerWebSearch([Engine("glm", GLM, default=True)], classify=classifier)
    transport = ReplayTransport(
        [main_calls_search('{"query": "东京塔"}'), GLM_QUOTA, main_answers("No search.")]
    )
    request = llmroute.request(MAIN, prompt="search: Tokyo Tower")
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(request, tools=[tool])
    (result,) = response.tool_results
    assert result.is_error and "the search quota is exhausted" in result.result
    assert "glm-test-key" not in result.result
    assert len(transport.requests) == 3  # one GLM attempt: quota is not a retryable rate limit
    assert response.text == "No search."


@pytest.mark.anyio
async def test_glm_backend_failure_keeps_the_chain_alive() -> None:
    down = Interaction(
        RecordedRequest("POST", GLM_URL, {}, b""),
        RecordedResponse(
            400, {"content-type": ["application/json"]}, b'{"error": {"code": "1210", "message": "bad"}}'
        ),
    )
    tool = ServerWebSearch([Engine("glm", GLM, default=True)], inject_policy="always")
    transport = ReplayTransport([main_calls_search('{"query": "x"}'), down, main_answers("ok")])
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(llmroute.request(MAIN, prompt="x"), tools=[tool])
    assert "failed (InvalidRequestError, HTTP 400)" in response.tool_results[0].result
    assert response.text == "ok"


@pytest.mark.anyio
async def test_gemini_backend_on_a_recorded_grounded_stream() -> None:
    recorded = Cassette.load(
        CASSETTES / "pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml"
    )
    gemini_search = recorded.interactions[0]
    tool = ServerWebSearch([Engine("google", GEMINI, "Gemini: global web")], classify=classifier)
    call = ToolCall(
        "c1", "web_search", {"query": "weather in San Francisco today", "recency": "oneDay", "count": 3}
    )
    interactions = [calls_turn(call), gemini_search, text_turn("Mild and partly cloudy.")]
    transport = ReplayTransport(interactions, check_url=False)
    request = _req("google search: SF weather")
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(request, tools=[tool])
    to_gemini = json.loads(transport.requests[1].content)
    assert to_gemini["tools"] == [{"googleSearch": {}}]
    assert to_gemini["contents"][-1]["parts"][0]["text"] == (
        "weather in San Francisco today\n\nOnly use results from the past day."
    )
    (result,) = [r for r in response.tool_results if not r.provider_executed]
    value = result.result
    assert value["engine"] == "google"
    assert value["summary"].startswith("### Weather in San Francisco is Mild and Partly Cloudy Today")
    assert value["hits"] == [
        {
            "title": "Weather information for San Francisco, CA, US",
            "url": "https://www.google.com/search?q=weather+in+San Francisco, CA,+US",
            "source": "www.google.com",
            "date": None,
        },
        {
            "title": "timeanddate.com",
            "url": value["hits"][1]["url"],
            "source": "timeanddate.com",  # behind the opaque redirect, the title is the domain
            "date": None,
        },
        value["hits"][2],
    ]
    assert value["hits"][1]["url"].startswith(
        "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"
    )
    assert result.provider_metadata["web_search"]["usage"]["output_tokens"] == 241 + 412
    assert response.text == "Mild and partly cloudy."
    assert sent(transport, 2)["messages"][-1]["content"][0]["result"] == value
    assert transport.requests[0].url == URL


@pytest.mark.anyio
async def test_prepare_shows_the_injected_tool_on_the_wire() -> None:
    tool = ServerWebSearch([Engine("glm", GLM, "GLM", default=True)], classify=classifier)
    async with llmroute.Client() as client:
        searched = json.loads(
            (await client.prepare(tool.apply(llmroute.request(MAIN, prompt="search: x")))).body
        )
        plain = json.loads((await client.prepare(tool.apply(llmroute.request(MAIN, prompt="2 + 2?")))).body)
    (function,) = searched["tools"]
    assert function["function"]["name"] == "web_search"
    assert function["function"]["parameters"]["properties"]["engine"]["enum"] == ["glm"]
    assert "tools" not in plain


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_size=st.integers(1, 64))
def test_full_chain_is_independent_of_read_boundaries(seed: int, max_size: int) -> None:
    """Every hop re-cut at random read boundaries (inside UTF-8 characters too): same outcome."""
    tool = ServerWebSearch([Engine("glm", GLM, default=True)], inject_policy="always")
    args = json.dumps({"query": "东京塔 高度"}, ensure_ascii=False)

    async def chain() -> llmroute.LLMResponse:
        interactions = [main_calls_search(args), GLM_SEARCH, main_answers("东京塔高333米。")]
        transport = ReplayTransport(interactions, Chunking.random(seed, max_size))
        async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
            return await client.generate(llmroute.request(MAIN, prompt="x"), tools=[tool])

    response = anyio.run(chain)
    assert response.text == "东京塔高333米。"
    (result,) = response.tool_results
    assert result.result["summary"] == "东京塔高333米[ref_1]，于1958年建成[ref_2]。"
    assert [h["url"] for h in result.result["hits"]] == [GLM_HIT_1["link"], GLM_HIT_2["link"]]


@pytest.mark.anyio
async def test_an_anthropic_main_model_gets_a_tool_result_block() -> None:
    """Recorded Claude tool loop, its tool renamed to ``web_search`` (argument key ``query``): the
    search result goes back as an Anthropic ``tool_result`` for the original ``tool_use`` id."""
    from llmroute.providers import anthropic

    recorded = Cassette.load(
        CASSETTES / "opencode/anthropic-messages/claude-opus-4-7-drives-a-tool-loop.yaml"
    )
    call_turn, answer_turn = recorded.interactions
    body = call_turn.response.body.replace(b'"get_weather"', b'"web_search"').replace(
        b'\\"city\\"', b'\\"query\\"'
    )
    calls_search = msgspec.structs.replace(
        call_turn, response=msgspec.structs.replace(call_turn.response, body=body)
    )
    tool = ServerWebSearch([Engine("glm", GLM, default=True)], inject_policy="always")
    transport = ReplayTransport([calls_search, GLM_SEARCH, answer_turn])
    model = anthropic.configure("sk-ant-test").messages("claude-opus-4-7")
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(llmroute.request(model, prompt="Weather in Paris?"), tools=[tool])
    assert response.text == "Paris is currently sunny at 22°C."
    to_glm = json.loads(transport.requests[1].content)
    assert to_glm["tools"][0]["web_search"]["search_query"] == "Paris"
    second = json.loads(transport.requests[2].content)
    assert second["messages"][1]["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_01M8nJQQMxqpv1VaPYuJKT4j",
            "name": "web_search",
            "input": {"query": "Paris"},
        }
    ]
    (block,) = second["messages"][2]["content"]
    assert (block["type"], block["tool_use_id"]) == ("tool_result", "toolu_01M8nJQQMxqpv1VaPYuJKT4j")
    content = block["content"] if isinstance(block["content"], str) else block["content"][0]["text"]
    assert json.loads(content)["engine"] == "glm"
    assert [t["name"] for t in second["tools"]] == ["web_search"]
