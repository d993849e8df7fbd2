"""The shared-state contract (llmroute.state), run against LocalState and a real redis-server."""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator

import anyio
import pytest

from llmroute import InvalidRequestError
from llmroute.state import LocalState, RedisState, SharedState, open_state
from tests.redis_server import redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["local", "redis"])
async def state(request: pytest.FixtureRequest) -> AsyncIterator[SharedState]:
    if request.param == "local":
        yield LocalState()
        return
    url: str = request.getfixturevalue("redis_url")
    store = open_state(url)
    assert isinstance(store, RedisState)
    try:
        yield store
    finally:
        await store.aclose()


async def test_values_expire(state: SharedState) -> None:
    await state.set("a", "1", ttl=0.05)
    await state.set("b", "2")
    assert await state.get_many(["a", "b", "c"]) == ["1", "2", None]
    await anyio.sleep(0.08)
    assert await state.get("a") is None
    assert await state.get("b") == "2"
    await state.delete("b", "missing")
    assert await state.get("b") is None


async def test_set_if_absent_is_a_lease(state: SharedState) -> None:
    assert await state.set_if_absent("probe", "p1", ttl=0.05) is True
    assert await state.set_if_absent("probe", "p2", ttl=0.05) is False
    assert await state.get("probe") == "p1"
    await anyio.sleep(0.08)
    assert await state.set_if_absent("probe", "p3", ttl=0.05) is True


async def test_incr_sums_floats_and_keeps_the_creation_ttl(state: SharedState) -> None:
    assert await state.incr("spend", 0.25, ttl=0.1) == pytest.approx(0.25)
    await anyio.sleep(0.05)
    assert await state.incr("spend", 0.5, ttl=10) == pytest.approx(0.75)  # ttl not extended
    assert await state.incr("spend", -0.25) == pytest.approx(0.5)
    await anyio.sleep(0.08)
    assert await state.get("spend") is None  # the period ended
    assert await state.incr("streak") == 1
    assert await state.incr("streak") == 2
    assert float(await state.get("streak") or 0) == 2


async def test_window_admits_up_to_the_limit_and_says_when_more_fits(state: SharedState) -> None:
    admitted = [(await state.window("rpm", 1, 60, limit=3)).allowed for _ in range(5)]
    assert admitted == [True, True, True, False, False]
    refused = await state.window("rpm", 1, 60, limit=3)
    assert refused.total == pytest.approx(3)
    assert 0 < refused.retry_after <= 120
    read = await state.window("rpm", 0, 60)
    assert read.allowed and read.total == pytest.approx(3)
    assert (await state.window("rpm", 4, 60, limit=3)).retry_after == math.inf
    # tokens: read before, add after
    assert (await state.window("tpm", 1500, 60)).total == pytest.approx(1500)
    assert (await state.window("tpm", 0, 60)).total == pytest.approx(1500)


async def test_window_slides(state: SharedState) -> None:
    assert (await state.window("w", 5, 0.2, limit=5)).allowed
    assert not (await state.window("w", 1, 0.2, limit=5)).allowed
    await anyio.sleep(0.45)  # two whole windows later, nothing is left
    after = await state.window("w", 1, 0.2, limit=5)
    assert after.allowed and after.total == pytest.approx(1)


async def test_ewma(state: SharedState) -> None:
    assert await state.ewma("lat", 1.0, alpha=0.5) == pytest.approx(1.0)
    assert await state.ewma("lat", 3.0, alpha=0.5) == pytest.approx(2.0)
    assert float(await state.get("lat") or 0) == pytest.approx(2.0)


async def test_two_redis_clients_never_overshoot_a_limit(redis_url: str) -> None:
    a, b = RedisState(redis_url), RedisState(redis_url)
    results: list[bool] = []

    async def hit(store: RedisState) -> None:
        results.append((await store.window("rpm:k", 1, 60, limit=30)).allowed)

    try:
        async with anyio.create_task_group() as tg:
            for i in range(80):
                tg.start_soon(hit, a if i % 2 else b)
        assert results.count(True) == 30
        # and a TTL set through one is seen by the other
        await a.set("cooldown:t", "1", ttl=30)
        assert await b.get("cooldown:t") == "1"
    finally:
        await a.aclose()
        await b.aclose()


async def test_namespace_keeps_users_apart(redis_url: str) -> None:
    one, two = RedisState(redis_url, namespace="one:"), RedisState(redis_url, namespace="two:")
    try:
        await one.set("k", "1")
        assert await two.get("k") is None
    finally:
        await one.aclose()
        await two.aclose()


async def test_redis_down_falls_back_to_local_logs_once_and_recovers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="llmroute.state")
    with redis_server() as url:
        store = RedisState(url, retry_interval=0.1, timeout=0.5)
        await store.set("shared", "yes")
        assert await store.get("shared") == "yes"
        port = int(url.rsplit(":", 1)[1].split("/")[0])
    try:
        # the server is stopped: every call still answers, from local state, which starts from
        # what Redis last said
        assert await store.get("shared") == "yes"
        await store.set("k", "v", ttl=30)
        assert await store.get("k") == "v"
        assert (await store.window("rpm", 1, 60, limit=1)).allowed
        assert not (await store.window("rpm", 1, 60, limit=1)).allowed
        assert await store.incr("n") == 1
        assert not store.available
        await anyio.sleep(0.15)
        assert await store.get("k") == "v"  # retried Redis, still down: one warning in all
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "unreachable" in warnings[0].getMessage()
        with redis_server(port):
            await anyio.sleep(0.15)
            await store.set("back", "1")
            assert store.available
            assert await store.get("back") == "1"
            # what the outage wrote was written back (a fresh server knew nothing of it)
            assert await store.get("k") == "v" and float(await store.get("n") or 0) == 1
            assert await store.get("shared") == "yes"  # known before the outage: restored on the new server
        assert any("is back" in r.getMessage() for r in caplog.records)
    finally:
        await store.aclose()


async def test_an_outage_keeps_the_last_known_state_and_writes_back_what_it_changed() -> None:
    with redis_server() as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        store = RedisState(url, retry_interval=0.05, timeout=0.5)
        other = RedisState(url)
        await other.set("cd:a", "cooling", ttl=30)  # written by another process
        await other.incr("spend", 1.0)
        await other.set("old", "x")
        assert await store.get_many(["cd:a", "spend", "old"]) == ["cooling", "1", "x"]  # read: mirrored
    try:
        assert await store.get_many(["cd:a", "spend"]) == ["cooling", "1"]  # Redis down: as last known
        await store.set("cd:b", "cooling", ttl=30)  # learned during the outage
        await store.incr("spend", 0.5)
        await store.incr("spend", 0.25)
        await store.delete("old")
        with redis_server(port):
            other2 = RedisState(f"redis://127.0.0.1:{port}/0")
            await other2.incr("spend", 2.0)  # another process, on the new server meanwhile
            await other2.set("old", "y")
            await anyio.sleep(0.06)
            await store.get("anything")  # Redis answers again: the outage's writes go first
            assert await other2.get("cd:b") == "cooling"
            assert float(await other2.get("spend") or 0) == pytest.approx(2.75)  # the adds, not the total
            assert await other2.get("old") is None
            assert await other2.get("cd:a") == "cooling"  # known before it, lost by the restart: restored
            await other2.aclose()
    finally:
        await store.aclose()
        await other.aclose()


async def test_bad_urls_are_typed_errors_that_hide_the_password() -> None:
    with pytest.raises(InvalidRequestError, match="redis_url") as info:
        open_state("http://user:hunter2@example.com")
    assert "hunter2" not in str(info.value)
    with pytest.raises(InvalidRequestError, match="redis_url"):
        RedisState(5)  # type: ignore[arg-type]
    assert isinstance(open_state(None), LocalState)
    assert "hunter2" not in repr(RedisState("redis://:hunter2@127.0.0.1:1/0"))
    # malformed host, port or database: typed, naming redis_url, never the password
    for url in (
        "redis://:hunter2@127.0.0.1:notaport/0",
        "redis://:hunter2@[::1:6379/0",
        "redis://:hunter2@127.0.0.1:6379/abc",
    ):
        with pytest.raises(InvalidRequestError, match="redis_url") as info:
            open_state(url)
        assert "hunter2" not in str(info.value)


def test_importing_the_state_layer_does_not_load_redis() -> None:
    import subprocess
    import sys

    code = (
        "import sys, llmroute.state as s; assert 'redis' not in sys.modules, 'redis imported'; "
        "s.open_state(None); assert 'redis' not in sys.modules; "
        "import llmroute; assert 'llmroute.state' in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
