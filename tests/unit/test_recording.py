"""Record against a real local server, replay offline with vcrpy, re-chunked; refuse leaked secrets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

import llmroute
from llmroute.providers import compatible
from llmroute.testing import CassetteSecretError, Chunking, RechunkTransport, use_cassette

SECRET = "sk-live-0123456789abcdefSECRET"
STREAM = (
    'data: {"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Bonjour "}}]}\r\n\r\n'
    'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"世界 😀"}}]}\r\n\r\n'
    'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\r\n\r\n'
    'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}\r\n\r\n'
    "data: [DONE]\r\n\r\n"
)


class _Handler(BaseHTTPRequestHandler):
    body = STREAM

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        data = self.body.encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("set-cookie", f"session={SECRET}")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    _Handler.body = STREAM


def _request(port: int) -> llmroute.LLMRequest:
    model = compatible.configure(base_url=f"http://127.0.0.1:{port}/v1", api_key=SECRET).model("local")
    return llmroute.request(model=model, prompt="hi")


async def _generate(
    request: llmroute.LLMRequest, transport: httpx.AsyncBaseTransport | None = None
) -> llmroute.LLMResponse:
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        return await client.generate(request)


@pytest.mark.anyio
async def test_record_then_replay_offline_rechunked(server: ThreadingHTTPServer, tmp_path: Path) -> None:
    path = tmp_path / "local.yaml"
    port = server.server_address[1]
    with use_cassette(path, record=True):
        live = await _generate(_request(port))
    assert live.text == "Bonjour 世界 😀"
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text and "[REDACTED]" in text
    server.shutdown()  # replay must not need the server
    for seed in range(3):
        with use_cassette(path, record=False):
            replayed = await _generate(
                _request(port), RechunkTransport(httpx.AsyncHTTPTransport(), Chunking.random(seed, 5))
            )
        assert replayed.events == live.events


@pytest.mark.anyio
async def test_replay_mode_never_records(tmp_path: Path, server: ThreadingHTTPServer) -> None:
    import vcr.errors

    with (
        pytest.raises(vcr.errors.CannotOverwriteExistingCassetteException),
        use_cassette(tmp_path / "none.yaml", record=False),
    ):
        await _generate(_request(server.server_address[1]))
    assert not (tmp_path / "none.yaml").exists()


@pytest.mark.anyio
async def test_refuses_to_save_a_cassette_holding_a_secret(
    server: ThreadingHTTPServer, tmp_path: Path
) -> None:
    _Handler.body = STREAM.replace("Bonjour ", f"your key is {SECRET} ")
    path = tmp_path / "leak.yaml"
    with pytest.raises(CassetteSecretError) as info, use_cassette(path, record=True):
        await _generate(_request(server.server_address[1]))
    assert not path.exists()
    assert SECRET not in str(info.value)
    # vcrpy must not stay patched after a refused save: a live request goes to the socket again.
    response = await _generate(_request(server.server_address[1]))
    assert SECRET in response.text


def test_record_mode_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmroute.testing import recording_enabled

    monkeypatch.delenv("LLMROUTE_RECORD", raising=False)
    assert not recording_enabled()
    monkeypatch.setenv("LLMROUTE_RECORD", "1")
    assert recording_enabled()
