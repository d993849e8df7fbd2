"""A small OpenAI Chat + Gemini (+ OpenAI embeddings) server on 127.0.0.1 for running the docs'
snippets unchanged.

The snippets read their endpoints from the environment (``OPENAI_BASE_URL``,
``GOOGLE_GEMINI_BASE_URL``), so pointing those here runs them as a user would, with real sockets.
Replies depend on the request, so one server serves every snippet:

- a JSON-schema request (``response_format``) gets the object the docs' ``Recipe`` expects;
- a request with tools and no tool result yet calls the first tool, every required argument
  ``"Paris"``;
- anything else gets a short text answer.

Streamed requests get SSE, ``stream: false`` / ``:generateContent`` one JSON body; ``/embeddings``
answers ``EMBEDDING_DIMENSIONS`` floats per input (base64 when asked), input ``i``'s first float ``i``.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["ANSWER", "EMBEDDING_DIMENSIONS", "RECIPE", "FakeProvider"]

ANSWER = "Hello from the local fake provider."
RECIPE = {"name": "Pancakes", "minutes": 15, "ingredients": ["eggs", "flour", "milk"]}
_USAGE = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}
EMBEDDING_DIMENSIONS = 1536


def _embeddings(body: dict[str, Any]) -> bytes:
    inputs: list[str] = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data: list[dict[str, Any]] = []
    for i in range(len(inputs)):
        vector = [float(i)] + [0.5] * (EMBEDDING_DIMENSIONS - 1)
        packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        embedding = packed if body.get("encoding_format") == "base64" else vector
        data.append({"object": "embedding", "index": i, "embedding": embedding})
    usage = {"prompt_tokens": 3 * len(inputs), "total_tokens": 3 * len(inputs)}
    return json.dumps({"object": "list", "data": data, "model": body["model"], "usage": usage}).encode()


def _chat_reply(body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(the assistant message's delta, finish_reason) for one Chat request."""
    messages: list[dict[str, Any]] = body.get("messages", [])
    if "response_format" in body:
        return {"content": json.dumps(RECIPE)}, "stop"
    if body.get("tools") and not any(m.get("role") == "tool" for m in messages):
        function = body["tools"][0]["function"]
        required: list[str] = function.get("parameters", {}).get("required", [])
        call = {"index": 0, "id": "call_1", "type": "function"}
        call["function"] = {
            "name": function["name"],
            "arguments": json.dumps(dict.fromkeys(required, "Paris")),
        }
        return {"tool_calls": [call]}, "tool_calls"
    return {"content": ANSWER}, "stop"


def _chat(body: dict[str, Any]) -> tuple[str, bytes]:
    delta, finish = _chat_reply(body)
    head = {"id": "chatcmpl-1", "created": 0, "model": body.get("model", "m")}
    if body.get("stream") is False:
        message = {"role": "assistant", "content": delta.get("content")}
        if "tool_calls" in delta:
            message["tool_calls"] = [
                {k: v for k, v in c.items() if k != "index"} for c in delta["tool_calls"]
            ]
        choice = {"index": 0, "message": message, "finish_reason": finish}
        whole = {**head, "object": "chat.completion", "choices": [choice], "usage": _USAGE}
        return "application/json", json.dumps(whole).encode()
    chunks = [
        {"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": None},
        {"index": 0, "delta": {}, "finish_reason": finish},
    ]
    events = [{**head, "object": "chat.completion.chunk", "choices": [c]} for c in chunks]
    events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": _USAGE})
    sse = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return "text/event-stream", sse.encode()


def _gemini(streaming: bool) -> tuple[str, bytes]:
    candidate = {
        "content": {"role": "model", "parts": [{"text": ANSWER}]},
        "finishReason": "STOP",
        "index": 0,
    }
    usage = {"promptTokenCount": 7, "candidatesTokenCount": 5, "totalTokenCount": 12}
    whole = json.dumps({"candidates": [candidate], "usageMetadata": usage})
    if streaming:
        return "text/event-stream", f"data: {whole}\r\n\r\n".encode()
    return "application/json", whole.encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body: dict[str, Any] = json.loads(raw or b"{}")
        self.server.requests.append((self.path, body))  # type: ignore[attr-defined]
        if self.path.endswith("/chat/completions"):
            kind, data = _chat(body)
        elif self.path.endswith("/embeddings"):
            kind, data = "application/json", _embeddings(body)
        elif ":streamGenerateContent" in self.path:
            kind, data = _gemini(streaming=True)
        elif ":generateContent" in self.path:
            kind, data = _gemini(streaming=False)
        else:
            kind, data = "application/json", b'{"error": {"message": "not served here"}}'
            self.send_response(404)
            self._finish(kind, data)
            return
        self.send_response(200)
        self._finish(kind, data)

    def _finish(self, kind: str, data: bytes) -> None:
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FakeProvider:
    """``with FakeProvider() as fake:`` serves on ``fake.url``; ``fake.requests`` is what it received
    (path, JSON body) in order; ``fake.env`` points the OpenAI and Gemini facades at it."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._server.requests = self.requests  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def env(self) -> dict[str, str]:
        return {
            "OPENAI_BASE_URL": f"{self.url}/v1",
            "OPENAI_API_KEY": "sk-docs-test",
            "GOOGLE_GEMINI_BASE_URL": self.url,
            "GEMINI_API_KEY": "docs-test",
        }

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
