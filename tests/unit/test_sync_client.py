"""``SyncClient``: the async client's behaviour behind blocking calls, on a scripted model and on a
real local HTTP server."""

from __future__ import annotations

import inspect
import threading
import time

import httpx
import msgspec
import pytest

import llmroute
from llmroute.providers import compatible
from llmroute.schema.events import Finish, ToolCall
from llmroute.testing import ReplayTransport
from llmroute.tools import step_count_is
from tests.reliability.server import FaultServer, Reply, Stall, chat_chunk, chat_stream
from tests.unit.test_tools_runtime import (
    call,
    calls_turn,
    get_weather,
    new_request,
    scripted_model,
    sent,
    text_turn,
    turn,
)


def _sync(*interactions: object) -> tuple[llmroute.SyncClient, ReplayTransport]:
    transport = ReplayTransport(list(interactions))  # type: ignore[arg-type]
    return llmroute.SyncClient(http=httpx.AsyncClient(transport=transport)), transport


def test_generate_prepare_and_the_tool_loop() -> None:
    client, transport = _sync(calls_turn(call("c1")), text_turn("Sunny, 22C."))
    with client:
        prepared = client.prepare(new_request())
        assert prepared.url == "http://scripted.test/v1/turn"
        response = client.generate(new_request(), tools=[get_weather])
    assert response.text == "Sunny, 22C." and len(response.steps) == 2
    assert sent(transport, 1)["messages"][2]["content"][0]["result"] == {"city": "Paris", "temperature": 22}
    assert client.closed


def test_stream_is_an_iterator_and_response_folds_the_rest() -> None:
    client, _ = _sync(text_turn("hello"), text_turn("world"))
    with client:
        events = list(client.stream(new_request()))
        assert [e.type for e in events][-1] == "finish"
        assert "".join(e.text for e in events if e.type == "text-delta") == "hello"
        stream = client.stream(new_request())
        first = next(iter(stream))
        assert first.type == "step-start"
        response = stream.response()  # the events not yet iterated, folded
        assert response.text == "world" and response.finish_reason == "stop"
        with pytest.raises(llmroute.StreamConsumedError):
            list(stream)


def test_generate_object() -> None:
    class Weather(msgspec.Struct):
        city: str

    answer = turn(ToolCall("o1", "Weather", {"city": "Oslo"}), Finish("tool-calls"))
    client, _ = _sync(answer)
    with client:
        value, response = client.generate_object(
            llmroute.request(scripted_model(), prompt="Weather in Oslo?"), Weather
        )
    assert value == Weather("Oslo") and response.finish_reason == "tool-calls"


def test_errors_are_the_async_clients() -> None:
    client, _ = _sync(calls_turn(call("c1", "Crash")))
    with client, pytest.raises(llmroute.ToolExecutionError):
        client.generate(new_request(), tools=[get_weather], tool_errors="raise", stop_when=step_count_is(1))
    with pytest.raises(llmroute.ClientClosedError):
        client.generate(new_request())
    with pytest.raises(llmroute.ClientClosedError), client:
        pass
    client.close()  # idempotent


def test_on_a_real_server_break_closes_the_connection() -> None:
    server = FaultServer().start()
    try:
        server.add(
            Reply(parts=chat_stream("Hel", "lo")), Reply(parts=[chat_chunk("a"), chat_chunk("b"), Stall()])
        )
        model = compatible.configure(base_url=server.base_url).model("local")
        request = llmroute.request(model, prompt="hi")
        with llmroute.SyncClient() as client:
            assert client.generate(request).text == "Hello"
            with client.stream(request) as stream:
                for event in stream:
                    if event.type == "text-delta":
                        break
            deadline = time.monotonic() + 5
            while server.client_disconnects < 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert server.client_disconnects == 1  # closed at once, not when the body ended
    finally:
        server.stop()


def test_threads_end_on_close_and_unclosed_clients_do_not_block_exit() -> None:
    before = {t.name for t in threading.enumerate()}
    client = llmroute.SyncClient()
    assert any(t.name == "llmroute-sync" and t.daemon for t in threading.enumerate())
    client.close()
    time.sleep(0.05)
    assert [t.name for t in threading.enumerate() if t.name == "llmroute-sync"] == [
        n for n in before if n == "llmroute-sync"
    ]
    import subprocess
    import sys

    code = "import llmroute; c = llmroute.SyncClient(); print('done')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == "done"


def test_forwarded_options_are_the_signatures_they_forward_to() -> None:
    # Client.generate and the SyncClient's calls take **options typed by these TypedDicts and pass
    # them on; the explicit signatures (defaults, runtime check of unknown names) are the targets'.
    from llmroute.client import CallOptions
    from llmroute.tools.structured import ObjectOptions, generate_object

    def keywords(fn: object) -> list[str]:
        params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
        return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]

    assert list(CallOptions.__annotations__) == keywords(llmroute.Client.stream)
    assert list(ObjectOptions.__annotations__) == keywords(generate_object)
    with llmroute.SyncClient() as client, pytest.raises(TypeError, match="unexpected keyword"):
        client.generate(new_request(), tool=[])  # type: ignore[call-arg]
