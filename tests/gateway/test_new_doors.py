"""The gateway's Anthropic Messages and Gemini doors end to end: the official ``anthropic`` and
``google-genai`` SDKs -> ``llmroute serve`` (uvicorn on 127.0.0.1) -> a scripted upstream on
127.0.0.1 speaking each upstream protocol (Anthropic, OpenAI Chat, Responses, Gemini) with real
recorded bytes. Streamed and whole answers, thinking with its signature, a tool call, hosted web
search, an upstream error mid-stream, token counting, the error shapes and the keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from llmroute.providers.registry import PROTOCOLS as REGISTERED
from llmroute.server import create_app, load
from llmroute.testing import Cassette

from ..helpers import CASSETTES
from ..reliability.server import FaultServer, Reply, chat_chunk, chat_error
from .test_gateway import Served

anthropic = pytest.importorskip("anthropic")
genai = pytest.importorskip("google.genai")

KEY = "gw-key-1"
SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}

# upstream model name in the gateway -> (provider entry, a recording of each kind)
RECORDED = {
    "claude": {
        "thinking": "vercel-ai/anthropic/anthropic-clear-thinking.1.chunks.yaml",
        "tool": "opencode/anthropic-messages/streams-tool-call.yaml",
        "search": "pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml",
    },
    "chat": {
        "tool": "opencode/openai-chat/streams-tool-call.yaml",
        "text": "opencode/openai-chat/streams-text.yaml",
    },
    "resp": {
        "thinking": "opencode/openai-responses/openai-responses-gpt-5-5-reasoning.yaml",
        "tool": "opencode/openai-responses/gpt-5-5-streams-tool-call.yaml",
        "search": "pydantic-ai/test_openai_responses/test_openai_responses_model_web_search_tool_stream.yaml",
    },
    "gem": {
        "tool": "vercel-ai/google/google-tool-call.chunks.yaml",
        "search": "pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml",
    },
}


def _body(rel: str) -> bytes:
    return Cassette.load(CASSETTES / rel).interactions[0].response.body


@pytest.fixture(scope="module")
def upstream() -> Iterator[FaultServer]:
    server = FaultServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gateway(upstream: FaultServer) -> Iterator[str]:
    origin = upstream.base_url.removesuffix("/v1")
    config = {
        "keys": [KEY],
        "models": {
            "claude": {
                "provider": "anthropic",
                "base_url": origin,
                "api_key": "sk-ant-up",
                "model": "claude-x",
            },
            "chat": {
                "provider": "compatible",
                "base_url": upstream.base_url,
                "api_key": "sk-c",
                "model": "m",
            },
            "resp": {
                "provider": "openai",
                "base_url": upstream.base_url,
                "api_key": "sk-o",
                "model": "gpt-x",
            },
            "gem": {
                "provider": "google",
                "base_url": origin,
                "api_key": "gk-up",
                "model": "gemini-3-pro-preview",
            },
        },
    }
    with Served(create_app(load(config))) as served:
        yield served.base_url.removesuffix("/v1")


def _claude(base: str) -> Any:
    return anthropic.Anthropic(api_key=KEY, base_url=base, max_retries=0)


def _gemini(base: str) -> Any:
    return genai.Client(api_key=KEY, http_options={"base_url": base})


def _sent(upstream: FaultServer) -> dict[str, Any]:
    return json.loads(upstream.received[-1].body)


CASES = [(m, kind) for m, kinds in RECORDED.items() for kind in kinds]


@pytest.mark.parametrize(("model", "kind"), CASES)
def test_the_anthropic_sdk_streams_every_upstream(
    upstream: FaultServer, gateway: str, model: str, kind: str
) -> None:
    upstream.add(Reply(200, SSE, [_body(RECORDED[model][kind])]))
    with _claude(gateway).messages.stream(
        model=model, max_tokens=256, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        events = [event.type for event in stream]
        message = stream.get_final_message()
    assert events.count("message_start") == 1
    assert message.model == model and message.usage.output_tokens > 0
    types = [b.type for b in message.content]
    if kind == "tool":
        assert message.stop_reason == "tool_use"
        use = next(b for b in message.content if b.type == "tool_use")
        assert use.name and isinstance(use.input, dict) and use.input
    if kind == "thinking":
        thinking = next(b for b in message.content if b.type == "thinking")
        assert thinking.signature  # Anthropic's own, or the packed Responses encrypted reasoning
    if kind == "search":
        assert "server_tool_use" in types and "web_search_tool_result" in types


# each protocol's recorded non-streamed answer (the registry's ``whole`` recordings)
WHOLE = {entry.name: entry.whole for entry in REGISTERED}
WHOLE_OF = {
    "claude": "anthropic-messages",
    "chat": "openai-chat",
    "resp": "openai-responses",
    "gem": "gemini",
}


@pytest.mark.parametrize("model", list(RECORDED))
def test_the_anthropic_sdk_gets_the_whole_message(upstream: FaultServer, gateway: str, model: str) -> None:
    upstream.add(Reply(200, JSON, [_body(WHOLE[WHOLE_OF[model]])], chunked=False))
    message = _claude(gateway).messages.create(
        model=model, max_tokens=256, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.type == "message" and message.model == model and message.content
    assert message.stop_reason in ("end_turn", "tool_use") and message.usage.output_tokens > 0
    assert _sent(upstream).get("stream") in (None, False)


def test_anthropic_only_fields_go_to_anthropic_and_are_reported_elsewhere(
    upstream: FaultServer, gateway: str
) -> None:
    body = {
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "hi"}],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "output_config": {"effort": "low"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
        "metadata": {"user_id": "u-1"},
        "stream": True,
    }
    headers = {
        "x-api-key": KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "context-management-2025-06-27",
    }
    upstream.add(Reply(200, SSE, [_body(RECORDED["claude"]["thinking"])]))
    with httpx.stream(
        "POST", f"{gateway}/v1/messages", json={**body, "model": "claude"}, headers=headers
    ) as r:
        r.read()
    assert r.status_code == 200 and "x-llmroute-warnings" not in r.headers
    sent, got = _sent(upstream), upstream.received[-1].headers
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert sent["output_config"] == {"effort": "low"}
    assert sent["context_management"] == body["context_management"]
    assert sent["metadata"] == {"user_id": "u-1"}
    assert got["anthropic-beta"] == "context-management-2025-06-27"

    upstream.add(Reply(200, SSE, [_body(RECORDED["chat"]["text"])]))
    with httpx.stream("POST", f"{gateway}/v1/messages", json={**body, "model": "chat"}, headers=headers) as r:
        r.read()
    assert r.status_code == 200
    sent = _sent(upstream)
    assert not {"thinking", "output_config", "context_management", "metadata", "effort"} & set(sent)
    warned = r.headers["x-llmroute-warnings"]
    for field in ("thinking", "output_config.effort", "context_management", "metadata", "anthropic-beta"):
        assert f"{field}:" in warned


def test_a_field_that_would_change_the_answer_is_refused_by_name(gateway: str) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        _claude(gateway).messages.create(
            model="chat",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"container": "c-1"},
        )
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert "container" in caught.value.body["error"]["message"]


@pytest.mark.parametrize("model", ["claude", "chat"])
def test_an_upstream_error_mid_stream_is_an_anthropic_error_event(
    upstream: FaultServer, gateway: str, model: str
) -> None:
    if model == "claude":
        start = _body(RECORDED["claude"]["thinking"]).split(b"event: content_block_stop")[0]
        failure = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
        upstream.add(Reply(200, SSE, [start, failure]))
    else:
        upstream.add(Reply(200, SSE, [chat_chunk("partial"), chat_error("upstream broke", "server_error")]))
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        _claude(gateway).messages.stream(
            model=model, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        for _ in stream:
            pass
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] in ("overloaded_error", "api_error")


def test_count_tokens_answers_on_every_upstream(upstream: FaultServer, gateway: str) -> None:
    client = _claude(gateway)
    upstream.add(Reply(200, JSON, [b'{"input_tokens": 17}'], chunked=False))
    assert (
        client.messages.count_tokens(
            model="claude", messages=[{"role": "user", "content": "hi"}]
        ).input_tokens
        == 17
    )
    assert upstream.received[-1].path.endswith("/messages/count_tokens")
    upstream.add(Reply(200, JSON, [b'{"totalTokens": 9}'], chunked=False))
    assert (
        client.messages.count_tokens(model="gem", messages=[{"role": "user", "content": "hi"}]).input_tokens
        == 9
    )
    upstream.add(
        Reply(200, JSON, [b'{"object": "response.input_tokens", "input_tokens": 11}'], chunked=False)
    )
    assert (
        client.messages.count_tokens(model="resp", messages=[{"role": "user", "content": "hi"}]).input_tokens
        == 11
    )
    before = len(upstream.received)
    with httpx.Client() as http:
        r = http.post(
            f"{gateway}/v1/messages/count_tokens",
            json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
            headers={"x-api-key": KEY},
        )
    assert r.status_code == 200 and r.json()["input_tokens"] > 0
    assert r.headers["x-llmroute-token-count"] == "estimate" and len(upstream.received) == before
    gemini = _gemini(gateway)
    upstream.add(Reply(200, JSON, [b'{"input_tokens": 5}'], chunked=False))
    counted = gemini.models.count_tokens(model="claude", contents="hi")
    assert counted.total_tokens == 5


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        ("gem", "tool"),
        ("gem", "search"),
        ("claude", "thinking"),
        ("claude", "search"),
        ("chat", "tool"),
        ("resp", "tool"),
    ],
)
def test_google_genai_streams_every_upstream(
    upstream: FaultServer, gateway: str, model: str, kind: str
) -> None:
    upstream.add(Reply(200, SSE, [_body(RECORDED[model][kind])]))
    client = _gemini(gateway)  # held: a dropped client closes its connections
    chunks = list(client.models.generate_content_stream(model=model, contents="hi"))
    parts = [p for c in chunks for p in (c.candidates[0].content.parts or [])]
    last = chunks[-1]
    assert last.usage_metadata is not None and last.usage_metadata.total_token_count
    if kind == "tool":
        assert any(p.function_call is not None for p in parts)
    if kind == "search":
        grounding = last.candidates[0].grounding_metadata
        assert grounding is not None and grounding.grounding_chunks and grounding.web_search_queries
    if kind == "thinking":
        assert any(p.thought for p in parts) and any(p.text and not p.thought for p in parts)


@pytest.mark.parametrize("model", ["gem", "claude"])
def test_google_genai_gets_the_whole_response(upstream: FaultServer, gateway: str, model: str) -> None:
    upstream.add(Reply(200, JSON, [_body(WHOLE[WHOLE_OF[model]])], chunked=False))
    client = _gemini(gateway)
    response = client.models.generate_content(model=model, contents="weather?")
    assert response.function_calls and response.function_calls[0].name
    assert response.usage_metadata is not None


def test_a_gemini_error_mid_stream_raises_in_google_genai(upstream: FaultServer, gateway: str) -> None:
    upstream.add(Reply(200, SSE, [chat_chunk("partial"), chat_error("upstream broke", "server_error")]))
    client = _gemini(gateway)
    with pytest.raises(genai.errors.APIError) as caught:
        list(client.models.generate_content_stream(model="chat", contents="hi"))
    assert caught.value.code == 502


def test_keys_and_error_shapes(gateway: str) -> None:
    with pytest.raises(anthropic.AuthenticationError) as caught:
        anthropic.Anthropic(api_key="wrong", base_url=gateway, max_retries=0).messages.create(
            model="claude", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid or missing API key"},
    }
    with pytest.raises(anthropic.NotFoundError):
        _claude(gateway).messages.create(
            model="nope", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    with httpx.Client() as http:
        r = http.post(
            f"{gateway}/v1beta/models/gem:generateContent?key=wrong",
            json={"contents": [{"parts": [{"text": "hi"}]}]},
        )
        assert r.status_code == 401 and r.json()["error"]["status"] == "UNAUTHENTICATED"
        r = http.post(
            f"{gateway}/v1beta/models/gem:streamGenerateContent?key={KEY}",
            json={"contents": [{"parts": [{"text": "hi"}]}]},
        )
        assert r.status_code == 400 and "alt=sse" in r.json()["error"]["message"]
        listed = http.get(
            f"{gateway}/v1/models", headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        ).json()
        assert {m["id"] for m in listed["data"]} == set(RECORDED) and listed["data"][0]["type"] == "model"
    assert [m.id for m in _claude(gateway).models.list()] == list(RECORDED)
