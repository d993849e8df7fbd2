"""Time to first event on a real 127.0.0.1 socket: llmroute ``Client`` vs raw httpx, sequential calls.

Both reuse one client; raw httpx reads the whole body each time (so its connection is pooled), and
llmroute drains after the terminal event (so is its). The ratio is the overhead llmroute adds to the
first event: preparing the request, the executor and the parser. Also counts server connections.

    python -m tests.bench.bench_connections
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from typing import Any

import anyio
import httpx

import llmroute
from llmroute import TextDelta

from ..reliability.server import FaultServer, Reply, chat_stream
from ..routes import PROTOCOLS

CALLS = 300


async def raw_httpx(request: llmroute.LLMRequest) -> list[float]:
    prepared = await llmroute.Client().prepare(request)
    out: list[float] = []
    async with httpx.AsyncClient() as http:
        for _ in range(CALLS):
            start = time.perf_counter()
            req = http.build_request(
                prepared.method, prepared.url, headers=prepared.headers, content=prepared.body
            )
            response = await http.send(req, stream=True)
            first = True
            async for _chunk in response.aiter_bytes():
                if first:
                    out.append(time.perf_counter() - start)
                    first = False
            await response.aclose()
    return out


async def ours(request: llmroute.LLMRequest) -> list[float]:
    out: list[float] = []
    async with llmroute.Client() as client:
        for _ in range(CALLS):
            start = time.perf_counter()
            first = True
            async for event in client.stream(request):
                if first and isinstance(event, TextDelta):
                    out.append(time.perf_counter() - start)
                    first = False
    return out


def serve(calls: int, conn: Any) -> None:
    """The server in its own process, so it does not compete with the client for the GIL."""
    server = FaultServer().start()
    server.add(*(Reply(parts=chat_stream("Hello", " world")) for _ in range(calls)))
    conn.send(server.port)
    conn.recv()  # until the parent is done
    conn.send(server.connections)
    server.stop()


async def main() -> None:
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.get_context("spawn").Process(
        target=serve, args=(2 * CALLS + 10, child), daemon=True
    )
    proc.start()
    port = parent.recv()
    try:
        request = PROTOCOLS["openai-chat"].request(f"http://127.0.0.1:{port}")
        raw = await raw_httpx(request)
        mine = await ours(request)
    finally:
        parent.send("done")
        connections = parent.recv()
        proc.join(5)
    r, m = statistics.median(raw) * 1e3, statistics.median(mine) * 1e3
    print(f"{CALLS} sequential calls each, chunked SSE over 127.0.0.1, server in another process")
    print(f"raw httpx   TTFE median {r:.2f} ms  p90 {sorted(raw)[int(CALLS * 0.9)] * 1e3:.2f} ms")
    print(f"llmroute    TTFE median {m:.2f} ms  p90 {sorted(mine)[int(CALLS * 0.9)] * 1e3:.2f} ms")
    print(f"server saw {connections} TCP connections for {2 * CALLS} calls (one per client when reused)")
    print(f"ratio (llmroute / raw httpx): {m / r:.2f}x")


if __name__ == "__main__":
    anyio.run(main)
