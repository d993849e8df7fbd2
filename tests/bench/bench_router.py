"""What a Router costs per call over a bare Model, and what Redis adds.

.venv/bin/python tests/bench/bench_router.py [--calls N] [--rounds R]

The same small Chat stream (9 events) is served from memory (httpx.MockTransport) to
``client.generate`` with the bare Model and with a two-target Router over it (in-process state;
the first target answers, as in the common case). Rounds alternate the two and the figure is the
median per-call difference in process CPU time (the goal: under 50 us). Then the same Router
keeping health in a real redis-server on 127.0.0.1 (started here, like the tests do), wall time
per call, and the raw round trip of one health read (``get_many``) and one ``window`` call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import llmroute
from llmroute import Router, Target
from llmroute.providers import openai
from llmroute.state import RedisState
from tests.bench._common import transport
from tests.redis_server import redis_server
from tests.reliability.server import chat_stream

BODY = b"".join(chat_stream("Hello", " there", "!"))


def models() -> tuple[llmroute.Model, llmroute.Model]:
    facade = openai.configure(api_key="sk-bench", base_url="http://bench.invalid/v1")
    return facade.chat("m"), facade.chat("fallback")


async def per_call(
    client: llmroute.Client, model: object, calls: int, clock: Callable[[], float] = time.process_time
) -> float:
    request = llmroute.request(model=model, prompt="Hi")
    for _ in range(20):  # warm-up
        await client.generate(request)
    start = clock()
    for _ in range(calls):
        await client.generate(request)
    return (clock() - start) / calls


async def round_trip(call: Callable[[], Awaitable[object]], n: int = 2_000) -> float:
    for _ in range(50):
        await call()
    start = time.perf_counter()
    for _ in range(n):
        await call()
    return (time.perf_counter() - start) / n


async def main(calls: int, rounds: int) -> None:
    bare, fallback = models()
    router = Router([Target(bare), Target(fallback, priority=1)])
    bare_runs: list[float] = []
    routed_runs: list[float] = []
    async with llmroute.Client(httpx.AsyncClient(transport=transport(BODY))) as client:
        for i in range(rounds):
            pair = [(bare, bare_runs), (router, routed_runs)]
            for model, runs in pair if i % 2 == 0 else pair[::-1]:
                runs.append(await per_call(client, model, calls))
        b, r = statistics.median(bare_runs), statistics.median(routed_runs)
        diffs = sorted(y - x for x, y in zip(bare_runs, routed_runs, strict=True))
        print(f"CPU per call, median of {rounds} rounds x {calls} calls (in-process state):")
        print(f"  bare Model {b * 1e6:7.1f} us   Router {r * 1e6:7.1f} us   ratio {r / b:.2f}x")
        print(
            f"  router overhead {statistics.median(diffs) * 1e6:.1f} us per call "
            f"(per-round spread {diffs[0] * 1e6:.1f} .. {diffs[-1] * 1e6:.1f} us)"
        )
        with redis_server() as url:
            state = RedisState(url)
            shared = Router([Target(bare), Target(fallback, priority=1)], state=state, name="bench")
            keys = [f"router:bench:k{i}" for i in range(8)]
            get = await round_trip(lambda: state.get_many(keys))
            window = await round_trip(lambda: state.window("rpm:bench", 1, 60, limit=1e9))
            local_wall = await per_call(client, router, calls, time.perf_counter)
            redis_wall = await per_call(client, shared, calls, time.perf_counter)
            redis_cpu = await per_call(client, shared, calls)
            await state.aclose()
        print("Redis (redis-server on 127.0.0.1, same machine):")
        print(f"  get_many(8 keys) round trip {get * 1e6:.0f} us; window() (Lua) {window * 1e6:.0f} us")
        print(
            f"  Router wall per call: in-process state {local_wall * 1e6:.0f} us, Redis {redis_wall * 1e6:.0f} us "
            f"(+{(redis_wall - local_wall) * 1e6:.0f} us: one health read per call); "
            f"CPU with Redis {redis_cpu * 1e6:.0f} us"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
