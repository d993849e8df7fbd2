"""``SocketPool``: the client's open WebSocket connections, kept across calls.

Keyed by URL and credential (``websocket.socket_key``). A connection is either idle in the pool or
carries exactly one response (the Responses WebSocket mode runs one response at a time per
connection). Bounded: at most ``max_idle`` idle connections per key (more are closed when their
response ends); idle ones older than ``idle_timeout`` since their last use, or ``max_age`` since
they opened, are closed on the next use of their key and never reused. ``aclose()`` (called by
``Client.aclose()``) closes every idle connection, and any connection still carrying a response is
closed when that response ends. No background task: nothing runs between calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import anyio

from ..schema.errors import InvalidRequestError, LLMError

__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_MAX_AGE", "DEFAULT_MAX_IDLE", "PooledSocket", "SocketPool"]

DEFAULT_MAX_IDLE = 8
DEFAULT_IDLE_TIMEOUT = 60.0
# OpenAI closes a Responses WebSocket after 60 minutes (``websocket_connection_limit_reached``):
# stop reusing one a little before.
DEFAULT_MAX_AGE = 55 * 60.0


class PooledSocket(Protocol):
    """A connection the pool keeps (``websocket.WebSocketWire``): what the pool and the pooled
    transport read and send through it."""

    chain: Any
    """What the server holds for this connection (the ``SocketDialect``'s, opaque here)."""
    opened_at: float
    last_used: float
    headers: Mapping[str, str]
    """The upgrade response's headers."""
    socket_url: str

    @property
    def usable(self) -> bool: ...

    async def send_text(self, message: bytes) -> None: ...

    async def next_message(self) -> bytes | None: ...

    def closed_error(self) -> LLMError | None:
        """The server's close frame as a failure, when it was not a normal end."""
        ...

    async def aclose(self) -> None: ...

    async def abort(self) -> None: ...


class SocketPool:
    """Idle WebSocket connections per key (see the module doc). ``opened`` and ``reused`` count
    connections made and idle ones taken again, for tests and tuning."""

    def __init__(
        self,
        *,
        max_idle: int = DEFAULT_MAX_IDLE,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_age: float = DEFAULT_MAX_AGE,
    ) -> None:
        """``max_idle``: idle connections kept per endpoint and credential (0 turns reuse off);
        ``idle_timeout`` / ``max_age``: seconds after which an idle connection is closed instead
        of reused."""
        if isinstance(max_idle, bool) or not isinstance(max_idle, int) or max_idle < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"max_idle: must be an int, at least 0, got {max_idle!r}", param="max_idle"
            )
        for name, value in (("idle_timeout", idle_timeout), ("max_age", max_age)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise InvalidRequestError(f"{name}: must be a positive number, got {value!r}", param=name)
        self.max_idle = max_idle
        self.idle_timeout = float(idle_timeout)
        self.max_age = float(max_age)
        self._idle: dict[str, list[PooledSocket]] = {}
        self._closed = False
        self.reused = 0

    @property
    def closed(self) -> bool:
        return self._closed

    def idle(self, key: str) -> list[PooledSocket]:
        """The idle connections for ``key``, least recently used first (a copy)."""
        return list(self._idle.get(key, ()))

    def idle_count(self) -> int:
        return sum(len(v) for v in self._idle.values())

    def claim(self, key: str, socket: PooledSocket) -> None:
        """Take ``socket`` (from ``idle(key)``) out of the pool for one response."""
        self._idle[key].remove(socket)
        self.reused += 1

    async def reap(self, key: str) -> None:
        """Close ``key``'s idle connections that expired or broke while idle."""
        sockets = self._idle.get(key)
        if not sockets:
            return
        now = anyio.current_time()
        expired = [s for s in sockets if not self._fresh(s, now)]
        for socket in expired:
            sockets.remove(socket)
        for socket in expired:
            await socket.abort()

    def _fresh(self, socket: PooledSocket, now: float) -> bool:
        return (
            socket.usable
            and now - socket.last_used < self.idle_timeout
            and now - socket.opened_at < self.max_age
        )

    async def give(self, key: str, socket: PooledSocket) -> None:
        """Take back a connection whose response ended; closed instead when the pool is closed,
        full for ``key``, or the connection is no longer fit."""
        sockets = self._idle.setdefault(key, [])
        now = anyio.current_time()
        if (
            self._closed
            or len(sockets) >= self.max_idle
            or now - socket.opened_at >= self.max_age
            or not socket.usable
        ):
            await socket.abort()  # a close frame, without waiting on the caller's time for the reply
            return
        socket.last_used = now
        sockets.append(socket)

    async def aclose(self) -> None:
        """Close every idle connection; later ``give`` calls close theirs. Idempotent."""
        self._closed = True
        sockets = [s for group in self._idle.values() for s in group]
        self._idle.clear()
        async with anyio.create_task_group() as tg:  # each waits up to its close timeout: at once
            for socket in sockets:
                tg.start_soon(socket.aclose)

    def __repr__(self) -> str:
        return (
            f"SocketPool(max_idle={self.max_idle}, idle_timeout={self.idle_timeout:g}, "
            f"max_age={self.max_age:g}, idle={self.idle_count()})"
        )
