"""The gateway's prompt caching: sessions named by the client's headers stay on one route target,
the ``cache`` setting gives clients that send no breakpoints a policy, the access log shows each
request's cache read and write shares (and a miss's cause, and a pin that moved), ``/metrics`` a
hit ratio per model and target; two gateway processes sharing a redis-server agree on every pin.
Upstream: a fake Anthropic with a prompt cache per API key, on 127.0.0.1."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from llmroute.schema.errors import ConfigError
from llmroute.server import create_app, load

from ..prompt_cache import CachingUpstream, serve
from .processes import GatewayProcess
from .test_gateway import GATEWAY_KEY, Served
from .test_operations import _samples, _value, access_lines

SYSTEM = "You are a careful code reviewer. " * 30


@pytest.fixture
def upstream() -> Iterator[tuple[CachingUpstream, str]]:
    fake = CachingUpstream()
    with serve(fake) as url:
        yield fake, url


def _config(url: str, **extra: Any) -> dict[str, Any]:
    def model(key: str) -> dict[str, Any]:
        return {"provider": "anthropic", "base_url": url, "api_key": key, "model": "claude-sonnet-4-5"}

    shared = [{"model": "team"}, {"model": "spare"}]  # one priority, equal weights
    virtual = {"routing": {"default": shared}, **extra.pop("virtualrouter", {})}
    return {
        "keys": [GATEWAY_KEY],
        "models": {"team": model("sk-ant-team"), "spare": model("sk-ant-spare")},
        "retry": {"maxRetries": 0},
        "virtualrouter": virtual,
        **extra,
    }


def _chat(
    base: str, session: str | None, turn: int = 0, stream: bool = False, **headers: str
) -> httpx.Response:
    """Turn ``turn`` of a session (the conversation so far, then a new question) whose system
    prompt is its own (no cache hit across sessions)."""
    messages: list[dict[str, str]] = [{"role": "system", "content": f"Session {session}. {SYSTEM}"}]
    for k in range(turn + 1):
        messages.append({"role": "user", "content": f"review part {k}"})
        if k < turn:
            messages.append({"role": "assistant", "content": "done"})
    if session is not None:
        headers["x-claude-code-session-id"] = session
    return httpx.post(
        f"{base}/chat/completions",
        json={"model": "default", "messages": messages, "stream": stream},
        headers={"authorization": f"Bearer {GATEWAY_KEY}", **headers},
        timeout=20,
    )


def test_sessions_stay_on_one_target_and_the_log_shows_the_cache(
    upstream: tuple[CachingUpstream, str], caplog: pytest.LogCaptureFixture
) -> None:
    _, url = upstream
    caplog.set_level(logging.INFO, logger="llmroute.server")
    with Served(create_app(load(_config(url, cache={"ttl": "1h"})))) as served:
        for turn in range(4):
            for i in range(12):  # half of them streamed
                assert _chat(served.base_url, f"s-{i}", turn, stream=i % 2 == 1).status_code == 200
        metrics = _samples(httpx.get(served.base_url.removesuffix("/v1") + "/metrics").text)
    lines = [line for line in access_lines(caplog) if line.get("session")]
    by_session: dict[str, set[str]] = {}
    for line in lines:
        by_session.setdefault(line["session"], set()).add(line["route_target"])
    assert all(len(targets) == 1 for targets in by_session.values()), by_session
    assert {t for targets in by_session.values() for t in targets} == {"team", "spare"}  # sessions spread
    reads = [line["cache_read_share"] > 0 for line in lines]
    assert reads == [False] * 12 + [True] * 36  # each session's later turns read what its first wrote
    assert all(0 <= line["cache_write_share"] <= 1 for line in lines)
    assert not any("cache_miss" in line for line in lines)
    ratios = [
        _value(metrics, "llmroute_gateway_cache_hit_ratio", model="default", target=t)
        for t in ("team", "spare")
    ]
    assert all(0.3 < r < 1 for r in ratios), ratios
    read = _value(metrics, "llmroute_gateway_cache_tokens_total", model="default", kind="cache_read")
    total = _value(metrics, "llmroute_gateway_cache_tokens_total", model="default", kind="input")
    assert read > 0 and total >= read
    assert all("sk-ant" not in line for line in map(str, lines))


def test_the_cache_setting_gives_breakpoint_less_clients_a_policy(
    upstream: tuple[CachingUpstream, str],
) -> None:
    fake, url = upstream
    with Served(create_app(load(_config(url)))) as served:  # no ``cache``: a Chat client sends none
        for turn in range(2):
            _chat(served.base_url, "plain", turn)
    assert all(read == write == 0 for _, read, write, _ in fake.log)
    fake.log.clear()
    with Served(create_app(load(_config(url, cache={})))) as served:
        for turn in range(2):
            _chat(served.base_url, "cached", turn)
    (_, read1, write1, _), (_, read2, _, _) = fake.log
    assert read1 == 0 and write1 > 0 and read2 > 0


def test_a_pin_that_moves_is_on_the_access_log(
    upstream: tuple[CachingUpstream, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = upstream
    caplog.set_level(logging.INFO, logger="llmroute.server")
    with Served(create_app(load(_config(url, cache={})))) as served:
        _chat(served.base_url, "moving", 0)
        pinned = next(line for line in access_lines(caplog) if line.get("session") == "moving")[
            "route_target"
        ]
        fake.fail(f"sk-ant-{pinned}")
        assert _chat(served.base_url, "moving", 1).status_code == 200
        assert _chat(served.base_url, "moving", 2).status_code == 200
    _, moved, after = [line for line in access_lines(caplog) if line.get("session") == "moving"]
    assert moved["route_target"] != pinned and moved["pin_moved_from"] == pinned
    assert moved["cache_miss"] == "target"
    assert after["route_target"] == moved["route_target"] and "pin_moved_from" not in after


def test_affinity_settings_are_checked(upstream: tuple[CachingUpstream, str]) -> None:
    _, url = upstream
    with pytest.raises(
        ConfigError, match=r"\$\.virtualrouter\.affinity\.ttl: must be a number of seconds > 0"
    ):
        load(_config(url, virtualrouter={"affinity": {"ttl": 0}}))
    with pytest.raises(ConfigError, match=r"cache"):
        load(_config(url, cache={"ttl": "2h"}))
    off = load(_config(url, virtualrouter={"affinity": False}))
    assert off.routes["default"].affinity is None


@pytest.mark.timeout(120)
def test_two_gateway_processes_sharing_redis_agree_on_every_pin(
    upstream: tuple[CachingUpstream, str], redis_url: str
) -> None:
    fake, url = upstream
    config = _config(url, redisUrl=redis_url, cache={})
    with GatewayProcess(config) as one, GatewayProcess(config) as two:
        for session in range(30):
            name = f"shared-{session}"
            for turn in range(4):
                gateway = (one, two)[(session + turn) % 2]
                response = _chat(gateway.base_url, name, turn)
                assert response.status_code == 200, response.text
    assert len(fake.log) == 120
    sessions = [fake.log[i : i + 4] for i in range(0, 120, 4)]  # one session at a time, in order
    for turns in sessions:  # each turn on the other process than the one before: one target all along
        assert len({host for host, _, _, _ in turns}) == 1, turns
        assert [read > 0 for _, read, _, _ in turns] == [False, True, True, True], turns
    assert {turns[0][0] for turns in sessions} == {"sk-ant-team", "sk-ant-spare"}
