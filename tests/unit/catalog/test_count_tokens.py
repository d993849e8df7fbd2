"""``client.count_tokens`` against the providers' counting endpoints (local 127.0.0.1 servers) and
the local estimate elsewhere; ``client.check_context``, the pre-flight context-window check."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import llmroute
from llmroute.providers import anthropic, compatible, google, openai
from llmroute.tokens import estimate

from ...reliability.server import FaultServer, Reply

JSON = {"content-type": "application/json"}


@pytest.fixture
def server() -> Iterator[FaultServer]:
    s = FaultServer().start()
    try:
        yield s
    finally:
        s.stop()


def _answer(body: dict[str, object], status: int = 200) -> Reply:
    return Reply(status=status, headers=JSON, parts=[json.dumps(body).encode()], chunked=False)


def test_anthropic_count_tokens_endpoint(server: FaultServer) -> None:
    server.add(_answer({"input_tokens": 1234}))
    model = anthropic.configure(api_key="sk-ant-test", base_url=server.base_url).messages("claude-sonnet-4-5")
    request = llmroute.request(
        model, system="Be brief.", prompt="Hello", generation=llmroute.GenerationOptions(max_tokens=50)
    )
    with llmroute.SyncClient() as client:
        counted = client.count_tokens(request)
    assert (counted.input_tokens, counted.source) == (1234, "provider")
    (sent,) = server.received
    assert sent.path == "/v1/messages/count_tokens" and sent.headers["x-api-key"] == "sk-ant-test"
    body = json.loads(sent.body)
    assert body["model"] == "claude-sonnet-4-5" and body["messages"][0]["role"] == "user"
    assert "max_tokens" not in body and "stream" not in body  # the endpoint refuses them


def test_gemini_count_tokens_endpoint(server: FaultServer) -> None:
    server.add(_answer({"totalTokens": 77}))
    model = google.configure(api_key="gm-test", base_url=server.base_url).gemini("gemini-2.5-flash")
    request = llmroute.request(model, system="Be brief.", prompt="Hello")
    with llmroute.SyncClient() as client:
        counted = client.count_tokens(request)
    assert (counted.input_tokens, counted.source) == (77, "provider")
    (sent,) = server.received
    assert sent.path == "/v1/models/gemini-2.5-flash:countTokens"
    inner = json.loads(sent.body)["generateContentRequest"]
    assert inner["model"] == "models/gemini-2.5-flash" and inner["systemInstruction"] and inner["contents"]


def test_openai_responses_input_tokens_endpoint(server: FaultServer) -> None:
    server.add(_answer({"object": "response.input_tokens", "input_tokens": 9}))
    model = openai.configure(api_key="sk-test", base_url=server.base_url).responses("gpt-5")
    request = llmroute.request(model, prompt="Hello", generation=llmroute.GenerationOptions(max_tokens=10))
    with llmroute.SyncClient() as client:
        counted = client.count_tokens(request)
    assert (counted.input_tokens, counted.source) == (9, "provider")
    (sent,) = server.received
    assert sent.path == "/v1/responses/input_tokens"
    body = json.loads(sent.body)
    assert body["model"] == "gpt-5" and "stream" not in body and "max_output_tokens" not in body


def test_an_error_from_the_endpoint_is_typed(server: FaultServer) -> None:
    server.add(_answer({"error": {"type": "authentication_error", "message": "invalid x-api-key"}}, 401))
    model = anthropic.configure(api_key="sk-ant-bad", base_url=server.base_url).messages("m")
    with llmroute.SyncClient() as client, pytest.raises(llmroute.AuthenticationError) as info:
        client.count_tokens(llmroute.request(model, prompt="x"))
    assert "sk-ant-bad" not in str(info.value)


def test_elsewhere_a_local_estimate_without_network() -> None:
    model = compatible.configure("groq", api_key="gsk-test").chat("llama-3.3-70b-versatile")
    request = llmroute.request(model, prompt="Hello there " * 100)
    with llmroute.SyncClient() as client:
        counted = client.count_tokens(request)
        body = client.prepare(request).body
    assert counted.source == "estimate" and counted.input_tokens == estimate(body) == -(-len(body) // 4)


def test_check_context_raises_before_sending() -> None:
    # llama-3.3-70b-versatile: a 131,072-token window (the catalog); the estimate of this prompt is
    # about 150,000 tokens.
    model = compatible.configure("groq", api_key="gsk-test").chat("llama-3.3-70b-versatile")
    small = llmroute.request(model, prompt="Hi", generation=llmroute.GenerationOptions(max_tokens=1000))
    large = llmroute.request(
        model, prompt="word " * 120_000, generation=llmroute.GenerationOptions(max_tokens=1000)
    )
    unknown = llmroute.request(compatible.configure("groq", api_key="gsk-test").chat("private"), prompt="x")
    with llmroute.SyncClient() as client:
        fits = client.check_context(small)
        assert fits is not None and fits.input_tokens < 100
        with pytest.raises(llmroute.ContextOverflowError, match="131072-token context window"):
            client.check_context(large)
        assert client.check_context(unknown) is None  # no window known: no check
    # output counts too: 100k input fits 131k, but not with 32k+ of output on top
    near = llmroute.request(
        model, prompt="word " * 80_000, generation=llmroute.GenerationOptions(max_tokens=40_000)
    )
    with llmroute.SyncClient() as client, pytest.raises(llmroute.ContextOverflowError):
        client.check_context(near)
