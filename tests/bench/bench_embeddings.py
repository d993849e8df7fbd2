"""Embeddings: llmroute ``Client.embed`` vs the official openai SDK's ``embeddings.create`` on the
same bytes, per vector: CPU time, and the memory the result holds.

    .venv/bin/python tests/bench/bench_embeddings.py

10,000 inputs, 1,536-dimension vectors, answered by httpx.MockTransport (no sockets) with the
bytes OpenAI sends for 2,048 inputs a request: ``encoding_format: base64`` (what both clients ask
for by default) and floats in JSON (what OpenAI-compatible servers without base64 send). llmroute
splits the 10,000 itself; the SDK is called once per 2,048-input slice (it cannot take more),
``asyncio.gather``-ed, as a user of it would. Memory is what the result keeps alive (tracemalloc,
after the call) and the peak during it; CPU is ``time.process_time`` over the whole call, median of
5 runs after a warm-up (2 for the float answers: 335 MB of JSON a run). The openai SDK decodes base64 with numpy when numpy is installed (it is
here) and returns lists of Python floats either way.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import gc
import json
import random
import statistics
import struct
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import llmroute
from llmroute.providers import openai as openai_facade

N = 10_000
DIMS = 1536
SLICE = 2048
RUNS = 5


def _answers(fmt: str) -> dict[int, bytes]:
    """The answer body for a request of each slice size (2,048 and the rest), one fixed set of
    vectors, in the wire form ``fmt`` (``base64`` or ``float``)."""
    rng = random.Random(7)
    vector = [rng.uniform(-0.1, 0.1) for _ in range(DIMS)]
    packed = base64.b64encode(struct.pack(f"<{DIMS}f", *vector)).decode()
    floats = struct.unpack(f"<{DIMS}f", struct.pack(f"<{DIMS}f", *vector))  # as the API rounds them
    out: dict[int, bytes] = {}
    for n in {SLICE, N % SLICE or SLICE}:
        data = [
            {"object": "embedding", "index": i, "embedding": packed if fmt == "base64" else list(floats)}
            for i in range(n)
        ]
        body = {
            "object": "list",
            "data": data,
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": n * 8, "total_tokens": n * 8},
        }
        out[n] = json.dumps(body).encode()
    return out


def _transport(answers: dict[int, bytes]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        n = len(json.loads(request.content)["input"])
        return httpx.Response(200, headers={"content-type": "application/json"}, content=answers[n])

    return httpx.MockTransport(handler)


INPUTS = [f"document {i}: a short passage about topic {i % 97}" for i in range(N)]


async def ours(answers: dict[int, bytes], fmt: str) -> Any:
    facade = openai_facade.configure(api_key="sk-bench")
    model = facade.embedding("text-embedding-3-small")
    if fmt == "float":  # a server that answers floats: the route sends no encoding_format
        from llmroute.protocols.embeddings import openai as wire

        quirks = wire.EmbeddingQuirks(base64=False)
        model = model.with_(route=model.route.with_(protocol=wire.make_protocol(quirks)))
    async with llmroute.Client(http=httpx.AsyncClient(transport=_transport(answers))) as client:
        response = await client.embed(model, INPUTS)
    assert len(response.vectors) == N and response.dimensions == DIMS
    return response


async def theirs(answers: dict[int, bytes], fmt: str) -> Any:
    import openai

    client = openai.AsyncOpenAI(
        api_key="sk-bench", http_client=httpx.AsyncClient(transport=_transport(answers))
    )
    slices = [INPUTS[i : i + SLICE] for i in range(0, N, SLICE)]
    kwargs: dict[str, Any] = {"encoding_format": "float"} if fmt == "float" else {}
    results = await asyncio.gather(
        *(client.embeddings.create(model="text-embedding-3-small", input=s, **kwargs) for s in slices)
    )
    await client.close()
    vectors = [d.embedding for r in results for d in r.data]
    assert len(vectors) == N and len(vectors[0]) == DIMS
    return results


def _run(fn: Callable[[], Awaitable[Any]]) -> Any:
    """``fn()`` on a fresh event loop, its result kept out of the main task: Python 3.11's
    ``asyncio.run`` reprs the main task (with its result) when it restores the SIGINT handler,
    which for the SDK's 10,000 pydantic objects costs some 20 s."""
    out: list[Any] = []

    async def main() -> None:
        out.append(await fn())

    asyncio.run(main())
    return out[0]


def _cpu(run: Callable[[], Awaitable[Any]], runs: int) -> float:
    _run(run)  # warm-up (imports, caches)
    times: list[float] = []
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        _run(run)
        times.append(time.process_time() - start)
    return statistics.median(times)


def _memory(run: Callable[[], Awaitable[Any]]) -> tuple[int, int]:
    """(bytes the result keeps alive, peak bytes during the call)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = _run(run)
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    del result
    return kept, peak


def main() -> None:
    import openai

    print(
        f"{N} inputs x {DIMS} dimensions, {SLICE} a request; openai {openai.__version__}, llmroute {llmroute.__version__}"
    )
    for fmt in ("base64", "float"):
        answers = _answers(fmt)
        size = sum(len(answers[n]) * (N // n if n == SLICE else 1) for n in answers)
        print(f"\n{fmt}: {size / 1e6:.1f} MB of answers")
        runs = RUNS if fmt == "base64" else 2  # 335 MB of JSON floats a run
        mine, sdk = functools.partial(ours, answers, fmt), functools.partial(theirs, answers, fmt)
        ours_cpu, theirs_cpu = _cpu(mine, runs), _cpu(sdk, runs)
        (ours_kept, ours_peak), (theirs_kept, theirs_peak) = _memory(mine), _memory(sdk)
        print(
            f"  CPU per vector:   llmroute {ours_cpu / N * 1e6:7.2f} us   openai SDK {theirs_cpu / N * 1e6:7.2f} us   (SDK/llmroute {theirs_cpu / ours_cpu:.1f}x)"
        )
        print(
            f"  kept per vector:  llmroute {ours_kept / N:7.0f} B    openai SDK {theirs_kept / N:7.0f} B    ({theirs_kept / ours_kept:.1f}x)"
        )
        print(
            f"  peak per vector:  llmroute {ours_peak / N:7.0f} B    openai SDK {theirs_peak / N:7.0f} B    ({theirs_peak / ours_peak:.1f}x)"
        )


if __name__ == "__main__":
    main()
