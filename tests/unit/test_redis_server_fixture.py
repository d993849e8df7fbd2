"""The redis-server fixture the shared-state tests stand on: it is real, and each test starts clean."""

from __future__ import annotations

import redis


def test_redis_fixture_is_a_real_server(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.ping() is True
        assert client.dbsize() == 0  # flushed for this test
        client.set("llmroute:fixture", b"1")
        assert client.info("server")["redis_version"]
    finally:
        client.close()


def test_each_test_gets_an_empty_database(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.get("llmroute:fixture") is None
    finally:
        client.close()
