"""Leaving a stream early closes its whole generator chain (issue #21): ``async with client.stream()``
+ ``break``, ``batches()`` + ``break``, and random cancellations leave no async generator to the
garbage collector, on trio (which warns about each one it finalises) and on asyncio. Before the fix
trio warned about ``EventStream._events`` and httpx's three nested body generators."""

from __future__ import annotations

import gc
import random
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio
import anyio.lowlevel
import pytest

import llmroute
from llmroute.providers import compatible

from .server import FaultServer, Reply, Sleep, chat_stream

pytestmark = pytest.mark.anyio


@contextmanager
def no_collected_generators() -> Iterator[None]:
    """Fails when an async generator is finalised by the GC instead of being closed (trio's
    ``ResourceWarning``: "... was garbage collected before it had been exhausted")."""
    gc.collect()  # earlier tests' garbage is theirs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
        gc.collect()
    leaked = [
        str(w.message)
        for w in caught
        if issubclass(w.category, ResourceWarning) and "garbage collected" in str(w.message)
    ]
    assert leaked == []


def _request(server: FaultServer) -> llmroute.LLMRequest:
    return llmroute.request(model=compatible.configure(base_url=server.base_url).model("m"), prompt="hi")


def _long_reply() -> Reply:
    return Reply(parts=chat_stream(*[f"w{i} " for i in range(300)]))


async def _collected() -> None:
    gc.collect()  # finalisers of dropped generators run inside the event loop
    await anyio.lowlevel.checkpoint()


async def test_break_inside_async_with_closes_the_chain(server: FaultServer) -> None:
    server.add(_long_reply(), _long_reply())
    with no_collected_generators():
        async with llmroute.Client() as client:
            async with client.stream(_request(server)) as stream:
                async for event in stream:
                    if isinstance(event, llmroute.TextDelta):
                        break
            async with client.stream(_request(server)) as stream:
                async for batch in stream.batches():
                    if batch:
                        break
            await _collected()


async def test_two_loops_left_with_break_are_both_closed(server: FaultServer) -> None:
    server.add(_long_reply())
    with no_collected_generators():
        async with llmroute.Client() as client:
            async with client.stream(_request(server)) as stream:
                async for _ in stream:
                    break
                async for _ in stream:  # continues where the first stopped
                    break
            await _collected()


async def test_random_cancellations_leave_nothing_to_the_gc(server: FaultServer) -> None:
    rng = random.Random(21)
    runs = 25
    for _ in range(runs):
        server.add(Reply(parts=[*chat_stream("a", "b"), Sleep(0.002), *chat_stream("c")]))
    with no_collected_generators():
        async with llmroute.Client() as client:
            for _ in range(runs):
                with anyio.move_on_after(rng.uniform(0.0, 0.01)):
                    async with client.stream(_request(server)) as stream:
                        async for _ in stream:
                            await anyio.lowlevel.checkpoint()
            await _collected()


async def _drive(action: Callable[[llmroute.EventStream], Awaitable[None]], server: FaultServer) -> None:
    async with llmroute.Client() as client:
        stream = client.stream(_request(server))
        await action(stream)
        await _collected()


async def test_aclose_after_break_without_async_with(server: FaultServer) -> None:
    async def action(stream: llmroute.EventStream) -> None:
        async for _ in stream:
            break
        await stream.aclose()

    server.add(_long_reply())
    with no_collected_generators():
        await _drive(action, server)
