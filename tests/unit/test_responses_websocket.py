"""OpenAI Responses over WebSocket against a real ``websockets`` server on 127.0.0.1.

The server (websockets' threaded sync server, so the client can run on asyncio or trio) serves
recorded Responses events as one message each, records what it received and counts open
connections, so leaks are visible."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import anyio
import msgspec
import pytest

import llmroute
from llmroute.protocols import openai_responses
from llmroute.providers import openai
from llmroute.testing import Cassette
from tests.helpers import CASSETTES, explicit_strict

websockets_sync = pytest.importorskip("websockets.sync.server")
from websockets.exceptions import ConnectionClosed  # noqa: E402

TOOL_LOOP = Cassette.load(CASSETTES / "opencode/openai-responses/gpt-5-5-drives-a-tool-loop.yaml")


def messages_of(body: bytes) -> list[str]:
    """The JSON payloads of a recorded SSE body: what WebSocket mode sends, one per message."""
    return [line[len("data: ") :] for line in body.decode().split("\n") if line.startswith("data: ")]


class Server:
    """Serves ``turns[i]`` on the i-th connection after receiving its ``response.create``."""

    def __init__(self, turns: list[list[str]], *, delay: float = 0.0, fragment_last: bool = False) -> None:
        self.turns = turns
        self.delay = delay
        self.fragment_last = fragment_last
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.close_codes: list[int | None] = []
        self.active = 0
        self.opened = 0
        self._lock = threading.Lock()
        self._server = websockets_sync.serve(self._handle, "127.0.0.1", 0, process_request=self._check_auth)
        self.port = self._server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _check_auth(self, connection: Any, request: Any) -> Any:
        if request.headers.get("Authorization") != "Bearer sk-test":
            body = '{"error": {"message": "Incorrect API key", "type": "invalid_request_error", "code": "invalid_api_key"}}'
            return connection.respond(HTTPStatus.UNAUTHORIZED, body)
        return None

    def _handle(self, ws: Any) -> None:
        with self._lock:
            self.active += 1
            self.opened += 1
        try:
            self.headers.append({k.lower(): v for k, v in ws.request.headers.raw_items()})
            for raw in ws:  # one turn per response.create, in order across connections
                with self._lock:
                    index = len(self.received)
                    self.received.append(json.loads(raw))
                turn = self.turns[index]
                for n, message in enumerate(turn):
                    if self.delay:
                        time.sleep(self.delay)
                    if self.fragment_last and n == len(turn) - 1:
                        ws.send([message[:10], message[10:20], message[20:]])  # continuation frames
                    else:
                        ws.send(message)
        except ConnectionClosed:
            pass
        finally:
            self.close_codes.append(ws.close_code)
            with self._lock:
                self.active -= 1

    def __enter__(self) -> Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join(5)

    def model(self, api_key: str = "sk-test") -> llmroute.Model:
        facade = openai.configure(api_key=api_key, base_url=f"http://127.0.0.1:{self.port}/v1")
        return facade.responses("gpt-5.5", transport="websocket")

    def wait_idle(self, timeout: float = 5.0) -> int:
        deadline = time.monotonic() + timeout
        while self.active and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.active


@pytest.fixture
def tool_loop_server() -> Iterator[Server]:
    with Server([messages_of(i.response.body) for i in TOOL_LOOP.interactions], fragment_last=True) as server:
        yield server


def client() -> llmroute.Client:
    return llmroute.Client(retry=llmroute.RetryPolicy.none())


def recorded_request(index: int) -> llmroute.LLMRequest:
    from tests.conformance.test_openai_responses import request_from_body

    return request_from_body(TOOL_LOOP.interactions[index].request.json())


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_multi_turn_tool_loop_over_websocket(tool_loop_server: Server) -> None:
    server = tool_loop_server
    model = server.model()
    first = msgspec.structs.replace(recorded_request(0), model=model.with_(id="gpt-5.5"))
    async with client() as c:
        turn1 = await c.generate(first)
        [call] = turn1.tool_calls
        assert (call.name, call.input, turn1.finish_reason) == (
            "get_weather",
            {"city": "Paris"},
            "tool-calls",
        )
        result = llmroute.ToolResultPart(call.id, call.name, {"temperature": 22, "condition": "sunny"})
        second = msgspec.structs.replace(
            first, messages=(*first.messages, *turn1.messages, llmroute.tool_message(result))
        )
        turn2 = await c.generate(second)
    assert turn2.text == "It’s sunny and 22°C in Paris."  # noqa: RUF001
    assert turn2.finish_reason == "stop" and turn2.usage is not None and turn2.usage.input_tokens == 106
    # Both turns on one connection: the HTTP body without the transport-only ``stream``, then
    # only the new item (the tool's output) with previous_response_id: the recorded turn 1's id.
    first_sent, second_sent = server.received
    want = [explicit_strict(i.request.json()) for i in TOOL_LOOP.interactions]
    for body in want:
        del body["stream"]
    assert first_sent == {"type": "response.create", **want[0]}
    new_items = want[1]["input"][len(want[0]["input"]) :]
    assert [i["type"] for i in new_items] == ["function_call", "function_call_output"]
    turn1_id = json.loads(messages_of(TOOL_LOOP.interactions[0].response.body)[-1])["response"]["id"]
    assert second_sent == {
        "type": "response.create",
        **want[1],
        "input": new_items[1:],
        "previous_response_id": turn1_id,
    }
    assert all(h["authorization"] == "Bearer sk-test" for h in server.headers)
    assert server.opened == 1
    assert server.wait_idle() == 0
    assert server.close_codes == [1000]  # closed cleanly by the client (Client.aclose)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_breaking_out_early_closes_the_socket() -> None:
    with Server([messages_of(TOOL_LOOP.interactions[1].response.body)], delay=0.02) as server:
        request = llmroute.request(model=server.model(), prompt="x")
        async with client() as c, c.stream(request) as stream:
            async for event in stream:
                if isinstance(event, llmroute.TextDelta):
                    break
        assert server.wait_idle() == 0
        assert server.close_codes == [1000]


async def _cancel_once_received(server: Server, scope: anyio.CancelScope) -> None:
    for _ in range(1000):
        if server.received:
            break
        await anyio.sleep(0.01)
    scope.deadline = anyio.current_time() + 0.3


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_cancellation_closes_the_socket() -> None:
    stalled = messages_of(TOOL_LOOP.interactions[1].response.body)[:3]  # never reaches a terminal event
    with Server([stalled]) as server:
        seen: list[llmroute.LLMEvent] = []
        async with client() as c:
            # cancelled 0.3 s after the request reached the server (not at a fixed time from the
            # start, which a loaded machine could spend before the socket was even open)
            with anyio.move_on_after(10) as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_cancel_once_received, server, scope)
                    async for event in c.stream(llmroute.request(model=server.model(), prompt="x")):
                        seen.append(event)
        assert scope.cancelled_caught
        assert len(server.received) == 1 and not any(isinstance(e, llmroute.Finish) for e in seen)
        assert server.wait_idle() == 0


@pytest.mark.anyio
async def test_error_event_is_typed_and_closes() -> None:
    created = messages_of(TOOL_LOOP.interactions[1].response.body)[0]
    error = json.dumps(
        {"type": "error", "code": "rate_limit_exceeded", "message": "Rate limit reached", "param": None}
    )
    with Server([[created, error]]) as server:
        async with client() as c:
            with pytest.raises(llmroute.RateLimitError, match="Rate limit reached"):
                await c.generate(llmroute.request(model=server.model(), prompt="x"))
        assert server.wait_idle() == 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("previous_response_not_found", llmroute.InvalidRequestError),
        ("websocket_connection_limit_reached", llmroute.TransportError),
        ("server_error", llmroute.ProviderInternalError),
    ],
)
async def test_error_frame_without_status_is_classified_by_its_code(code: str, kind: type[Exception]) -> None:
    created = messages_of(TOOL_LOOP.interactions[1].response.body)[0]
    error = json.dumps({"type": "error", "error": {"code": code, "message": "it failed"}})
    with Server([[created, error]]) as server:
        async with client() as c:
            with pytest.raises(kind) as info:
                await c.generate(llmroute.request(model=server.model(), prompt="x"))
    assert type(info.value) is kind and getattr(info.value, "code", None) == code
    text = str(info.value)
    assert "(WEBSOCKET ws://127.0.0.1:" in text and "status" not in text and "POST" not in text


@pytest.mark.anyio
async def test_server_closing_before_the_terminal_event_is_an_error() -> None:
    partial = messages_of(TOOL_LOOP.interactions[1].response.body)[:5]

    class Closing(Server):
        def _handle(self, ws: Any) -> None:
            ws.recv(timeout=5)
            for message in partial:
                ws.send(message)
            ws.close()

    with Closing([]) as server:
        async with client() as c:
            with pytest.raises(llmroute.InvalidProviderOutputError, match=r"response\.completed"):
                await c.generate(llmroute.request(model=server.model(), prompt="x"))


@pytest.mark.anyio
async def test_rejected_handshake_is_an_authentication_error_without_the_key() -> None:
    with Server([]) as server:
        async with client() as c:
            with pytest.raises(llmroute.AuthenticationError) as info:
                await c.generate(llmroute.request(model=server.model("sk-wrong-secret"), prompt="x"))
        assert "sk-wrong-secret" not in str(info.value) + repr(info.value)
        assert server.opened == 0


@pytest.mark.anyio
async def test_connection_refused_is_a_transport_error() -> None:
    with Server([]) as server:
        model = server.model()
    with pytest.raises(llmroute.TransportError):
        async with client() as c:
            await c.generate(llmroute.request(model=model, prompt="x"))


def test_response_create_message_drops_transport_fields() -> None:
    body = b'{"model":"m","input":[],"stream":true,"background":false,"store":false}'
    assert json.loads(openai_responses.websocket_message(body)) == {
        "type": "response.create",
        "model": "m",
        "input": [],
        "store": False,
    }


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "websockets", None)
    with pytest.raises(llmroute.NoRouteError, match=r"pip install 'llmroute\[websocket\]'"):
        openai.configure(api_key="sk-test").responses("gpt-5.5", transport="websocket")


def test_import_llmroute_does_not_import_websockets() -> None:
    code = (
        "import sys, llmroute; from llmroute.providers import openai; "
        "openai.configure(api_key='k').responses('m'); "
        "assert 'websockets' not in sys.modules, 'imported'; "
        "openai.configure(api_key='k').responses('m', transport='websocket'); "
        "assert 'websockets' not in sys.modules, 'imported on configure'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
