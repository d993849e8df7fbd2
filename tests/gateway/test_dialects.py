"""The inbound seam: the gateway's ``POST`` routes come from ``server.dialects.DIALECTS``, and a new
inbound API is one ``Dialect`` value and one row there. A toy dialect (plain-text wire, the model in
the path, its own key header and error shape) added as a row is served end to end: auth, refusals,
the whole answer, the stream and a failure mid-stream are all in its shape, with no change to
``app.py``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import httpx
import msgspec
import pytest

import llmroute
from llmroute.schema.cost import Cost
from llmroute.schema.events import Finish, LLMEvent, TextDelta
from llmroute.schema.response import LLMResponse
from llmroute.server import Gateway, create_app, load
from llmroute.server import app as app_module
from llmroute.server.dialect import AnyDialect, Dialect, Inbound, Unresolved
from llmroute.server.dialects import DIALECTS
from llmroute.server.failure import Failure
from llmroute.server.tracing import RouteTemplates

from ..reliability.server import FaultServer, Reply, chat_chunk, chat_error
from .test_gateway import GATEWAY_KEY, UPSTREAM_KEY, Served, answer, config

# -- the toy dialect: "POST /plain/{model}" (":stream" to stream), the body is the user's text --------


def _decode(body: bytes, path: Mapping[str, str]) -> Inbound[None]:
    name, _, action = path["target"].partition(":")
    request = llmroute.request(Unresolved(name), prompt=body.decode())
    return Inbound(name, action == "stream", request, None)


def _whole(inbound: Inbound[None], response: LLMResponse, hidden: frozenset[str]) -> bytes:
    return msgspec.json.encode({"said": response.text, "by": inbound.model})


class _Lines:
    def __init__(self, inbound: Inbound[None], hidden: frozenset[str]) -> None:
        self.model = inbound.model

    def opening(self) -> bytes:
        return f"> {self.model}\n".encode()

    def event(self, event: LLMEvent, out: list[bytes]) -> None:
        if isinstance(event, TextDelta):
            out.append(event.text.encode() + b"\n")

    def failed(self, failure: Failure) -> bytes:
        return f"! {failure.status} {failure.message}\n".encode()

    def end(self, finish: Finish | None, cost: Cost | None) -> bytes:
        return f". {finish.reason if finish else '-'}\n".encode()


def _error(failure: Failure) -> bytes:
    return msgspec.json.encode({"problem": failure.message, "why": failure.code})


PLAIN: Dialect[None] = Dialect(
    name="plain",
    paths=("/plain/{target}",),
    decode=_decode,
    whole=_whole,
    stream=_Lines,
    error=_error,
    key_headers=("x-plain-key",),
    stream_media_type="text/plain",
)


def _gateway(upstream: FaultServer) -> Gateway:
    cfg = config(upstream)
    del cfg["webSearch"]  # no server tools: the toy sees only the model's events
    return load(cfg, environ={"UPSTREAM_KEY": UPSTREAM_KEY})


@pytest.fixture
def plain(upstream: FaultServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The gateway with the toy dialect as one more row; yields its root URL."""
    monkeypatch.setattr(app_module, "DIALECTS", (*DIALECTS, PLAIN))
    with Served(create_app(_gateway(upstream))) as served:
        yield served.base_url.removesuffix("/v1")


def test_a_new_dialect_is_one_row_served_in_its_own_shape(plain: str, upstream: FaultServer) -> None:
    key = {"x-plain-key": GATEWAY_KEY}
    upstream.add(answer("Paris", " it is."), answer("Lyon."))
    whole = httpx.post(f"{plain}/plain/main", content=b"Capital?", headers=key, timeout=10)
    assert whole.status_code == 200 and whole.json() == {"said": "Paris it is.", "by": "main"}
    streamed = httpx.post(f"{plain}/plain/main:stream", content=b"Second city?", headers=key, timeout=10)
    assert streamed.headers["content-type"].startswith("text/plain")
    assert streamed.text == "> main\nLyon.\n. stop\n"
    sent = [msgspec.json.decode(r.body) for r in upstream.received]
    assert [b["messages"][-1]["content"] for b in sent] == ["Capital?", "Second city?"]
    assert all(b["model"] == "m" for b in sent)  # the configured upstream id, not the public name


def test_a_new_dialects_refusals_and_failures_are_in_its_shape(plain: str, upstream: FaultServer) -> None:
    refused = httpx.post(f"{plain}/plain/main", content=b"hi", headers={"x-plain-key": "nope"}, timeout=10)
    assert refused.status_code == 401 and refused.json()["why"] == "invalid_api_key"
    unknown = httpx.post(
        f"{plain}/plain/nope", content=b"hi", headers={"x-plain-key": GATEWAY_KEY}, timeout=10
    )
    assert unknown.status_code == 404 and unknown.json()["why"] == "model_not_found"
    # an upstream error after the first delta: the stream's last line is the failure, scrubbed
    upstream.add(
        Reply(parts=[chat_chunk("Par"), chat_error(f"overloaded, key {UPSTREAM_KEY}", "server_error")])
    )
    broken = httpx.post(
        f"{plain}/plain/main:stream",
        content=b"hi",
        headers={"authorization": f"Bearer {GATEWAY_KEY}"},
        timeout=10,
    )
    lines = broken.text.splitlines()
    assert lines[:2] == ["> main", "Par"] and lines[-1].startswith("! 502 ") and "overloaded" in lines[-1]
    assert UPSTREAM_KEY not in broken.text


def test_every_dialect_answers_a_refusal_in_its_own_error_shape(upstream: FaultServer) -> None:
    with Served(create_app(_gateway(upstream))) as served:
        root = served.base_url.removesuffix("/v1")
        for dialect in DIALECTS:
            for path in dialect.paths:
                got = httpx.post(root + path.replace("{", "x").replace("}", ""), content=b"{}", timeout=10)
                expected = dialect.error(
                    Failure(401, "invalid or missing API key", "invalid_request_error", "invalid_api_key")
                )
                assert (got.status_code, got.content) == (401, expected), dialect.name
    assert upstream.received == []


def test_dialect_names_and_paths_are_unique() -> None:
    table: tuple[AnyDialect, ...] = DIALECTS
    assert len({d.name for d in table}) == len(table)
    paths = [p for d in table for p in d.paths]
    assert len(set(paths)) == len(paths)


def test_route_templates_name_routes_not_ids() -> None:
    templates = RouteTemplates(
        ["/v1/responses", "/v1/models/{id:path}", "/v1beta/models/{model}:generateContent"]
    )
    assert templates("/v1/responses") == "/v1/responses"
    assert templates("/v1/models/gpt-4o/x") == "/v1/models/{id}"
    assert templates("/v1beta/models/gemini-2.5:generateContent") == "/v1beta/models/{model}:generateContent"
    assert templates("/v1beta/models/a/b:generateContent") == ""  # one segment only
    assert templates("/health/deep") == "/health" and templates("/v1/other") == ""
