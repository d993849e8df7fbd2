"""A small HTTP/1.1 load generator for the gateway benchmark: ``C`` keep-alive connections, each
sending the same POST back to back for a fixed time, on raw asyncio sockets (uvloop when present),
so the generator costs far less CPU than the servers it drives. Run as its own process:

    python tests/bench/_load.py HOST PORT PATH KEY BODY_JSON CONCURRENCY SECONDS

prints one JSON line: completed requests, errors, elapsed seconds and latency percentiles.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time


async def _one(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lower = head.lower()
    at = lower.find(b"content-length:")
    if at >= 0:
        end = lower.index(b"\r\n", at)
        await reader.readexactly(int(lower[at + 15 : end]))
        return status
    # chunked: read chunk by chunk until the zero-size one
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0], 16)
        await reader.readexactly(size + 2)
        if size == 0:
            return status


async def _worker(
    host: str, port: int, request: bytes, until: float, latencies: list[float], errors: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < until:
            start = time.perf_counter()
            writer.write(request)
            status = await _one(reader)
            if status != 200:
                errors.append(status)
            latencies.append(time.perf_counter() - start)
    finally:
        writer.close()


async def run(
    host: str, port: int, path: str, key: str, body: bytes, concurrency: int, seconds: float
) -> dict[str, float]:
    request = (
        f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\nauthorization: Bearer {key}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body
    latencies: list[float] = []
    errors: list[int] = []
    start = time.perf_counter()
    until = start + seconds
    await asyncio.gather(
        *(_worker(host, port, request, until, latencies, errors) for _ in range(concurrency))
    )
    elapsed = time.perf_counter() - start
    ordered = sorted(latencies)
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "elapsed": elapsed,
        "p50_ms": statistics.median(ordered) * 1000 if ordered else 0.0,
        "p90_ms": ordered[int(len(ordered) * 0.9)] * 1000 if ordered else 0.0,
    }


def main() -> None:
    host, port, path, key, body, concurrency, seconds = sys.argv[1:8]
    work = run(host, int(port), path, key, body.encode(), int(concurrency), float(seconds))
    try:
        import uvloop
    except ImportError:
        result = asyncio.run(work)
    else:
        result = uvloop.run(work)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
