"""llmroute.Router on fake upstreams on 127.0.0.1: fallback, overflow, cooldowns, rate limits, weights."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

import llmroute
from llmroute import Attempt, RetryPolicy, Router, Target, Timeouts
from llmroute.providers import openai
from llmroute.router import Cooldown
from llmroute.schema import StepStart

from ..reliability.server import FaultServer, Reply, Reset, Sleep, chat_chunk, chat_error, chat_stream
from .upstreams import SSE, chat_model, error, ok

pytestmark = pytest.mark.anyio

Servers = Callable[[], FaultServer]
NO_RETRY = RetryPolicy(max_retries=0)


def _request(router: Router, prompt: str = "Hi", **kw: Any) -> llmroute.LLMRequest:
    return llmroute.request(model=router, prompt=prompt, **kw)


async def _no_sleep(_: float) -> None:
    return None


async def test_falls_back_on_503_and_says_who_answered(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(error(503, "upstream down"))
    b.add(ok("from b"))
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        response = await client.generate(_request(router))
    assert response.text == "from b"
    assert [(x.target, x.error, x.status) for x in response.attempts] == [("a", "ProviderInternalError", 503)]
    assert response.attempts[0].elapsed >= 0 and response.attempts[0].at > 0
    start = response.events[0]
    assert isinstance(start, StepStart) and start.target == "b" and start.attempts == response.attempts
    assert response.steps[-1].target == "b"
    assert len(a.received) == 1 and len(b.received) == 1
    assert "sk-test-router" not in json.dumps([x.message for x in response.attempts])


async def test_a_429_with_a_fallback_costs_one_request_and_no_sleep(servers: Servers) -> None:
    a, b = servers(), servers()
    a.repeat = error(429, "slow down", "rate_limit_error", **{"retry-after": "5"})
    b.repeat = ok("from b")
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async with llmroute.Client(sleep=sleep, retry=RetryPolicy(max_retries=3)) as client:
        first = await client.generate(_request(router))
        later = [await client.generate(_request(router)) for _ in range(3)]
    assert first.text == "from b" and [x.error for x in first.attempts] == ["RateLimitError"]
    assert len(a.received) == 1 and slept == []  # moved on at once, no retry, no sleep
    assert all(r.text == "from b" and r.attempts == () for r in later)  # a's Retry-After is its block
    health = await router.health()
    assert 4 < health["a"]["rate_limited_until"] - time.time() <= 5
    assert health["a"]["transitions"] == {"rate-limited": 1}


async def test_a_429_with_no_other_target_sleeps_the_retry_after(servers: Servers) -> None:
    a = servers()
    a.add(error(429, "slow down", "rate_limit_error", **{"retry-after": "2"}), ok("a after the wait"))
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    router = Router([Target(chat_model(a), name="a")])
    async with llmroute.Client(sleep=sleep, retry=RetryPolicy(max_retries=1)) as client:
        response = await client.generate(_request(router))
    assert response.text == "a after the wait" and len(a.received) == 2
    assert len(slept) == 1 and slept[0] >= 2


async def test_falls_back_on_timeout(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(Reply(200, SSE, [chat_chunk("late")], before=[Sleep(2.0)]))
    b.add(ok("from b"))
    router = Router(
        [Target(chat_model(a), timeouts=Timeouts(first_byte=0.2)), Target(chat_model(b), priority=1)]
    )
    async with llmroute.Client(retry=NO_RETRY) as client:
        response = await client.generate(_request(router))
    assert response.text == "from b"
    assert [x.error for x in response.attempts] == ["TimeoutError"]


async def test_auth_failure_moves_on_and_cools_the_target_down(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(error(401, "invalid api key", "invalid_request_error"))
    b.repeat = ok("from b")
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        first = await client.generate(_request(router))
        second = await client.generate(_request(router))
    assert [x.error for x in first.attempts] == ["AuthenticationError"]
    assert second.text == "from b" and second.attempts == ()
    assert len(a.received) == 1  # marked unhealthy: not asked again
    health = await router.health()
    assert health["a"]["cooling_down"] and not health["b"]["cooling_down"]


async def test_no_fallback_once_an_event_reached_the_caller(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(Reply(200, SSE, [chat_chunk("partial "), Reset()]))
    b.add(ok("from b"))
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        with pytest.raises(llmroute.TransportError) as info:
            await client.generate(_request(router))
    assert info.value.partial is not None and info.value.partial.text == "partial "
    assert info.value.partial.steps[-1].target == "a"
    assert b.received == []


async def test_context_overflow_goes_to_a_larger_window(servers: Servers) -> None:
    small, unknown, large = servers(), servers(), servers()
    unknown.add(error(400, "This model's maximum context length is 8192 tokens", "invalid_request_error"))
    large.add(ok("from large"))
    router = Router(
        [
            Target(chat_model(small), name="small", context_window=4_000),
            Target(chat_model(unknown), name="unknown", priority=1),
            Target(chat_model(large), name="large", priority=2, context_window=1_000_000),
        ]
    )
    prompt = "word " * 8_000  # ~10k tokens
    async with llmroute.Client(retry=NO_RETRY) as client:
        response = await client.generate(_request(router, prompt))
    assert response.text == "from large"
    assert small.received == []  # known too small: skipped without sending
    assert len(unknown.received) == 1
    assert [(x.target, x.error) for x in response.attempts] == [("unknown", "ContextOverflowError")]


async def test_a_small_request_stays_on_the_small_window(servers: Servers) -> None:
    small, large = servers(), servers()
    small.add(ok("from small"))
    router = Router(
        [
            Target(chat_model(small), context_window=4_000),
            Target(chat_model(large), priority=1, context_window=1_000_000),
        ]
    )
    async with llmroute.Client(retry=NO_RETRY) as client:
        assert (await client.generate(_request(router))).text == "from small"
    assert large.received == []


async def test_cooldown_after_three_failures_then_a_probe_recovers(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(error(503), error(503), error(503), ok("a again"))
    b.repeat = ok("from b")
    router = Router(
        [Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)],
        cooldown=Cooldown(seconds=0.3),
    )
    async with llmroute.Client(retry=NO_RETRY) as client:
        for _ in range(3):
            assert (await client.generate(_request(router))).text == "from b"
        assert len(a.received) == 3
        health = await router.health()
        assert health["a"]["cooling_down"] and health["a"]["failures"] == 3
        skipped = await client.generate(_request(router))
        assert skipped.text == "from b" and skipped.attempts == ()
        assert len(a.received) == 3  # cooling down: not asked
        await anyio.sleep(0.35)
        probe = await client.generate(_request(router))
    assert probe.text == "a again"
    assert len(a.received) == 4
    health = await router.health()
    assert health["a"] == {**health["a"], "cooling_down": False, "failures": 0, "probing": False}


async def test_a_failed_probe_cools_down_longer_and_only_one_call_probes(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(
        error(503),
        Reply(200, SSE, [chat_chunk("slow probe"), chat_chunk(finish="stop")], before=[Sleep(0.3)]),
    )
    b.repeat = ok("from b")
    router = Router(
        [Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)],
        cooldown=Cooldown(failures=1, seconds=0.1),
    )
    async with llmroute.Client(retry=NO_RETRY) as client:
        await client.generate(_request(router))  # a fails once: cooled down for 0.1 s
        await anyio.sleep(0.15)
        texts: list[str] = []

        async def call() -> None:
            texts.append((await client.generate(_request(router))).text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await anyio.sleep(0.05)  # the first call holds the probe
            tg.start_soon(call)
    assert sorted(texts) == ["from b", "slow probe"]
    assert len(a.received) == 2


async def test_remaining_zero_moves_traffic_away_before_a_429(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(ok("a, last one", {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "400ms"}))
    a.repeat = error(429, "would have been limited", "rate_limit_error")
    b.repeat = ok("from b")
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        first = await client.generate(_request(router))
        moved = [await client.generate(_request(router)) for _ in range(3)]
        assert first.text == "a, last one"
        assert [r.text for r in moved] == ["from b"] * 3
        assert all(r.attempts == () for r in moved)  # no 429 was hit
        assert len(a.received) == 1
        a.script.append(ok("a after the reset"))
        await anyio.sleep(0.45)
        back = await client.generate(_request(router))
    assert back.text == "a after the reset"


async def test_few_tokens_left_sends_a_big_request_elsewhere(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(
        ok(
            "a",
            {
                "anthropic-ratelimit-input-tokens-remaining": "500",
                "anthropic-ratelimit-input-tokens-reset": "2099-01-01T00:00:00Z",
            },
        ),
        ok("a small"),
    )
    b.repeat = ok("from b")
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        await client.generate(_request(router))
        big = await client.generate(_request(router, "token " * 1_000))
        small = await client.generate(_request(router, "hi"))
    assert big.text == "from b"
    assert small.text == "a small"


async def test_weighted_choice_within_five_percent_over_2000_calls() -> None:
    # 2,000 calls through the whole client; in memory (httpx.MockTransport), the choice is what is tested
    body = b"".join(chat_stream("x"))
    hits = {"a.test": 0, "b.test": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        hits[request.url.host] += 1
        return httpx.Response(
            200, headers=SSE, content=body.replace(b'"x"', f'"{request.url.host}"'.encode())
        )

    def model(host: str) -> llmroute.Model:
        return openai.configure(api_key="sk-x", base_url=f"http://{host}/v1").chat("m")

    router = Router([Target(model("a.test"), weight=3), Target(model("b.test"), weight=1)])
    counts = {"a.test": 0, "b.test": 0}
    async with llmroute.Client(
        httpx.AsyncClient(transport=httpx.MockTransport(handler)), retry=NO_RETRY
    ) as client:
        for _ in range(2_000):
            counts[(await client.generate(_request(router))).text] += 1
    assert abs(counts["a.test"] - 1_500) <= 75, counts
    assert hits == counts


async def test_every_target_failing_raises_the_last_typed_error_with_the_attempts(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(error(503))
    b.add(error(429, "limited", "rate_limit_error"))
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        with pytest.raises(llmroute.RateLimitError) as info:
            await client.generate(_request(router))
    assert [(x.target, x.error) for x in info.value.route_attempts] == [("a", "ProviderInternalError")]
    assert all(isinstance(x, Attempt) for x in info.value.route_attempts)
    assert info.value.route_target == "b"  # the target that raised it, not among the attempts before


async def test_a_bad_request_is_not_sent_to_every_target(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(error(400, "messages: malformed", "invalid_request_error"))
    router = Router([Target(chat_model(a)), Target(chat_model(b), priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        with pytest.raises(llmroute.InvalidRequestError):
            await client.generate(_request(router))
    assert b.received == []


def test_the_same_model_twice_gets_told_apart_by_position() -> None:
    model = openai.configure(api_key="sk-x").chat("m")
    assert [t.key for t in Router([model, model]).targets] == ["openai:m", "openai:m#1"]


async def test_nothing_available_is_a_no_route_error_naming_why(servers: Servers) -> None:
    a = servers()
    a.add(error(401, "bad key", "invalid_request_error"))
    router = Router([Target(chat_model(a), name="only")])
    async with llmroute.Client(retry=NO_RETRY) as client:
        with pytest.raises(llmroute.AuthenticationError):
            await client.generate(_request(router))
        with pytest.raises(llmroute.NoRouteError, match="only: cooling down"):
            await client.generate(_request(router))
    assert len(a.received) == 1


def test_router_arguments_are_checked() -> None:
    model = openai.configure(api_key="sk-x").chat("m")
    bad: list[tuple[Callable[[], object], str]] = [
        (lambda: Router([]), "targets"),
        (lambda: Router(model), "targets"),  # type: ignore[arg-type]
        (lambda: Router(["gpt-4o"]), r"targets\[0\]"),  # type: ignore[list-item]
        (lambda: Router([Target(model, name="x"), Target(model, name="x")]), r"targets\[1\].*'x'"),
        (lambda: Router([model], strategy="fastest"), "strategy"),  # type: ignore[arg-type]
        (lambda: Router([model], state=llmroute.state.LocalState(), redis_url="redis://x"), "redis_url"),
        (lambda: Router([model], redis_url="http://user:pw@host"), "redis_url"),
        (lambda: Router([model], state="redis://user:pw@host"), "state: expected.*redis_url="),  # type: ignore[arg-type]
        (lambda: Target(model, weight=0), "Target.weight"),
        (lambda: Target(model, priority=1.5), "Target.priority"),  # type: ignore[arg-type]
        (lambda: Target("gpt-4o"), "Target.model"),  # type: ignore[arg-type]
        (lambda: Target(Router([model])), "Router inside a Router"),  # type: ignore[arg-type]
        (lambda: Target(model, context_window=0), "Target.context_window"),
        (lambda: Cooldown(failures=0), "Cooldown.failures"),
        (lambda: Cooldown(seconds=-1), "Cooldown.seconds"),
        (lambda: Cooldown(failure_rate=1.5), "Cooldown.failure_rate"),
        (lambda: Cooldown(min_calls=0), "Cooldown.min_calls"),
        (lambda: Cooldown(timeouts="no"), "Cooldown.timeouts"),  # type: ignore[arg-type]
        (lambda: Target(model, max_in_flight=0), "Target.max_in_flight"),
        (lambda: Target(model, rpm=1.5), "Target.rpm"),  # type: ignore[arg-type]
        (lambda: Target(model, tpm=True), "Target.tpm"),  # type: ignore[arg-type]
        (lambda: Router([model], max_wait=-1), "max_wait"),
        (lambda: Router([model], max_wait=float("inf")), "max_wait"),
    ]
    for make, match in bad:
        with pytest.raises(llmroute.InvalidRequestError, match=match) as info:
            make()
        assert "pw@" not in str(info.value)


async def test_the_catalog_knows_a_models_window(servers: Servers) -> None:
    known, other = servers(), servers()
    other.add(ok("from other"))
    router = Router(
        [Target(chat_model(known, "gpt-4o"), name="gpt-4o"), Target(chat_model(other), priority=1)]
    )
    assert router.models()[0].info is not None
    prompt = "word " * 130_000  # ~162k tokens: over gpt-4o's 128k window in the catalog
    async with llmroute.Client(retry=NO_RETRY) as client:
        response = await client.generate(_request(router, prompt))
    assert response.text == "from other" and known.received == []


async def test_a_rate_limit_inside_a_200_stream_moves_on_at_once_too(servers: Servers) -> None:
    a, b = servers(), servers()
    limited = chat_error("Rate limit reached for requests", "rate_limit_error", "rate_limit_exceeded")
    a.repeat = Reply(200, SSE, [limited])
    b.repeat = ok("from b")
    router = Router([Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)])
    async with llmroute.Client(sleep=_no_sleep, retry=RetryPolicy(max_retries=3)) as client:
        response = await client.generate(_request(router))
        alone = Router([Target(chat_model(a), name="a")], name="alone", max_wait=0)
        with pytest.raises(llmroute.RateLimitError):
            await client.generate(_request(alone))  # no other target: its retries are spent
    assert response.text == "from b" and [x.error for x in response.attempts] == ["RateLimitError"]
    assert len(a.received) == 1 + 4
