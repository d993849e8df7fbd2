"""The gateway's ``POST /v1/embeddings`` end to end: the official ``openai`` SDK's
``embeddings.create`` (base64, its default, and float) -> the gateway (uvicorn on 127.0.0.1) ->
an OpenAI-shaped upstream on 127.0.0.1, under the same keys, limits, budgets, metrics and access
log as chat; fields the gateway does not take are refused by name."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from llmroute.schema.errors import ConfigError
from llmroute.server import create_app, load

from ..embed_server import EmbedServer, vector
from .test_gateway import UPSTREAM_KEY, Served
from .test_operations import _samples, _value, access_lines, root  # pyright: ignore[reportPrivateUsage]

KEY = "gw-embed-key-0123456789"
OTHER = "gw-embed-other-9876543210"


@pytest.fixture
def embedder() -> Iterator[EmbedServer]:
    with EmbedServer() as server:
        yield server


def config(server: EmbedServer, **extra: Any) -> dict[str, Any]:
    return {
        "keys": [KEY, {"id": "small", "key": OTHER, "models": ["emb"], "rpm": 2}],
        "models": {
            "emb": {
                "provider": "openai",
                "kind": "embedding",
                "base_url": server.base_url,
                "api_key": UPSTREAM_KEY,
                "model": "text-embedding-3-small",
            },
            "chat": {"provider": "compatible", "base_url": server.base_url, "model": "m"},
        },
        **extra,
    }


def serve(server: EmbedServer, **extra: Any) -> Served:
    return Served(create_app(load(config(server, **extra))))


def sdk(served: Served, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.base_url, api_key=key, max_retries=0, timeout=30)


def post(served: Served, body: Any, key: str = KEY, path: str = "/embeddings") -> httpx.Response:
    return httpx.post(
        served.base_url + path, headers={"authorization": f"Bearer {key}"}, json=body, timeout=30
    )


INPUTS = [f"t{i}" for i in range(5000)]


@pytest.mark.parametrize("encoding", ["base64", "float"])
def test_the_openai_sdk_embeds_through_the_gateway(embedder: EmbedServer, encoding: str) -> None:
    with serve(embedder) as served:
        kwargs: dict[str, Any] = {} if encoding == "base64" else {"encoding_format": "float"}
        result = sdk(served).embeddings.create(model="emb", input=INPUTS, **kwargs)
    # the SDK's default is base64 (it decodes it itself); both come back as the same floats
    assert [d.index for d in result.data] == list(range(5000))
    assert [d.embedding for d in result.data[:3]] == [vector(0), vector(1), vector(2)]
    assert result.data[4999].embedding == vector(4999)
    assert result.model == "emb"
    assert (result.usage.prompt_tokens, result.usage.total_tokens) == (5000, 5000)
    assert sorted(len(b) for b in embedder.bodies) == [904, 2048, 2048]  # split upstream, not by the client


def test_a_single_string_with_dimensions(embedder: EmbedServer) -> None:
    with serve(embedder) as served:
        result = sdk(served).embeddings.create(model="emb", input="t7", dimensions=3)
    assert [d.embedding for d in result.data] == [vector(7)]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"model": "emb", "input": [[1, 2, 3]]}, 400, "input[0]: token arrays are not accepted"),
        ({"model": "emb", "input": [1, 2, 3]}, 400, "input[0]: token arrays are not accepted"),
        ({"model": "emb", "input": []}, 400, "input: nothing to embed"),
        ({"model": "emb", "input": ["ok", ""]}, 400, "input[1]: an empty string"),
        ({"model": "emb", "input": "x", "user": "u-1"}, 400, "user: not forwarded"),
        ({"model": "emb", "input": "x", "encoding_format": "int8"}, 400, "encoding_format"),
        ({"model": "emb", "input": "x", "dimensions": 0}, 400, "dimensions: must be at least 1"),
        ({"model": "emb", "input": "x", "extra_field": 1}, 400, "extra_field"),
        ({"model": "emb", "input": "x", "input_type": "search"}, 400, "input_type"),
        ({"model": "chat", "input": "x"}, 400, "'chat' is not an embedding model"),
        ({"model": "nope", "input": "x"}, 404, "'nope' does not exist"),
    ],
)
def test_what_the_gateway_does_not_take_is_refused_by_name(
    embedder: EmbedServer, body: dict[str, Any], status: int, message: str
) -> None:
    with serve(embedder) as served:
        response = post(served, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert message in error["message"] and set(error) == {"message", "type", "param", "code"}
    assert embedder.requests == 0


def test_an_embedding_model_is_not_a_chat_model(embedder: EmbedServer) -> None:
    with serve(embedder) as served:
        response = post(
            served, {"model": "emb", "messages": [{"role": "user", "content": "x"}]}, path="/chat/completions"
        )
        listed = sdk(served).models.list()
    assert response.status_code == 400 and "POST /v1/embeddings" in response.json()["error"]["message"]
    assert {(m.id, m.owned_by) for m in listed.data} == {("emb", "openai"), ("chat", "compatible")}


def test_keys_and_rate_limits_hold(embedder: EmbedServer) -> None:
    with serve(embedder) as served:
        assert post(served, {"model": "emb", "input": "t1"}, key="wrong").status_code == 401
        small = [post(served, {"model": "emb", "input": "t1"}, key=OTHER).status_code for _ in range(3)]
        denied = post(
            served,
            {"model": "chat", "messages": [{"role": "user", "content": "x"}]},
            key=OTHER,
            path="/chat/completions",
        )
    assert small == [200, 200, 429]
    assert denied.status_code == 403


def test_budgets_charge_what_the_embeddings_cost(embedder: EmbedServer) -> None:
    # text-embedding-3-small at $0.02 a million tokens: 5,000 inputs (5,000 tokens) cost $0.0001
    keys = [{"id": "b", "key": KEY, "budgetUsd": 0.0001, "budgetPeriod": "day"}]
    with serve(embedder, keys=keys) as served:
        first = post(served, {"model": "emb", "input": INPUTS})
        over = post(served, {"model": "emb", "input": "t1"})
    assert first.status_code == 200 and first.json()["usage"]["cost"] == pytest.approx(0.0001)
    assert over.status_code == 429 and over.json()["error"]["code"] == "budget_exceeded"


def test_a_failed_slice_is_the_openai_error_logged_and_counted(
    embedder: EmbedServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="llmroute.server")
    embedder.fail = {"t4096": 400}
    with serve(embedder, retry={"maxRetries": 0}) as served:
        response = post(served, {"model": "emb", "input": INPUTS})
        text = httpx.get(root(served) + "/metrics", timeout=5).text
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"].startswith("inputs[4096:5000] (request 3 of 3): ")
    assert error["type"] == "invalid_request_error"
    (line,) = access_lines(caplog)
    assert (line["route"], line["status"], line["error"]) == ("/v1/embeddings", 400, "InvalidRequestError")
    samples = _samples(text)
    assert _value(samples, "llmroute_gateway_requests_total", route="/v1/embeddings", status="400") == 1


def test_metrics_and_the_access_log(embedder: EmbedServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="llmroute.server")
    with serve(embedder) as served:
        sdk(served).embeddings.create(model="emb", input=["t1", "t2"])
        text = httpx.get(root(served) + "/metrics", timeout=5).text
    (line,) = access_lines(caplog)
    assert (line["route"], line["model"], line["target"], line["status"]) == (
        "/v1/embeddings",
        "emb",
        "openai/text-embedding-3-small",
        200,
    )
    assert line["input_tokens"] == 2 and line["cost_usd"] == pytest.approx(4e-8)
    samples = _samples(text)
    route = "/v1/embeddings"
    assert _value(samples, "llmroute_gateway_requests_total", route=route, model="emb", status="200") == 1
    assert _value(samples, "llmroute_gateway_tokens_total", model="emb", direction="input") == 2


def test_config_names_what_is_wrong_with_an_embedding_entry(embedder: EmbedServer) -> None:
    bad = config(embedder)
    bad["models"]["emb"]["options"] = {"dimensions": "many"}
    with pytest.raises(ConfigError, match=r"\$\.models\.emb: dimensions: must be a positive int"):
        load(bad)
    chat_cohere = config(embedder)
    chat_cohere["models"]["co"] = {"provider": "cohere", "model": "embed-v4.0", "api_key": "k"}
    with pytest.raises(ConfigError, match=r"'cohere' serves embeddings only"):
        load(chat_cohere)
    routed = config(embedder, virtualrouter={"routing": {"r": ["emb"]}})
    with pytest.raises(ConfigError, match="is an embedding model; routes are of chat models"):
        load(routed)
