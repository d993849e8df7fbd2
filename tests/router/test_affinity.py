"""Router(affinity=...): sessions stay on one target, pins move only when the target cannot take
the call (reported), the first calls of sessions follow the weights, and the cheapest target
takes a moving session. Upstreams: fake Anthropic servers with prompt caches, in memory."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import llmroute
from llmroute import CachePolicy, RetryPolicy, Router, Target
from llmroute.catalog import ModelInfo, Prices, register
from llmroute.router import Affinity, Cooldown
from llmroute.router.affinity import Record
from llmroute.state import LocalState

from ..prompt_cache import CachingUpstream, step_tool

pytestmark = pytest.mark.anyio

NO_RETRY = RetryPolicy(max_retries=0)
SYSTEM = "You run a tool loop: call step until it says done. " * 10


def _router(up: CachingUpstream, affinity: Any = True, **kw: Any) -> Router:
    hosts = kw.pop("hosts", ("a", "b"))
    weights = kw.pop("weights", (1.0,) * len(hosts))
    targets = [Target(up.model(h), name=h, weight=w) for h, w in zip(hosts, weights, strict=True)]
    return Router(targets, affinity=affinity, **kw)


def _request(router: Router, i: int = 0, **kw: Any) -> llmroute.LLMRequest:
    kw.setdefault("cache", CachePolicy())
    return llmroute.request(model=router, system=SYSTEM, prompt=f"loop {i}", **kw)


async def test_tool_loops_stay_on_one_target_and_read_the_cache() -> None:
    up = CachingUpstream(steps=8)
    router = _router(up, seed=5)
    async with up.client() as client:
        responses = [await client.generate(_request(router, i), tools=[step_tool]) for i in range(20)]
    for response in responses:
        assert len({s.target for s in response.steps}) == 1, [s.target for s in response.steps]
        assert response.cache_miss is None and response.attempts == ()
        reads = [s.usage.cache_read_tokens for s in response.steps if s.usage is not None]
        assert all(r > 0 for r in reads[1:])  # every step after the first reads the prefix
    assert {r.steps[0].target for r in responses} == {"a", "b"}  # sessions spread over both


async def test_without_affinity_the_same_loops_change_target() -> None:
    """The test above can fail: the same router without affinity is a coin flip per step."""
    up = CachingUpstream(steps=8)
    router = _router(up, affinity=False, seed=5)
    async with up.client() as client:
        responses = [await client.generate(_request(router, i), tools=[step_tool]) for i in range(20)]
    switched = sum(len({s.target for s in r.steps}) > 1 for r in responses)
    assert switched >= 15


async def test_first_calls_of_sessions_follow_the_weights() -> None:
    up = CachingUpstream()
    router = _router(up, weights=(3.0, 1.0), seed=2)
    async with up.client() as client:
        for i in range(400):
            await client.generate(_request(router, i))
            await client.generate(_request(router, i))  # the session's second call: same target
    share = up.target("a").calls / 800
    assert 0.68 < share < 0.82
    assert all(r > 0 for host, r, _, _ in up.log[1::2])  # every second call read its own cache


async def test_the_pin_moves_only_after_a_failure_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", "llmroute.router")
    up = CachingUpstream(steps=8)
    router = _router(up, seed=1)
    seen: list[llmroute.LLMEvent] = []
    async with up.client(retry=NO_RETRY) as client:
        finished = 0
        first: str | None = None
        async for event in client.stream(_request(router), tools=[step_tool]):
            seen.append(event)
            if isinstance(event, llmroute.StepStart) and first is None:
                first = event.target
            if isinstance(event, llmroute.StepFinish):
                finished += 1
                if finished == 3:
                    assert first is not None
                    up.fail(first)  # the 4th step's call to the pinned target fails
    starts = [e for e in seen if isinstance(e, llmroute.StepStart)]
    other = "b" if first == "a" else "a"
    assert [s.target for s in starts] == [first] * 3 + [other] * 5
    moved = starts[3].attempts
    assert len(moved) == 1 and moved[0].target == first and moved[0].pinned
    assert moved[0].error == "ProviderInternalError" and moved[0].status == 503
    assert all(s.attempts == () for s in starts[4:])
    misses = [e.cache_miss for e in seen if isinstance(e, llmroute.StepFinish)]
    assert misses[3] is not None and misses[3].reason == "target"
    assert misses[3].previous_target == first and misses[3].target == other
    assert [m for i, m in enumerate(misses) if i != 3] == [None] * 7
    assert f"a session moves from {first} to {other}" in caplog.text


async def test_a_cooling_pinned_target_is_skipped_and_reported() -> None:
    up = CachingUpstream()
    router = _router(up, seed=1, cooldown=Cooldown(failures=1, seconds=30))
    async with up.client(retry=NO_RETRY) as client:
        first = await client.generate(_request(router))
        pinned = first.steps[0].target
        assert pinned is not None
        up.fail(pinned)
        moved = await client.generate(_request(router))  # fails on the pin, moves; the pin cools
        again = await client.generate(_request(router))  # the new pin answers
    other = "b" if pinned == "a" else "a"
    assert moved.steps[0].target == other and moved.attempts[0].pinned
    assert again.steps[0].target == other and again.attempts == ()
    assert up.target(pinned).calls == 2


async def test_a_pin_to_a_blocked_target_is_skipped_without_sending() -> None:
    up = CachingUpstream()
    state = LocalState()
    router = _router(up, seed=1, state=state, cooldown=Cooldown(failures=1, seconds=30))
    async with up.client(retry=NO_RETRY) as client:
        first = await client.generate(_request(router))
        pinned = first.steps[0].target
        assert pinned is not None
        other = _router(up, affinity=False, state=state, seed=9, cooldown=Cooldown(failures=1, seconds=30))
        up.fail(pinned)
        while up.target(pinned).failing:  # another router, same state, cools the pinned target down
            await client.generate(llmroute.request(model=other, prompt="unrelated"))
        calls = up.target(pinned).calls
        moved = await client.generate(_request(router))
    assert up.target(pinned).calls == calls  # not sent to
    skip = moved.attempts[0]
    assert skip.error == "Skipped" and skip.pinned and skip.target == pinned
    assert skip.message.startswith("pinned, but cooling down")
    assert moved.steps[0].cache_miss is not None and moved.steps[0].cache_miss.reason == "target"


async def test_a_moving_session_goes_to_the_cheapest_target_of_equal_weight() -> None:
    for model_id, price in (("cache-test-dear", "15"), ("cache-test-cheap", "1"), ("cache-test-mid", "5")):
        register(
            ModelInfo(
                provider="anthropic",
                id=model_id,
                prices=Prices(input=Decimal(price), output=Decimal(price) * 5, cache_write=Decimal(price)),
            )
        )
    up = CachingUpstream()
    targets = [
        Target(up.model("pin", "cache-test-dear"), name="pin", priority=0),
        Target(up.model("dear", "cache-test-dear"), name="dear", priority=1),
        Target(up.model("cheap", "cache-test-cheap"), name="cheap", priority=1),
        Target(up.model("mid", "cache-test-mid"), name="mid", priority=1),
    ]
    for seed in range(8):
        router = Router(targets, affinity=True, seed=seed, state=LocalState())
        async with up.client(retry=NO_RETRY) as client:
            assert (await client.generate(_request(router, seed))).steps[0].target == "pin"
            up.fail("pin")
            moved = await client.generate(_request(router, seed))
        assert moved.steps[0].target == "cheap", seed


async def test_explicit_sessions_and_cache_keys_name_the_session() -> None:
    up = CachingUpstream()
    router = _router(up, affinity=Affinity(prefix=False), seed=3)
    async with up.client() as client:
        # without a session or key, no pin: calls follow the weights
        plain = [(await client.generate(_request(router, 0))).steps[0].target for _ in range(30)]
        named = [
            (await client.generate(_request(router, i, session="conv-1"))).steps[0].target for i in range(30)
        ]
        keyed = [
            (await client.generate(_request(router, i, cache=CachePolicy(key="k-1")))).steps[0].target
            for i in range(30)
        ]
    assert set(plain) == {"a", "b"}
    assert len(set(named)) == 1 and len(set(keyed)) == 1


async def test_routers_sharing_state_agree_on_pins() -> None:
    """Two routers (two processes) on one state: a session started on one continues on the pin."""
    up = CachingUpstream()
    state = LocalState()
    one, two = _router(up, state=state, seed=1), _router(up, state=state, seed=2)
    async with up.client() as client:
        for i in range(40):
            first = await client.generate(_request(one, i))
            second = await client.generate(_request(two, i))
            assert second.steps[0].target == first.steps[0].target
            assert second.cache.cache_read_tokens > 0


async def test_a_lapsed_pin_is_re_placed_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("llmroute.router.affinity.now", lambda: clock[0])
    up = CachingUpstream(ttl=300, clock=lambda: clock[0])
    router = _router(up, seed=4)
    async with up.client() as client:
        await client.generate(_request(router))
        clock[0] += 301  # past the 5-minute default: the cache and the pin lapse
        later = await client.generate(_request(router))
    miss = later.cache_miss
    assert miss is not None and miss.reason == "ttl" and miss.idle == pytest.approx(301)
    assert "idle 301s, longer than its cache lives (300s)" in miss.message


async def test_the_policy_ttl_sets_how_long_a_pin_lives(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("llmroute.router.affinity.now", lambda: clock[0])
    up = CachingUpstream(ttl=3600, clock=lambda: clock[0])
    router = _router(up, seed=4)
    async with up.client() as client:
        first = await client.generate(_request(router, cache=CachePolicy(ttl="1h")))
        targets: set[str | None] = set()
        for _ in range(10):
            clock[0] += 1800  # idle half an hour each time: within the hour
            response = await client.generate(_request(router, cache=CachePolicy(ttl="1h")))
            targets.add(response.steps[0].target)
            assert response.cache_miss is None
    assert targets == {first.steps[0].target}


def test_bad_affinity_values_are_named() -> None:
    up = CachingUpstream()
    with pytest.raises(llmroute.InvalidRequestError, match="affinity: expected True, False or"):
        _router(up, affinity="session")
    with pytest.raises(llmroute.InvalidRequestError, match=r"affinity\.ttl: must be a number of seconds > 0"):
        _router(up, affinity=Affinity(ttl=0))
    with pytest.raises(llmroute.InvalidRequestError, match=r"session: must be a non-empty string"):
        llmroute.request(model=_router(up), prompt="x", session="")


def test_a_damaged_record_is_no_record() -> None:
    record = Record("a", 12.5, 300, (7, (1, 2), (3, 4, 5)))
    value = record.encode()
    back = Record.decode(value)
    assert back is not None and (back.target, back.at, back.held, back.regions) == (
        "a",
        12.5,
        300,
        (7, (1, 2), (3, 4, 5)),
    )
    for bad in ("", "a\n1.0", "a\nnot-a-time\n3\n", value[:-3] + "!!!", "a\n1\n2\nAAAA"):
        assert Record.decode(bad) is None, bad
    assert "conv" not in value and "loop" not in value  # no session id or prompt is stored
