"""A vcrpy cassette recorded without ``decode_compressed_response`` (vcrpy's default) keeps the
gzip bytes and ``Content-Encoding``; ``llmroute.testing`` replays it as the client read it."""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

import llmroute
from llmroute.providers import openai
from llmroute.testing import Cassette, Chunking, ReplayTransport

vcr = pytest.importorskip("vcr")

CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hallo, Welt"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}
STREAM = (
    'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    '"delta":{"role":"assistant","content":"Grüß "},"finish_reason":null}]}\n\n'
    'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    '"delta":{"content":"dich"},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
)
ENCODERS: dict[str, Callable[[bytes], bytes]] = {"gzip": gzip.compress, "deflate": zlib.compress}


@pytest.fixture
def compressing_server() -> Iterator[tuple[str, dict[str, str]]]:
    """Answers chat completions compressed with the ``coding`` the test sets."""
    settings = {"coding": "gzip"}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["content-length"])))
            streamed = request.get("stream", False)
            raw = STREAM.encode() if streamed else json.dumps(CHAT).encode()
            body = ENCODERS[settings["coding"]](raw)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream" if streamed else "application/json")
            self.send_header("content-encoding", settings["coding"])
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", settings
    finally:
        server.shutdown()
        server.server_close()


def request(base_url: str, stream: bool) -> llmroute.LLMRequest:
    model = openai.configure(api_key="sk-test", base_url=base_url).chat("gpt-4o-mini")
    return llmroute.request(model=model, prompt="hi", generation=llmroute.GenerationOptions(stream=stream))


@pytest.mark.anyio
@pytest.mark.parametrize("coding", ["gzip", "deflate"])
@pytest.mark.parametrize("stream", [False, True])
async def test_cassette_recorded_without_decoding_replays(
    compressing_server: tuple[str, dict[str, str]], tmp_path: Path, coding: str, stream: bool
) -> None:
    base_url, settings = compressing_server
    settings["coding"] = coding
    path = tmp_path / "compressed.yaml"
    recorder = vcr.VCR(record_mode="all")  # vcrpy's default: decode_compressed_response=False
    with recorder.use_cassette(str(path)):
        async with llmroute.Client() as c:
            live = await c.generate(request(base_url, stream))
    assert f"- {coding}" in path.read_text()  # the header and the compressed bytes were kept

    cassette = Cassette.load(path)
    [interaction] = cassette.interactions
    assert "content-encoding" not in interaction.response.headers
    for chunking in (Chunking.whole(), Chunking.random(seed=3, max_size=7)):
        transport = ReplayTransport(cassette, chunking)
        async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as c:
            replayed = await c.generate(request(base_url, stream))
        assert replayed.text == live.text == ("Grüß dich" if stream else "Hallo, Welt")


def test_a_body_already_decoded_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "decoded.yaml"
    body = json.dumps(CHAT)
    path.write_text(
        "interactions:\n- request: {method: POST, uri: 'https://x/v1/chat/completions', body: null, headers: {}}\n"
        f"  response:\n    status: {{code: 200}}\n    headers: {{Content-Encoding: [gzip]}}\n"
        f"    body: {{string: {json.dumps(body)}}}\n"
    )
    [interaction] = Cassette.load(path).interactions
    assert interaction.response.body == body.encode()


def test_an_encoding_it_cannot_decode_is_named(tmp_path: Path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(
        "interactions:\n- request: {method: POST, uri: 'https://x/v1/chat/completions', body: null, headers: {}}\n"
        "  response:\n    status: {code: 200}\n    headers: {Content-Encoding: [compress]}\n"
        "    body: {string: 'xx'}\n"
    )
    with pytest.raises(ValueError, match="'compress'"):
        Cassette.load(path)
