"""The router under load, on fake upstreams on 127.0.0.1 whose faults depend on the time: 32 callers
at once, as the gateway sees them. A blip is not an outage, a healed target is back within a second,
a probe never strands a target, ``latency`` does not herd onto the slow one, and a 429 or a slow
first byte costs the callers nothing a fallback can answer."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import pytest

import llmroute
from llmroute import RetryPolicy, Router, Target, Timeouts

from ..reliability.server import FaultServer, Received, Reply, Sleep, chat_stream
from .upstreams import SSE, chat_model, error, ok

pytestmark = pytest.mark.anyio

Servers = Callable[[], FaultServer]
NO_RETRY = RetryPolicy(max_retries=0)
CALLERS = 32


@dataclass
class Outcome:
    started: float
    ended: float
    target: str | None
    error: str | None


async def load(
    client: llmroute.Client, router: Router, seconds: float, callers: int = CALLERS, **call: object
) -> list[Outcome]:
    """``callers`` tasks calling back to back for ``seconds``; each call's outcome."""
    out: list[Outcome] = []
    stop = time.monotonic() + seconds
    request = llmroute.request(model=router, prompt="Hi")

    async def caller() -> None:
        while time.monotonic() < stop:
            started = time.monotonic()
            try:
                response = await client.generate(request, **call)  # type: ignore[arg-type]
            except llmroute.LLMError as exc:
                out.append(Outcome(started, time.monotonic(), None, type(exc).__name__))
            else:
                out.append(Outcome(started, time.monotonic(), response.steps[-1].target, None))

    async with anyio.create_task_group() as tg:
        for _ in range(callers):
            tg.start_soon(caller)
    return out


def between(outcomes: list[Outcome], start: float, end: float) -> list[Outcome]:
    return [o for o in outcomes if start <= o.started < end]


def success(outcomes: list[Outcome]) -> float:
    assert outcomes, "no call in the window"
    return sum(o.error is None for o in outcomes) / len(outcomes)


class Clock:
    """Fault windows relative to a start time the test sets (monotonic)."""

    def __init__(self) -> None:
        self.zero = time.monotonic() + 3600.0

    def start(self, after: float = 0.0) -> float:
        self.zero = time.monotonic() + after
        return self.zero

    def within(self, start: float, end: float) -> bool:
        now = time.monotonic() - self.zero
        return start <= now < end


async def test_a_blip_on_every_target_is_not_an_outage(servers: Servers) -> None:
    # 0.3 s of 503s on both targets, seen by 32 callers with no retries of their own: each target
    # cools down once (the calls in flight do not escalate it); when both are cooling, one call
    # probes the first to recover and the others wait for it
    a, b = servers(), servers()
    clock = Clock()

    blipped: list[int] = []

    def blip(_: Received) -> Reply:
        if clock.within(0.0, 0.3):
            blipped.append(1)
            return error(503, "blip")
        return ok("fine")

    a.handler = b.handler = blip
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        assert success(await load(client, router, 0.2)) == 1.0  # connections open, code warm
        zero = clock.start(after=0.1)
        outcomes = await load(client, router, 0.1 + 0.3 + 5.0)
    after = between(outcomes, zero + 0.3, zero + 5.3)
    assert success(after) >= 0.95, f"{success(after):.3f} of {len(after)}"
    assert blipped  # the blip was seen
    counts = router.transitions
    assert counts.get(("a", "cooling"), 0) <= 3 and counts.get(("b", "cooling"), 0) <= 3, counts
    health = await router.health()
    assert health["a"]["level"] <= 1 and not health["a"]["cooling_down"]  # back, not out for minutes


async def test_a_healed_target_is_back_within_a_second(servers: Servers) -> None:
    a, b = servers(), servers()
    clock = Clock()
    a.handler = lambda _: error(503, "down") if clock.within(0.0, 0.6) else ok("a")
    b.repeat = ok("b")
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        await load(client, router, 0.2)
        zero = clock.start(after=0.1)
        outcomes = await load(client, router, 0.1 + 0.6 + 1.5)
    healed = zero + 0.6
    back = min(o.ended for o in outcomes if o.target == "a" and o.started >= zero + 0.3)
    assert back - healed <= 1.0, f"a was back {back - healed:.2f}s after it healed"
    assert success(outcomes) >= 0.99  # b answered meanwhile
    assert router.transitions[("a", "healthy")] >= 1


async def test_latency_sends_little_to_a_twenty_times_slower_target(servers: Servers) -> None:
    fast, slow = servers(), servers()
    fast.repeat = Reply(200, SSE, chat_stream("fast"), before=[Sleep(0.01)])
    slow.repeat = Reply(200, SSE, chat_stream("slow"), before=[Sleep(0.2)])
    router = Router(
        [Target(chat_model(fast), name="fast"), Target(chat_model(slow), name="slow")], strategy="latency"
    )
    async with llmroute.Client(retry=NO_RETRY) as client:
        outcomes = await load(client, router, 2.0)
    to_slow = sum(o.target == "slow" for o in outcomes) / len(outcomes)
    assert to_slow <= 0.20, f"{to_slow:.2%} of {len(outcomes)} calls went to the slow target"
    assert success(outcomes) == 1.0
    assert any(o.target == "slow" for o in outcomes)  # explored: its estimate stays fresh


async def test_a_429_with_a_healthy_fallback_costs_one_request_and_no_sleep_under_load(
    servers: Servers,
) -> None:
    a, b = servers(), servers()
    a.repeat = error(429, "slow down", "rate_limit_error", **{"retry-after": "30"})
    b.repeat = ok("b")
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await anyio.sleep(seconds)

    async with llmroute.Client(sleep=sleep) as client:  # default retries: 2
        outcomes = await load(client, router, 1.0)
    assert success(outcomes) == 1.0 and slept == []
    assert len(a.received) <= CALLERS  # the first wave each asked once, then a was blocked
    assert max(o.ended - o.started for o in outcomes) < 3.0  # a sleep would be 30 s


async def test_a_slow_first_byte_past_the_deadline_falls_back_for_nearly_every_call(
    servers: Servers,
) -> None:
    slow, fine = servers(), servers()
    slow.repeat = Reply(200, SSE, chat_stream("late"), before=[Sleep(0.5)])
    fine.repeat = ok("fine")
    router = Router(
        [Target(chat_model(slow), name="slow"), Target(chat_model(fine), name="fine", priority=1)]
    )
    async with llmroute.Client() as client:
        outcomes = await load(client, router, 3.0, timeouts=Timeouts(first_byte=0.3))
    assert success(outcomes) >= 0.95, f"{success(outcomes):.3f} of {len(outcomes)}"
