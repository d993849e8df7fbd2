"""Shared benchmark plumbing: serve fixed bytes through httpx.MockTransport in fixed-size chunks."""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator

import httpx

import llmroute

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


async def count_events(model: llmroute.Model, body: bytes, *, batches: bool, text_only: bool) -> int:
    """Stream ``body`` as ``model``'s answer through a fresh ``llmroute.Client``: event by event
    (counting text deltas) or batch by batch (counting text deltas, or every event)."""
    request = llmroute.request(model=model, prompt="hi")
    count = 0
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport(body))) as client:
        if not batches:
            async for event in client.stream(request):
                if event.type == "text-delta":
                    count += 1
        elif text_only:
            async for batch in client.stream(request).batches():
                count += sum(1 for e in batch if e.type == "text-delta")
        else:
            async for batch in client.stream(request).batches():
                count += len(batch)
    return count


async def against_sdk(
    model: llmroute.Model,
    body: bytes,
    *,
    text_only_batches: bool,
    sdk_module: str,
    sdk_label: str,
    sdk: Callable[[], Awaitable[int]],
    check: Callable[[int, int, int], bool],
) -> None:
    """llmroute per event and per batch (counting text deltas, or every event) against a vendor
    SDK on the same bytes, medians printed side by side; ``check(theirs, ours, batches)`` holds
    the three counts to what the stream holds."""
    batch_unit = "text events/s" if text_only_batches else "events/s"
    t_ours, n_ours = await best_of(7, lambda: count_events(model, body, batches=False, text_only=True))
    t_batch, n_batch = await best_of(
        7, lambda: count_events(model, body, batches=True, text_only=text_only_batches)
    )
    print(
        f"{'llmroute Client.stream (per event):':<38}{n_ours / t_ours:>10,.0f} text events/s  ({t_ours * 1e3:.1f} ms)"
    )
    print(
        f"{'llmroute Client.stream().batches():':<38}{n_batch / t_batch:>10,.0f} {batch_unit:<15}({t_batch * 1e3:.1f} ms)"
    )
    try:
        importlib.import_module(sdk_module)
    except ImportError:
        print(f"{sdk_module} SDK not installed: pip install 'llmroute[bench]' for the comparison")
        return
    t_sdk, n_sdk = await best_of(3, sdk)
    assert check(n_sdk, n_ours, n_batch), (n_sdk, n_ours, n_batch)
    print(f"{sdk_label + ':':<38}{n_sdk / t_sdk:>10,.0f} text events/s  ({t_sdk * 1e3:.1f} ms)")
    print(
        f"ratio (llmroute / {sdk_module} SDK): {t_sdk / t_ours:.1f}x per event, {t_sdk / t_batch:.1f}x batches"
    )
