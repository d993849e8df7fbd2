"""One deadline timer per stream for its reads (first byte, then idle gaps, capped by the total).

The deadline moves after every chunk, but only as a float store: on asyncio one ``loop.call_at``
timer is armed when a read starts with none pending, and when it fires early (chunks came in
meanwhile) it re-arms itself for the current deadline; when the deadline has passed during a read
it cancels that read. So a stream of 20,000 reads arms a handful of timers, not 20,000 (each with a
context copy and a heap entry left behind when cancelled), and no cancel scope is entered per read.
Trio has no timer callbacks; there each read runs in a cancel scope whose deadline is an entry in
trio's own deadline heap. Nothing here is held across a ``yield`` of the executor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

__all__ = ["DeadlineExceeded", "Watchdog"]


class DeadlineExceeded(Exception):
    """The read was stopped by the deadline; ``Watchdog.which`` names it."""


def _exceeded(which: str) -> Exception:
    return DeadlineExceeded()


class Watchdog:
    """``read(next_chunk)`` awaits one chunk under the deadline ``at`` (``which`` names it);
    ``stop()`` drops the pending timer (call it when the stream ends, however it ends).
    ``expired(which)`` makes the error a read stopped by the deadline raises (``DeadlineExceeded``
    unless given: the executor raises its typed ``TimeoutError`` straight from the read)."""

    __slots__ = ("_armed", "_expired", "_handle", "_loop", "_reading", "_task", "at", "which")

    def __init__(self, at: float, which: str, expired: Callable[[str], Exception] = _exceeded) -> None:
        self.at = at
        self.which = which
        self._expired = expired
        self._armed = 0.0  # when the pending timer fires
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[Any] | None = None
        self._reading = False
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # trio
            self._loop = None

    def set(self, at: float, which: str) -> None:
        """Move the deadline. Later (the usual idle step): a float store, the timer catches up
        when it fires. Earlier (first_byte -> idle, or the total): the timer is dropped and the
        next read arms it anew."""
        self.at = at
        self.which = which
        if at < self._armed and self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def extend(self, seconds: float, cap: float) -> None:
        """After a chunk: the next read's deadline is ``seconds`` from now (``idle``), or ``cap``
        (``total``) when that comes first. ``set`` with the clock read inside (one call per chunk)."""
        loop = self._loop
        at = (loop.time() if loop is not None else anyio.current_time()) + seconds
        which = "idle"
        if at >= cap:
            at, which = cap, "total"
        self.at = at
        self.which = which
        if at < self._armed and self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def now(self) -> float:
        loop = self._loop
        return loop.time() if loop is not None else anyio.current_time()

    async def read(self, next_chunk: Callable[[], Awaitable[bytes]]) -> bytes:
        """The next chunk; ``expired(which)`` when the deadline passes first. The iterator's
        ``StopAsyncIteration`` passes through."""
        loop = self._loop
        if loop is None:
            with anyio.CancelScope(deadline=self.at):
                return await next_chunk()
            raise self._expired(self.which)  # reached only when the scope cancelled the read
        task = self._task = asyncio.current_task(loop)
        if self._handle is None:
            self._armed = self.at
            self._handle = loop.call_at(self.at, self._fire)
        self._reading = True
        try:
            chunk = await next_chunk()
        except BaseException:
            if self._reading or task is None:
                self._reading = False
                raise  # not ours (_fire clears _reading when it cancels)
            task.uncancel()
            if task.cancelling():
                raise  # cancelled by someone else as well: theirs wins, as it would over a cancel scope
            raise self._expired(
                self.which
            ) from None  # also when the code below turned our cancel into an error
        if not self._reading and task is not None:
            task.uncancel()  # ours fired, but the code below swallowed the cancellation
            raise self._expired(self.which)
        self._reading = False
        return chunk

    def _fire(self) -> None:
        self._handle = None
        if not self._reading:
            return  # between reads: the next read re-arms
        loop = self._loop
        assert loop is not None and self._task is not None
        if loop.time() < self.at:
            self._armed = self.at
            self._handle = loop.call_at(self.at, self._fire)  # chunks arrived since: re-arm lazily
            return
        self._reading = False  # marks the CancelledError as ours
        self._task.cancel()

    def stop(self) -> None:
        self._task = None  # not kept alive by a watchdog something still holds
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()
