"""Stickiness: how often a tool loop changes target, with and without ``Router(affinity=...)``,
the share of sessions each target gets, the prompt-cache hit ratio, and the CPU affinity adds.

.venv/bin/python tests/bench/bench_affinity.py [--loops 200] [--steps 8] [--sessions 2000] [--rounds 5]

Targets are fake Anthropic upstreams served from memory (``tests/prompt_cache.py``), each with
a prompt cache of its own that counts reads and writes as Anthropic does. Each loop is one
``client.generate(..., tools=[step])`` tool loop of ``--steps`` model calls (a session by its
stable prefix: each loop's first user message differs), over two targets of equal weight, and
again over weights 3:1. Reported: target switches per loop (a switch is a step answered by
another target than the step before), loops that stayed on one target, the split of sessions
(their first target) against the weights (also over ``--sessions`` one-call sessions, for a
tighter figure), and the cache hit ratio (reads / all input). Then the CPU per routed call,
affinity off and on, in alternating rounds (in-process state): the difference is what affinity
adds (goal: under 50 us).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
import msgspec

import llmroute
from llmroute import CachePolicy, Router, Target
from llmroute.router import Affinity
from tests.bench._common import transport
from tests.prompt_cache import CachingUpstream, answer, step_tool

ANSWER = answer(read=950, write=0, total=1000)  # steady: each call reads what the last left

SYSTEM = "You run a tool loop: call step until it says done, then say done. " * 20


def router(upstream: CachingUpstream, affinity: bool, weights: tuple[float, float], seed: int) -> Router:
    targets = [
        Target(upstream.model("a"), name="a", weight=weights[0]),
        Target(upstream.model("b"), name="b", weight=weights[1]),
    ]
    return Router(targets, affinity=Affinity() if affinity else False, seed=seed)


def request(model: Router, i: int) -> llmroute.LLMRequest:
    # each loop's own context (a file it works on): what a target switch leaves cold
    context = f"loop {i} works on this file:\n" + "".join(f"line {j} of file {i}\n" for j in range(120))
    return llmroute.request(model=model, system=SYSTEM, prompt=f"{context}\ngo", cache=CachePolicy())


def steps_of(model: Router, i: int, steps: int) -> list[llmroute.LLMRequest]:
    """The requests of one tool loop's steps: the conversation grows by a call and its result."""
    first = request(model, i)
    out = [first]
    messages = list(first.messages)
    for k in range(steps - 1):
        messages.append(llmroute.assistant(llmroute.ToolCallPart(f"toolu_{k}", "step", {"n": k})))
        messages.append(
            llmroute.tool_message(llmroute.ToolResultPart(f"toolu_{k}", "step", f"step {k} done"))
        )
        out.append(msgspec.structs.replace(first, messages=tuple(messages)))
    return out


async def loops(affinity: bool, weights: tuple[float, float], n: int, steps: int) -> dict[str, float]:
    upstream = CachingUpstream(steps=steps)
    routed = router(upstream, affinity, weights, seed=7)
    switches = 0
    steady = 0
    first = {"a": 0, "b": 0}
    read = total = 0
    async with upstream.client() as client:
        for i in range(n):
            response = await client.generate(request(routed, i), tools=[step_tool])
            targets = [s.target for s in response.steps]
            assert len(targets) == steps, targets
            switches += sum(1 for x, y in itertools.pairwise(targets) if x != y)
            steady += len(set(targets)) == 1
            first[targets[0] or ""] += 1
            read += response.cache.cache_read_tokens
            total += response.cache.input_tokens
    return {
        "switches": switches / n,
        "steady": steady / n,
        "share_a": first["a"] / n,
        "hit_ratio": read / total,
    }


async def split(weights: tuple[float, float], sessions: int) -> float:
    """Share of one-call sessions (each its own prefix) the first target gets, affinity on."""
    upstream = CachingUpstream()
    routed = router(upstream, True, weights, seed=11)
    async with upstream.client() as client:
        for i in range(sessions):
            await client.generate(request(routed, i))
    return upstream.target("a").calls / sessions


async def cpu_per_call(steps: int, n: int) -> tuple[float, float]:
    """CPU per call, affinity off and on: ``n`` loops' steps sent one by one to two routers in
    turn, call by call (so drift and load hit both alike; the collector paused), answered by
    fixed bytes (a text answer with cache reads in its usage): the router and affinity are what
    is timed, not a fake cache."""
    upstream = CachingUpstream(steps=1)
    off, on = router(upstream, False, (1.0, 1.0), seed=3), router(upstream, True, (1.0, 1.0), seed=3)
    pairs = [(steps_of(off, i, steps), steps_of(on, i, steps)) for i in range(n)]
    spent = [0.0, 0.0]
    clock = time.process_time
    async with llmroute.Client(httpx.AsyncClient(transport=transport(ANSWER))) as client:
        for a, b in pairs[:3]:  # warm-up
            for x, y in zip(a, b, strict=True):
                await client.generate(x)
                await client.generate(y)
        gc.collect()
        gc.disable()
        try:
            for k, (a, b) in enumerate(pairs):
                for x, y in zip(a, b, strict=True):
                    for side, r in ((0, x), (1, y)) if k % 2 == 0 else ((1, y), (0, x)):
                        start = clock()
                        await client.generate(r)
                        spent[side] += clock() - start
        finally:
            gc.enable()
    calls = n * steps
    return spent[0] / calls, spent[1] / calls


async def main(n: int, steps: int, sessions: int, rounds: int) -> None:
    print(f"{n} tool loops of {steps} steps over two targets (fake Anthropic upstreams with prompt caches):")
    for weights in ((1.0, 1.0), (3.0, 1.0)):
        want = weights[0] / sum(weights)
        for affinity in (False, True):
            r = await loops(affinity, weights, n, steps)
            print(
                f"  weights {weights[0]:g}:{weights[1]:g} affinity {'on ' if affinity else 'off'}: "
                f"{r['switches']:.2f} switches per loop, {r['steady'] * 100:5.1f}% of loops on one target, "
                f"sessions on a {r['share_a'] * 100:5.1f}% (weights: {want * 100:.1f}%), "
                f"cache hit ratio {r['hit_ratio'] * 100:5.1f}%"
            )
        share = await split(weights, sessions)
        print(
            f"  weights {weights[0]:g}:{weights[1]:g}: {sessions} one-call sessions, {share * 100:.1f}% on a "
            f"(weights: {want * 100:.1f}%, off by {abs(share - want) * 100:.1f} points)"
        )
    off_runs: list[float] = []
    on_runs: list[float] = []
    calls = max(10, n // 2)
    for _ in range(rounds):
        off, on = await cpu_per_call(steps, calls)
        off_runs.append(off)
        on_runs.append(on)
    diffs = sorted(on - off for off, on in zip(off_runs, on_runs, strict=True))
    print(f"CPU per routed call, median of {rounds} rounds x {calls * steps} calls each (in-process state):")
    print(
        f"  affinity off {statistics.median(off_runs) * 1e6:.1f} us, on {statistics.median(on_runs) * 1e6:.1f} us: "
        f"affinity adds {statistics.median(diffs) * 1e6:.1f} us per call "
        f"(per-round spread {diffs[0] * 1e6:.1f} .. {diffs[-1] * 1e6:.1f} us)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--loops", type=int, default=200)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    asyncio.run(main(args.loops, args.steps, args.sessions, args.rounds))
