"""Router health through Redis: routers in different processes (here: two clients of one
redis-server) honour each other's cooldowns and rate-limit memory; Redis down, routing goes on."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import llmroute
from llmroute import RetryPolicy, Router, Target
from llmroute.router import Cooldown
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
