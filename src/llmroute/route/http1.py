"""The HTTP/1.1 transport for httpx that ``http_pool.http_transport`` picks on asyncio (every
``llmroute.Client``'s own pool and the gateway's upstream client): keep-alive connections as
asyncio protocols, responses parsed by ``httptools`` (``llmroute[speedups]``, also in ``[server]``;
the C parser uvicorn uses too).

httpcore's transport costs about 0.45 ms of CPU per request (anyio streams, a deadline scope per
read and write, h11's pure-Python parser, a pool scan per request start and end); this one about
0.03 ms: one write per request, the parser's callbacks fill the response as bytes arrive, and idle
connections wait in a LIFO deque per host, so taking or returning one costs the same whatever the
pool's size. It is asyncio only; ``http_transport`` uses the sharded httpcore pool
(``http_pool.py``) on other event loops, when httptools is missing, or behind a proxy.

What it does not do, as llmroute never needs it: HTTP/2, proxies, ``Expect: 100-continue``,
``HEAD`` (those go to the ``fallback`` transport), request bodies streamed while they are read.
Failures are httpx's exception types (``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``,
``PoolTimeout``, ``RemoteProtocolError``, ``WriteTimeout``), which llmroute classifies as it does
httpcore's. A connection whose response was not read to its end (a ``break``, a cancellation, a
deadline) is closed at once, never reused.
"""

from __future__ import annotations

import asyncio
import collections
import os
import ssl
from collections.abc import AsyncIterator
from typing import Any, cast

import httpcore
import httptools  # pyright: ignore[reportMissingTypeStubs]
import httpx

__all__ = ["Http1Transport"]

# unread response bytes past which the connection stops reading (a slow consumer of a big body)
_HIGH_WATER = 256 * 1024


class _Connection(asyncio.Protocol):
    """One keep-alive connection, carrying one exchange at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser: Any = httptools.HttpResponseParser(self)  # pyright: ignore[reportUnknownMemberType]
        self.lost = False
        self.idle_since = 0.0
        self.waiter: asyncio.Future[None] | None = None
        self.drained: asyncio.Future[None] | None = None
        self.write_paused = False
        self._begin()

    def _begin(self) -> None:
        """Fresh state for the next exchange."""
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: collections.deque[bytes] = collections.deque()
        self.buffered = 0
        self.read_paused = False
        self.head = False  # the status line and headers are in
        self.complete = False  # the whole response is in
        self.keep_alive = False
        self.error: Exception | None = None

    # -- asyncio.Protocol ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio.Transport subclass

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except Exception as exc:  # httptools.HttpParserError: not HTTP/1.1 we can read
            self._fail(httpx.RemoteProtocolError(f"invalid HTTP response from the upstream: {exc}"))
            if self.transport is not None:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if not self.complete:
            if self.head and not self._framed():  # a body delimited by the connection's end
                self.complete = True
                self._wake()
            else:
                where = "before the whole body" if self.head else "without sending a response"
                self._fail(httpx.RemoteProtocolError(f"the upstream closed the connection {where}"))
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    # -- httptools callbacks ------------------------------------------------------------------------

    def on_status(self, status: bytes) -> None:
        self.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.head = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > _HIGH_WATER and not self.read_paused and self.transport is not None:
            self.read_paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self.complete = True
        self.keep_alive = bool(self.parser.should_keep_alive())
        self._wake()

    # -- the exchange -------------------------------------------------------------------------------

    def _framed(self) -> bool:
        for name, value in self.headers:
            lower = name.lower()
            if lower == b"content-length" or (lower == b"transfer-encoding" and b"chunked" in value.lower()):
                return True
        return self.status in (204, 304) or 100 <= self.status < 200

    def _fail(self, exc: Exception) -> None:
        if self.error is None:
            self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, seconds: float | None) -> None:
        """Until the parser or the connection has news, or ``seconds`` (``ReadTimeout``)."""
        waiter = self.waiter = self.loop.create_future()
        timer = None if seconds is None else self.loop.call_later(seconds, _expire, waiter)
        try:
            await waiter
        finally:
            self.waiter = None
            if timer is not None:
                timer.cancel()

    async def drain(self, seconds: float | None) -> None:
        """Until the transport's write buffer is below its high-water mark (``WriteTimeout``)."""
        while self.write_paused and not self.lost:
            drained = self.drained = self.loop.create_future()
            timer = None if seconds is None else self.loop.call_later(seconds, _expire, drained)
            try:
                await drained
            except _Expired:
                raise httpx.WriteTimeout("the upstream did not take the request body in time") from None
            finally:
                if timer is not None:
                    timer.cancel()

    def take(self) -> bytes:
        """The oldest body piece received (reading resumes once the backlog is small again). Pieces
        are not joined: each is one parser callback (one chunk of a chunked body), as httpcore
        yields them, so what arrives in one read is still seen event by event."""
        data = self.chunks.popleft()
        self.buffered -= len(data)
        if self.read_paused and self.buffered <= _HIGH_WATER // 4 and self.transport is not None:
            self.read_paused = False
            self.transport.resume_reading()
        return data


_OWN_CODE: dict[str, Any] = {}


def _own(method: object, package: str) -> bool:
    code: Any = getattr(method, "__code__", None)
    if code is None:
        return False
    if code is _OWN_CODE.get(package):
        return True
    if f"{os.sep}{package}{os.sep}" in code.co_filename:
        _OWN_CODE[package] = code
        return True
    return False


def _patched() -> bool:
    """Whether a test double (vcrpy, pytest-recording, respx) replaced httpx's or httpcore's
    transport method (``functools.wraps`` keeps the name, not the code): the request then goes
    through the fallback pool, which calls them, so recording and mocking see it."""
    return not (
        _own(httpx.AsyncHTTPTransport.handle_async_request, "httpx")
        and _own(httpcore.AsyncConnectionPool.handle_async_request, "httpcore")
    )


class _Expired(Exception):
    pass


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(_Expired())


class _Body(httpx.AsyncByteStream):
    """A response body as it arrives; closing it returns the connection to the pool (when the
    response was read to its end and the upstream keeps the connection alive) or closes it."""

    __slots__ = ("_conn", "_key", "_owner", "_read_timeout", "_released")

    def __init__(
        self, owner: Http1Transport, key: tuple[bytes, bytes, int], conn: _Connection, timeout: float | None
    ) -> None:
        self._owner, self._key, self._conn = owner, key, conn
        self._read_timeout = timeout
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        while True:
            if conn.chunks:
                yield conn.take()
            elif conn.complete:
                break
            elif conn.error is not None:
                raise conn.error
            else:
                try:
                    await conn.wait(self._read_timeout)
                except _Expired:
                    raise httpx.ReadTimeout("the upstream sent nothing within the read timeout") from None
        self._release(True)

    async def aclose(self) -> None:
        # closed before it was read to its end (an error, a ``break``, a deadline): as httpcore
        # does, the connection is closed even when every byte had arrived
        self._release(False)

    def _release(self, read_to_end: bool) -> None:
        if not self._released:
            self._released = True
            self._owner.release(self._key, self._conn, read_to_end)


class Http1Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over keep-alive connections, at most ``max_connections`` exchanges at once (more
    wait up to the pool timeout); idle connections are reused newest first and dropped after
    ``keepalive_expiry`` seconds (at most ``max_idle`` per host). ``fallback`` serves what this
    transport does not (``HEAD``); ``ssl_context`` verifies https upstreams (default: httpx's, so
    certifi's CAs or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, loaded on the first https connection)."""

    def __init__(
        self,
        fallback: httpx.AsyncBaseTransport,
        max_connections: int = 1000,
        keepalive_expiry: float = 5.0,
        max_idle: int = 256,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.fallback = fallback
        self.max_connections = max_connections
        self.keepalive_expiry = keepalive_expiry
        self.max_idle = max_idle
        self._ssl = ssl_context  # for https upstreams; httpx's default context when not given
        self._idle: dict[tuple[bytes, bytes, int], collections.deque[_Connection]] = {}
        self._active = 0
        self._slots: collections.deque[asyncio.Future[None]] = collections.deque()
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "HEAD" or _patched():
            return await self.fallback.handle_async_request(request)
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        url = request.url
        scheme = url.raw_scheme
        port = url.port or (443 if scheme == b"https" else 80)
        key = (scheme, url.raw_host, port)
        await self._acquire(timeouts.get("pool"))
        conn: _Connection | None = None
        try:
            conn = self._reuse(key) or await self._connect(url.host, port, scheme, timeouts.get("connect"))
            await self._send(conn, request, timeouts.get("write"))
            read = timeouts.get("read")
            while not conn.head:
                if conn.error is not None:
                    raise conn.error
                try:
                    await conn.wait(read)
                except _Expired:
                    raise httpx.ReadTimeout("the upstream sent no response within the read timeout") from None
        except BaseException:
            if conn is not None and conn.transport is not None:
                conn.transport.close()
            self._free()
            raise
        return httpx.Response(
            conn.status,
            headers=conn.headers,
            stream=_Body(self, key, conn, read),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": conn.reason},
        )

    # -- connections --------------------------------------------------------------------------------

    def _reuse(self, key: tuple[bytes, bytes, int]) -> _Connection | None:
        idle = self._idle.get(key)
        if not idle:
            return None
        oldest = asyncio.get_running_loop().time() - self.keepalive_expiry
        while idle:
            conn = idle.pop()  # the newest: the most likely to be alive at the upstream's end
            if not conn.lost and conn.idle_since > oldest:
                conn._begin()  # pyright: ignore[reportPrivateUsage]
                return conn
            if conn.transport is not None:
                conn.transport.close()
        return None

    async def _connect(self, host: str, port: int, scheme: bytes, seconds: float | None) -> _Connection:
        loop = asyncio.get_running_loop()
        context = None
        if scheme == b"https":
            if self._ssl is None:
                # once (loading the CA store is slow); httpx's, so the same CAs a plain httpx client
                # trusts (certifi, SSL_CERT_FILE / SSL_CERT_DIR)
                self._ssl = httpx.create_ssl_context()
            context = self._ssl
        try:
            async with asyncio.timeout(seconds):
                _, conn = await loop.create_connection(
                    lambda: _Connection(loop),
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context else None,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"no connection to the upstream within {seconds:g} s") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        return conn

    async def _send(self, conn: _Connection, request: httpx.Request, seconds: float | None) -> None:
        try:
            body = request.content
        except httpx.RequestNotRead:
            stream = request.stream
            assert isinstance(stream, httpx.AsyncByteStream), "an AsyncClient's request"
            body = b"".join([part async for part in stream])
        chunked = False
        lines = [request.method.encode("ascii"), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
        for name, value in request.headers.raw:
            if name.lower() == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            lines += (name, b": ", value, b"\r\n")
        lines.append(b"\r\n")
        if chunked:  # a body given as a stream: sent whole, as one chunk
            if body:
                lines += (b"%x\r\n" % len(body), body, b"\r\n")
            lines.append(b"0\r\n\r\n")
        else:
            lines.append(body)
        if conn.lost or conn.transport is None:
            raise httpx.WriteError("the upstream closed the connection")
        conn.transport.write(b"".join(lines))
        if conn.write_paused:
            await conn.drain(seconds)

    def release(self, key: tuple[bytes, bytes, int], conn: _Connection, read_to_end: bool = True) -> None:
        """An exchange is over: its connection goes back to the pool (its response read to the end,
        the upstream keeping it alive) or is closed."""
        self._free()
        transport = conn.transport
        if transport is None:
            return
        if (
            self._closed
            or not read_to_end
            or not conn.complete
            or not conn.keep_alive
            or conn.lost
            or conn.chunks
        ):
            transport.close()
            return
        conn.idle_since = now = conn.loop.time()
        idle = self._idle.get(key)
        if idle is None:
            idle = self._idle[key] = collections.deque()
        idle.append(conn)
        # the oldest first: expired ones and those past the bound are closed (an O(1) check per call)
        while idle and (len(idle) > self.max_idle or idle[0].idle_since <= now - self.keepalive_expiry):
            stale = idle.popleft().transport
            if stale is not None:
                stale.close()

    # -- the bound on exchanges at once --------------------------------------------------------------

    async def _acquire(self, seconds: float | None) -> None:
        if self._active < self.max_connections and not self._slots:
            self._active += 1
            return
        slot = asyncio.get_running_loop().create_future()
        self._slots.append(slot)
        try:
            async with asyncio.timeout(seconds):
                await slot  # _free hands its slot over: _active stays counted
        except BaseException as exc:
            if slot.done() and not slot.cancelled():
                self._free()  # handed over just as the wait ended: pass it on
            elif slot in self._slots:
                self._slots.remove(slot)
            if isinstance(exc, TimeoutError):
                raise httpx.PoolTimeout(
                    f"all {self.max_connections} upstream connections stayed busy"
                ) from None
            raise

    def _free(self) -> None:
        while self._slots:
            slot = self._slots.popleft()
            if not slot.done():
                slot.set_result(None)  # the slot passes to the oldest waiter
                return
        self._active -= 1

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                if conn.transport is not None:
                    conn.transport.close()
        self._idle.clear()
        await self.fallback.aclose()
