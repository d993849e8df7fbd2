"""Router health, case by case on fake upstreams on 127.0.0.1: the probe lease is released however
the probe ends, incidents are counted once, the failure-rate window, per-class policies, typed
no-route errors, the operator's caps and budgets, rate-limit headers counted down per call, and
health changes heard by hooks."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

import llmroute
from llmroute import HealthChange, RetryPolicy, Router, Target, Timeouts, hosted
from llmroute.router import Cooldown

from ..reliability.server import FaultServer, Reply, Sleep, Stall, chat_chunk, chat_stream
from .upstreams import SSE, chat_model, claude_model, error, ok

pytestmark = pytest.mark.anyio

Servers = Callable[[], FaultServer]
NO_RETRY = RetryPolicy(max_retries=0)
OVERFLOW = "This model's maximum context length is 8192 tokens"


def _request(router: Router, prompt: str = "Hi", **kw: Any) -> llmroute.LLMRequest:
    return llmroute.request(model=router, prompt=prompt, **kw)


async def _half_open(client: llmroute.Client, router: Router, server: FaultServer) -> None:
    """One 503 cools the (``failures=1``) target down for 0.05 s; wait until it is half-open."""
    server.add(error(503))
    with pytest.raises(llmroute.ProviderInternalError):
        await client.generate(_request(router))
    with anyio.fail_after(5):
        while not (await router.health())["a"]["half_open"]:  # noqa: ASYNC110 - time passing
            await anyio.sleep(0.01)


def _sole(server: FaultServer, **cooldown: Any) -> Router:
    return Router(
        [Target(chat_model(server), name="a")],
        cooldown=Cooldown(failures=1, seconds=0.05, **cooldown),
        max_wait=0,
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_probe_answered_with_a_400_releases_the_lease_and_ends_the_incident(
    servers: Servers,
) -> None:
    a = servers()
    router = _sole(a)
    async with llmroute.Client(retry=NO_RETRY) as client:
        await _half_open(client, router, a)
        a.add(error(400, OVERFLOW, "invalid_request_error"), ok("a is fine"))
        with pytest.raises(llmroute.ContextOverflowError):
            await client.generate(_request(router))  # the probe: an answer, so a sign of life
        health = await router.health()
        assert not health["a"]["probing"] and not health["a"]["half_open"]
        assert (await client.generate(_request(router))).text == "a is fine"


async def test_a_probe_the_caller_stops_reading_releases_the_lease(servers: Servers) -> None:
    a = servers()
    router = _sole(a)
    async with llmroute.Client(retry=NO_RETRY) as client:
        await _half_open(client, router, a)
        a.add(Reply(200, SSE, [chat_chunk("first "), Stall()]), ok("next"))
        async with client.stream(_request(router)) as stream:
            async for event in stream:
                if event.type == "text-delta":
                    break  # the probe answered: the target is alive
        assert not (await router.health())["a"]["probing"]
        assert (await client.generate(_request(router))).text == "next"
        await _half_open(client, router, a)
        a.add(Reply(200, SSE, [chat_chunk("first "), Stall()]), ok("after the drop"))
        async for event in client.stream(_request(router)):  # no ``async with``: dropped after break
            if event.type == "text-delta":
                break
        with anyio.fail_after(5):  # the collector closes it (asyncio runs that close soon after)
            while (await router.health())["a"]["probing"]:  # noqa: ASYNC110 - the collector
                await anyio.sleep(0.01)
        assert (await client.generate(_request(router))).text == "after the drop"


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_probe_cancelled_before_its_first_byte_releases_the_lease(servers: Servers) -> None:
    a = servers()
    router = _sole(a)
    async with llmroute.Client(retry=NO_RETRY) as client:
        await _half_open(client, router, a)
        a.add(Reply(200, SSE, chat_stream("never"), before=[Stall()]), ok("the next probe"))
        with anyio.move_on_after(0.2):
            await client.generate(_request(router))
        health = await router.health()
        assert not health["a"]["probing"] and health["a"]["half_open"]  # it said nothing: still half-open
        assert (await client.generate(_request(router))).text == "the next probe"


async def test_a_probe_sends_once_even_with_retries(servers: Servers) -> None:
    a, b = servers(), servers()
    b.repeat = ok("b")
    router = Router(
        [Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)],
        cooldown=Cooldown(failures=1, seconds=0.05),
    )
    async with llmroute.Client(retry=RetryPolicy(max_retries=3), sleep=_no_sleep) as client:
        a.add(error(503), error(503), error(503), error(503))
        await client.generate(_request(router))  # a: 4 requests (its retries), then cooling
        assert len(a.received) == 4
        await anyio.sleep(0.06)
        a.add(error(503), error(503))
        probed = await client.generate(_request(router))
    assert probed.text == "b" and len(a.received) == 5  # the probe asked once
    health = await router.health()
    assert health["a"]["level"] == 1 and health["a"]["cooling_down"]  # a failed probe: longer


async def _no_sleep(_: float) -> None:
    return None


async def test_calls_in_flight_when_an_incident_began_neither_extend_nor_escalate_it(
    servers: Servers,
) -> None:
    a, b = servers(), servers()
    a.repeat = Reply(503, {"content-type": "application/json"}, [Sleep(0.2), b'{"error": {}}'], chunked=False)
    b.repeat = ok("b")
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client, anyio.create_task_group() as tg:
        for _ in range(32):
            tg.start_soon(client.generate, _request(router))
    health = await router.health()
    assert router.transitions[("a", "cooling")] == 1
    assert health["a"]["level"] == 0
    assert health["a"]["cooldown_until"] - time.time() <= Cooldown().seconds


async def test_a_failure_rate_cools_a_flapping_target_down(servers: Servers) -> None:
    a, b = servers(), servers()
    flips = iter(range(1_000))
    a.handler = lambda _: ok("a") if next(flips) % 3 == 0 else error(503)  # 2 of 3 fail, never 3 in a row
    b.repeat = ok("b")
    router = Router(
        [Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)],
        cooldown=Cooldown(failures=3, failure_rate=0.5, min_calls=6, seconds=30),
    )
    async with llmroute.Client(retry=NO_RETRY) as client:
        for _ in range(12):
            await client.generate(_request(router))
    health = await router.health()
    assert health["a"]["cooling_down"], health["a"]
    assert len(a.received) <= 9


async def test_timeouts_can_be_told_not_to_count(servers: Servers) -> None:
    a, b = servers(), servers()
    a.repeat = Reply(200, SSE, chat_stream("late"), before=[Sleep(0.5)])
    b.repeat = ok("b")
    router = Router(
        [Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)],
        cooldown=Cooldown(failures=1, timeouts=False),
    )
    async with llmroute.Client(retry=NO_RETRY, timeouts=Timeouts(first_byte=0.1)) as client:
        for _ in range(3):
            assert (await client.generate(_request(router))).text == "b"
    assert len(a.received) == 3 and not (await router.health())["a"]["cooling_down"]


async def test_no_target_that_could_ever_take_it_is_a_permanent_no_route(servers: Servers) -> None:
    a, b = servers(), servers()
    router = Router(
        [
            Target(claude_model(a), name="small", context_window=1_000),
            Target(chat_model(b), name="chat", priority=1),
        ]
    )
    request = _request(router, "word " * 2_000, tools=[hosted.web_search()])
    async with llmroute.Client(retry=NO_RETRY) as client:
        with pytest.raises(llmroute.NoRouteError) as info:
            await client.generate(request)
    exc = info.value
    assert not exc.retryable and exc.code == "no_capable_target" and exc.retry_after is None
    assert set(exc.reasons) == {"small", "chat"}
    assert "context window 1000" in exc.reasons["small"] and "web_search" in exc.reasons["chat"]
    assert "small: context window" in str(exc)
    assert a.received == [] and b.received == []


async def test_retry_after_is_the_earliest_end_of_any_block(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(ok("a", {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"}))
    b.add(error(401, "bad key", "invalid_request_error"))
    router = Router(
        [Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)], max_wait=0
    )
    async with llmroute.Client(retry=NO_RETRY) as client:
        await client.generate(_request(router))  # a answers, and has no requests left for 2 s
        a.add(error(503))
        router2 = Router([Target(chat_model(b), name="b")], state=router.state, max_wait=0)
        with pytest.raises(llmroute.AuthenticationError):
            await client.generate(_request(router2))  # b: cooling down for auth_seconds
        with pytest.raises(llmroute.NoRouteError) as info:
            await client.generate(_request(router))
    exc = info.value
    assert exc.retryable and exc.code == "no_target_available"
    assert exc.retry_after is not None and 1.5 < exc.retry_after <= 2.0
    assert "rate-limited" in exc.reasons["a"] and "cooling down" in exc.reasons["b"]


async def test_waiting_for_a_rate_limit_reset_when_nothing_else_can_take_it(servers: Servers) -> None:
    a = servers()
    a.add(
        ok("first", {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "300ms"}),
        ok("after the reset"),
    )
    router = Router([Target(chat_model(a), name="a")])
    async with llmroute.Client(retry=NO_RETRY) as client:
        await client.generate(_request(router))
        started = time.monotonic()
        response = await client.generate(_request(router))
    assert response.text == "after the reset" and 0.2 < time.monotonic() - started < 2.0


async def test_few_requests_left_are_shared_out_not_overshot(servers: Servers) -> None:
    a, b = servers(), servers()
    left = {"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "30s"}
    a.add(ok("a", left))
    a.repeat = Reply(200, {**SSE, **left}, [Sleep(0.1), *chat_stream("a")])
    b.repeat = ok("b")
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        await client.generate(_request(router))  # a says: 3 requests left
        async with anyio.create_task_group() as tg:
            for _ in range(32):
                tg.start_soon(client.generate, _request(router))
    assert len(a.received) == 1 + 3  # not 1 + 32: each call counted the 3 down
    assert len(b.received) == 29


async def test_a_concurrency_cap_and_an_rpm_budget_are_the_operators_own(servers: Servers) -> None:
    a, b = servers(), servers()
    a.repeat = Reply(200, SSE, [Sleep(0.2), *chat_stream("a")])
    b.repeat = ok("b")
    capped = Router(
        [Target(chat_model(a), name="a", max_in_flight=4), Target(chat_model(b), name="b", priority=1)]
    )
    async with llmroute.Client(retry=NO_RETRY) as client:
        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(client.generate, _request(capped))
        assert len(a.received) == 4 and len(b.received) == 6
        budget = Router(
            [Target(chat_model(b), name="b", rpm=3), Target(chat_model(a), name="a", priority=1)],
            max_wait=0,
        )
        texts = [(await client.generate(_request(budget))).text for _ in range(5)]
    assert texts == ["b", "b", "b", "a", "a"]


async def test_a_tpm_budget_counts_the_reported_usage(servers: Servers) -> None:
    a, b = servers(), servers()
    a.repeat = ok("a")  # usage: 5 + 1 tokens
    b.repeat = ok("b")
    router = Router([Target(chat_model(a), name="a", tpm=200), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        texts = [(await client.generate(_request(router, "word " * 60))).text for _ in range(6)]
        # ~80 estimated tokens reserved per call, 6 used: the budget holds two at once, not 30
        big = await client.generate(_request(router, "word " * 400))
    assert texts == ["a"] * 6 and big.text == "b"


class Heard(llmroute.Hook):
    def __init__(self) -> None:
        self.changes: list[HealthChange] = []

    def on_health(self, change: HealthChange) -> None:
        self.changes.append(change)


async def test_health_changes_reach_the_hooks_and_the_routers_counts(servers: Servers) -> None:
    a, b, c = servers(), servers(), servers()
    a.add(error(503), ok("a again"))
    b.add(error(429, "slow down", "rate_limit_error", **{"retry-after": "1"}))
    c.repeat = ok("c")
    router = Router(
        [
            Target(chat_model(a), name="a"),
            Target(chat_model(b), name="b", priority=1),
            Target(chat_model(c), name="c", priority=2),
        ],
        cooldown=Cooldown(failures=1, seconds=0.05),
    )
    heard = Heard()
    async with llmroute.Client(retry=NO_RETRY, hooks=[heard]) as client:
        first = await client.generate(_request(router))
        await anyio.sleep(0.06)
        second = await client.generate(_request(router))
    assert first.text == "c" and second.text == "a again"
    seen = [(c.router, c.target, c.state) for c in heard.changes]
    assert seen == [
        ("router", "a", "cooling"),
        ("router", "b", "rate-limited"),
        ("router", "a", "healthy"),
    ], heard.changes
    cooling = heard.changes[0]
    assert cooling.reason == "ProviderInternalError" and cooling.seconds == pytest.approx(0.05, abs=0.01)
    assert router.transitions == {("a", "cooling"): 1, ("b", "rate-limited"): 1, ("a", "healthy"): 1}
