"""The library client's own CPU per call as concurrency grows: c=1, 32, 256, and 1,000 streams.

.venv/bin/python -m tests.bench.bench_pool [--calls N] [--pool default|httpcore|both]

A loopback server in another process (``_loopback``) serves a recorded OpenAI Chat stream (20 text
events); ``c`` tasks call ``client.generate`` back to back until ``calls`` are done, and the figure
is this process's CPU time per call (``time.process_time``: the client alone). ``httpcore`` is the
pool the client had before (one ``httpx.AsyncClient`` pool, httpcore scanning it on every request
start and end); ``default`` is what ``llmroute.Client()`` builds now. The 1,000-stream row holds
1,000 calls open at once, each a paced stream (20 events, 20 ms apart).
"""

from __future__ import annotations

import argparse
import time

import anyio
import httpx

import llmroute
from llmroute.providers import openai

from ._loopback import serve

EVENTS = 20


def _client(pool: str) -> llmroute.Client:
    if pool == "httpcore":
        limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
        return llmroute.Client(httpx.AsyncClient(limits=limits), retry=llmroute.RetryPolicy.none())
    return llmroute.Client(retry=llmroute.RetryPolicy.none())


async def cpu_per_call(base: str, pool: str, concurrency: int, calls: int, paced_ms: int = 0) -> float:
    mode = f"paced/{EVENTS}/{paced_ms}" if paced_ms else f"bulk/{EVENTS}/0"
    model = openai.configure(api_key="sk-bench", base_url=f"{base}/chat/{mode}/v1").chat("m")
    request = llmroute.request(model=model, prompt="Hi")
    async with _client(pool) as client:
        left = [min(calls, 2 * concurrency)]  # warm-up: connections opened, code paths hot

        async def worker() -> None:
            while left[0] > 0:
                left[0] -= 1
                response = await client.generate(request)
                assert len(response.text) > 0

        async def run() -> None:
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker)

        await run()
        left[0] = calls
        start = time.process_time()
        await run()
        return (time.process_time() - start) / calls


async def main(calls: int, pools: list[str]) -> None:
    with serve() as base:
        rows: dict[str, dict[str, float]] = {}
        for pool in pools:
            row = rows[pool] = {}
            for c in (1, 32, 256):
                row[f"c={c}"] = await cpu_per_call(base, pool, c, calls)
            row["1000 streams"] = await cpu_per_call(base, pool, 1000, 1000, paced_ms=20)
        print(f"client CPU per call (ms), {calls} calls per row, {EVENTS}-event Chat stream over 127.0.0.1")
        print(
            f"{'pool':<10}" + "".join(f"{k:>14}" for k in next(iter(rows.values()))) + f"{'c=256 / c=1':>14}"
        )
        for pool, row in rows.items():
            cells = "".join(f"{v * 1e3:>14.3f}" for v in row.values())
            print(f"{pool:<10}{cells}{row['c=256'] / row['c=1']:>14.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--pool", choices=["default", "httpcore", "both"], default="both")
    args = parser.parse_args()
    anyio.run(main, args.calls, ["httpcore", "default"] if args.pool == "both" else [args.pool])
