"""A fake Anthropic Messages upstream with a prompt cache of its own, served from memory
(``httpx.MockTransport``): several targets, one per host, each caching what its requests' breakpoints
mark, as Anthropic does.

Each target keeps the prefixes its requests marked with ``cache_control`` (tools, system blocks,
message blocks in Anthropic's order), each living ``ttl`` seconds from its last use. A request
reads the longest cached prefix that ends at or before its last breakpoint, writes the rest up to
that breakpoint, and the answer's usage says so (``cache_read_input_tokens``,
``cache_creation_input_tokens``). A block costs ``len(json) // 4 + 1`` tokens.

It answers with a ``tool_use`` of the request's first tool until the conversation holds
``steps - 1`` tool results, then with text: a tool loop of ``steps`` calls. ``fail(host, n)``
makes the next ``n`` calls to a target answer 503. ``serve()`` puts it on a socket on 127.0.0.1
(for programs run as a user would), where targets are told apart by their API key.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

import llmroute
from llmroute.providers import anthropic

__all__ = ["CachingUpstream", "answer", "serve", "step_tool"]


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _tokens(block: Any) -> int:
    return len(json.dumps(block, sort_keys=True)) // 4 + 1


class _Target:
    __slots__ = ("cache", "calls", "failing", "hits")

    def __init__(self) -> None:
        self.cache: dict[str, float] = {}  # prefix hash -> expiry (wall clock)
        self.calls = 0
        self.failing = 0
        self.hits = 0


class CachingUpstream:
    """Targets by host (``http://<host>.invalid``), each with its own prompt cache."""

    def __init__(self, ttl: float = 300.0, steps: int = 1, clock: Callable[[], float] = time.time) -> None:
        self.ttl = ttl
        self.steps = steps
        self.clock = clock
        self.targets: dict[str, _Target] = {}
        self.log: list[tuple[str, int, int, int]] = []  # (host, read, write, input) per answered call

    def target(self, host: str) -> _Target:
        found = self.targets.get(host)
        if found is None:
            found = self.targets[host] = _Target()
        return found

    def model(self, host: str, model_id: str = "claude-sonnet-4-5") -> llmroute.Model:
        self.target(host)
        return anthropic.configure(api_key="sk-ant-cache-test", base_url=f"http://{host}.invalid").messages(
            model_id
        )

    def fail(self, host: str, n: int = 1) -> None:
        self.target(host).failing += n

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def client(self, **options: Any) -> llmroute.Client:
        return llmroute.Client(httpx.AsyncClient(transport=self.transport()), **options)

    def handle(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host.removesuffix(".invalid")
        if host == "127.0.0.1":  # on a socket (``serve``): targets are told apart by their key
            host = request.headers.get("x-api-key", "-")
        target = self.target(host)
        target.calls += 1
        if target.failing:
            target.failing -= 1
            body = {"type": "error", "error": {"type": "api_error", "message": "injected failure"}}
            return httpx.Response(503, json=body)
        payload = json.loads(request.content)
        read, write, total = self._cache(target, payload)
        self.log.append((host, read, write, total))
        results = sum(
            1
            for m in payload["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        )
        tools = payload.get("tools") or [{"name": "step"}]
        body = answer(read, write, total, tool=results + 1 < self.steps, n=results, name=tools[0]["name"])
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    def _cache(self, target: _Target, payload: dict[str, Any]) -> tuple[int, int, int]:
        """Anthropic's accounting: the longest live cached prefix is read, the rest up to the last
        breakpoint written; prefixes ending at a breakpoint are kept (or refreshed) for ``ttl``."""
        blocks: list[Any] = [*payload.get("tools", ()), *payload.get("system", ())]
        for message in payload["messages"]:
            content = message["content"]
            for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
                blocks.append({"role": message["role"], **block})
        now = self.clock()
        digest = hashlib.sha256()
        prefixes: list[str] = []
        tokens: list[int] = []
        marks: list[int] = []
        for i, block in enumerate(blocks):
            marked = "cache_control" in block
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            digest.update(json.dumps(plain, sort_keys=True).encode())
            prefixes.append(digest.hexdigest())
            tokens.append(_tokens(plain))
            if marked:
                marks.append(i)
        total = sum(tokens)
        if not marks:
            return 0, 0, total
        last = marks[-1]
        hit = -1
        for i in range(last, -1, -1):
            expiry = target.cache.get(prefixes[i])
            if expiry is not None and expiry > now:
                hit = i
                break
        read = sum(tokens[: hit + 1])
        write = sum(tokens[hit + 1 : last + 1])
        if hit >= 0:
            target.hits += 1
            target.cache[prefixes[hit]] = now + self.ttl
        for i in marks:
            target.cache[prefixes[i]] = now + self.ttl
        return read, write, total


@contextmanager
def serve(upstream: CachingUpstream) -> Iterator[str]:
    """``upstream`` on a socket on 127.0.0.1; yields its base URL (``http://127.0.0.1:PORT``)."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            request = httpx.Request(
                "POST",
                f"http://127.0.0.1{self.path}",
                headers=dict(self.headers),
                content=self.rfile.read(length),
            )
            with lock:
                response = upstream.handle(request)
            body = response.content
            self.send_response(response.status_code)
            self.send_header("content-type", response.headers.get("content-type", "application/json"))
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def answer(read: int, write: int, total: int, *, tool: bool = False, n: int = 0, name: str = "step") -> bytes:
    """An Anthropic stream whose usage reads ``read`` and writes ``write`` of ``total`` input
    tokens: a ``tool_use`` of the tool ``name`` (``tool``) or the text ``done``."""
    usage = {
        "input_tokens": total - read - write,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": 1,
    }
    message = {
        "id": "msg_cache",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "usage": usage,
    }
    if tool:
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps({"n": n})}
        reason = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": "done"}
        reason = "end_turn"
    return b"".join(
        [
            _sse("message_start", {"type": "message_start", "message": message}),
            _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 1}},
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
    )


def step(n: int = 0) -> str:
    """One step of the loop."""
    return f"step {n} done"


step_tool = llmroute.tool(step)
