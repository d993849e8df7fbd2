"""AWS event-stream decoding: llmroute's decoder vs botocore's ``EventStreamBuffer``.

~20k Bedrock-like ``contentBlockDelta`` frames (about 3 MB), decoded from 16 KiB chunks and from one
3 MB chunk (what a cassette replay delivers). Ours must be linear: the one-chunk case as fast as the
many-chunk case. Also: the whole llmroute stack (Client + Bedrock Converse protocol over an
``httpx.MockTransport`` serving 16 KiB chunks) in events/s.

    .venv/bin/python tests/bench/bench_eventstream.py
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import time
from collections.abc import Callable

import httpx
from botocore.eventstream import EventStreamBuffer

import llmroute
from llmroute.framing.eventstream import EventStreamDecoder, encode_message
from llmroute.providers import bedrock

CONTENT = ["hello ", "héllo ", "世界 ", "🎉 ", 'say "hi" ', "line\n", "naïve café "]
PAD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
N = 20_000
REPEATS = 7


def event(kind: str, payload: dict[str, object]) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(payload, ensure_ascii=False).encode())


def build_stream() -> tuple[bytes, int, int]:
    frames = [event("messageStart", {"p": PAD[:10], "role": "assistant"})]
    chars = 0
    for i in range(N - 4):
        text = CONTENT[i % len(CONTENT)]
        chars += len(text)
        frames.append(
            event(
                "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}, "p": PAD[: 1 + i % 20]}
            )
        )
    frames.append(event("contentBlockStop", {"contentBlockIndex": 0, "p": PAD[:5]}))
    frames.append(event("messageStop", {"p": PAD[:7], "stopReason": "end_turn"}))
    frames.append(
        event(
            "metadata", {"usage": {"inputTokens": 10, "outputTokens": N, "totalTokens": N + 10}, "p": "abc"}
        )
    )
    return b"".join(frames), len(frames), chars


def chunks_of(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def ours(chunks: list[bytes]) -> int:
    decoder = EventStreamDecoder()
    n = 0
    for chunk in chunks:
        n += len(decoder.feed(chunk))
    decoder.close()
    return n


def botocore_buffer(chunks: list[bytes]) -> int:
    buffer = EventStreamBuffer()
    n = 0
    for chunk in chunks:
        buffer.add_data(chunk)
        for _message in buffer:
            n += 1
    return n


def round_robin(
    cases: list[tuple[str, Callable[[list[bytes]], int], list[bytes]]], expect: int, repeats: int
) -> dict[str, float]:
    """Median seconds per case; cases run interleaved, order rotated each repeat (load drifts)."""
    for _, fn, chunks in cases:
        assert fn(chunks) == expect  # warm-up + checksum
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for r in range(repeats):
        for name, fn, chunks in cases[r % len(cases) :] + cases[: r % len(cases)]:
            gc.collect()
            t0 = time.perf_counter()
            got = fn(chunks)
            times[name].append(time.perf_counter() - t0)
            assert got == expect, (name, got, expect)
    return {name: statistics.median(ts) for name, ts in times.items()}


async def full_stack(body: bytes, chars: int) -> float:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "application/vnd.amazon.eventstream"},
            stream=_Chunks(chunks_of(body, 16384)),
        )

    model = bedrock.configure(region="us-east-1", api_key="bench-key").converse("us.amazon.nova-micro-v1:0")
    request = llmroute.request(model=model, prompt="hi")
    times: list[float] = []
    for i in range(REPEATS + 1):
        gc.collect()
        async with llmroute.Client(http=httpx.AsyncClient(transport=httpx.MockTransport(handler))) as client:
            t0 = time.perf_counter()
            n = 0
            async for ev in client.stream(request):
                if isinstance(ev, llmroute.TextDelta):
                    n += len(ev.text)
            if i:
                times.append(time.perf_counter() - t0)
        assert n == chars, (n, chars)
    return statistics.median(times)


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self):  # type: ignore[override]
        for chunk in self._chunks:
            yield chunk


def main() -> None:
    body, frames, chars = build_stream()
    print(f"{frames} frames, {len(body) / 1e6:.2f} MB, median of {REPEATS}, interleaved")
    small, whole = chunks_of(body, 16384), [body]
    cases = [
        ("llmroute  16 KiB chunks", ours, small),
        ("botocore  16 KiB chunks", botocore_buffer, small),
        ("llmroute  one 3 MB chunk", ours, whole),
        ("botocore  one 3 MB chunk", botocore_buffer, whole),
    ]
    results = round_robin(cases, frames, REPEATS)
    print(f"{'decoder':28s} {'ms':>8s} {'frames/s':>12s} {'MB/s':>8s}")
    for name, t in results.items():
        print(f"{name:28s} {t * 1e3:8.1f} {frames / t:12,.0f} {len(body) / t / 1e6:8.1f}")
    for label in ("16 KiB chunks", "one 3 MB chunk"):
        ratio = results[f"botocore  {label}"] / results[f"llmroute  {label}"]
        print(f"llmroute vs botocore, {label}: {ratio:.1f}x faster")
    lin = results["llmroute  one 3 MB chunk"] / results["llmroute  16 KiB chunks"]
    print(f"llmroute one-chunk / 16 KiB time: {lin:.2f} (1.0 = linear)")
    t = asyncio.run(full_stack(body, chars))
    print(
        f"full stack (Client + bedrock-converse, 16 KiB chunks): {t * 1e3:.1f} ms, {frames / t:,.0f} events/s"
    )


if __name__ == "__main__":
    main()
