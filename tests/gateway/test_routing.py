"""The gateway's ``virtualrouter.routing``: routes over model entries, selected by the client's
``model``; long inputs go to ``longcontext``; health shared by gateway processes through Redis."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest

from llmroute.schema.errors import ConfigError
from llmroute.server import create_app, load

from ..reliability.server import FaultServer
from ..router.upstreams import error, ok
from .processes import GatewayProcess
from .test_gateway import GATEWAY_KEY, UPSTREAM_KEY, Served
from .test_operations import _samples, _value, access_lines

Servers = Callable[[], FaultServer]


@pytest.fixture
def servers() -> Iterator[Servers]:
    started: list[FaultServer] = []

    def start() -> FaultServer:
        started.append(FaultServer().start())
        return started[-1]

    try:
        yield start
    finally:
        for server in started:
            server.stop()


def _entry(server: FaultServer, model: str = "m") -> dict[str, Any]:
    return {"provider": "compatible", "base_url": server.base_url, "api_key": UPSTREAM_KEY, "model": model}


def routing_config(a: FaultServer, b: FaultServer, big: FaultServer, **extra: Any) -> dict[str, Any]:
    return {
        "keys": [GATEWAY_KEY],
        "models": {"a": _entry(a), "b": _entry(b), "big": _entry(big, "big-model")},
        "retry": {"maxRetries": 0},
        "virtualrouter": {
            "routing": {
                "default": ["a", "b"],
                "longcontext": [{"model": "big", "contextWindow": 1_000_000}],
            },
            "longContextThreshold": 1_000,
        },
        **extra,
    }


def _ask(served: Served, content: str = "hi", model: str = "default", stream: bool = False) -> str:
    client = openai.OpenAI(base_url=served.base_url, api_key=GATEWAY_KEY, max_retries=0, timeout=20)
    messages: Any = [{"role": "user", "content": content}]
    if not stream:
        return client.chat.completions.create(model=model, messages=messages).choices[0].message.content or ""
    chunks = client.chat.completions.create(model=model, messages=messages, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def test_a_route_falls_back_and_is_listed_like_a_model(servers: Servers) -> None:
    a, b, big = servers(), servers(), servers()
    a.add(error(503), error(503))
    b.repeat = ok("from b")
    with Served(create_app(load(routing_config(a, b, big)))) as served:
        assert _ask(served) == "from b"
        assert _ask(served, stream=True) == "from b"
        models = openai.OpenAI(base_url=served.base_url, api_key=GATEWAY_KEY).models.list()
    assert {m.id for m in models.data} == {"a", "b", "big", "default", "longcontext"}
    # the first request moved its session (the prompt "hi") to b: the second goes there at once
    assert len(a.received) == 1 and big.received == []


def test_a_long_input_goes_to_the_longcontext_route(servers: Servers) -> None:
    a, b, big = servers(), servers(), servers()
    a.repeat, big.repeat = ok("from a"), ok("from big")
    with Served(create_app(load(routing_config(a, b, big)))) as served:
        assert _ask(served, "short") == "from a"
        assert _ask(served, "word " * 2_000) == "from big"
        assert _ask(served, "word " * 2_000, model="a") == "from a"  # a model, not a route: as asked
    assert len(big.received) == 1


def test_the_access_log_names_the_target_that_answered_or_failed_last(
    servers: Servers, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="llmroute.server")
    a, b, big = servers(), servers(), servers()
    a.add(error(503), error(503, "down"))
    b.add(ok("from b"), error(500, "b broke"))
    config = routing_config(a, b, big)
    config["models"]["b"] = _entry(b, "m-b")  # tell the two targets apart in the log
    with Served(create_app(load(config))) as served:
        assert _ask(served) == "from b"  # a fails, b answers
        failed = httpx.post(  # a fails, then b fails: b failed last
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {GATEWAY_KEY}"},
            json={"model": "default", "messages": [{"role": "user", "content": "x"}]},
        )
    assert failed.status_code >= 500
    lines = access_lines(caplog)
    assert [(line["model"], line["status"]) for line in lines] == [
        ("default", 200),
        ("default", failed.status_code),
    ]
    assert lines[0]["target"] == lines[1]["target"] == "default:compatible/m-b"
    assert len(a.received) == 2 and len(b.received) == 2


def test_every_target_cooling_down_is_a_503_with_retry_after(servers: Servers) -> None:
    a, b, big = servers(), servers(), servers()
    a.add(error(401, "bad key", "invalid_request_error"))
    b.add(error(401, "bad key", "invalid_request_error"))
    with Served(create_app(load(routing_config(a, b, big)))) as served:
        first = httpx.post(
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {GATEWAY_KEY}"},
            json={"model": "default", "messages": [{"role": "user", "content": "x"}]},
        )
        second = httpx.post(
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {GATEWAY_KEY}"},
            json={"model": "default", "messages": [{"role": "user", "content": "x"}]},
        )
        scraped = httpx.get(served.base_url.removesuffix("/v1") + "/metrics").text
    samples = _samples(scraped)
    name = "llmroute_gateway_target_health_changes_total"
    assert _value(samples, name, route="default", target="a", state="cooling") == 1
    assert _value(samples, name, route="default", target="b", state="cooling") == 1
    assert first.status_code == 502 and first.json()["error"]["code"] == "upstream_auth"
    assert second.status_code == 503 and second.json()["error"]["code"] == "no_target_available"
    assert 250 <= int(second.headers["retry-after"]) <= 300
    assert UPSTREAM_KEY not in second.text and "127.0.0.1" not in second.text


def test_a_request_no_target_could_ever_take_is_a_400_not_retried(servers: Servers) -> None:
    a, b, big = servers(), servers(), servers()
    config = routing_config(a, b, big)
    config["virtualrouter"]["routing"]["small"] = [
        {"model": "a", "contextWindow": 100, "maxInFlight": 4, "rpm": 100, "tpm": 100_000}
    ]
    config["virtualrouter"]["maxWait"] = 0
    with Served(create_app(load(config))) as served:
        response = httpx.post(
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {GATEWAY_KEY}"},
            json={"model": "small", "messages": [{"role": "user", "content": "word " * 200}]},
        )
    assert response.status_code == 400 and response.headers["x-should-retry"] == "false"
    body = response.json()["error"]
    assert body["code"] == "no_capable_target" and "context window 100" in body["message"]
    assert a.received == []


def test_web_search_engines_may_name_a_route(servers: Servers) -> None:
    a, b, big = servers(), servers(), servers()
    config = routing_config(a, b, big)
    config["virtualrouter"]["routing"]["web_search"] = ["big", "a"]
    config["webSearch"] = {"engines": [{"id": "web", "providerKey": "web_search", "default": True}]}
    gateway = load(config)
    assert gateway.web_search is not None
    assert gateway.web_search.engines[0].model is gateway.routes["web_search"]


@pytest.mark.parametrize(
    ("routing", "message"),
    [
        ({"default": ["nope"]}, r"routing\.default\[0\]\.model: 'nope' is not a configured model"),
        ({"a": ["b"]}, r"routing\.a: a route needs a name no model entry has"),
        ({"default": []}, r"routing\.default: at least one target"),
        ({"default": [{"model": "a", "weight": 0}]}, r"routing\.default\[0\]\.weight: must be > 0"),
        ({"default": [{"model": "a", "maxRetries": -1}]}, r"routing\.default\[0\]\.maxRetries"),
        ({"default": ["a", "a"]}, r"routing\.default\[1\]\.model: 'a' is already a target"),
        ({}, r"virtualrouter\.routing: at least one route"),
    ],
)
def test_bad_routing_is_a_config_error_naming_the_path(
    servers: Servers, routing: dict[str, Any], message: str
) -> None:
    a = servers()
    config = routing_config(a, a, a)
    config["virtualrouter"]["routing"] = routing
    with pytest.raises(ConfigError, match=message):
        load(config)


def test_two_gateway_processes_honour_each_others_cooldown(servers: Servers, redis_url: str) -> None:
    a, b, big = servers(), servers(), servers()
    a.add(error(503, "down"))
    a.repeat = ok("from a")  # what a process that ignored the cooldown would get
    b.repeat = ok("from b")
    config = routing_config(a, b, big, redisUrl=redis_url)
    config["virtualrouter"]["cooldown"] = {"failures": 1, "seconds": 60}

    def ask(gateway: GatewayProcess) -> str:
        response = httpx.post(
            gateway.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {GATEWAY_KEY}"},
            json={"model": "default", "messages": [{"role": "user", "content": "x"}]},
            timeout=20,
        )
        assert response.status_code == 200, response.text
        return response.json()["choices"][0]["message"]["content"]

    with GatewayProcess(config) as one, GatewayProcess(config) as two:
        assert ask(one) == "from b"  # a failed: cooled down in Redis
        assert [ask(two), ask(one), ask(two)] == ["from b"] * 3
    assert len(a.received) == 1


def test_the_routing_guides_gateway_config_loads_as_shown() -> None:
    import json
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "routing.md").read_text(encoding="utf-8")
    block = re.search(r"```json\n(.*?)```", text, re.S)
    assert block is not None
    env = {
        name: "k-" + name for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "ZAI_API_KEY")
    }
    gateway = load(json.loads(block.group(1)), environ=env)
    assert sorted(gateway.routes) == ["default", "longcontext", "web_search"]
    assert [t.priority for t in gateway.routes["default"].targets] == [0, 1, 1]
    assert (
        gateway.web_search is not None and gateway.web_search.engines[0].model is gateway.routes["web_search"]
    )
    assert gateway.long_context_threshold == 60_000
