"""Router health through Redis: routers in different processes (here: two clients of one
redis-server) honour each other's cooldowns and rate-limit memory; Redis down, routing goes on."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

import llmroute
from llmroute import RetryPolicy, Router, Target
from llmroute.router import Cooldown
from llmroute.state import RedisState
from tests.redis_server import redis_server

from ..reliability.server import FaultServer
from .upstreams import chat_model, error, ok

pytestmark = pytest.mark.anyio

Servers = Callable[[], FaultServer]


def _router(a: FaultServer, b: FaultServer, redis_url: str) -> Router:
    return Router(
        [Target(chat_model(a), name="a"), Target(chat_model(b), name="b", priority=1)],
        name="shared",
        redis_url=redis_url,
        cooldown=Cooldown(failures=2, seconds=30),
    )


async def test_a_cooldown_set_by_one_router_is_honoured_by_another(servers: Servers, redis_url: str) -> None:
    a, b = servers(), servers()
    a.add(error(503), error(503))
    b.repeat = ok("from b")
    one, two = _router(a, b, redis_url), _router(a, b, redis_url)
    try:
        async with llmroute.Client(retry=RetryPolicy(max_retries=0)) as client:
            await client.generate(llmroute.request(model=one, prompt="x"))
            await client.generate(llmroute.request(model=two, prompt="x"))  # streak 2, set through two
            assert len(a.received) == 2
            health = await one.health()
            assert health["a"]["cooling_down"] and health["a"]["failures"] == 2
            for router in (one, two):
                response = await client.generate(llmroute.request(model=router, prompt="x"))
                assert response.text == "from b" and response.attempts == ()
        assert len(a.received) == 2
    finally:
        await one.aclose()
        await two.aclose()


async def test_routing_goes_on_when_redis_is_down(servers: Servers) -> None:
    a, b = servers(), servers()
    a.add(error(401, "bad key", "invalid_request_error"))
    b.repeat = ok("from b")
    with redis_server() as url:
        router = _router(a, b, url)
    try:  # the server is gone: health is kept in this process
        async with llmroute.Client(retry=RetryPolicy(max_retries=0)) as client:
            first = await client.generate(llmroute.request(model=router, prompt="x"))
            second = await client.generate(llmroute.request(model=router, prompt="x"))
        assert [x.error for x in first.attempts] == ["AuthenticationError"]
        assert second.attempts == () and len(a.received) == 1
    finally:
        await router.aclose()


async def test_a_redis_outage_keeps_what_was_known_and_writes_back_what_was_learned(
    servers: Servers,
) -> None:
    a, b, c = servers(), servers(), servers()
    a.add(error(401, "bad key", "invalid_request_error"))
    c.repeat = ok("from c")

    def router(url: str) -> Router:
        return Router(
            [
                Target(chat_model(a), name="a"),
                Target(chat_model(b), name="b", priority=1),
                Target(chat_model(c), name="c", priority=2),
            ],
            name="shared",
            state=RedisState(url, retry_interval=0.05),
        )

    async with llmroute.Client(retry=RetryPolicy(max_retries=0)) as client:
        with redis_server() as url:
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            one = router(url)
            b.add(ok("b, before the outage"))
            first = await client.generate(llmroute.request(model=one, prompt="x"))  # a: cooled via Redis
            assert [x.target for x in first.attempts] == ["a"]
        # Redis is down: a is still known to be cooling (not asked again); b fails now, learned locally
        b.add(error(401, "bad key", "invalid_request_error"))
        during = await client.generate(llmroute.request(model=one, prompt="x"))
        assert during.text == "from c" and [x.target for x in during.attempts] == ["b"]
        assert len(a.received) == 1
        with redis_server(port):
            await anyio.sleep(0.06)
            await one.health()  # Redis answers again: what the outage learned is written back
            two = router(f"redis://127.0.0.1:{port}/0")  # another process, a fresh server
            after = await client.generate(llmroute.request(model=two, prompt="x"))
            assert after.text == "from c" and after.attempts == ()  # b's cooldown was written back
            await one.aclose()
            await two.aclose()
    assert len(b.received) == 2
