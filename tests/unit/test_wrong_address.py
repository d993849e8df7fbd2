"""Wrong-address failures read clearly: a 2xx HTML page (a wrong base_url) is a typed error saying
so, not a truncated stream; a connection failure names the URL once."""

from __future__ import annotations

import httpx
import pytest

import llmroute
from llmroute.providers import compatible

PAGE = (
    b"<!doctype html><html><head><title>\n  Welcome to <b>nginx</b>!\x07 sk-live-secret-0123456789"
    b"</title></head><body>hello</body></html>"
)


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "TEXT/HTML"])
async def test_html_page_is_not_an_event_stream(stream: bool, content_type: str) -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, headers={"content-type": content_type}, content=PAGE)

    model = compatible.configure(base_url="https://example.test/", api_key="sk-live-secret-0123456789").model(
        "m"
    )
    request = llmroute.request(model, prompt="hi", generation=llmroute.GenerationOptions(stream=stream))
    async with llmroute.Client(http=httpx.AsyncClient(transport=httpx.MockTransport(handler))) as client:
        with pytest.raises(llmroute.InvalidProviderOutputError) as err:
            await client.generate(request)
    message = str(err.value)
    assert "not an event stream" in message
    assert "content-type text/html" in message.lower()
    assert '"Welcome to nginx !' in message  # tags and control characters gone
    assert "sk-live-secret" not in message and "finish_reason" not in message
    assert err.value.http is not None and err.value.http.status == 200
    assert len(calls) == 1  # not retried


@pytest.mark.anyio
async def test_connect_error_names_the_url_once() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno -2] Name or service not known", request=request)

    model = compatible.configure(base_url="https://nowhere.test/v1", api_key="k").model("m")
    request = llmroute.request(model, prompt="hi")
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with llmroute.Client(http=http, retry=llmroute.RetryPolicy.none()) as client:
        with pytest.raises(llmroute.TransportError) as err:
            await client.generate(request)
    message = str(err.value)
    assert message.count("https://nowhere.test/v1/chat/completions") == 1, message
    assert message.startswith("ConnectError: [Errno -2] Name or service not known (POST https://")
