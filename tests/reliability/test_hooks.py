"""``Client(hooks=...)`` against a real HTTP server on 127.0.0.1, on asyncio and trio: which callbacks
run, in what order, with what, on every way an attempt can end."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import llmroute
from llmroute import CallInfo, CallResult, Hook, LoopInfo, ResponseHead, RetryPolicy, Timeouts, ToolInfo
from llmroute.route.hooks import HookRunner
from llmroute.route.prepared import PreparedRequest

from .server import FaultServer, Reply, Sleep, Stall, chat_chunk
from .test_faults import BOUND, JSON, chat_request, client_for, ok

pytestmark = pytest.mark.anyio


class Recorder(Hook):
    """Every callback, in order, as (name, detail)."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []
        self.calls: list[CallInfo] = []
        self.results: list[CallResult] = []

    def before_send(self, call: CallInfo, request: PreparedRequest) -> None:
        request.headers["x-hooked"] = f"attempt-{call.attempt}"
        self.calls.append(call)
        self.log.append(("before_send", call.attempt))

    def on_response(self, call: CallInfo, head: ResponseHead) -> None:
        assert head.elapsed >= 0
        self.log.append(("on_response", head.status))

    def on_event(self, call: CallInfo, event: llmroute.LLMEvent) -> None:
        self.log.append(("on_event", event.type))

    def on_finish(self, call: CallInfo, result: CallResult) -> None:
        self.results.append(result)
        self.log.append(("on_finish", result.reason))

    def on_error(self, call: CallInfo, error: BaseException) -> None:
        self.log.append(("on_error", type(error).__name__))

    def on_abort(self, call: CallInfo, reason: BaseException) -> None:
        self.log.append(("on_abort", type(reason).__name__))


class AsyncRecorder(Hook):
    def __init__(self) -> None:
        self.log: list[str] = []

    async def before_send(self, call: CallInfo, request: PreparedRequest) -> None:
        await anyio.lowlevel.checkpoint()
        self.log.append("before_send")

    async def on_finish(self, call: CallInfo, result: CallResult) -> None:
        await anyio.lowlevel.checkpoint()
        self.log.append(f"on_finish {result.usage.output_tokens if result.usage else None}")


def names(log: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in log if name != "on_event"]


async def test_callbacks_around_a_streamed_call(server: FaultServer) -> None:
    server.add(ok("Hello", " world"))
    hook = Recorder()
    with anyio.fail_after(BOUND):
        async with client_for(server, hooks=[hook]) as (client, _):
            events = [e async for e in client.stream(chat_request(server))]
    assert names(hook.log) == ["before_send", "on_response", "on_finish"]
    assert hook.log[1] == ("on_response", 200)
    # every event the caller saw, in order, before on_finish
    assert [d for n, d in hook.log if n == "on_event"] == [e.type for e in events]
    assert hook.log[-1] == ("on_finish", "stop")
    result = hook.results[0]
    assert result.usage is not None and result.usage.output_tokens == 2
    assert result.response_id == "chatcmpl-1" and result.response_model == "test-model"
    assert result.response.text == "Hello world"
    call = hook.calls[0]
    assert (call.attempt, call.step, call.streaming, call.loop) == (1, 0, True, None)
    assert call.model.id == "test-model" and call.first_chunk is not None
    assert server.received[0].headers["x-hooked"] == "attempt-1"  # before_send may add headers


async def test_async_callbacks_are_awaited(server: FaultServer) -> None:
    server.add(ok("a", "b", "c"))
    hook = AsyncRecorder()
    async with client_for(server, hooks=[hook]) as (client, _):
        assert (await client.generate(chat_request(server))).text == "abc"
    assert hook.log == ["before_send", "on_finish 3"]


async def test_retry_is_a_second_attempt(server: FaultServer) -> None:
    rate = json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}}).encode()
    server.add(Reply(429, {**JSON, "retry-after": "1"}, [rate], chunked=False), ok("ok"))
    hook = Recorder()
    async with client_for(server, hooks=[hook]) as (client, sleeps):
        assert (await client.generate(chat_request(server))).text == "ok"
    assert sleeps == [1.0]
    assert names(hook.log) == [
        "before_send",
        "on_response",
        "on_error",
        "before_send",
        "on_response",
        "on_finish",
    ]
    assert hook.log[1] == ("on_response", 429) and hook.log[2] == ("on_error", "RateLimitError")
    assert [c.attempt for c in hook.calls] == [1, 2]
    assert [r.headers["x-hooked"] for r in server.received] == ["attempt-1", "attempt-2"]


async def test_break_ends_the_attempt_once_with_on_abort(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("first"), Stall()]))
    hook = Recorder()
    with anyio.fail_after(BOUND):
        async with (
            client_for(server, hooks=[hook]) as (client, _),
            client.stream(chat_request(server)) as stream,
        ):
            async for event in stream:
                if event.type == "text-delta":
                    break
    assert names(hook.log) == ["before_send", "on_response", "on_abort"]
    assert hook.log[-1] == ("on_abort", "GeneratorExit")


async def test_cancellation_ends_the_attempt_with_on_abort(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("first"), Stall()]))
    hook = Recorder()
    with anyio.fail_after(BOUND):
        async with client_for(server, hooks=[hook]) as (client, _):
            with anyio.move_on_after(0.3):
                await client.generate(chat_request(server))
    assert names(hook.log) == ["before_send", "on_response", "on_abort"]
    assert hook.log[-1][1] in {"CancelledError", "Cancelled"}


async def test_a_failure_ends_the_attempt_with_on_error(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("part"), Sleep(5)]))
    hook = Recorder()
    async with client_for(server, hooks=[hook], timeouts=Timeouts(idle=0.2)) as (client, _):
        with pytest.raises(llmroute.TimeoutError):
            await client.generate(chat_request(server))
    assert names(hook.log) == ["before_send", "on_response", "on_error"]
    assert hook.log[-1] == ("on_error", "TimeoutError")


class Broken(Hook):
    def __init__(self) -> None:
        self.finished = 0

    def before_send(self, call: CallInfo, request: PreparedRequest) -> None:
        raise RuntimeError("boom sk-abcdefghijklmnopqrstuvwxyz012345")

    def on_event(self, call: CallInfo, event: llmroute.LLMEvent) -> None:
        raise ValueError("bad event hook")

    async def on_finish(self, call: CallInfo, result: CallResult) -> None:
        self.finished += 1
        raise KeyError("finish")


async def test_a_failing_hook_is_logged_once_and_never_breaks_the_call(
    server: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(ok("one"), ok("two"))
    hook, after = Broken(), Recorder()
    caplog.set_level(logging.DEBUG, logger="llmroute")
    async with client_for(server, hooks=[hook, after]) as (client, _):
        assert (await client.generate(chat_request(server))).text == "one"
        assert (await client.generate(chat_request(server))).text == "two"
    assert hook.finished == 2
    assert names(after.log) == ["before_send", "on_response", "on_finish"] * 2  # later hooks still run
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3  # one per failing callback, not one per call or event
    assert any("Broken.before_send raised RuntimeError" in w for w in warnings)
    assert all("sk-abcdef" not in r.getMessage() for r in caplog.records)


async def test_no_hook_means_no_runner_and_no_event_dispatch() -> None:
    assert llmroute.Client().context().hooks is None

    class FinishOnly(Hook):
        def on_finish(self, call: CallInfo, result: CallResult) -> None: ...

    runner = HookRunner([FinishOnly()])
    assert runner.events == () and runner.by_name["before_send"] == ()


class ToolRecorder(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.loops: list[LoopInfo] = []

    def on_loop_start(self, loop: LoopInfo) -> None:
        self.loops.append(loop)
        self.log.append(("on_loop_start", None))

    def on_loop_end(self, loop: LoopInfo, error: BaseException | None) -> None:
        self.log.append(("on_loop_end", type(error).__name__ if error else None))

    def on_tool_start(self, tool: ToolInfo) -> None:
        self.log.append(("on_tool_start", (tool.call.name, tool.description)))

    def on_tool_end(
        self, tool: ToolInfo, events: Sequence[llmroute.LLMEvent], error: BaseException | None
    ) -> None:
        self.log.append(("on_tool_end", [e.type for e in events]))


@llmroute.tool(description="Add two numbers.")
def add(a: int, b: int) -> int:
    return a + b


def tool_call_stream() -> list[bytes]:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
    }
    return [
        chat_chunk(tool=call),
        chat_chunk(finish="tool_calls"),
        chat_chunk(usage={"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11}),
        b"data: [DONE]\n\n",
    ]


async def test_tool_loop_callbacks(server: FaultServer) -> None:
    server.add(Reply(parts=tool_call_stream()), ok("5"))
    hook = ToolRecorder()
    async with client_for(server, hooks=[hook]) as (client, _):
        response = await client.generate(chat_request(server), tools=[add])
    assert response.text == "5"
    assert names(hook.log) == [
        "on_loop_start",
        "before_send",
        "on_response",
        "on_finish",
        "on_tool_start",
        "on_tool_end",
        "before_send",
        "on_response",
        "on_finish",
        "on_loop_end",
    ]
    assert ("on_tool_start", ("add", "Add two numbers.")) in hook.log
    assert ("on_tool_end", ["tool-result"]) in hook.log
    assert hook.log[-1] == ("on_loop_end", None)
    assert [(c.step, c.loop) for c in hook.calls] == [(0, hook.loops[0]), (1, hook.loops[0])]


async def test_tool_loop_break_ends_call_then_loop(server: FaultServer) -> None:
    server.add(Reply(parts=tool_call_stream()), Reply(parts=[chat_chunk("fi"), Stall()]))
    hook = ToolRecorder()
    with anyio.fail_after(BOUND):
        async with (
            client_for(server, hooks=[hook]) as (client, _),
            client.stream(chat_request(server), tools=[add]) as stream,
        ):
            async for event in stream:
                if event.type == "text-delta":
                    break
    assert names(hook.log)[-2:] == ["on_abort", "on_loop_end"]
    assert hook.log[-1] == ("on_loop_end", "GeneratorExit")


def test_sync_client_takes_hooks(server: FaultServer) -> None:
    server.add(ok("sync"))
    hook = Recorder()
    with llmroute.SyncClient(hooks=[hook], retry=RetryPolicy(max_retries=0)) as client:
        assert client.generate(chat_request(server)).text == "sync"
    assert names(hook.log) == ["before_send", "on_response", "on_finish"]


@pytest.mark.parametrize("bad", [5, "hook", [object()], [Hook]])
def test_bad_hooks_are_typed_errors(bad: Any) -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="hooks"):
        llmroute.Client(hooks=bad)


class SlowAbort(Hook):
    def __init__(self) -> None:
        self.done: list[str] = []

    async def on_abort(self, call: CallInfo, reason: BaseException) -> None:
        await anyio.sleep(0.01)  # would raise at once if the end callback were not shielded
        self.done.append(type(reason).__name__)


async def test_an_async_end_callback_completes_during_cancellation(server: FaultServer) -> None:
    server.add(Reply(parts=[chat_chunk("first"), Stall()]))
    hook = SlowAbort()
    with anyio.fail_after(BOUND):
        async with client_for(server, hooks=[hook]) as (client, _):
            with anyio.move_on_after(0.3):
                await client.generate(chat_request(server))
    assert len(hook.done) == 1 and hook.done[0] in {"CancelledError", "Cancelled"}
