"""Facade arguments that used to fail late (a raw TypeError, an httpx UnicodeEncodeError at send,
a silently dropped endpoint path) are typed errors at configure, or kept as meant."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import llmroute
from llmroute.providers import anthropic, azure, compatible, google, openai, xai

KEY = "sk-test-0123456789abcdef"


@pytest.mark.parametrize(
    "build",
    [
        lambda: openai.configure(api_key=KEY).chat(5),
        lambda: openai.configure(api_key=KEY).responses(5),
        lambda: anthropic.configure(api_key=KEY).messages(5),
        lambda: google.configure(api_key=KEY).gemini(5),
        lambda: xai.configure(api_key=KEY).chat(None),
        lambda: compatible.configure(base_url="http://127.0.0.1:1/v1").model(" "),
    ],
)
def test_model_id_must_be_a_string(build: Callable[[], Any]) -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="a model id is required") as err:
        build()
    assert err.value.param == "model"


@pytest.mark.parametrize(
    ("key", "what"),
    [
        ("sk-test-01234\u201c56789", "a non-ASCII character at position 13"),
        ("sk-test-0123\u00a0456789", "a non-ASCII character"),
        ("sk-test-0123\n456789", "a line break or control character at position 12"),
        ("sk-test-0123\r\nX-Evil: 1", "a line break"),
    ],
)
@pytest.mark.parametrize("facade", [openai.configure, anthropic.configure, google.configure, xai.configure])
def test_api_key_must_be_printable_ascii(facade: Callable[..., Any], key: str, what: str) -> None:
    with pytest.raises(llmroute.InvalidRequestError) as err:
        facade(api_key=key)
    message = str(err.value)
    assert what in message and err.value.param == "api_key"
    assert "456789" not in message and "sk-test" not in message and "0123" not in message


@pytest.mark.anyio
async def test_api_key_from_env_checked_before_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-\u00e9-0123456789")
    request = llmroute.request(openai.configure().chat("m"), prompt="hi")
    with pytest.raises(llmroute.InvalidRequestError, match="OPENAI_API_KEY contains a non-ASCII") as err:
        await llmroute.Client().prepare(request)
    assert "0123456789" not in str(err.value)


@pytest.mark.anyio
async def test_base_url_query_is_kept_after_the_endpoint_path() -> None:
    model = openai.configure(api_key=KEY, base_url="https://gw.example/v1?api-version=2024-10-01").chat("m")
    prepared = await llmroute.Client().prepare(llmroute.request(model, prompt="hi"))
    assert prepared.url == "https://gw.example/v1/chat/completions?api-version=2024-10-01"
    gemini = google.configure(api_key=KEY, base_url="https://gw.example/v1beta?tenant=a").gemini("g")
    prepared = await llmroute.Client().prepare(llmroute.request(gemini, prompt="hi"))
    assert prepared.url.startswith("https://gw.example/v1beta/models/g:streamGenerateContent?")
    assert "tenant=a" in prepared.url and "alt=sse" in prepared.url
    # a key both the base_url and the endpoint set is sent once, with the caller's value
    azure_model = azure.configure(
        "res", api_key=KEY, base_url="https://gw.example/openai/v1?api-version=2025-01-01-preview"
    ).chat("dep")
    url = (await llmroute.Client().prepare(llmroute.request(azure_model, prompt="hi"))).url
    assert url.count("api-version=") == 1 and "api-version=2025-01-01-preview" in url
