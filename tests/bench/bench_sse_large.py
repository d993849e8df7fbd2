"""One huge SSE event (1/2/4/8 MiB) arriving in 1,448-byte reads (one TCP segment each): the decoder
must be linear in the event size, so the time per MiB stays flat as the event grows.

    python -m tests.bench.bench_sse_large
"""

from __future__ import annotations

import time

from llmroute.framing.sse import SSEDecoder

READ = 1448


def event(mib: int) -> bytes:
    return b'data: {"inlineData":"' + b"A" * (mib * 1024 * 1024) + b'"}\n\n'


def feed_all(body: bytes) -> float:
    decoder = SSEDecoder(max_event_bytes=64 * 1024 * 1024)
    start = time.perf_counter()
    events = []
    for i in range(0, len(body), READ):
        events.extend(decoder.feed(body[i : i + READ]))
    elapsed = time.perf_counter() - start
    assert len(events) == 1 and len(events[0].data) == len(body) - 8
    return elapsed


def main() -> None:
    print(f"one event in {READ}-byte reads")
    for mib in (1, 2, 4, 8):
        body = event(mib)
        best = min(feed_all(body) for _ in range(3))
        print(f"{mib} MiB: {best * 1e3:7.1f} ms  ({best * 1e3 / mib:5.1f} ms/MiB, {len(body) // READ} reads)")


if __name__ == "__main__":
    main()
