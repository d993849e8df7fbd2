"""Gateway server spans: the gateway (uvicorn on 127.0.0.1) traces each request as a SERVER span that
continues the client's ``traceparent``, with the upstream model call beneath it."""

from __future__ import annotations

import httpx
from opentelemetry.trace import SpanKind, StatusCode

from tests.gateway.test_gateway import GATEWAY_KEY, answer, serve
from tests.reliability.server import FaultServer

from .conftest import Otel

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


def post(base_url: str, **headers: str) -> httpx.Response:
    return httpx.post(
        base_url + "/chat/completions",
        headers={"authorization": f"Bearer {GATEWAY_KEY}", **headers},
        json={"model": "main", "messages": [{"role": "user", "content": "hi"}]},
        timeout=20,
    )


def test_request_span_continues_the_callers_trace(upstream: FaultServer, otel: Otel) -> None:
    upstream.add(answer("hello"))
    with serve(upstream) as served:
        response = post(served.base_url, traceparent=f"00-{TRACE_ID}-{PARENT_ID}-01")
    assert response.status_code == 200
    spans = otel.spans()
    [server] = [s for s in spans if s.kind == SpanKind.SERVER]
    assert server.name == "POST /v1/chat/completions"
    assert f"{server.context.trace_id:032x}" == TRACE_ID
    assert server.parent is not None and f"{server.parent.span_id:016x}" == PARENT_ID
    attrs = dict(server.attributes or {})
    assert attrs["http.route"] == "/v1/chat/completions" and attrs["http.response.status_code"] == 200
    by_id = {s.context.span_id: s for s in spans}
    [chat] = [s for s in spans if s.name.startswith("chat ")]
    # the upstream call is a descendant of the request span, in the same trace
    ancestor = chat
    while ancestor.parent is not None and ancestor.parent.span_id in by_id:
        ancestor = by_id[ancestor.parent.span_id]
    assert ancestor is server
    sent = upstream.received[0].headers["traceparent"]
    assert sent.split("-")[1] == TRACE_ID and sent.split("-")[2] == f"{chat.context.span_id:016x}"
    otel.all_ended_once()


def test_without_traceparent_a_new_trace_and_errors_mark_the_span(upstream: FaultServer, otel: Otel) -> None:
    with serve(upstream) as served:
        response = post(served.base_url)  # no upstream reply scripted: the gateway answers 5xx
        bad_key = httpx.get(served.base_url + "/models/main?key=sk-should-not-appear-0123456789", timeout=20)
    assert response.status_code >= 500 and bad_key.status_code in (200, 401, 404)
    [server, models] = sorted(
        (s for s in otel.spans() if s.kind == SpanKind.SERVER), key=lambda s: s.start_time or 0
    )
    assert server.parent is None
    assert server.status.status_code == StatusCode.ERROR
    assert dict(server.attributes or {})["error.type"] == str(response.status_code)
    assert models.name == "GET /v1/models/{id}"
    assert "sk-should-not-appear" not in str(dict(models.attributes or {}))
    otel.all_ended_once()


def test_no_server_span_when_telemetry_is_off(upstream: FaultServer, otel: Otel) -> None:
    from llmroute import telemetry

    telemetry.uninstrument()
    upstream.add(answer("hello"))
    with serve(upstream) as served:
        assert post(served.base_url).status_code == 200
    assert otel.spans() == []
