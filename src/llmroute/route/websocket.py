"""A WebSocket transport: one connection per call, one request message, server messages as frames.

Built on the ``websockets`` library's sans-I/O client protocol over anyio streams, so it runs on
asyncio and trio alike and closes under cancellation. ``websockets`` is imported lazily (extra
``llmroute[websocket]``): ``import llmroute`` never imports it.

The prepared request keeps its meaning: its URL (``https`` -> ``wss``), its headers (auth
included) on the upgrade request, and its body turned into the one message sent after the
handshake by ``to_message`` (e.g. ``{"type": "response.create", ...}`` for OpenAI Responses).
"""

from __future__ import annotations

import builtins
import importlib.util
import ssl
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import httpx

from ..framing.sse import SSEEvent
from ..schema.errors import NoRouteError, TimeoutError, TransportError
from .classify import http_context
from .prepared import PreparedRequest
from .redact import redact_url

_DeadlineExceeded = builtins.TimeoutError  # what anyio.fail_after raises (ours shadows the name)

if TYPE_CHECKING:
    from websockets.client import ClientProtocol
    from websockets.frames import Frame

__all__ = ["MessageDecoder", "MessageFraming", "WebSocketTransport", "WebSocketWire", "require_websockets"]

_SKIP_HEADERS = frozenset({"content-type", "content-length", "accept", "host", "connection", "upgrade"})


def require_websockets() -> None:
    """Raise a ``NoRouteError`` naming the extra when ``websockets`` is not installed."""
    if importlib.util.find_spec("websockets") is None:
        raise NoRouteError(
            "the WebSocket transport needs the websockets package: pip install 'llmroute[websocket]'"
        )


class MessageDecoder:
    """One WebSocket message is one frame (as an ``SSEEvent`` so SSE protocols accept it)."""

    __slots__ = ()

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        return [SSEEvent(chunk)] if chunk else []

    def close(self) -> list[SSEEvent]:
        return []


class MessageFraming:
    name = "websocket-message"

    def decoder(self) -> MessageDecoder:
        return MessageDecoder()

    def __repr__(self) -> str:
        return "MessageFraming()"


def _ws_url(url: str) -> str:
    if url.startswith("https://"):
        return "wss://" + url[len("https://") :]
    if url.startswith("http://"):
        return "ws://" + url[len("http://") :]
    return url


class WebSocketWire:
    """An open socket after the upgrade. ``chunks()`` yields each data message as bytes until the
    server closes (the executor stops earlier, at the protocol's terminal event). ``aclose()``
    sends a close frame, waits briefly for the server's, and closes the stream, even when the
    caller is being cancelled."""

    def __init__(
        self,
        stream: anyio.abc.ByteStream,
        protocol: ClientProtocol | None,
        *,
        status: int,
        headers: Mapping[str, str],
        body: bytes = b"",
        url: str = "",
        read_timeout: float | None = None,
        close_timeout: float = 2.0,
    ) -> None:
        self._stream = stream
        self._protocol = protocol
        self.status = status
        self.headers = headers
        self._body = body
        self._pending: deque[Any] = deque()
        self._url = url
        self._read_timeout = read_timeout
        self._close_timeout = close_timeout
        self._eof = False
        self._closed = False

    async def _flush(self) -> None:
        assert self._protocol is not None
        for data in self._protocol.data_to_send():
            if data:
                await self._stream.send(data)

    async def _receive(self) -> None:
        """Read once from the socket into the protocol; queue the events; answer pings/closes."""
        assert self._protocol is not None
        try:
            data = await self._stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self._protocol.receive_eof()
            self._eof = True
        else:
            self._protocol.receive_data(data)
        self._pending.extend(self._protocol.events_received())
        if not self._pending and self._protocol.parser_exc is not None:
            _check_protocol(self._protocol, self._url)
        try:
            await self._flush()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self._eof = True

    async def _next_frame(self) -> Frame | None:
        while not self._pending:
            if self._eof:
                return None
            if self._read_timeout is None:
                await self._receive()
            else:
                try:
                    with anyio.fail_after(self._read_timeout):
                        await self._receive()
                except _DeadlineExceeded as exc:
                    raise TimeoutError(
                        f"no data from {redact_url(self._url)} for {self._read_timeout:g}s", deadline="idle"
                    ) from exc
        return self._pending.popleft()

    async def chunks(self) -> AsyncIterator[bytes]:
        from websockets.frames import Opcode

        if self._protocol is None:
            if self._body:
                yield self._body
            return
        parts: list[bytes] = []
        while True:
            frame = await self._next_frame()
            if frame is None:
                return
            opcode = frame.opcode
            if opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                parts.append(bytes(frame.data))
                if frame.fin:
                    message = parts[0] if len(parts) == 1 else b"".join(parts)
                    parts = []
                    yield message
            elif opcode is Opcode.CLOSE:
                return

    async def read_capped(self, limit: int) -> bytes:
        return self._body[:limit]

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(self._close_timeout):
                await self._close_handshake(self._protocol)
            await self._stream.aclose()

    async def _close_handshake(self, protocol: ClientProtocol | None) -> None:
        from websockets.protocol import State

        if protocol is None or self._eof or protocol.parser_exc is not None:
            return  # nothing to close politely: gone, or failed by a protocol error
        if protocol.state is State.CONNECTING:
            return  # the handshake never completed (a garbage reply): there is no session to close
        try:
            if protocol.state is State.OPEN:
                protocol.send_close(1000)
                await self._flush()
            while protocol.state is not State.CLOSED and not self._eof:
                await self._receive()
                self._pending.clear()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass


def _check_protocol(protocol: ClientProtocol, url: str) -> None:
    """A frame the protocol could not accept (reserved opcode, bad masking, ...): the connection is
    failing, so say so now rather than wait for a deadline or trip over its closing state."""
    from websockets.protocol import State

    failure = protocol.parser_exc
    if failure is not None or protocol.state not in (State.OPEN, State.CONNECTING):
        what = f" ({type(failure).__name__}: {failure})" if failure is not None else ""
        raise TransportError(
            f"WebSocket protocol error from {redact_url(url)}{what}", code="websocket_protocol"
        )


class WebSocketTransport:
    """Opens ``wss://`` for the prepared URL with the prepared headers, sends
    ``to_message(prepared.body)`` as one text message, and returns the wire."""

    name = "websocket"
    streams_only = True  # every response is a stream of messages: stream=False is refused

    def __init__(
        self,
        to_message: Callable[[bytes], bytes] = lambda body: body,
        *,
        max_message_bytes: int = 64 * 1024 * 1024,
        close_timeout: float = 2.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        require_websockets()
        self.to_message = to_message
        self.max_message_bytes = max_message_bytes
        self.close_timeout = close_timeout
        self.ssl_context = ssl_context

    async def open(
        self,
        http: httpx.AsyncClient,
        prepared: PreparedRequest,
        timeout: httpx.Timeout,  # noqa: ASYNC109 - the Transport signature
    ) -> WebSocketWire:
        try:
            return await self._open(prepared, timeouts=timeout)
        except _DeadlineExceeded as exc:
            raise TimeoutError(
                f"connecting to {redact_url(prepared.url)} timed out",
                deadline="connect",
                http=http_context(prepared.method, prepared.url, None, None),
            ) from exc
        except (OSError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:  # ssl.SSLError is an OSError
            raise TransportError(
                f"{type(exc).__name__} opening a WebSocket to {redact_url(prepared.url)}",
                http=http_context(prepared.method, prepared.url, None, None),
                code=type(exc).__name__,
            ) from None

    async def _open(self, prepared: PreparedRequest, *, timeouts: httpx.Timeout) -> WebSocketWire:
        from websockets.client import ClientProtocol
        from websockets.http11 import Response
        from websockets.uri import parse_uri

        url = _ws_url(prepared.url)
        uri = parse_uri(url)
        protocol = ClientProtocol(uri, max_size=self.max_message_bytes)
        request = protocol.connect()
        for key, value in prepared.headers.items():
            if key.lower() in _SKIP_HEADERS:
                continue
            if key in request.headers:
                del request.headers[key]
            request.headers[key] = value
        protocol.send_request(request)
        with anyio.fail_after(timeouts.connect):
            stream: anyio.abc.ByteStream
            if uri.secure:
                tls = self.ssl_context or ssl.create_default_context()
                stream = await anyio.connect_tcp(
                    uri.host, uri.port, ssl_context=tls, tls_standard_compatible=False
                )
            else:
                stream = await anyio.connect_tcp(uri.host, uri.port)
        wire = WebSocketWire(
            stream,
            protocol,
            status=101,
            headers={},
            url=prepared.url,
            read_timeout=timeouts.read,
            close_timeout=self.close_timeout,
        )
        try:
            with anyio.fail_after(timeouts.read if timeouts.read is not None else timeouts.connect):
                await wire._flush()  # pyright: ignore[reportPrivateUsage]
                # A reply that is not HTTP fails the parser (handshake_exc) without an event: stop
                # at once instead of waiting out the deadline.
                while not wire._pending and not wire._eof and protocol.handshake_exc is None:  # pyright: ignore[reportPrivateUsage]
                    await wire._receive()  # pyright: ignore[reportPrivateUsage]
            response = wire._pending.popleft() if wire._pending else None  # pyright: ignore[reportPrivateUsage]
            if not isinstance(response, Response):
                why = f" ({type(protocol.handshake_exc).__name__})" if protocol.handshake_exc else ""
                raise TransportError(
                    f"no valid WebSocket handshake response from {redact_url(prepared.url)}{why}",
                    code="websocket_handshake",
                )
            wire.headers = {k.lower(): v for k, v in response.headers.raw_items()}
            if protocol.handshake_exc is not None:
                wire.status = response.status_code if response.status_code != 101 else 502
                wire._body = bytes(response.body or b"")  # pyright: ignore[reportPrivateUsage]
                wire._protocol = None  # pyright: ignore[reportPrivateUsage]
                return wire
            wire.status = 200
            _check_protocol(protocol, prepared.url)  # frames right after the 101 may have broken it
            protocol.send_text(self.to_message(prepared.body))
            await wire._flush()  # pyright: ignore[reportPrivateUsage]
        except BaseException:
            await wire.aclose()
            raise
        return wire

    def __repr__(self) -> str:
        return "WebSocketTransport()"
