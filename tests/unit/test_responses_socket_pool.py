"""Pooled Responses WebSocket connections and incremental continuation, against a server on
127.0.0.1 that keeps per-connection state like OpenAI's (``tests/socket_server.py``)."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

import llmroute
from llmroute.providers import openai

pytest.importorskip("websockets.sync.server")
from tests.socket_server import PAD, HttpServer, SocketServer


@llmroute.tool
def lookup(n: int) -> str:
    """Look up item n."""
    return f"item {n}: {PAD[:40]}"


def model(url: str, transport: str = "websocket") -> llmroute.Model:
    facade = openai.configure(api_key="sk-test", base_url=url)
    return facade.responses("gpt-test", transport=transport)  # pyright: ignore[reportArgumentType]


def client() -> llmroute.Client:
    return llmroute.Client(retry=llmroute.RetryPolicy.none())


def ask(m: llmroute.Model, prompt: str = "Look up four things.") -> llmroute.LLMRequest:
    return llmroute.request(model=m, prompt=prompt, provider_options={"openai": {"store": False}})


async def tool_loop(
    c: llmroute.Client, m: llmroute.Model
) -> tuple[list[llmroute.LLMEvent], llmroute.LLMResponse]:
    events: list[llmroute.LLMEvent] = []
    async with c.stream(ask(m), tools=[lookup]) as stream:
        builder = stream.track()
        async for event in stream:
            events.append(event)
    return events, builder.build()


def inputs(server: SocketServer) -> list[tuple[int, list[str], str | None]]:
    """Per message: connection, the input item types, previous_response_id."""
    return [
        (conn, [i.get("type") or i.get("role") for i in m["input"]], m.get("previous_response_id"))
        for conn, m in server.received
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_tool_loop_stays_on_one_connection_and_sends_only_new_items() -> None:
    with SocketServer(steps=5) as ws, HttpServer(steps=5) as http:
        async with client() as c:
            ws_events, ws_response = await tool_loop(c, model(ws.url))
        async with client() as c:
            http_events, http_response = await tool_loop(c, model(http.url, "http"))
        assert ws.wait_idle() == 0  # closed by Client.aclose()
    sent = inputs(ws)
    assert [conn for conn, _, _ in sent] == [0] * 5 and len(ws.connections) == 1
    assert sent[0] == (0, ["user"], None)
    for step, (_, types, previous) in enumerate(sent[1:], start=1):
        assert types == ["function_call_output"]
        assert previous is not None and previous.startswith(f"resp_{step - 1}_")
    assert ws.errors_sent == []
    assert ws_response.text == "Done after 4 lookups." and ws_response.finish_reason == "stop"
    # Same scripted answers, same events and response as over HTTP (which sends the whole input).
    assert [len(b["input"]) for b in http.received] == [1, 3, 5, 7, 9]
    assert ws_events == http_events
    # two calls: the same response but for when each step's answer arrived (``StepResult.at``)
    untimed = [msgspec.structs.replace(s, at=None) for s in ws_response.steps]
    assert msgspec.structs.asdict(msgspec.structs.replace(ws_response, steps=tuple(untimed))) == (
        msgspec.structs.asdict(
            msgspec.structs.replace(
                http_response, steps=tuple(msgspec.structs.replace(s, at=None) for s in http_response.steps)
            )
        )
    )


@pytest.mark.anyio
async def test_second_generate_extending_the_history_is_incremental() -> None:
    with SocketServer(steps=1) as ws:
        m = model(ws.url)
        async with client() as c:
            first = await c.generate(ask(m, "Hi"))
            start = ask(m, "Hi")
            follow = llmroute.user("And again?")
            second = await c.generate(
                msgspec.structs.replace(start, messages=(*start.messages, *first.messages, follow))
            )
            unrelated = await c.generate(ask(m, "Something else"))  # not a continuation: whole input
    assert second.text == first.text == unrelated.text == "Done after 0 lookups."
    assert inputs(ws) == [
        (0, ["user"], None),
        (0, ["user"], "resp_0_1"),
        (1, ["user"], None),  # a new connection: connection 0 keeps the first conversation's state
    ]
    assert [m["input"][0]["content"][0]["text"] for _, m in ws.received] == [
        "Hi",
        "And again?",
        "Something else",
    ]


@pytest.mark.anyio
async def test_interleaved_conversations_each_continue_on_their_own_connection() -> None:
    with SocketServer(steps=1) as ws:
        m = model(ws.url)
        async with client() as c:
            histories = {name: ask(m, f"Hi from {name}") for name in ("a", "b")}
            for turn in range(3):
                for name, request in histories.items():
                    answer = await c.generate(request)
                    more = llmroute.user(f"{name} {turn}")
                    histories[name] = msgspec.structs.replace(
                        request, messages=(*request.messages, *answer.messages, more)
                    )
    sent = inputs(ws)
    assert [(conn, previous is not None) for conn, _, previous in sent] == [
        (0, False),
        (1, False),
        *[(0, True), (1, True)] * 2,
    ]
    assert all(types == ["user"] for _, types, _ in sent)


@pytest.mark.anyio
async def test_a_full_pool_reuses_the_least_recently_used_connection() -> None:
    with SocketServer(steps=1) as ws:
        m = model(ws.url)
        async with llmroute.Client(socket_pool=llmroute.SocketPool(max_idle=1)) as c:
            await c.generate(ask(m, "one"))
            await c.generate(ask(m, "two"))  # no room for a second connection: whole input on 0
        assert inputs(ws) == [(0, ["user"], None), (0, ["user"], None)]


@pytest.mark.anyio
async def test_evicted_state_falls_back_to_the_whole_input_on_a_new_connection() -> None:
    with SocketServer(steps=3) as ws:
        m = model(ws.url)
        async with client() as c:
            stream = c.stream(ask(m), tools=[lookup])
            events: list[llmroute.LLMEvent] = []
            async for event in stream:
                events.append(event)
                if isinstance(event, llmroute.ToolResult):
                    ws.forget()  # the server loses the connection's state between two turns
        finished = [e for e in events if isinstance(e, llmroute.Finish)]
        assert len(finished) == 1 and ws.errors_sent == ["previous_response_not_found"] * 2
    sent = inputs(ws)
    # Each incremental try is refused, then the whole input goes on a fresh connection.
    assert [(conn, len(types), previous is not None) for conn, types, previous in sent] == [
        (0, 1, False),
        (0, 1, True),
        (1, 3, False),
        (1, 1, True),
        (2, 5, False),
    ]
    texts = [e.text for e in events if isinstance(e, llmroute.TextDelta)]
    assert "".join(texts) == "Done after 2 lookups."  # answered once: nothing duplicated


@pytest.mark.anyio
async def test_connection_limit_moves_the_conversation_to_a_new_connection() -> None:
    with SocketServer(steps=4, turns_per_connection=2) as ws:
        async with client() as c:
            response = await c.generate(ask(model(ws.url)), tools=[lookup])
    assert response.text == "Done after 3 lookups." and ws.errors_sent == [
        "websocket_connection_limit_reached"
    ]
    sent = [(conn, len(types), previous is not None) for conn, types, previous in inputs(ws)]
    # The third turn is refused on connection 0; it goes whole on connection 1, which continues.
    assert sent == [(0, 1, False), (0, 1, True), (0, 1, True), (1, 5, False), (1, 1, True)]


@pytest.mark.anyio
async def test_connection_closed_by_the_server_while_idle_is_replaced() -> None:
    with SocketServer(steps=1) as ws:
        m = model(ws.url)
        async with client() as c:
            await c.generate(ask(m))
            ws.drop_idle()
            await anyio.sleep(0.05)
            again = await c.generate(ask(m, "Again"))
    assert again.text == "Done after 0 lookups."
    assert [conn for conn, _, _ in inputs(ws)] == [0, 1]


@pytest.mark.anyio
async def test_parallel_calls_use_separate_connections_and_aclose_closes_all() -> None:
    with SocketServer(steps=1, message_delay=0.01) as ws:
        m = model(ws.url)
        c = client()
        results: list[str] = []

        async def one(n: int) -> None:
            results.append((await c.generate(ask(m, f"q{n}"))).text)

        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(one, n)
        assert results == ["Done after 0 lookups."] * 3
        assert len(ws.connections) == 3 and sorted(conn for conn, _ in ws.received) == [0, 1, 2]
        assert c.sockets.idle_count() == 3 and ws.active == 3  # kept for the next calls
        await c.aclose()
        assert c.sockets.idle_count() == 0
        assert ws.wait_idle() == 0


@pytest.mark.anyio
async def test_max_idle_bounds_the_kept_connections() -> None:
    with SocketServer(steps=1, message_delay=0.01) as ws:
        m = model(ws.url)
        async with llmroute.Client(socket_pool=llmroute.SocketPool(max_idle=1)) as c:
            async with anyio.create_task_group() as tg:
                for n in range(3):
                    tg.start_soon(c.generate, ask(m, f"q{n}"))
            assert c.sockets.idle_count() == 1
            assert ws.wait_idle(0.5) == 1  # the two others were closed when their response ended
        assert ws.wait_idle() == 0


@pytest.mark.anyio
async def test_idle_timeout_closes_instead_of_reusing() -> None:
    with SocketServer(steps=1) as ws:
        m = model(ws.url)
        async with llmroute.Client(socket_pool=llmroute.SocketPool(idle_timeout=0.05)) as c:
            await c.generate(ask(m))
            await anyio.sleep(0.1)
            await c.generate(ask(m))
        assert [conn for conn, _, _ in inputs(ws)] == [0, 1]
        assert ws.wait_idle() == 0


@pytest.mark.anyio
async def test_max_age_stops_reuse() -> None:
    with SocketServer(steps=1) as ws:
        m = model(ws.url)
        async with llmroute.Client(socket_pool=llmroute.SocketPool(max_age=0.05)) as c:
            await c.generate(ask(m))
            await anyio.sleep(0.1)
            await c.generate(ask(m))
        assert [conn for conn, _, _ in inputs(ws)] == [0, 1]
        assert ws.wait_idle() == 0


@pytest.mark.parametrize(
    ("options", "param"),
    [({"max_idle": -1}, "max_idle"), ({"idle_timeout": 0}, "idle_timeout"), ({"max_age": "1"}, "max_age")],
)
def test_pool_options_are_checked(options: dict[str, Any], param: str) -> None:
    with pytest.raises(llmroute.InvalidRequestError) as info:
        llmroute.SocketPool(**options)
    assert info.value.param == param
    with pytest.raises(llmroute.InvalidRequestError, match="socket_pool"):
        llmroute.Client(socket_pool=object())  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_dropped_mid_response_is_typed_with_the_partial_and_the_socket_is_not_reused() -> None:
    with SocketServer(steps=1, drop_after=4) as ws:
        m = model(ws.url)
        async with client() as c:
            with pytest.raises(llmroute.InvalidProviderOutputError) as info:
                await c.generate(ask(m))
            assert info.value.partial is not None and info.value.partial.text == "Done "
            assert c.sockets.idle_count() == 0
            ws.drop_after = None
            assert (await c.generate(ask(m))).text == "Done after 0 lookups."
        assert [conn for conn, _, _ in inputs(ws)] == [0, 1]


@pytest.mark.anyio
async def test_a_1011_close_before_the_first_event_is_retried_on_a_new_connection() -> None:
    # issue #42: the close became a non-retryable "stream ended", its code and reason lost
    with SocketServer(steps=1, drop_after=0, close_code=1011, close_reason="internal error", drops=1) as ws:
        m = model(ws.url)
        slept: list[float] = []

        async def sleep(seconds: float) -> None:
            slept.append(seconds)

        async with llmroute.Client(retry=llmroute.RetryPolicy(jitter=0.0), sleep=sleep) as c:
            response = await c.generate(ask(m))
        assert response.text == "Done after 0 lookups." and len(slept) == 1
        assert [conn for conn, _, _ in inputs(ws)] == [0, 1]  # the retry went out on a fresh socket


@pytest.mark.anyio
async def test_a_1011_close_mid_response_is_a_typed_server_fault_naming_code_and_reason() -> None:
    with SocketServer(steps=1, drop_after=4, close_code=1011, close_reason="internal error") as ws:
        async with client() as c:
            with pytest.raises(llmroute.ProviderInternalError) as info:
                await c.generate(ask(model(ws.url)))
    error = info.value
    assert error.code == "websocket_close_1011" and error.retryable
    assert "code 1011: internal error" in str(error)
    assert error.partial is not None and error.partial.text == "Done "  # what came before the close
    assert len(ws.received) == 1  # events had reached the caller: not retried


@pytest.mark.anyio
async def test_cancelled_mid_response_closes_the_connection() -> None:
    with SocketServer(steps=1, message_delay=0.05) as ws:
        m = model(ws.url)
        async with client() as c:
            async with c.stream(ask(m)) as stream:
                async for event in stream:
                    if isinstance(event, llmroute.TextDelta):
                        break
            assert c.sockets.idle_count() == 0
            assert ws.wait_idle() == 0  # the server saw it closed, in a known state
            assert (await c.generate(ask(m))).text == "Done after 0 lookups."
        assert [conn for conn, _, _ in inputs(ws)] == [0, 1]


@pytest.mark.anyio
async def test_callers_own_previous_response_id_is_not_replaced() -> None:
    with SocketServer(steps=1) as ws:
        m = model(ws.url)
        async with client() as c:
            with pytest.raises(llmroute.InvalidRequestError) as info:
                options = {"openai": {"previous_response_id": "resp_gone"}}
                await c.generate(llmroute.request(model=m, prompt="x", provider_options=options))
    assert info.value.code == "previous_response_not_found" and not info.value.retryable
    assert "WEBSOCKET ws://127.0.0.1" in str(info.value) and "status 200" not in str(info.value)
    assert "POST" not in str(info.value)
