"""The library client's own CPU per call as concurrency grows (c=1, 32, 256, and 1,000 streams),
and what a Router adds to it.

.venv/bin/python -m tests.bench.bench_pool [--calls N] [--pool default|httpcore|both] [--rounds R]

A loopback server in another process (``_loopback``) serves a recorded OpenAI Chat stream (20 text
events); ``c`` tasks call ``client.generate`` back to back until ``calls`` are done, and the figure
is this process's CPU time per call (``time.process_time``: the client alone). ``httpcore`` is the
pool the client had before (one ``httpx.AsyncClient`` pool, httpcore scanning it on every request
start and end); ``default`` is what ``llmroute.Client()`` builds now. The 1,000-stream row holds
1,000 calls open at once, each a paced stream (20 events, 20 ms apart: one read per event), beside
the same paced streams 32 at a time.

Then the Router's added CPU per call: the same calls through ``Router([model, fallback])`` (the
first target answers) and through the bare model, alternating in ``rounds`` paired rounds on the
default pool, at c=1, 32 and 256; the figure is the median per-round difference.
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio
import httpx

import llmroute
from llmroute import Router, Target
from llmroute.providers import openai

from ._loopback import serve

EVENTS = 20


def _client(pool: str) -> llmroute.Client:
    if pool == "httpcore":
        limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
        return llmroute.Client(httpx.AsyncClient(limits=limits), retry=llmroute.RetryPolicy.none())
    return llmroute.Client(retry=llmroute.RetryPolicy.none())


def _model(base: str, paced_ms: int = 0, name: str = "m") -> llmroute.Model:
    mode = f"paced/{EVENTS}/{paced_ms}" if paced_ms else f"bulk/{EVENTS}/0"
    return openai.configure(api_key="sk-bench", base_url=f"{base}/chat/{mode}/v1").chat(name)


async def cpu_per_call(
    base: str, pool: str, concurrency: int, calls: int, paced_ms: int = 0, routed: bool = False
) -> float:
    model: object = _model(base, paced_ms)
    if routed:
        model = Router(
            [Target(_model(base, paced_ms)), Target(_model(base, paced_ms, "fallback"), priority=1)]
        )
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


async def router_cost(base: str, calls: int, rounds: int) -> None:
    print(f"Router's added CPU per call (ms), default pool, median of {rounds} paired rounds x {calls} calls")
    for c in (1, 32, 256):
        bare: list[float] = []
        routed: list[float] = []
        for i in range(rounds):
            pair = [(False, bare), (True, routed)]
            for is_routed, runs in pair if i % 2 == 0 else pair[::-1]:
                runs.append(await cpu_per_call(base, "default", c, calls, routed=is_routed))
        diffs = sorted(r - b for b, r in zip(bare, routed, strict=True))
        b, r = statistics.median(bare), statistics.median(routed)
        print(
            f"  c={c:<4} bare {b * 1e3:.3f}  Router {r * 1e3:.3f}  added {statistics.median(diffs) * 1e3:+.3f}"
            f"  (rounds {diffs[0] * 1e3:+.3f} .. {diffs[-1] * 1e3:+.3f})"
        )


async def main(calls: int, pools: list[str], rounds: int) -> None:
    with serve() as base:
        rows: dict[str, dict[str, float]] = {}
        for pool in pools:
            row = rows[pool] = {}
            for c in (1, 32, 256):
                row[f"c={c}"] = await cpu_per_call(base, pool, c, calls)
            row["32 streams"] = await cpu_per_call(base, pool, 32, 320, paced_ms=20)
            row["1000 streams"] = await cpu_per_call(base, pool, 1000, 1000, paced_ms=20)
        print(f"client CPU per call (ms), {calls} calls per row, {EVENTS}-event Chat stream over 127.0.0.1")
        print(
            f"{'pool':<10}" + "".join(f"{k:>14}" for k in next(iter(rows.values()))) + f"{'c=256 / c=1':>14}"
        )
        for pool, row in rows.items():
            cells = "".join(f"{v * 1e3:>14.3f}" for v in row.values())
            print(f"{pool:<10}{cells}{row['c=256'] / row['c=1']:>14.2f}")
        if rounds:
            await router_cost(base, calls // 2, rounds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--pool", choices=["default", "httpcore", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=5, help="paired rounds for the Router's cost (0: skip)")
    args = parser.parse_args()
    pools = ["httpcore", "default"] if args.pool == "both" else [args.pool]
    anyio.run(main, args.calls, pools, args.rounds)
