"""The gateway's added latency per request on loopback: client -> gateway -> upstream against
client -> upstream, same upstream, same request, keep-alive on both hops.

    .venv/bin/python tests/bench/bench_gateway.py [requests]

The upstream is a minimal OpenAI-compatible HTTP/1.1 server (a fixed completion, streamed or
not) in a thread of this process; the gateway runs as its own process (``llmroute serve``), as in
production. Reports medians and p90 per path, and the added median (target: < 2 ms).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
KEY = "gw-bench-key"

_CHUNKS = [
    {
        "id": "chatcmpl-b",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
    },
    *[
        {
            "id": "chatcmpl-b",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}],
        }
        for w in ("Paris", " is", " the", " capital", " of", " France", ".")
    ],
    {
        "id": "chatcmpl-b",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    },
    {
        "id": "chatcmpl-b",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    },
]
STREAM = "".join(f"data: {json.dumps(c)}\n\n" for c in _CHUNKS).encode() + b"data: [DONE]\n\n"
WHOLE = json.dumps(
    {
        "id": "chatcmpl-b",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Paris is the capital of France."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
    }
).encode()


class Upstream:
    """Answers every POST with the fixed completion (SSE when the body asks to stream); runs in
    its own process so it never competes with the client for this process's GIL."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--upstream"], stdout=subprocess.PIPE, cwd=ROOT
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)

    @classmethod
    def serve(cls) -> None:
        async def run() -> None:
            server = await asyncio.start_server(cls._handle, "127.0.0.1", 0)
            print(server.sockets[0].getsockname()[1], flush=True)
            await server.serve_forever()

        asyncio.run(run())

    @staticmethod
    async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                stream = b'"stream":true' in body.replace(b" ", b"")
                payload, kind = (STREAM, b"text/event-stream") if stream else (WHOLE, b"application/json")
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: "
                    + kind
                    + b"\r\ncontent-length: "
                    + str(len(payload)).encode()
                    + b"\r\n\r\n"
                    + payload
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


def start_gateway(upstream: Upstream, web_search: bool) -> tuple[subprocess.Popen[bytes], str, str]:
    config: dict[str, Any] = {
        "keys": [KEY],
        "models": {
            "main": {
                "provider": "compatible",
                "base_url": f"http://127.0.0.1:{upstream.port}/v1",
                "api_key": "upstream",
                "model": "m",
            }
        },
    }
    if web_search:
        config["models"]["glm"] = {"provider": "glm", "model": "glm-4.7", "api_key": "x", "public": False}
        config["webSearch"] = {
            "engines": [{"id": "glm", "providerKey": "glm", "default": True}],
            "injectPolicy": "always",
        }
    handle, path = tempfile.mkstemp(suffix=".json")
    os.write(handle, json.dumps(config).encode())
    os.close(handle)
    port = 18000 + os.getpid() % 1000 + (1 if web_search else 0)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llmroute.cli",
            "serve",
            "--config",
            path,
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(
                base + "/models", headers={"authorization": f"Bearer {KEY}"}, timeout=1
            ).raise_for_status()
            return proc, base, path
        except httpx.HTTPError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("gateway did not start") from None
            time.sleep(0.1)


def measure(client: httpx.Client, url: str, body: dict[str, Any], n: int) -> list[float]:
    times: list[float] = []
    for i in range(n + 20):
        start = time.perf_counter()
        with client.stream("POST", url, json=body, headers={"authorization": f"Bearer {KEY}"}) as response:
            response.raise_for_status()
            for _ in response.iter_bytes():
                pass
        if i >= 20:  # warm-up: connections, imports, caches
            times.append(time.perf_counter() - start)
    return times


def report(label: str, times: list[float]) -> float:
    median = statistics.median(times) * 1000
    p90 = statistics.quantiles(times, n=10)[-1] * 1000
    print(f"  {label:<28} median {median:6.2f} ms   p90 {p90:6.2f} ms")
    return median


def cpu_per_request(n: int) -> None:
    """The gateway's own CPU per request, in one thread with no sockets (ASGI transport in front,
    MockTransport behind): robust on a loaded machine, where loopback wall times are mostly
    scheduling."""
    import anyio

    import llmroute
    from llmroute.server import create_app, load

    def upstream(request: httpx.Request) -> httpx.Response:
        stream = b'"stream":true' in request.content
        return httpx.Response(200, content=STREAM if stream else WHOLE)

    gateway = load(
        {
            "keys": [KEY],
            "models": {"main": {"provider": "compatible", "base_url": "http://up.test/v1", "model": "m"}},
        }
    )
    client = llmroute.Client(http=httpx.AsyncClient(transport=httpx.MockTransport(upstream)))
    app = create_app(gateway, client=client)

    async def go() -> None:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://gw") as via,
            httpx.AsyncClient(transport=httpx.MockTransport(upstream)) as direct,
        ):
            for stream in (False, True):
                body = {"model": "main", "stream": stream, "messages": [{"role": "user", "content": "Hi"}]}
                gw: list[float] = []
                raw: list[float] = []
                for i in range(n + 50):
                    start = time.thread_time()
                    await via.post(
                        "/v1/chat/completions", json=body, headers={"authorization": f"Bearer {KEY}"}
                    )
                    mid = time.thread_time()
                    await direct.post("http://up.test/v1/chat/completions", json=body)
                    if i >= 50:
                        gw.append(mid - start)
                        raw.append(time.thread_time() - mid)
                added = (statistics.median(gw) - statistics.median(raw)) * 1000
                print(f"  gateway CPU per request ({'streamed' if stream else 'whole'}): {added:.2f} ms")

    print(f"in-process, {n} requests each:")
    anyio.run(go)


def main(n: int = 300) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"load average {load} on {os.cpu_count()} cores (loopback wall times are scheduling-bound when high)"
    )
    cpu_per_request(max(n, 500))
    upstream = Upstream()
    try:
        run(upstream, n)
    finally:
        upstream.stop()


def run(upstream: Upstream, n: int) -> None:
    direct_url = f"http://127.0.0.1:{upstream.port}/v1/chat/completions"
    for web_search in (False, True):
        proc, base, path = start_gateway(upstream, web_search)
        try:
            print(
                f"gateway {'with web_search injected (always)' if web_search else 'plain'}, {n} requests each:"
            )
            with httpx.Client(timeout=10) as client:
                for stream in (False, True):
                    body = {
                        "model": "main",
                        "stream": stream,
                        "messages": [{"role": "user", "content": "What is the capital of France?"}],
                    }
                    kind = "streamed" if stream else "whole"
                    # interleave so machine noise hits both paths alike
                    direct: list[float] = []
                    via: list[float] = []
                    for _ in range(3):
                        direct += measure(client, direct_url, {**body, "model": "m"}, n // 3)
                        via += measure(client, base + "/chat/completions", body, n // 3)
                    d = report(f"direct ({kind})", direct)
                    g = report(f"via gateway ({kind})", via)
                    print(f"  added median ({kind}): {g - d:.2f} ms  (target < 2 ms)")
        finally:
            proc.terminate()
            proc.wait(10)
            os.unlink(path)


if __name__ == "__main__":
    if sys.argv[1:] == ["--upstream"]:
        Upstream.serve()
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
