"""Running the gateway: health and readiness, Prometheus metrics scraped and parsed, one JSON
access-log line per request and one line per upstream failure, hostile and impatient clients
(invalid UTF-8, hang-ups mid-body and mid-wait), and what clients expect (``x-api-key``, CORS,
``GET /v1/models/{id}``, ``x-should-retry``, upstream 404 -> 502)."""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import time
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from llmroute.server import create_app, load

from ..reliability.server import FaultServer, Reply, Stall, chat_chunk
from .test_gateway import UPSTREAM_KEY, Served, answer

KEY = "gw-ops-key-0123456789"
OTHER = "gw-ops-other-9876543210"


def ops_config(upstream: FaultServer, **extra: Any) -> dict[str, Any]:
    return {
        "keys": [KEY, {"id": "team-b", "key": OTHER}],
        "models": {
            "main": {
                "provider": "compatible",
                "base_url": upstream.base_url,
                "api_key": UPSTREAM_KEY,
                "model": "m",
            }
        },
        **extra,
    }


def serve_ops(upstream: FaultServer, **extra: Any) -> Served:
    return Served(create_app(load(ops_config(upstream, **extra))))


def root(served: Served) -> str:
    return served.base_url.removesuffix("/v1")


def post(
    served: Served, body: Any, key: str = KEY, path: str = "/chat/completions", **kw: Any
) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}", **kw.pop("headers", {})}
    kw.setdefault("timeout", 10)
    return httpx.post(served.base_url + path, headers=headers, json=body, **kw)


def ask(stream: bool = False, text: str = "What is the secret plan?") -> dict[str, Any]:
    return {"model": "main", "stream": stream, "messages": [{"role": "user", "content": text}]}


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "llmroute.server.access"]


def wait_for(condition: Any, what: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


# -- health ---------------------------------------------------------------------------------------


def test_health_and_readiness(upstream: FaultServer, redis_url: str) -> None:
    with serve_ops(upstream, redisUrl=redis_url) as served:
        live = httpx.get(root(served) + "/health", timeout=5)
        ready = httpx.get(root(served) + "/health/ready", timeout=5)
    assert (live.status_code, live.json()) == (200, {"status": "ok"})
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})


def test_not_ready_when_redis_is_down(upstream: FaultServer) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with serve_ops(upstream, redisUrl=f"redis://:hunter2@127.0.0.1:{port}/0") as served:
        ready = httpx.get(root(served) + "/health/ready", timeout=10)
        live = httpx.get(root(served) + "/health", timeout=5)
    assert ready.status_code == 503 and live.status_code == 200
    problems = ready.json()["problems"]
    assert list(problems) == ["redis"] and "PING" in problems["redis"]
    assert "hunter2" not in ready.text


def test_not_ready_when_an_upstream_host_does_not_resolve(upstream: FaultServer) -> None:
    raw = ops_config(upstream)
    raw["models"]["far"] = {
        "provider": "compatible",
        "base_url": "http://no-such-host.invalid/v1",
        "model": "m",
    }
    with Served(create_app(load(raw))) as served:
        ready = httpx.get(root(served) + "/health/ready", timeout=10)
    assert ready.status_code == 503
    assert list(ready.json()["problems"]) == ["upstream:far"]
    assert "no-such-host" not in ready.text


# -- metrics and logs -----------------------------------------------------------------------------


def _samples(text: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def _value(samples: dict[str, list[Any]], name: str, **labels: str) -> float:
    return sum(s.value for s in samples.get(name, []) if all(s.labels.get(k) == v for k, v in labels.items()))


def test_metrics_and_access_log(upstream: FaultServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="llmroute.server")
    bad = json.dumps({"error": {"message": "overloaded", "type": "server_error"}}).encode()
    upstream.add(
        answer("Paris."),
        answer("Par", "is."),
        Reply(
            400,
            {"content-type": "application/json"},
            [b'{"error": {"message": "bad", "type": "x"}}'],
            chunked=False,
        ),
        Reply(503, {"content-type": "application/json"}, [bad], chunked=False),
    )
    with serve_ops(upstream, retry={"maxRetries": 0}) as served:
        assert post(served, ask()).status_code == 200
        with httpx.stream(
            "POST",
            served.base_url + "/chat/completions",
            headers={"x-api-key": OTHER},
            json={**ask(stream=True), "stream_options": {"include_usage": True}},
            timeout=10,
        ) as streamed:
            assert streamed.status_code == 200
            streamed.read()
        assert post(served, ask()).status_code == 400
        assert post(served, ask()).status_code == 502
        assert post(served, ask(), key="wrong").status_code == 401
        text = httpx.get(root(served) + "/metrics", timeout=5).text
    samples = _samples(text)
    requests = "llmroute_gateway_requests_total"
    route = "/v1/chat/completions"
    assert _value(samples, requests, route=route, model="main", status="200", key="key-1") == 1
    assert _value(samples, requests, route=route, model="main", status="200", key="team-b") == 1
    assert _value(samples, requests, route=route, status="400", key="key-1") == 1
    assert _value(samples, requests, route=route, status="502", key="key-1") == 1
    assert _value(samples, requests, route=route, status="401", key="-", model="-") == 1
    assert _value(samples, "llmroute_gateway_request_duration_seconds_count", route=route, model="main") == 4
    assert _value(samples, "llmroute_gateway_time_to_first_token_seconds_count", model="main") == 1
    assert (
        _value(samples, "llmroute_gateway_tokens_total", key="team-b", model="main", direction="input") == 5
    )
    assert (
        _value(samples, "llmroute_gateway_tokens_total", key="team-b", model="main", direction="output") == 2
    )
    assert (
        _value(samples, "llmroute_gateway_upstream_errors_total", model="main", type="InvalidRequestError")
        == 1
    )
    assert (
        _value(samples, "llmroute_gateway_upstream_errors_total", model="main", type="ProviderInternalError")
        == 1
    )
    assert _value(samples, "llmroute_gateway_streams_in_flight", route=route) == 0

    lines = access_lines(caplog)
    assert [(x["key"], x["status"], x["stream"]) for x in lines] == [
        ("key-1", 200, False),
        ("team-b", 200, True),
        ("key-1", 400, False),
        ("key-1", 502, False),
        (None, 401, False),
    ]
    streamed_line = lines[1]
    assert streamed_line["model"] == "main" and streamed_line["target"] == "compatible/m"
    assert streamed_line["input_tokens"] == 5 and streamed_line["output_tokens"] == 2
    assert streamed_line["ttft_ms"] is not None and streamed_line["ttft_ms"] <= streamed_line["latency_ms"]
    assert lines[3]["error"] == "ProviderInternalError" and lines[4]["error"] == "invalid_api_key"
    assert {"time", "latency_ms", "cost_usd", "route"} <= set(lines[0])
    failures = [
        r for r in caplog.records if r.name == "llmroute.server" and "upstream_error" in r.getMessage()
    ]
    assert len(failures) == 2 and all(r.levelno == logging.WARNING and r.exc_info is None for r in failures)
    everything = "\n".join(r.getMessage() for r in caplog.records)
    for secret in (KEY, OTHER, UPSTREAM_KEY, upstream.base_url, f"127.0.0.1:{upstream.port}", "secret plan"):
        assert secret not in everything


# -- hostile and impatient clients ----------------------------------------------------------------


def test_invalid_utf8_in_a_json_string_is_a_400(
    upstream: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    body = b'{"model": "main", "messages": [{"role": "user", "content": "caf\xc3\x28 \xff"}]}'
    with serve_ops(upstream) as served:
        response = httpx.post(
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"},
            content=body,
            timeout=5,
        )
    assert response.status_code == 400
    assert "not valid UTF-8" in response.json()["error"]["message"]
    assert not any(r.exc_info for r in caplog.records)
    assert upstream.received == []


def test_a_client_hanging_up_mid_body_logs_one_line(
    upstream: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="llmroute.server")
    with serve_ops(upstream) as served:
        port = int(served.base_url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"authorization: Bearer " + KEY.encode() + b'\r\ncontent-length: 1000\r\n\r\n{"model": '
            )
            time.sleep(0.2)
        wait_for(lambda: access_lines(caplog), "no access-log line for the hang-up")
    gone = [r for r in caplog.records if r.name == "llmroute.server" and "disconnected" in r.getMessage()]
    assert len(gone) == 1 and "while sending the body" in gone[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)
    assert access_lines(caplog)[0]["error"] == "client_disconnected"
    assert upstream.received == []


def test_a_client_hanging_up_cancels_a_non_streamed_upstream_call(
    upstream: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="llmroute.server")
    upstream.add(Reply(parts=[chat_chunk("Hel"), Stall()]))
    with serve_ops(upstream) as served:
        with pytest.raises(httpx.ReadTimeout):
            post(served, ask(), timeout=0.5)
        wait_for(lambda: upstream.client_disconnects == 1, "the upstream call was not cancelled")
        wait_for(lambda: access_lines(caplog), "no access-log line")
    assert access_lines(caplog)[0]["error"] == "client_disconnected"
    assert not any(r.exc_info for r in caplog.records)


def test_an_upstream_error_echoing_headers_does_not_leak_the_upstream_host(upstream: FaultServer) -> None:
    where = f"127.0.0.1:{upstream.port}"
    echo = json.dumps({"error": {"message": f"bad request; Host: {where}", "type": "x"}}).encode()
    upstream.add(Reply(400, {"content-type": "application/json"}, [echo], chunked=False))
    with serve_ops(upstream) as served:
        response = post(served, ask())
    assert response.status_code == 400 and "bad request; Host: <upstream>" in response.text
    assert where not in response.text


# -- what clients expect --------------------------------------------------------------------------


def test_x_api_key_and_model_by_id(upstream: FaultServer) -> None:
    upstream.add(answer("ok"))
    with serve_ops(upstream) as served:
        assert post(served, ask(), headers={"x-api-key": OTHER, "authorization": ""}).status_code == 401
        del_auth = httpx.post(
            served.base_url + "/chat/completions", headers={"x-api-key": OTHER}, json=ask(), timeout=5
        )
        client = openai.OpenAI(base_url=served.base_url, api_key=KEY, max_retries=0)
        model = client.models.retrieve("main")
        with pytest.raises(openai.NotFoundError):
            client.models.retrieve("nope")
        wrong = httpx.get(served.base_url + "/models/main", headers={"x-api-key": "nope"}, timeout=5)
    assert del_auth.status_code == 200 and del_auth.json()["choices"][0]["message"]["content"] == "ok"
    assert (model.id, model.owned_by) == ("main", "compatible")
    assert wrong.status_code == 401


def test_cors_preflight_and_response_headers(upstream: FaultServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="llmroute.server")
    upstream.add(answer("ok"))
    with serve_ops(upstream, cors={"origins": ["https://app.example"]}) as served:
        preflight = httpx.options(
            served.base_url + "/chat/completions",
            headers={
                "origin": "https://app.example",
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type, x-stainless-os",
            },
            timeout=5,
        )
        other = httpx.options(
            served.base_url + "/chat/completions",
            headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
            timeout=5,
        )
        answered = post(served, ask(), headers={"origin": "https://app.example"})
        samples = _samples(httpx.get(root(served) + "/metrics", timeout=5).text)
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "x-stainless-os" in preflight.headers["access-control-allow-headers"].lower()
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    assert answered.headers["access-control-allow-origin"] == "https://app.example"
    # preflights are answered by the CORS layer, yet logged and counted like every request
    route, requests = "/v1/chat/completions", "llmroute_gateway_requests_total"
    assert _value(samples, requests, route=route, method="OPTIONS", status="200", key="-") == 1
    assert _value(samples, requests, route=route, method="OPTIONS", status="400", key="-") == 1
    assert _value(samples, requests, route=route, method="POST", status="200", key="key-1") == 1
    duration = "llmroute_gateway_request_duration_seconds_count"
    assert _value(samples, duration, route=route) == 1  # the POST only: preflights are not timed
    lines = [(x["method"], x["route"], x["status"], x["key"]) for x in access_lines(caplog)]
    assert lines == [
        ("OPTIONS", route, 200, None),
        ("OPTIONS", route, 400, None),
        ("POST", route, 200, "key-1"),
    ]


def test_after_its_own_retries_the_gateway_says_do_not_retry(upstream: FaultServer) -> None:
    bad = Reply(
        503,
        {"content-type": "application/json"},
        [b'{"error": {"message": "down", "type": "x"}}'],
        chunked=False,
    )
    upstream.add(bad, bad, bad)
    with serve_ops(upstream, retry={"maxRetries": 1, "initialBackoff": 0.01}) as served:
        retried = post(served, ask())
    assert retried.status_code == 502 and retried.headers["x-should-retry"] == "false"
    assert len(upstream.received) == 2
    with serve_ops(upstream, retry={"maxRetries": 0}) as served:
        single = post(served, ask())
    assert single.status_code == 502 and "x-should-retry" not in single.headers
    assert len(upstream.received) == 3


def test_an_upstream_404_is_a_502_naming_the_upstream(upstream: FaultServer) -> None:
    missing = Reply(404, {"content-type": "text/html"}, [b"<h1>404 page not found</h1>"], chunked=False)
    upstream.add(missing)
    with serve_ops(upstream) as served:
        client = openai.OpenAI(base_url=served.base_url, api_key=KEY, max_retries=0)
        with pytest.raises(openai.APIStatusError) as info:
            client.chat.completions.create(model="main", messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == 502 and info.value.code == "upstream_not_found"
    assert "upstream answered 404" in info.value.message and "base_url" in info.value.message


def test_key_entries_by_hash_and_restricted_to_models(upstream: FaultServer) -> None:
    import hashlib

    raw = ops_config(upstream)
    raw["models"]["second"] = {**raw["models"]["main"], "model": "m2"}
    hashed = "sha256:" + hashlib.sha256(b"hashed-client-key").hexdigest()
    raw["keys"] = [{"id": "narrow", "key": hashed, "models": ["second"]}]
    upstream.add(answer("ok"))
    with Served(create_app(load(raw))) as served:
        listed = httpx.get(served.base_url + "/models", headers={"x-api-key": "hashed-client-key"}, timeout=5)
        refused = post(served, ask(), key="hashed-client-key")
        allowed = post(served, {**ask(), "model": "second"}, key="hashed-client-key")
        by_hash = post(served, ask(), key=hashed)
    assert [m["id"] for m in listed.json()["data"]] == ["second"]
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "model_not_allowed"
    assert allowed.status_code == 200
    assert by_hash.status_code == 401  # the hash itself is not a key


@pytest.mark.parametrize(
    ("keys", "needle"),
    [
        ([{"id": "a", "key": "k"}, {"id": "a", "key": "k2"}], "$.keys[1].id: must be non-empty and unique"),
        ([{"id": "a", "key": "sha256:abc"}], "$.keys[0].key: sha256: must be followed by 64 hex digits"),
        ([{"id": "a", "key": "k", "models": ["nope"]}], "$.keys[0].models[0]: 'nope' is not a public model"),
        ([{"id": "a", "key": "k", "rpm": 0}], "$.keys[0].rpm: must be at least 1"),
        ([""], "$.keys[0]"),
        # the same secret twice: which entry's id, models and limits apply would be arbitrary
        (["sk-twice", {"id": "b", "key": "sk-twice"}], "$.keys[1].key: the same key as $.keys[0]"),
        (
            [
                {"id": "a", "key": "sk-twice"},
                {"id": "b", "key": "sha256:" + hashlib.sha256(b"sk-twice").hexdigest()},
            ],
            "$.keys[1].key: the same key as $.keys[0]",
        ),
    ],
)
def test_bad_key_entries_fail_at_start(upstream: FaultServer, keys: list[Any], needle: str) -> None:
    from llmroute.schema.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        load({**ops_config(upstream), "keys": keys})
    assert needle in str(info.value)
    assert "sk-twice" not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "redis://:s3cret@127.0.0.1:notaport/0",
        "http://:s3cret@127.0.0.1/0",
        "redis://:s3cret@127.0.0.1:6379/abc",
    ],
)
def test_a_bad_redis_url_fails_at_start_without_its_password(upstream: FaultServer, url: str) -> None:
    from llmroute.schema.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^\$\.redisUrl: ") as info:
        load({**ops_config(upstream), "redisUrl": url})
    assert "s3cret" not in str(info.value)


def test_a_client_hanging_up_mid_stream_logs_one_line(
    upstream: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="llmroute.server")
    upstream.add(Reply(parts=[chat_chunk("Hel"), Stall()]))
    with serve_ops(upstream) as served:
        with httpx.stream(
            "POST",
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {KEY}"},
            json=ask(stream=True),
            timeout=10,
        ) as response:
            next(response.iter_bytes())
        wait_for(lambda: upstream.client_disconnects == 1, "the upstream stream was not closed")
        wait_for(lambda: access_lines(caplog), "no access-log line")
        scrape = httpx.get(root(served) + "/metrics", timeout=5).text
    gone = [r for r in caplog.records if r.name == "llmroute.server" and "disconnected" in r.getMessage()]
    assert len(gone) == 1 and "mid-stream" in gone[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)
    (line,) = access_lines(caplog)
    assert (line["status"], line["error"], line["stream"]) == (499, "client_disconnected", True)
    assert _value(_samples(scrape), "llmroute_gateway_streams_in_flight", route="/v1/chat/completions") == 0
