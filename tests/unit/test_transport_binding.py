"""The transport seam: a route declares a kind of transport, each client binds it to its own
resources once, and the bound transport sends through what it holds."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import anyio
import httpx
import pytest

import llmroute
from llmroute.providers import openai
from llmroute.route.prepared import PreparedRequest
from llmroute.route.transport import ClientTransports, HttpTransport, Transport, TransportKind, Wire

CHUNK = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


class _Wire:
    status = 200
    headers: Mapping[str, str] = {"content-type": "text/event-stream"}

    async def chunks(self) -> AsyncIterator[bytes]:
        yield CHUNK

    async def read_capped(self, limit: int) -> bytes:
        return b""

    async def aclose(self) -> None:
        pass


class _Bound:
    def __init__(self, kind: _Kind, transports: ClientTransports) -> None:
        self.kind = kind
        self.transports = transports

    async def open(self, prepared: PreparedRequest, timeout: httpx.Timeout) -> Wire:  # noqa: ASYNC109
        self.kind.sent.append((self.transports, prepared.url))
        return _Wire()


class _Kind:
    """A user's kind of transport: counts its bindings and what each bound one sent."""

    name = "canned"
    streams_only = False
    pooled = False

    def __init__(self) -> None:
        self.bound: list[ClientTransports] = []
        self.sent: list[tuple[ClientTransports, str]] = []

    def bind(self, transports: ClientTransports) -> Transport:
        self.bound.append(transports)
        return _Bound(self, transports)


def _model(kind: TransportKind | None) -> llmroute.Model:
    model = openai.configure(api_key="sk-test", base_url="http://127.0.0.1:9/v1").chat("gpt-test")
    return model.with_(route=model.route.with_(transport=kind))


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_kind_is_bound_once_per_client_and_sends_through_it() -> None:
    kind = _Kind()
    request = llmroute.request(model=_model(kind), prompt="hi")
    async with llmroute.Client() as first, llmroute.Client() as second:
        for client in (first, first, second, first):
            assert (await client.generate(request)).text == "hi"
    assert len(kind.bound) == 2 and kind.bound[0] is not kind.bound[1]  # once per client
    assert [transports for transports, _ in kind.sent] == [kind.bound[i] for i in (0, 0, 1, 0)]
    assert {url for _, url in kind.sent} == {"http://127.0.0.1:9/v1/chat/completions"}


def test_http_is_the_clients_own_and_a_closed_client_binds_nothing() -> None:
    http = httpx.AsyncClient()
    client = llmroute.Client(http=http)
    transports = client.context().transports
    assert transports.for_route(None) is transports.http
    assert isinstance(transports.http, HttpTransport) and transports.http.http is http
    assert client.context().transports is transports  # bound once, not per call
    anyio.run(client.aclose)
    with pytest.raises(llmroute.ClientClosedError):
        client.context()


def test_a_websocket_route_is_refused_stream_false_by_its_kind_name() -> None:
    pytest.importorskip("websockets")
    model = openai.configure(api_key="sk-test").responses("gpt-test", transport="websocket")
    request = llmroute.request(model=model, prompt="hi", generation=llmroute.GenerationOptions(stream=False))
    with pytest.raises(llmroute.InvalidRequestError, match="the websocket transport always streams"):
        anyio.run(llmroute.Client().prepare, request)


@pytest.mark.anyio
async def test_a_router_target_with_its_own_timeouts_keeps_the_clients_websocket_pool() -> None:
    """A target's own ``timeouts`` give it a context of its own; it still sends through the
    client's transports, so its WebSocket calls share the client's pooled connections."""
    pytest.importorskip("websockets.sync.server")
    from tests.socket_server import SocketServer

    with SocketServer(steps=1) as ws:
        facade = openai.configure(api_key="sk-test", base_url=ws.url)
        target = llmroute.Target(
            facade.responses("gpt-test", transport="websocket"), timeouts=llmroute.Timeouts(total=30)
        )
        router = llmroute.Router([target])
        pool = llmroute.SocketPool(max_idle=1)  # a second conversation takes the idle connection
        async with llmroute.Client(retry=llmroute.RetryPolicy.none(), socket_pool=pool) as client:
            for prompt in ("one", "two"):
                request = llmroute.request(
                    model=router, prompt=prompt, provider_options={"openai": {"store": False}}
                )
                assert (await client.generate(request)).text == "Done after 0 lookups."
            assert client.sockets.reused == 1
    assert [conn for conn, _ in ws.received] == [0, 0]  # both on the first connection
