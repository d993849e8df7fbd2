"""The router under faults, side by side with litellm's Router on the same upstreams on 127.0.0.1.

.venv/bin/python -m tests.bench.bench_router_faults [--litellm PYTHON] [--callers 32]

``PYTHON``: the interpreter of a separate venv with litellm installed (``python -m venv /tmp/l &&
/tmp/l/bin/pip install litellm``; it is not a project dependency). Each scenario runs ``callers``
tasks calling back to back against fake OpenAI-compatible upstreams (``tests/reliability/server.py``)
whose faults follow a timeline on the system's monotonic clock, so the litellm process sees the
same faults at the same moments:

- ``blip``: both targets answer 503 for 0.3 s; the share of the next 5 s's calls that succeed
  (llmroute with no retries of its own, litellm with its defaults).
- ``429``: the first target always answers 429 with ``Retry-After: 5``, the second is healthy
  (default retries on both); requests the first target got per call, and the p99 call time.
- ``latency``: two targets of one group, one 20x slower to its first byte (10 vs 200 ms); the
  share of calls sent to the slow one (llmroute ``strategy="latency"``, litellm
  ``latency-based-routing``).
- ``slow``: the first target's first byte takes 0.5 s against a 0.3 s deadline, the second is
  fine; the share of calls that succeed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import llmroute
from llmroute import RetryPolicy, Router, Target, Timeouts
from tests.reliability.server import FaultServer, Received, Reply, Sleep, chat_stream
from tests.router.upstreams import SSE, chat_model, error, ok

Outcome = tuple[float, float, str | None, str | None]  # started, ended, who answered, error
WARM = 0.5


def _servers(scenario: str, start: float) -> dict[str, FaultServer]:
    def at(lo: float, hi: float) -> bool:
        return lo <= time.monotonic() - start < hi

    if scenario == "latency":
        fast, slow = FaultServer().start(), FaultServer().start()
        fast.repeat = Reply(200, SSE, chat_stream("fast"), before=[Sleep(0.01)])
        slow.repeat = Reply(200, SSE, chat_stream("slow"), before=[Sleep(0.2)])
        return {"fast": fast, "slow": slow}
    a, b = FaultServer().start(), FaultServer().start()
    if scenario == "blip":
        a.handler = lambda _: error(503, "blip") if at(0, 0.3) else ok("a")

        def b_blip(_: Received) -> Reply:
            return error(503, "blip") if at(0, 0.3) else ok("b")

        b.handler = b_blip
    elif scenario == "429":
        a.repeat = error(429, "slow down", "rate_limit_error", **{"retry-after": "5"})
        b.repeat = ok("b")
    else:
        a.repeat = Reply(200, SSE, chat_stream("a"), before=[Sleep(0.5)])
        b.repeat = ok("b")
    return {"a": a, "b": b}


SPANS = {"blip": 5.3, "429": 3.0, "latency": 3.0, "slow": 3.0}


async def _ours(scenario: str, servers: dict[str, FaultServer], start: float, callers: int) -> list[Outcome]:
    if scenario == "latency":
        router = Router(
            [Target(chat_model(servers[n]), name=n) for n in ("fast", "slow")], strategy="latency"
        )
    else:
        router = Router(
            [
                Target(chat_model(servers["a"]), name="a"),
                Target(chat_model(servers["b"]), name="b", priority=1),
            ]
        )
    retry = RetryPolicy.none() if scenario == "blip" else None
    timeouts = Timeouts(first_byte=0.3) if scenario == "slow" else None
    out: list[Outcome] = []
    stop = start + SPANS[scenario]
    request = llmroute.request(model=router, prompt="Hi")
    async with llmroute.Client(retry=retry) as client:
        await anyio.sleep(max(0.0, start - WARM - time.monotonic()))

        async def caller() -> None:
            while time.monotonic() < stop:
                began = time.monotonic()
                try:
                    response = await client.generate(request, timeouts=timeouts)
                except llmroute.LLMError as exc:
                    out.append((began, time.monotonic(), None, type(exc).__name__))
                else:
                    out.append((began, time.monotonic(), response.text, None))

        async with anyio.create_task_group() as tg:
            for _ in range(callers):
                tg.start_soon(caller)
    return out


def _theirs(
    python: str, scenario: str, servers: dict[str, FaultServer], start: float, callers: int
) -> list[Outcome]:
    spec = {
        "scenario": scenario,
        "urls": {n: s.base_url for n, s in servers.items()},
        "start": start,
        "stop": start + SPANS[scenario],
        "warm": WARM,
        "callers": callers,
        "timeout": 0.3 if scenario == "slow" else None,
    }
    script = Path(__file__).with_name("_litellm_router.py")
    done = subprocess.run(
        [python, str(script), json.dumps(spec)], capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"litellm run failed: {done.stderr[-2000:]}")
    return [tuple(o) for o in json.loads(done.stdout.strip().splitlines()[-1])]  # type: ignore[misc]


def _report(scenario: str, outs: list[Outcome], start: float, servers: dict[str, FaultServer]) -> str:
    def ok_share(rows: list[Outcome]) -> str:
        return f"{sum(o[3] is None for o in rows) / max(1, len(rows)):.3f} of {len(rows)}"

    if scenario == "blip":
        after = [o for o in outs if start + 0.3 <= o[0] < start + 5.3]
        return f"success in the next 5 s {ok_share(after)}"
    if scenario == "429":
        times = sorted(o[1] - o[0] for o in outs)
        p99 = times[int(len(times) * 0.99)] if times else float("nan")
        per_call = len(servers["a"].received) / max(1, len(outs))
        return f"success {ok_share(outs)}; requests to the 429ing target per call {per_call:.3f}; p99 {p99 * 1e3:.0f} ms"
    if scenario == "latency":
        slow = sum(o[2] == "slow" for o in outs) / max(1, len(outs))
        med = statistics.median(o[1] - o[0] for o in outs) if outs else float("nan")
        return f"share to the 20x slower target {slow:.1%} of {len(outs)}; median call {med * 1e3:.0f} ms"
    return f"success {ok_share(outs)}"


async def main(python: str | None, callers: int) -> None:
    runners: list[tuple[str, Callable[..., Any]]] = [("llmroute", _ours)]
    if python:
        runners.append(("litellm", None))  # type: ignore[arg-type]
    print(f"{callers} callers; fake upstreams on 127.0.0.1; timelines on the monotonic clock")
    for scenario in SPANS:
        for name, _ in runners:
            # room for the client to start (litellm's import alone takes seconds)
            start = time.monotonic() + WARM + (1.5 if name == "llmroute" else 12.0)
            servers = _servers(scenario, start)
            try:
                if name == "llmroute":
                    outs = await _ours(scenario, servers, start, callers)
                else:
                    assert python is not None
                    outs = await anyio.to_thread.run_sync(_theirs, python, scenario, servers, start, callers)
                print(f"{scenario:<8} {name:<9} {_report(scenario, outs, start, servers)}")
            finally:
                for server in servers.values():
                    server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--litellm", metavar="PYTHON", help="an interpreter with litellm installed")
    parser.add_argument("--callers", type=int, default=32)
    args = parser.parse_args()
    anyio.run(main, args.litellm, args.callers)
