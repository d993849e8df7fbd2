"""``embeddings {model}`` spans and metrics for ``client.embed`` (GenAI conventions, Client
Embeddings): one CLIENT span per request (a slice of the inputs; a retry is another), with the
token usage and vector size, ending once whatever happens, on asyncio and trio."""

from __future__ import annotations

import json

import httpx
import pytest
from opentelemetry.trace import SpanKind, StatusCode

import llmroute
from llmroute.providers import openai
from tests.reliability.server import FaultServer, Reply

from .conftest import Otel

pytestmark = pytest.mark.anyio

JSON = {"content-type": "application/json"}


def _answer(n: int, tokens: int) -> Reply:
    data = [{"object": "embedding", "index": i, "embedding": [0.25, -0.5, float(i)]} for i in range(n)]
    body = {
        "object": "list",
        "data": data,
        "model": "text-embedding-3-small-v2",
        "usage": {"prompt_tokens": tokens},
    }
    return Reply(200, JSON, [json.dumps(body).encode()], chunked=False)


def _model(server: FaultServer) -> llmroute.EmbeddingModel:
    return openai.configure(api_key="sk-test", base_url=server.base_url).embedding("text-embedding-3-small")


async def test_each_request_is_one_embeddings_span(server: FaultServer, otel: Otel) -> None:
    rate = json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}}).encode()
    server.add(
        _answer(2048, 4096), Reply(429, {**JSON, "retry-after": "0"}, [rate], chunked=False), _answer(2, 4)
    )
    async with llmroute.Client(retry=llmroute.RetryPolicy(initial_backoff=0, jitter=0)) as client:
        response = await client.embed(
            _model(server), [f"t{i}" for i in range(2050)], max_concurrency=1, dimensions=3
        )
    assert response.usage == llmroute.Usage(input_tokens=4100)
    spans = sorted(otel.only("embeddings "), key=lambda s: s.start_time or 0)
    assert [s.name for s in spans] == ["embeddings text-embedding-3-small"] * 3
    first, failed, retried = (dict(s.attributes or {}) for s in spans)
    assert all(s.kind == SpanKind.CLIENT for s in spans)
    assert first["gen_ai.operation.name"] == "embeddings" and first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.request.model"] == "text-embedding-3-small"
    assert first["gen_ai.response.model"] == "text-embedding-3-small-v2"
    assert first["gen_ai.embeddings.dimension.count"] == 3
    assert (first["gen_ai.usage.input_tokens"], first["llmroute.embed.inputs"]) == (4096, 2048)
    assert (first["server.address"], first["server.port"]) == ("127.0.0.1", server.port)
    assert failed["error.type"] == "RateLimitError" and failed["http.response.status_code"] == 429
    assert spans[1].status.status_code == StatusCode.ERROR
    assert (retried["llmroute.attempt"], retried["gen_ai.usage.input_tokens"]) == (2, 4)
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in otel.points("gen_ai.client.token.usage")}
    assert tokens == {"input": 4100}
    durations = {
        p.attributes.get("error.type"): p.count for p in otel.points("gen_ai.client.operation.duration")
    }
    assert durations == {None: 2, "RateLimitError": 1}
    assert [r.headers["traceparent"].split("-")[2] for r in server.received] == [
        f"{s.context.span_id:016x}" for s in spans
    ]
    otel.all_ended_once()


async def test_a_cancelled_slice_ends_its_span(server: FaultServer, otel: Otel) -> None:
    bad = json.dumps({"error": {"message": "bad input", "type": "invalid_request_error"}}).encode()
    server.add(Reply(400, JSON, [bad], chunked=False))
    server.repeat = _answer(2048, 1)
    async with llmroute.Client() as client:
        with pytest.raises(llmroute.InvalidRequestError):
            await client.embed(_model(server), [f"t{i}" for i in range(8192)], max_concurrency=4)
    otel.all_ended_once()
    errors = [dict(s.attributes or {}).get("error.type") for s in otel.only("embeddings ")]
    assert "InvalidRequestError" in errors


def test_the_gateways_embeddings_request_is_a_server_span_over_embeddings_spans(otel: Otel) -> None:
    from tests.embed_server import EmbedServer
    from tests.gateway.test_embeddings import INPUTS, KEY, post, serve

    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with EmbedServer() as upstream, serve(upstream) as served:
        response = httpx.post(
            served.base_url + "/embeddings",
            headers={"authorization": f"Bearer {KEY}", "traceparent": f"00-{trace_id}-{parent}-01"},
            json={"model": "emb", "input": INPUTS},
            timeout=30,
        )
        assert post(served, {"model": "emb", "input": "t1"}).status_code == 200
    assert response.status_code == 200
    spans = otel.spans()
    first_server = min((s for s in spans if s.kind == SpanKind.SERVER), key=lambda s: s.start_time or 0)
    assert first_server.name == "POST /v1/embeddings"
    assert f"{first_server.context.trace_id:032x}" == trace_id
    mine = [s for s in otel.only("embeddings ") if s.context.trace_id == first_server.context.trace_id]
    assert len(mine) == 3  # 5,000 inputs: three upstream requests, each its own span
    assert all(s.parent is not None and s.parent.span_id == first_server.context.span_id for s in mine)
    assert sum(dict(s.attributes or {})["gen_ai.usage.input_tokens"] for s in mine) == 5000
    otel.all_ended_once()
