"""HttpTransport builds the request httpx's own ``build_request`` would, without its merging work."""

from __future__ import annotations

import httpx
import pytest

from llmroute.route.prepared import PreparedRequest
from llmroute.route.transport import HttpTransport

URL = "https://api.example.com/v1/chat/completions?api-version=2024-10-21"
TIMEOUT = httpx.Timeout(10.0, read=601.0, write=601.0, pool=None)


def prepared() -> PreparedRequest:
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "user-agent": "llmroute/test",
        "X-Custom-Auth": "token",
    }
    return PreparedRequest("POST", URL, headers, b'{"model":"m"}')


def same(a: httpx.Request, b: httpx.Request) -> None:
    assert (a.method, a.url, a.content, a.extensions) == (b.method, b.url, b.content, b.extensions)
    assert sorted(a.headers.multi_items()) == sorted(b.headers.multi_items())


@pytest.mark.parametrize(
    "client",
    [
        lambda: httpx.AsyncClient(),
        lambda: httpx.AsyncClient(headers={"x-team": "a", "User-Agent": "theirs", "x-custom-auth": "old"}),
        lambda: httpx.AsyncClient(cookies={"session": "s"}),
        lambda: httpx.AsyncClient(params={"extra": "1"}),
    ],
    ids=["default", "client-headers", "cookies", "params"],
)
def test_same_request_as_build_request(client: object) -> None:
    http: httpx.AsyncClient = client()  # type: ignore[operator]
    p = prepared()
    expected = http.build_request(p.method, p.url, headers=p.headers, content=p.body, timeout=TIMEOUT)
    transport = HttpTransport(http)
    for _ in range(2):  # the second time from the URL cache
        same(transport.request(p, TIMEOUT), expected)


def test_request_headers_override_the_clients_whatever_their_case() -> None:
    http = httpx.AsyncClient(headers={"x-custom-auth": "client"})
    request = HttpTransport(http).request(prepared(), TIMEOUT)
    assert request.headers.get_list("x-custom-auth") == ["token"]
    assert request.headers["user-agent"] == "llmroute/test"
    # the client's default stays (httpx adds br / zstd when brotli / zstandard are installed)
    assert request.headers["accept-encoding"] == http.headers["accept-encoding"]
