"""Shared benchmark plumbing: serve fixed bytes through httpx.MockTransport in fixed-size chunks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Iterator

import httpx

CHUNK = 16 * 1024


class _Body(httpx.AsyncByteStream, httpx.SyncByteStream):
    def __init__(self, data: bytes, size: int) -> None:
        self.data = data
        self.size = size

    def _chunks(self) -> Iterator[bytes]:
        for i in range(0, len(self.data), self.size):
            yield self.data[i : i + self.size]

    async def __aiter__(self):  # type: ignore[override]
        for chunk in self._chunks():
            yield chunk

    def __iter__(self) -> Iterator[bytes]:
        return self._chunks()


def transport(body: bytes, content_type: str = "text/event-stream", size: int = CHUNK) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type}, stream=_Body(body, size))

    return httpx.MockTransport(handler)


async def best_of(runs: int, fn: Callable[[], Awaitable[int]]) -> tuple[float, int]:
    """Median seconds over ``runs`` (after one warm-up) and the event count of the last run."""
    await fn()
    times: list[float] = []
    count = 0
    for _ in range(runs):
        start = time.perf_counter()
        count = await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), count
