# ruff: noqa: RUF001  (real provider text: full-width punctuation and typographic quotes are intended)
"""Chat-based facades (azure, openrouter, xai, glm): prepared requests, settings errors, hosted-tool
lowering, and the OpenAI-Chat stream extensions on constructed fixtures (real recordings are in
tests/conformance/test_openrouter_groq_glm.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import llmroute
from llmroute import hosted
from llmroute.protocols.openai_chat import ChatQuirks
from llmroute.providers import azure, compatible, glm, openrouter, xai
from llmroute.schema.content import Message, ReasoningPart, TextPart
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    ReplayTransport,
    event_order_problems,
)
from tests.helpers import GLM_HIT_1, GLM_HIT_2, GLM_URL

SECRET = "sk-planted-secret-123456"
ENV_VARS = (
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_RESOURCE",
    "AZURE_OPENAI_ENDPOINT",
    "OPENROUTER_API_KEY",
    "XAI_API_KEY",
    "ZHIPUAI_API_KEY",
    "ZAI_API_KEY",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


async def prepare(request: llmroute.LLMRequest) -> llmroute.PreparedRequest:
    async with llmroute.Client() as client:
        return await client.prepare(request)


def assert_no_secret(prepared: llmroute.PreparedRequest, secret: str = SECRET) -> None:
    assert secret not in repr(prepared)
    assert secret not in json.dumps(prepared.redacted())


# -- constructed streams ---------------------------------------------------------------------------


def sse(*chunks: dict[str, Any] | str) -> bytes:
    out = b""
    for chunk in chunks:
        data = chunk if isinstance(chunk, str) else json.dumps(chunk, ensure_ascii=False)
        out += b"data: " + data.encode() + b"\n\n"
    return out


def cassette(url: str, body: bytes) -> Cassette:
    return Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": ["text/event-stream"]}, body),
            )
        ]
    )


async def events_for(
    request: llmroute.LLMRequest, url: str, body: bytes, chunking: Chunking | None = None
) -> list[llmroute.LLMEvent]:
    transport = ReplayTransport(cassette(url, body), chunking)
    async with llmroute.Client(
        http=httpx.AsyncClient(transport=transport), retry=llmroute.RetryPolicy.none()
    ) as c:
        return [event async for event in c.stream(request)]


CHUNKINGS = [
    Chunking.whole(),
    Chunking.bytewise(),
    Chunking.random(1, 5),
    Chunking.random(7, 40),
    Chunking.fixed(33),
]


async def invariant_events(request: llmroute.LLMRequest, url: str, body: bytes) -> list[llmroute.LLMEvent]:
    """Events of ``body``, checked identical under every chunking and well ordered."""
    reference = await events_for(request, url, body)
    for chunking in CHUNKINGS[1:]:
        assert await events_for(request, url, body, chunking) == reference, chunking
    assert event_order_problems(reference) == []
    return reference


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "gen-1", "model": "m", "choices": choices, **extra}


def text_of(events: list[llmroute.LLMEvent], block: str) -> str:
    return "".join(e.text for e in events if isinstance(e, llmroute.TextDelta) and e.id == block)


# -- Azure -----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_azure_chat_deployment_url_api_key_header_and_body() -> None:
    model = azure.configure("contoso", api_key=SECRET).chat("gpt-4o-prod")
    prepared = await prepare(llmroute.request(model, system="Be brief.", prompt="Hi"))
    assert prepared.url == (
        "https://contoso.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
    )
    assert prepared.headers["api-key"] == SECRET
    assert "authorization" not in prepared.headers
    assert prepared.redacted()["headers"]["api-key"] == "[REDACTED]"
    assert prepared.json() == {
        "model": "gpt-4o-prod",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert_no_secret(prepared)


@pytest.mark.anyio
async def test_azure_from_environment_and_url_spellings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://env-res.openai.azure.com/")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", SECRET)
    prepared = await prepare(
        llmroute.request(azure.configure(api_version="2025-01-01").chat("dep"), prompt="x")
    )
    assert (
        prepared.url
        == "https://env-res.openai.azure.com/openai/deployments/dep/chat/completions?api-version=2025-01-01"
    )
    assert prepared.headers["api-key"] == SECRET
    for spelling in (
        "https://r.openai.azure.com/openai",
        "https://r.openai.azure.com/openai/v1/",
        "https://r.openai.azure.com",
    ):
        prepared = await prepare(llmroute.request(azure.configure(base_url=spelling).chat("d"), prompt="x"))
        assert prepared.url.startswith("https://r.openai.azure.com/openai/deployments/d/chat/completions?")
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT")
    monkeypatch.setenv("AZURE_OPENAI_RESOURCE", "from-env")
    prepared = await prepare(llmroute.request(azure.configure().chat("d"), prompt="x"))
    assert prepared.url.startswith("https://from-env.openai.azure.com/openai/deployments/d/")


@pytest.mark.anyio
async def test_azure_entra_token_provider_sends_bearer() -> None:
    calls = 0

    async def token() -> str:
        nonlocal calls
        calls += 1
        return f"entra-token-{calls}"

    model = azure.configure("contoso", token_provider=token).chat("dep")
    first = await prepare(llmroute.request(model, prompt="x"))
    second = await prepare(llmroute.request(model, prompt="x"))
    assert first.headers["authorization"] == "Bearer entra-token-1"
    assert second.headers["authorization"] == "Bearer entra-token-2"  # asked again on every request
    assert "api-key" not in first.headers
    assert_no_secret(first, "entra-token-1")


@pytest.mark.anyio
async def test_azure_missing_settings_are_typed_errors() -> None:
    with pytest.raises(llmroute.NoRouteError, match="AZURE_OPENAI_RESOURCE"):
        azure.configure()
    with pytest.raises(llmroute.AuthenticationError, match="AZURE_OPENAI_API_KEY") as info:
        await prepare(llmroute.request(azure.configure("contoso").chat("dep"), prompt="x"))
    assert info.value.kind == "missing"

    async def token() -> str:
        return "t"

    with pytest.raises(llmroute.InvalidRequestError, match="not both"):
        azure.configure("contoso", api_key="k", token_provider=token)


@pytest.mark.anyio
async def test_azure_reasoning_deployments_send_max_completion_tokens() -> None:
    gen = llmroute.GenerationOptions(max_tokens=50)
    conf = azure.configure("contoso", api_key="k")
    assert (await prepare(llmroute.request(conf.chat("o3-mini"), prompt="x", generation=gen))).json()[
        "max_completion_tokens"
    ] == 50
    assert (await prepare(llmroute.request(conf.chat("prod"), prompt="x", generation=gen))).json()[
        "max_tokens"
    ] == 50
    body = (
        await prepare(llmroute.request(conf.chat("prod", reasoning=True), prompt="x", generation=gen))
    ).json()
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body


@pytest.mark.anyio
async def test_azure_responses_deployment_uses_v1_path() -> None:
    model = azure.configure("contoso", api_key=SECRET).responses("gpt-5-prod")
    prepared = await prepare(llmroute.request(model, prompt="Hi"))
    assert prepared.url == "https://contoso.openai.azure.com/openai/v1/responses"
    assert prepared.headers["api-key"] == SECRET
    body = prepared.json()
    assert body["model"] == "gpt-5-prod" and body["stream"] is True and "input" in body


@pytest.mark.anyio
async def test_azure_stream_with_empty_first_choices() -> None:
    body = sse(
        {
            "id": "",
            "model": "",
            "choices": [],
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
        },
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Grüße "}),
        chunk({"content": "aus Azure 🌍"}),
        chunk({}, "stop"),
        {"id": "c", "model": "gpt-4o", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}},
        "[DONE]",
    )
    model = azure.configure("contoso", api_key="k").chat("dep")
    url = "https://contoso.openai.azure.com/openai/deployments/dep/chat/completions"
    events = await invariant_events(llmroute.request(model, prompt="x"), url, body)
    assert text_of(events, "text-0") == "Grüße aus Azure 🌍"
    finish = events[-1]
    assert isinstance(finish, llmroute.Finish)
    assert finish.reason == "stop" and finish.usage is not None and finish.usage.input_tokens == 9


@pytest.mark.anyio
async def test_empty_choices_is_a_declared_quirk() -> None:
    body = sse(
        {"id": "", "model": "", "choices": [], "prompt_filter_results": []}, chunk({"content": "x"}, "stop")
    )
    strict = compatible.configure(base_url="http://127.0.0.1:9/v1", quirks=ChatQuirks(empty_choices_ok=False))
    with pytest.raises(llmroute.InvalidProviderOutputError, match="without choices"):
        await events_for(
            llmroute.request(strict.chat("m"), prompt="x"), "http://127.0.0.1:9/v1/chat/completions", body
        )
    # the usage trailer (empty choices + usage) is fine either way
    trailer = sse(
        chunk({"content": "x"}, "stop"), {"id": "c", "choices": [], "usage": {"prompt_tokens": 1}}, "[DONE]"
    )
    events = await events_for(
        llmroute.request(strict.chat("m"), prompt="x"), "http://127.0.0.1:9/v1/chat/completions", trailer
    )
    assert isinstance(events[-1], llmroute.Finish)


# -- OpenRouter ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_openrouter_prepared_request_headers_and_body() -> None:
    conf = openrouter.configure(SECRET, app_name="My App", app_url="https://example.org")
    prepared = await prepare(llmroute.request(conf.chat("openai/gpt-4o-mini"), prompt="Hi"))
    assert prepared.url == "https://openrouter.ai/api/v1/chat/completions"
    assert prepared.headers["authorization"] == f"Bearer {SECRET}"
    assert prepared.headers["http-referer"] == "https://example.org"
    assert prepared.headers["x-title"] == "My App"
    assert prepared.redacted()["headers"]["authorization"] == "[REDACTED]"
    assert prepared.json() == {
        "model": "openai/gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert_no_secret(prepared)


@pytest.mark.anyio
async def test_openrouter_env_key_and_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(llmroute.AuthenticationError, match="OPENROUTER_API_KEY"):
        await prepare(llmroute.request(openrouter.configure().chat("m"), prompt="x"))
    monkeypatch.setenv("OPENROUTER_API_KEY", SECRET)
    prepared = await prepare(llmroute.request(openrouter.configure().model("m"), prompt="x"))
    assert prepared.headers["authorization"] == f"Bearer {SECRET}"


@pytest.mark.anyio
async def test_openrouter_web_plugin_online_and_usage_options() -> None:
    conf = openrouter.configure("k")
    body = (await prepare(llmroute.request(conf.chat("m", web=True), prompt="x"))).json()
    assert body["plugins"] == [{"id": "web"}]
    body = (
        await prepare(
            llmroute.request(
                conf.chat("m", web={"engine": "exa", "max_results": 3}, plugins=[{"id": "file-parser"}]),
                prompt="x",
            )
        )
    ).json()
    assert body["plugins"] == [{"id": "file-parser"}, {"id": "web", "engine": "exa", "max_results": 3}]
    body = (await prepare(llmroute.request(conf.chat("openai/gpt-4o", online=True), prompt="x"))).json()
    assert body["model"] == "openai/gpt-4o:online"
    body = (await prepare(llmroute.request(conf.chat("m", usage_accounting=True), prompt="x"))).json()
    assert body["usage"] == {"include": True}
    body = (await prepare(llmroute.request(conf.chat("m", reasoning={"effort": "high"}), prompt="x"))).json()
    assert body["reasoning"] == {"effort": "high"} and "plugins" not in body and "usage" not in body


@pytest.mark.anyio
async def test_openrouter_hosted_web_search_lowers_to_server_tool() -> None:
    model = openrouter.configure("k").chat("m")
    tool = hosted.web_search(max_uses=2, blocked_domains=["spam.example"], engine="exa", max_results=4)
    body = (await prepare(llmroute.request(model, prompt="x", tools=[tool]))).json()
    assert body["tools"] == [
        {
            "type": "openrouter:web_search",
            "parameters": {
                "max_uses": 2,
                "excluded_domains": ["spam.example"],
                "engine": "exa",
                "max_results": 4,
            },
        }
    ]
    with pytest.raises(llmroute.InvalidRequestError, match="code_execution"):
        await prepare(llmroute.request(model, prompt="x", tools=[hosted.code_execution()]))
    with pytest.raises(llmroute.InvalidRequestError, match="not both"):
        await prepare(
            llmroute.request(
                model, prompt="x", tools=[hosted.web_search(allowed_domains=["a"], blocked_domains=["b"])]
            )
        )
    # the compatible-family row shares the facade's quirks
    family = compatible.configure("openrouter", api_key="k").model("m")
    body = (await prepare(llmroute.request(family, prompt="x", tools=[hosted.web_search()]))).json()
    assert body["tools"] == [{"type": "openrouter:web_search"}]


@pytest.mark.anyio
async def test_openrouter_reasoning_details_round_trip_into_the_next_request() -> None:
    details = [
        {
            "type": "reasoning.text",
            "text": "think",
            "signature": "sig==",
            "format": "anthropic-claude-v1",
            "index": 0,
        }
    ]
    history = [
        llmroute.user("q"),
        Message(
            "assistant",
            (ReasoningPart("think", "sig==", None, {"reasoning_details": details}), TextPart("a")),
        ),
        llmroute.user("q2"),
    ]
    body = (await prepare(llmroute.request(openrouter.configure("k").chat("m"), messages=history))).json()
    assert body["messages"][1] == {"role": "assistant", "content": "a", "reasoning_details": details}
    # reasoning from elsewhere (no details kept) is sent as plain reasoning text with its signature
    other = [Message("assistant", (ReasoningPart("plain", "s2"), TextPart("a"))), llmroute.user("q")]
    body = (await prepare(llmroute.request(openrouter.configure("k").chat("m"), messages=other))).json()
    assert body["messages"][0]["reasoning_details"] == [
        {"type": "reasoning.text", "text": "plain", "signature": "s2"}
    ]
    # other Chat servers never receive the OpenRouter-only field
    body = (await prepare(llmroute.request(xai.configure("k").chat("m"), messages=history))).json()
    assert "reasoning_details" not in body["messages"][1]


@pytest.mark.anyio
async def test_openrouter_responses_route() -> None:
    prepared = await prepare(
        llmroute.request(openrouter.configure(SECRET).responses("openai/gpt-5"), prompt="x")
    )
    assert prepared.url == "https://openrouter.ai/api/v1/responses"
    assert prepared.headers["authorization"] == f"Bearer {SECRET}"
    assert prepared.json()["model"] == "openai/gpt-5"


OR_URL = "https://openrouter.ai/api/v1/chat/completions"
# websearch.md §3.2: "([fr.wikipedia.org](https://fr.wikipedia.org/wiki/Mont_Blanc))" spans 32..94
MONT_BLANC = "Le Mont-Blanc culmine à 4 805 m ([fr.wikipedia.org](https://fr.wikipedia.org/wiki/Mont_Blanc))."
ANNOTATION = {
    "type": "url_citation",
    "url_citation": {
        "url": "https://fr.wikipedia.org/wiki/Mont_Blanc",
        "title": "Mont Blanc — Wikipédia",
        "content": "Le mont Blanc … culmine à 4 805,59 m …",
        "start_index": 32,
        "end_index": 94,
    },
}


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["delta", "choice"])
async def test_openrouter_annotation_spans_cover_the_cited_link(where: str) -> None:
    late = (
        chunk({"content": "", "annotations": [ANNOTATION]})
        if where == "delta"
        else {"id": "g", "model": "m", "choices": [{"index": 0, "delta": {}, "annotations": [ANNOTATION]}]}
    )
    body = sse(
        chunk({"reasoning": "Je cherche…"}),
        chunk({"content": MONT_BLANC[:20]}),
        chunk({"content": MONT_BLANC[20:60]}),
        chunk({"content": MONT_BLANC[60:]}),
        late,
        chunk({"content": ""}, "stop"),
        {
            "id": "g",
            "model": "m",
            "choices": [],
            "usage": {
                "prompt_tokens": 1532,
                "completion_tokens": 41,
                "cost": 0.0012,
                "server_tool_use": {"web_search_requests": 1},
            },
        },
        "[DONE]",
    )
    model = openrouter.configure("k").chat("x-ai/grok-4.1-fast", web=True)
    events = await invariant_events(llmroute.request(model, prompt="x"), OR_URL, body)
    cites = [e for e in events if isinstance(e, llmroute.Citation)]
    assert len(cites) == 1
    cite = cites[0]
    text = text_of(events, cite.block_id)
    assert text == MONT_BLANC
    assert cite.start is not None and cite.end is not None
    assert text[cite.start : cite.end] == "([fr.wikipedia.org](https://fr.wikipedia.org/wiki/Mont_Blanc))"
    assert cite.url is not None and cite.url in text[cite.start : cite.end]
    assert cite.title == "Mont Blanc — Wikipédia"
    finish = events[-1]
    assert isinstance(finish, llmroute.Finish) and finish.usage is not None
    assert finish.usage.web_search_requests == 1
    assert finish.usage.provider_metadata is not None and finish.usage.provider_metadata["cost"] == 0.0012


@pytest.mark.anyio
async def test_citation_offsets_count_from_the_block_they_fall_in() -> None:
    annotation = {
        "type": "url_citation",
        "url_citation": {"url": "https://b.example", "start_index": 10, "end_index": 13},
    }
    body = sse(
        chunk({"content": "first "}),  # offsets 0..6 in block text-0
        chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]}),
        chunk({"content": "xyz [b]"}),  # offsets 6..13, a new block after the tool call
        chunk({"content": "", "annotations": [annotation]}),
        chunk({}, "tool_calls"),
        "[DONE]",
    )
    events = await invariant_events(
        llmroute.request(openrouter.configure("k").chat("m"), prompt="x"), OR_URL, body
    )
    (cite,) = [e for e in events if isinstance(e, llmroute.Citation)]
    block = text_of(events, cite.block_id)
    assert block == "xyz [b]"
    assert cite.start is not None and block[cite.start : cite.end] == "[b]"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("error", "kind", "retryable"),
    [
        ({"code": 502, "message": "Upstream provider went away"}, llmroute.ProviderInternalError, True),
        ({"code": 429, "message": "Rate limited upstream"}, llmroute.RateLimitError, True),
        ({"code": 400, "message": "Token limit reached"}, llmroute.InvalidRequestError, False),
    ],
)
async def test_openrouter_error_chunk_after_200_is_typed(
    error: dict[str, Any], kind: type[Exception], retryable: bool
) -> None:
    body = sse(
        chunk({"content": "partial "}),
        chunk({"content": "text"}),
        {"id": "g", "error": error, "choices": []},
        "[DONE]",
    )
    for chunking in CHUNKINGS:
        with pytest.raises(kind) as info:
            await events_for(
                llmroute.request(openrouter.configure("k").chat("m"), prompt="x"), OR_URL, body, chunking
            )
        assert error["message"] in str(info.value)
        assert info.value.provider == "openrouter"  # type: ignore[attr-defined]
        assert info.value.retryable is retryable  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_reasoning_details_without_reasoning_text_still_make_a_block() -> None:
    body = sse(
        chunk(
            {
                "reasoning": None,
                "reasoning_details": [{"type": "reasoning.summary", "summary": "Plan: ", "index": 0}],
            }
        ),
        chunk({"reasoning_details": [{"type": "reasoning.summary", "summary": "answer.", "index": 0}]}),
        chunk(
            {"reasoning_details": [{"type": "reasoning.encrypted", "data": "ENC", "id": "rs_1", "index": 1}]}
        ),
        chunk({"content": "Done"}, "stop"),
        "[DONE]",
    )
    events = await invariant_events(
        llmroute.request(openrouter.configure("k").chat("m"), prompt="x"), OR_URL, body
    )
    reasoning = "".join(e.text for e in events if isinstance(e, llmroute.ReasoningDelta))
    assert reasoning == "Plan: answer."
    (end,) = [e for e in events if isinstance(e, llmroute.ReasoningEnd)]
    assert end.encrypted == "ENC"
    assert end.provider_metadata == {
        "reasoning_details": [
            {"type": "reasoning.summary", "summary": "Plan: answer.", "index": 0},
            {"type": "reasoning.encrypted", "data": "ENC", "id": "rs_1", "index": 1},
        ]
    }


@pytest.mark.anyio
async def test_refusal_text_is_a_block_citations_bind_to() -> None:
    """A refusal opens its text block through the same path as content, so a later annotation
    binds to that block (not to none) with offsets counted in it."""
    annotation = {
        "type": "url_citation",
        "url_citation": {"url": "https://policy.example", "start_index": 0, "end_index": 5},
    }
    body = sse(
        chunk({"refusal": "Sorry"}),
        chunk({"refusal": ", no.", "annotations": [annotation]}),
        chunk({}, "stop"),
        "[DONE]",
    )
    events = await invariant_events(
        llmroute.request(openrouter.configure("k").chat("m"), prompt="x"), OR_URL, body
    )
    (start,) = [e for e in events if isinstance(e, llmroute.TextStart)]
    (cite,) = [e for e in events if isinstance(e, llmroute.Citation)]
    assert cite.block_id == start.id
    assert text_of(events, start.id)[cite.start : cite.end] == "Sorry"


# -- xAI -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_xai_prepared_request_env_key_and_hosted_tools_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(llmroute.AuthenticationError, match="XAI_API_KEY"):
        await prepare(llmroute.request(xai.configure().chat("grok-4"), prompt="x"))
    monkeypatch.setenv("XAI_API_KEY", SECRET)
    prepared = await prepare(llmroute.request(xai.configure().model("grok-4"), prompt="x"))
    assert prepared.url == "https://api.x.ai/v1/chat/completions"
    assert prepared.headers["authorization"] == f"Bearer {SECRET}"
    assert prepared.json()["model"] == "grok-4"
    assert_no_secret(prepared)
    with pytest.raises(llmroute.InvalidRequestError, match="web_search"):
        await prepare(
            llmroute.request(xai.configure().chat("grok-4"), prompt="x", tools=[hosted.web_search()])
        )


# -- GLM -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_glm_regions_keys_and_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZHIPUAI_API_KEY", "cn-" + SECRET)
    monkeypatch.setenv("ZAI_API_KEY", "intl-" + SECRET)
    cn = await prepare(llmroute.request(glm.configure().chat("glm-4.6"), prompt="x"))
    assert cn.url == "https://open.bigmodel.cn/api/paas/v4/chat/completions"
    assert cn.headers["authorization"] == f"Bearer cn-{SECRET}"
    assert "accept-language" not in cn.headers
    intl = await prepare(llmroute.request(glm.configure(region="intl").model("glm-4.7"), prompt="x"))
    assert intl.url == "https://api.z.ai/api/paas/v4/chat/completions"
    assert intl.headers["authorization"] == f"Bearer intl-{SECRET}"
    assert intl.headers["accept-language"] == "en-US,en"
    coding = await prepare(
        llmroute.request(glm.configure(region="intl", coding=True).chat("glm-4.7"), prompt="x")
    )
    assert coding.url == "https://api.z.ai/api/coding/paas/v4/chat/completions"
    assert_no_secret(cn, "cn-" + SECRET)
    with pytest.raises(llmroute.NoRouteError, match="region"):
        glm.configure(region="eu")  # type: ignore[arg-type]
    monkeypatch.delenv("ZAI_API_KEY")
    with pytest.raises(llmroute.AuthenticationError, match="ZAI_API_KEY"):
        await prepare(llmroute.request(glm.configure(region="intl").chat("glm-4.7"), prompt="x"))


@pytest.mark.anyio
async def test_glm_web_search_tool_lowering() -> None:
    model = glm.configure("k").chat("glm-4.6")
    tools = [
        hosted.web_search(max_uses=3, allowed_domains=["www.gov.cn"], search_context_size="high", count=5)
    ]
    body = (await prepare(llmroute.request(model, prompt="x", tools=tools))).json()
    assert body["tools"] == [
        {
            "type": "web_search",
            "web_search": {
                "enable": True,
                "search_engine": "search_std",
                "search_result": True,
                "count": 5,
                "search_domain_filter": "www.gov.cn",
                "content_size": "high",
            },
        }
    ]
    intl = glm.configure("k", region="intl").chat("glm-4.7")
    body = (
        await prepare(
            llmroute.request(intl, prompt="x", tools=[hosted.web_search(search_engine="search_pro")])
        )
    ).json()
    assert body["tools"][0]["web_search"]["search_engine"] == "search_pro"
    for bad in (
        hosted.web_search(blocked_domains=["a"]),
        hosted.web_search(allowed_domains=["a", "b"]),
        hosted.url_context(),
    ):
        with pytest.raises(llmroute.InvalidRequestError):
            await prepare(llmroute.request(model, prompt="x", tools=[bad]))


@pytest.mark.anyio
async def test_glm_sends_reasoning_back_as_reasoning_content() -> None:
    history = [
        llmroute.user("q"),
        Message("assistant", (ReasoningPart("thought"), TextPart("a"))),
        llmroute.user("q2"),
    ]
    body = (await prepare(llmroute.request(glm.configure("k").chat("glm-4.7"), messages=history))).json()
    assert body["messages"][1] == {"role": "assistant", "content": "a", "reasoning_content": "thought"}


HIT_NO_LINK = {"title": "无链接结果", "content": "改写后的摘要", "refer": "ref_3"}
HIT_LATE = {"title": "Late", "link": "https://late.example/", "refer": "ref_4"}


@pytest.mark.anyio
async def test_glm_web_search_hits_become_a_provider_executed_call_and_result() -> None:
    body = sse(
        chunk(
            {"role": "assistant", "reasoning_content": "先搜索。"},
            web_search=[GLM_HIT_1, GLM_HIT_2, "junk", HIT_NO_LINK, GLM_HIT_1],
        ),
        # repeated: nothing new
        chunk({"content": "东京塔高333米[ref_1]，"}, web_search=[GLM_HIT_1, GLM_HIT_2]),
        chunk({"content": "于1958年建成[ref_2]。"}, web_search=None),
        chunk({"content": ""}, web_search={"not": "a list"}),
        chunk({"content": ""}, web_search=[HIT_LATE]),
        chunk({"content": ""}, "stop", usage={"prompt_tokens": 1890, "completion_tokens": 60}),
        "[DONE]",
    )
    model = glm.configure("k").chat("glm-4.6")
    events = await invariant_events(
        llmroute.request(model, prompt="x", tools=[hosted.web_search()]), GLM_URL, body
    )
    calls = [e for e in events if isinstance(e, llmroute.ToolCall)]
    results = [e for e in events if isinstance(e, llmroute.ToolResult)]
    assert [c.name for c in calls] == ["web_search", "web_search"]
    assert all(c.provider_executed for c in calls) and all(r.provider_executed for r in results)
    assert [r.id for r in results] == [c.id for c in calls] and len({c.id for c in calls}) == 2
    assert results[0].result == {
        "sources": [
            {"url": GLM_HIT_1["link"], "title": GLM_HIT_1["title"]},
            {"url": GLM_HIT_2["link"], "title": GLM_HIT_2["title"]},
            {"url": None, "title": "无链接结果"},
        ],
        "queries": [],
    }
    # the hits as sent (media, publish_date, refer, ...) ride along, hit i behind source i; the
    # repeated hit and the non-object entry are dropped
    assert results[0].provider_metadata == {"glm": {"web_search": [GLM_HIT_1, GLM_HIT_2, HIT_NO_LINK]}}
    assert results[1].result == {
        "sources": [{"url": "https://late.example/", "title": "Late"}],
        "queries": [],
    }
    assert results[1].provider_metadata == {"glm": {"web_search": [HIT_LATE]}}
    # hits in a chunk come before that chunk's deltas; a late search closes the open text block first
    kinds = [type(e).__name__ for e in events]
    assert kinds[1:4] == ["ToolCall", "ToolResult", "ReasoningStart"]
    assert kinds.index("TextEnd") < len(kinds) - 1 - kinds[::-1].index("ToolCall")
    response = llmroute.ResponseBuilder()
    for event in events:
        response.add(event)
    built = response.build()
    assert built.text == "东京塔高333米[ref_1]，于1958年建成[ref_2]。"
    assert built.finish_reason == "stop"  # hosted calls do not turn "stop" into "tool-calls"
    # the next turn carries the hosted call in history but does not send it to the Chat API
    body2 = (
        await prepare(
            llmroute.request(model, messages=[llmroute.user("x"), *built.messages, llmroute.user("y")])
        )
    ).json()
    assert body2["messages"][1] == {
        "role": "assistant",
        "content": built.text,
        "reasoning_content": "先搜索。",
    }


@pytest.mark.anyio
async def test_facade_rows_are_the_compatible_families(monkeypatch: pytest.MonkeyPatch) -> None:
    assert compatible.FAMILIES["xai"] is xai.FAMILY and compatible.FAMILIES["openrouter"] is openrouter.FAMILY
    monkeypatch.setenv("XAI_API_KEY", SECRET)
    facade = await prepare(llmroute.request(xai.configure().chat("grok-4"), prompt="x"))
    family = await prepare(llmroute.request(compatible.configure("xai").model("grok-4"), prompt="x"))
    assert (facade.url, facade.headers, facade.json()) == (family.url, family.headers, family.json())
    assert xai.configure().chat("grok-4").route.name == "xai-chat"
