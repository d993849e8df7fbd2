"""Per-key limits and budgets: requests and tokens per minute and a USD budget, refused with 429,
``Retry-After`` and the OpenAI error shape; in-process, and enforced together by two gateway
processes sharing one real ``redis-server``."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from llmroute.server import create_app, load

from ..reliability.server import DONE, FaultServer, Reply, chat_chunk
from .processes import GatewayProcess
from .test_gateway import UPSTREAM_KEY, Served, answer

A, B = "gw-limited-key-a-0123", "gw-limited-key-b-4567"


def priced_answer(prompt_tokens: int = 100_000) -> Reply:
    """A Chat stream whose usage costs a few cents at DeepSeek's catalog prices."""
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 10, "total_tokens": prompt_tokens + 10}
    return Reply(parts=[chat_chunk("ok"), chat_chunk(finish="stop"), chat_chunk(usage=usage), DONE])


def limits_config(upstream: FaultServer, keys: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "keys": keys,
        "models": {
            "main": {
                "provider": "compatible",
                "base_url": upstream.base_url,
                "api_key": UPSTREAM_KEY,
                "model": "m",
            },
            "priced": {
                "provider": "deepseek",
                "base_url": upstream.base_url,
                "api_key": UPSTREAM_KEY,
                "model": "deepseek-chat",
            },
        },
        **extra,
    }


def call(base_url: str, key: str, model: str = "main", stream: bool = False) -> httpx.Response:
    body = {"model": model, "stream": stream, "messages": [{"role": "user", "content": "x"}]}
    return httpx.post(base_url + "/chat/completions", headers={"x-api-key": key}, json=body, timeout=10)


def test_requests_per_minute_per_key(upstream: FaultServer) -> None:
    upstream.add(*(answer("ok") for _ in range(4)))
    keys = [{"id": "a", "key": A, "rpm": 2}, {"id": "b", "key": B}]
    with Served(create_app(load(limits_config(upstream, keys)))) as served:
        client = openai.OpenAI(base_url=served.base_url, api_key=A, max_retries=0)
        for _ in range(2):
            client.chat.completions.create(model="main", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="main", messages=[{"role": "user", "content": "x"}])
        other = call(served.base_url, B)
    error = info.value
    assert error.code == "rate_limit_exceeded" and "'a' is over its 2 requests per minute" in error.message
    assert 1 <= int(error.response.headers["retry-after"]) <= 120  # two one-minute buckets at most
    assert error.body == {
        "message": "key 'a' is over its 2 requests per minute",
        "type": "rate_limit_error",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert other.status_code == 200
    assert len(upstream.received) == 3  # the refused request never reached the upstream


def test_tokens_per_minute_count_what_the_upstream_reported(upstream: FaultServer) -> None:
    upstream.add(answer("ok"), answer("ok"))
    keys = [{"id": "a", "key": A, "tpm": 6}]  # answer("ok") reports 5 + 1 tokens
    with Served(create_app(load(limits_config(upstream, keys)))) as served:
        first = call(served.base_url, A, stream=True)
        second = call(served.base_url, A)
    assert first.status_code == 200
    assert second.status_code == 429 and "6 tokens per minute" in second.json()["error"]["message"]
    assert int(second.headers["retry-after"]) >= 1


def test_budget_in_usd_from_catalog_prices(upstream: FaultServer) -> None:
    upstream.add(priced_answer(), priced_answer())
    keys = [{"id": "a", "key": A, "budgetUsd": 0.001, "budgetPeriod": "day"}, {"id": "b", "key": B}]
    with Served(create_app(load(limits_config(upstream, keys)))) as served:
        first = call(served.base_url, A, "priced")
        over = call(served.base_url, A, "priced")
        other = call(served.base_url, B, "priced")
    assert first.status_code == 200 and other.status_code == 200
    assert over.status_code == 429
    assert over.json()["error"]["type"] == "insufficient_quota"
    assert over.json()["error"]["code"] == "budget_exceeded"
    assert over.headers["x-should-retry"] == "false"
    assert 1 <= int(over.headers["retry-after"]) <= 86400


def test_two_gateway_processes_share_limits_through_redis(upstream: FaultServer, redis_url: str) -> None:
    upstream.add(*(answer("ok") for _ in range(3)), priced_answer(), priced_answer())
    keys = [{"id": "a", "key": A, "rpm": 3}, {"id": "b", "key": B, "budgetUsd": 0.001}]
    config = limits_config(upstream, keys, redisUrl=redis_url)
    with GatewayProcess(config) as one, GatewayProcess(config) as two:
        statuses = [call(gw.base_url, A).status_code for gw in (one, two, one, two)]
        spent = call(one.base_url, B, "priced").status_code
        over = call(two.base_url, B, "priced")
    assert statuses == [200, 200, 200, 429]
    assert spent == 200 and over.status_code == 429 and over.json()["error"]["code"] == "budget_exceeded"
    assert len(upstream.received) == 4  # 3 admitted + the one that spent the budget
