"""Time per turn of a 20-step tool loop (19 tool calls, then the answer) on a simulated network:
HTTP, WebSocket with a connection per call (llmroute before connections were pooled: every turn
upgrades a new socket and sends the whole conversation), and the pooled, incremental WebSocket
path (one socket; each turn sends only the tool's output plus ``previous_response_id``).

The servers (``tests/socket_server.py``) run on 127.0.0.1 and add the network: ``--latency``
seconds one way (a new connection costs two round trips, each request one), and ``--bandwidth``
bytes/s for the request upload. Every tool result is 2,000 characters, so the conversation grows
as an agent's does. The model's own time is not simulated (it is the same on every path, except
that a real server also skips re-reading the history it kept: not measured here).

    python -m tests.bench.bench_websocket_turns [--latency 0.02] [--bandwidth 1000000] [--steps 20]
"""

from __future__ import annotations

import argparse
import time

import anyio

import llmroute
from llmroute.providers import openai

from ..socket_server import PAD, HttpServer, SocketServer


@llmroute.tool
def lookup(n: int) -> str:
    """Look up item n."""
    return f"item {n}: {PAD}"


async def loop(url: str, transport: str, pool: llmroute.SocketPool | None) -> float:
    model = openai.configure(api_key="sk-bench", base_url=url).responses("gpt-test", transport=transport)  # pyright: ignore[reportArgumentType]
    request = llmroute.request(
        model=model, prompt="Look things up.", provider_options={"openai": {"store": False}}
    )
    async with llmroute.Client(socket_pool=pool) as client:
        start = time.perf_counter()
        response = await client.generate(request, tools=[lookup])
        elapsed = time.perf_counter() - start
    assert response.text.startswith("Done after"), response.text
    return elapsed


async def best(runs: int, url: str, transport: str, pool: llmroute.SocketPool | None) -> float:
    return min([await loop(url, transport, pool) for _ in range(runs)])


async def main(latency: float, bandwidth: float, steps: int, runs: int) -> None:
    options = {"steps": steps, "latency": latency, "bandwidth": bandwidth}
    with SocketServer(**options) as ws, HttpServer(**options) as http:
        rows = [
            ("HTTP (keep-alive, whole input each turn)", await best(runs, http.url, "http", None)),
            (
                "WebSocket, a connection per call (before)",
                await best(runs, ws.url, "websocket", llmroute.SocketPool(max_idle=0)),
            ),
            ("WebSocket, pooled + incremental", await best(runs, ws.url, "websocket", None)),
        ]
        sent = [len(m["input"]) for _, m in ws.received[-steps:]]
    print(f"{steps}-step tool loop, latency {latency * 1000:g} ms one way, upload {bandwidth / 1e6:g} MB/s")
    base = rows[0][1]
    for name, seconds in rows:
        print(
            f"  {name:45s} {seconds / steps * 1000:7.1f} ms/turn  {seconds:6.2f} s  x{base / seconds:.2f} vs HTTP"
        )
    print(f"  items sent per turn on the pooled path: {sent}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--bandwidth", type=float, default=1_000_000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, args.latency, args.bandwidth, args.steps, args.runs)
