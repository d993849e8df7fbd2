"""The read deadline of a stream: one watchdog, not a timer per read, with the same semantics."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

import llmroute
from llmroute.providers import openai
from llmroute.route.watchdog import DeadlineExceeded, Watchdog
from llmroute.testing import Chunking, ReplayTransport

from ..helpers import load

pytestmark = pytest.mark.anyio

BOTH = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])


async def stall() -> bytes:
    await anyio.sleep(3600)
    return b""


def after(seconds: float, data: bytes = b"x") -> Any:
    async def read() -> bytes:
        await anyio.sleep(seconds)
        return data

    return read


class CountingTimers:
    """Counts ``loop.call_at`` on the running asyncio loop (every timer goes through it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.calls = 0
        self._call_at = loop.call_at

    def __enter__(self) -> CountingTimers:
        def call_at(when: float, callback: Any, *args: Any, context: Any = None) -> asyncio.TimerHandle:
            self.calls += 1
            return self._call_at(when, callback, *args, context=context)

        self.loop.call_at = call_at  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        del self.loop.call_at


@pytest.fixture
def chat() -> Iterator[tuple[llmroute.LLMRequest, Any]]:
    cassette = load("opencode/openai-chat/streams-text.yaml")
    model = openai.configure(api_key="sk-test").chat("gpt-4o-mini")
    yield llmroute.request(model=model, prompt="hi"), cassette


async def test_a_stream_of_many_reads_arms_a_handful_of_timers(chat: Any) -> None:
    request, cassette = chat
    body = cassette.interactions[0].response.body
    counts: list[int] = []
    for chunking in (Chunking.fixed(512), Chunking.bytewise()):  # 4 reads, then 1,851
        transport = ReplayTransport(cassette, chunking)
        async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
            with CountingTimers(asyncio.get_running_loop()) as timers:
                response = await client.generate(request)
        assert response.text == "Hello!" and response.finish_reason == "stop"
        counts.append(timers.calls)
    assert len(body) > 1800
    # per call (send deadline, first read, first_byte -> idle), not per read
    assert counts[0] == counts[1] <= 5


async def test_a_finished_call_leaves_no_cycle_through_its_watchdog(chat: Any) -> None:
    """The watchdog holds its attempt's ``deadline_error`` and the task: once the call has ended
    they go with reference counting, not at the next garbage collection (a gateway's collections
    cost grows with what waits for them)."""
    request, cassette = chat
    async with llmroute.Client(http=httpx.AsyncClient(transport=ReplayTransport(cassette))) as client:
        await client.generate(request)  # imports, caches
    async with llmroute.Client(http=httpx.AsyncClient(transport=ReplayTransport(cassette))) as client:
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            response = await client.generate(request)
            gc.collect()
            left = {type(o).__name__ for o in gc.garbage}
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    assert response.text == "Hello!"
    assert not left & {"Watchdog", "_Attempt", "Task"}


@BOTH
async def test_fast_reads_pass_and_a_stalled_read_hits_the_deadline() -> None:
    now = anyio.current_time()
    watchdog = Watchdog(now + 0.3, "first_byte")
    assert await watchdog.read(after(0.01, b"a")) == b"a"
    watchdog.set(anyio.current_time() + 0.2, "idle")
    started = anyio.current_time()
    with pytest.raises(DeadlineExceeded):
        await watchdog.read(stall)
    assert 0.15 < anyio.current_time() - started < 2.0
    assert watchdog.which == "idle"
    watchdog.stop()
    await anyio.sleep(0.01)  # the task is usable afterwards: no cancellation left pending


async def test_a_deadline_leaves_no_cancellation_on_the_task() -> None:
    watchdog = Watchdog(anyio.current_time() + 0.05, "idle")
    with pytest.raises(DeadlineExceeded):
        await watchdog.read(stall)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    async with asyncio.timeout(0.05):  # asyncio's own timeouts still work in this task
        await asyncio.sleep(0)


@BOTH
async def test_the_deadline_moves_later_without_a_timer_per_read() -> None:
    idle = 0.15
    watchdog = Watchdog(anyio.current_time() + idle, "idle")
    for _ in range(8):  # 8 reads of 0.06 s: 0.48 s in all, far past the first deadline
        await watchdog.read(after(0.06))
        watchdog.set(anyio.current_time() + idle, "idle")
    watchdog.stop()


async def test_the_deadline_moves_later_lazily_on_asyncio() -> None:
    idle = 0.15
    with CountingTimers(asyncio.get_running_loop()) as timers:
        watchdog = Watchdog(anyio.current_time() + idle, "idle")
        for _ in range(8):
            await watchdog.read(after(0.03))
            watchdog.set(anyio.current_time() + idle, "idle")
        watchdog.stop()
    # the sleeps inside the reads arm 8 timers; the watchdog re-arms only when its timer fires
    assert timers.calls - 8 <= 3


@BOTH
async def test_an_earlier_deadline_takes_effect_at_once() -> None:
    watchdog = Watchdog(anyio.current_time() + 600, "first_byte")
    assert await watchdog.read(after(0.01)) == b"x"
    watchdog.set(anyio.current_time() + 0.1, "idle")
    with anyio.fail_after(3), pytest.raises(DeadlineExceeded):
        await watchdog.read(stall)


@BOTH
async def test_an_outer_cancellation_is_not_a_deadline() -> None:
    watchdog = Watchdog(anyio.current_time() + 600, "first_byte")
    with anyio.move_on_after(0.05) as outer:
        await watchdog.read(stall)
    assert outer.cancelled_caught
    watchdog.stop()


@BOTH
async def test_errors_and_end_of_stream_pass_through() -> None:
    watchdog = Watchdog(anyio.current_time() + 600, "first_byte")

    async def broken() -> bytes:
        raise httpx.ReadError("reset")

    async def done() -> bytes:
        raise StopAsyncIteration

    with pytest.raises(httpx.ReadError):
        await watchdog.read(broken)
    with pytest.raises(StopAsyncIteration):
        await watchdog.read(done)
    assert await watchdog.read(after(0)) == b"x"
    watchdog.stop()
