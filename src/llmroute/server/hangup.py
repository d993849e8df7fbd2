"""A client that hangs up while the gateway waits for the upstream: ``unless_gone(request, work)``
runs ``work`` (the upstream call) and cancels it at once, upstream call and all, if the client's
connection closes first; the caller then gets ``Gone``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import anyio
from starlette.requests import Request

__all__ = ["Gone", "unless_gone"]

_T = TypeVar("_T")


class Gone(Exception):
    """The client hung up before the answer was ready."""


async def _disconnected(request: Request) -> None:
    """Returns when the client hangs up (call only once the body has been read)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def unless_gone(request: Request, work: Awaitable[_T]) -> _T:
    """``work``, cancelled at once (upstream call and all) if the client hangs up first."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # not asyncio (trio)
        task = None
    if task is None:
        return await _unless_gone_anyio(request, work)
    # asyncio: one watcher task that cancels this one, not a task group (whose cancel scope
    # costs more than the rest of the watch, formatting a task's repr on every cancel)
    hung_up = finished = False

    def gone(watcher: asyncio.Future[None]) -> None:
        nonlocal hung_up
        if not finished and not watcher.cancelled() and watcher.exception() is None:
            hung_up = True
            task.cancel()

    watcher = asyncio.ensure_future(_disconnected(request))
    watcher.add_done_callback(gone)
    try:
        result = await work
    except asyncio.CancelledError:
        if hung_up:
            task.uncancel()
            raise Gone from None
        raise
    finally:
        finished = True
        watcher.remove_done_callback(gone)
        watcher.cancel()
    if hung_up:  # the hang-up came as the work ended: the answer has nowhere to go
        task.uncancel()
        raise Gone
    return result


async def _unless_gone_anyio(request: Request, work: Awaitable[_T]) -> _T:
    gone = False
    result: list[_T] = []
    failed: list[Exception] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal gone
            await _disconnected(request)
            gone = True
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            result.append(await work)
        except Exception as exc:  # raised outside the group, not wrapped in an ExceptionGroup
            failed.append(exc)
        finally:
            group.cancel_scope.cancel()
    if failed:
        raise failed[0]
    if gone or not result:
        raise Gone
    return result[0]
