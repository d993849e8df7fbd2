"""A WebSocket transport: one request message per call, server messages as frames.

With a ``SocketDialect`` (OpenAI Responses' WebSocket mode) connections outlive a call: they are
kept in the client's ``SocketPool`` and a request that continues the connection's last response
sends only its new input (``SocketCall``). Without one, every call opens and closes a connection.

Built on the ``websockets`` library's sans-I/O client protocol over anyio streams, so it runs on
asyncio and trio alike and closes under cancellation. ``websockets`` is imported lazily (extra
``llmroute[websocket]``): ``import llmroute`` never imports it.

The prepared request keeps its meaning: its URL (``https`` -> ``wss``), its headers (auth
included) on the upgrade request, and its body turned into the one message sent after the
handshake by ``to_message`` (e.g. ``{"type": "response.create", ...}`` for OpenAI Responses).
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.util
import ssl
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc
import httpx

from ..framing.sse import SSEEvent
from ..schema.errors import NoRouteError, ProviderInternalError, TimeoutError, TransportError
from .classify import http_context
from .prepared import PreparedRequest
from .redact import redact_url

_DeadlineExceeded = builtins.TimeoutError  # what anyio.fail_after raises (ours shadows the name)

if TYPE_CHECKING:
    from websockets.client import ClientProtocol
    from websockets.frames import Frame

    from .socket_pool import PooledSocket, SocketPool
    from .transport import ClientTransports

__all__ = [
    "MessageDecoder",
    "MessageFraming",
    "PooledSocketTransport",
    "SocketCall",
    "SocketDialect",
    "WebSocketTransport",
    "WebSocketWire",
    "require_websockets",
]

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


# Close codes that say the server failed (RFC 6455 7.4.1, IANA registry): internal error, service
# restart, try again later
_SERVER_FAULT_CLOSE = frozenset({1011, 1012, 1013})


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
        self.socket_url = _ws_url(url)  # named in errors of an open socket (no HTTP status there)
        self._read_timeout = read_timeout
        self._close_timeout = close_timeout
        self._eof = False
        self._closed = False
        # The server's close frame, when one came: its code and reason (RFC 6455 section 7.4)
        self.close_code: int | None = None
        self.close_reason = ""
        # Kept by the pool: what the server holds for this connection (the dialect's chain) and
        # when it was opened and last given back.
        self.chain: Any = None
        self.opened_at = self.last_used = anyio.current_time()

    @classmethod
    async def connect(
        cls, prepared: PreparedRequest, timeouts: httpx.Timeout, settings: WebSocketTransport
    ) -> WebSocketWire:
        """Open ``wss://`` for the prepared URL with the prepared headers (message size, close
        timeout and TLS from ``settings``): the upgraded connection (``status`` 200), or the
        refusal (its status and body). A connect that fails or times out is a ``TransportError``
        / ``TimeoutError`` naming the redacted URL."""
        try:
            return await cls._open(prepared, timeouts, settings)
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

    @classmethod
    async def _open(
        cls, prepared: PreparedRequest, timeouts: httpx.Timeout, settings: WebSocketTransport
    ) -> WebSocketWire:
        from websockets.client import ClientProtocol
        from websockets.uri import parse_uri

        uri = parse_uri(_ws_url(prepared.url))
        protocol = ClientProtocol(uri, max_size=settings.max_message_bytes)
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
                tls = settings.ssl_context or ssl.create_default_context()
                stream = await anyio.connect_tcp(
                    uri.host, uri.port, ssl_context=tls, tls_standard_compatible=False
                )
            else:
                stream = await anyio.connect_tcp(uri.host, uri.port)
        wire = cls(
            stream,
            protocol,
            status=101,
            headers={},
            url=prepared.url,
            read_timeout=timeouts.read,
            close_timeout=settings.close_timeout,
        )
        try:
            await wire.upgrade(timeouts.read if timeouts.read is not None else timeouts.connect)
        except BaseException:
            await wire.aclose()
            raise
        return wire

    async def upgrade(self, seconds: float | None) -> None:
        """The handshake: send the upgrade request, read the reply within ``seconds``. Upgraded:
        ``status`` 200 and the reply's headers. Refused: the reply's status (502 for a 101 that
        fails the checks), headers and body, and no session (``upgraded`` is false)."""
        from websockets.http11 import Response

        protocol = self._protocol
        assert protocol is not None
        with anyio.fail_after(seconds):
            await self._flush()
            # A reply that is not HTTP fails the parser (handshake_exc) without an event: stop at
            # once instead of waiting out the deadline.
            while not self._pending and not self._eof and protocol.handshake_exc is None:
                await self._receive()
        response = self._pending.popleft() if self._pending else None
        if not isinstance(response, Response):
            why = f" ({type(protocol.handshake_exc).__name__})" if protocol.handshake_exc else ""
            raise TransportError(
                f"no valid WebSocket handshake response from {redact_url(self._url)}{why}",
                code="websocket_handshake",
            )
        self.headers = {k.lower(): v for k, v in response.headers.raw_items()}
        if protocol.handshake_exc is not None:
            self.status = response.status_code if response.status_code != 101 else 502
            self._body = bytes(response.body or b"")
            self._protocol = None
            return
        self.status = 200
        _check_protocol(protocol, self._url)  # frames right after the 101 may have broken it

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

    async def next_message(self) -> bytes | None:
        """The next whole data message (fragments joined); ``None`` once the server closed or
        the connection is gone."""
        from websockets.frames import Opcode

        parts: list[bytes] = []
        while True:
            frame = await self._next_frame()
            if frame is None:
                return None
            opcode = frame.opcode
            if opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                parts.append(bytes(frame.data))
                if frame.fin:
                    return parts[0] if len(parts) == 1 else b"".join(parts)
            elif opcode is Opcode.CLOSE:
                self._eof = True  # the server ended the session: nothing more will come
                self._read_close(bytes(frame.data))
                return None

    def _read_close(self, data: bytes) -> None:
        from websockets.exceptions import ProtocolError
        from websockets.frames import Close

        try:
            close = Close.parse(data)
        except (ProtocolError, UnicodeDecodeError, ValueError):
            return
        self.close_code, self.close_reason = close.code, close.reason

    def closed_error(self) -> ProviderInternalError | None:
        """The server's close frame as the failure it reports, when it is not a normal end: 1011
        (internal error), 1012 (restart) and 1013 (try again later) are server faults worth a retry
        before the first event; any other code is named, not retried. ``None``: a normal close
        (1000, 1001) or none, so the protocol reports the terminal event that never came."""
        code = self.close_code
        if code is None or code in (1000, 1001):
            return None
        reason = f": {self.close_reason}" if self.close_reason else ""
        return ProviderInternalError(
            f"the server closed the WebSocket to {self.socket_url} with code {code}{reason}",
            code=f"websocket_close_{code}",
            retryable=code in _SERVER_FAULT_CLOSE,
        )

    async def send_text(self, message: bytes) -> None:
        """Send one text message (raises ``TransportError`` when the connection is gone)."""
        assert self._protocol is not None
        try:
            self._protocol.send_text(message)
            await self._flush()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self._eof = True
            raise TransportError(
                f"{type(exc).__name__} sending on the WebSocket to {redact_url(self._url)}",
                code="websocket_send",
            ) from None
        except Exception as exc:  # websockets refuses to send on a closing connection
            from websockets.exceptions import InvalidState

            if not isinstance(exc, InvalidState):
                raise
            self._eof = True
            raise TransportError(
                f"the WebSocket to {redact_url(self._url)} is closing", code="websocket_send"
            ) from None

    @property
    def upgraded(self) -> bool:
        """The handshake succeeded (else ``status`` and the body are the server's refusal)."""
        return self._protocol is not None

    @property
    def usable(self) -> bool:
        """Open, not failed, and nothing unread: fit to carry the next request."""
        protocol = self._protocol
        return not self._closed and not self._pending and protocol is not None and self._open_state(protocol)

    def _open_state(self, protocol: ClientProtocol) -> bool:
        from websockets.protocol import State

        return not self._eof and protocol.parser_exc is None and protocol.state is State.OPEN

    async def chunks(self) -> AsyncIterator[bytes]:
        if self._protocol is None:
            if self._body:
                yield self._body
            return
        while (message := await self.next_message()) is not None:
            yield message
        failure = self.closed_error()
        if failure is not None:
            raise failure

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

    async def abort(self) -> None:
        """Close without waiting for the server's close frame: a close frame is sent when the
        connection is open, then the stream is closed (for connections dropped on the way of a
        request: expired, evicted, or in an unknown state)."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            protocol = self._protocol
            try:
                if protocol is not None and self._open_state(protocol):
                    protocol.send_close(1000)
                    with anyio.move_on_after(self._close_timeout):
                        await self._flush()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
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


class SocketDialect(Protocol):
    """What the transport must know of a protocol to keep a connection across calls: how a
    prepared body becomes its message (whole, or continuing the connection's last response), which
    message ends a response, and which error frame means "not run: send it whole, afresh"."""

    def plan(self, body: bytes) -> Any: ...

    def full(self, turn: Any) -> bytes: ...

    def incremental(self, turn: Any, chain: Any) -> bytes | None: ...

    def kind(self, message: bytes) -> str: ...

    def is_terminal(self, kind: str) -> bool: ...

    def fresh_start(self, message: bytes, incremental: bool) -> bool: ...

    def chain(self, turn: Any, message: bytes) -> Any: ...


# Headers that differ per request (tracing, idempotency): they do not pick the connection (and a
# pooled connection does not send them again: they went with its upgrade request).
_PER_REQUEST_HEADERS = frozenset(
    {"traceparent", "tracestate", "baggage", "idempotency-key", "x-request-id", "x-client-request-id"}
)


def socket_key(url: str, headers: Mapping[str, str]) -> str:
    """The pool key: the URL and the headers that matter for the connection (its credential),
    hashed so the key itself holds no secret."""
    kept = sorted(
        (k.lower(), v)
        for k, v in headers.items()
        if k.lower() not in _SKIP_HEADERS and k.lower() not in _PER_REQUEST_HEADERS
    )
    return hashlib.sha256(repr((url, kept)).encode()).hexdigest()


class WebSocketTransport:
    """The WebSocket kind of transport (a ``TransportKind``): opens ``wss://`` for the prepared URL
    with the prepared headers and sends ``to_message(prepared.body)`` as one text message. With a
    ``dialect``, a client binds it to its ``SocketPool`` (``PooledSocketTransport``): connections
    are kept across calls and continued incrementally. Without one, every call opens and closes
    its own connection, so it needs nothing of the client's and is its own bound transport."""

    name = "websocket"
    streams_only = True  # every response is a stream of messages: stream=False is refused

    def __init__(
        self,
        to_message: Callable[[bytes], bytes] = lambda body: body,
        *,
        dialect: SocketDialect | None = None,
        max_message_bytes: int = 64 * 1024 * 1024,
        close_timeout: float = 2.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        require_websockets()
        self.to_message = to_message
        self.dialect = dialect
        self.max_message_bytes = max_message_bytes
        self.close_timeout = close_timeout
        self.ssl_context = ssl_context

    @property
    def pooled(self) -> bool:
        """Connections outlive a call (a ``dialect`` says where a response ends)."""
        return self.dialect is not None

    def bind(self, transports: ClientTransports) -> PooledSocketTransport | WebSocketTransport:
        if self.dialect is None:
            return self
        return PooledSocketTransport(self, self.dialect, transports.sockets)

    async def open(
        self,
        prepared: PreparedRequest,
        timeout: httpx.Timeout,  # noqa: ASYNC109 - the Transport signature
    ) -> WebSocketWire:
        """A connection of its own for this call, closed with the wire."""
        wire = await self.connect(prepared, timeout)
        if wire.upgraded:
            try:
                await wire.send_text(self.to_message(prepared.body))
            except BaseException:
                await wire.aclose()
                raise
        return wire

    async def connect(
        self,
        prepared: PreparedRequest,
        timeout: httpx.Timeout,  # noqa: ASYNC109
    ) -> WebSocketWire:
        """The upgraded connection (``status`` 200), or the refusal (its status and body)."""
        return await WebSocketWire.connect(prepared, timeout, self)

    def __repr__(self) -> str:
        return "WebSocketTransport()"


class PooledSocketTransport:
    """``WebSocketTransport`` bound to a client's ``SocketPool``: each call is sent on a pooled
    connection (``open``) and answered through a ``SocketCall``."""

    __slots__ = ("dialect", "kind", "pool")

    def __init__(self, kind: WebSocketTransport, dialect: SocketDialect, pool: SocketPool) -> None:
        self.kind = kind
        self.dialect = dialect
        self.pool = pool

    async def open(
        self,
        prepared: PreparedRequest,
        timeout: httpx.Timeout,  # noqa: ASYNC109 - the Transport signature
    ) -> SocketCall | WebSocketWire:
        """Send on a pooled connection: the one whose last response this request continues
        (only the new input is sent), else a free one, else a new one. A reused connection that
        fails to take the message is replaced by a new one, transparently."""
        dialect, pool = self.dialect, self.pool
        key = socket_key(_ws_url(prepared.url), prepared.headers)
        turn = dialect.plan(prepared.body)
        await pool.reap(key)
        idle = pool.idle(key)
        chosen: PooledSocket | None = None
        message: bytes | None = None
        for socket in reversed(idle):  # the most recently used first
            if socket.chain is not None and (message := dialect.incremental(turn, socket.chain)) is not None:
                chosen = socket
                break
        if chosen is None and idle:
            # Keep other conversations' state when we can: a connection holding none, else a new
            # one while the pool has room, else the least recently used (its state is dropped).
            fresh = [s for s in idle if s.chain is None]
            if fresh:
                chosen = fresh[-1]
            elif len(idle) >= pool.max_idle:
                chosen = idle[0]
        if chosen is not None:
            pool.claim(key, chosen)
            try:
                await chosen.send_text(message or dialect.full(turn))
            except TransportError:
                await chosen.abort()
            else:
                return SocketCall(self, key, prepared, timeout, turn, chosen, message is not None, True)
        socket = await self.kind.connect(prepared, timeout)
        if not socket.upgraded:
            return socket  # a refused upgrade: the executor reads its status and body
        call = SocketCall(self, key, prepared, timeout, turn, socket, False, False)
        try:
            await socket.send_text(dialect.full(turn))
        except BaseException:
            await socket.aclose()
            raise
        return call

    def __repr__(self) -> str:
        return f"PooledSocketTransport({self.pool!r})"


class SocketCall:
    """One response on a pooled connection, as the executor's ``Wire``: its messages up to the
    one that ends the response. Before the first message, a reused connection that turns out gone
    and an error frame saying the request was not run (``SocketDialect.fresh_start``) are answered
    by sending the whole request on a new connection, once: the caller sees neither. ``aclose()``
    gives a connection whose response ended back to the pool, with what the server now holds (the
    chain); any other (cancelled mid-response, an error, a broken socket) is closed."""

    status = 200

    def __init__(
        self,
        transport: PooledSocketTransport,
        key: str,
        prepared: PreparedRequest,
        timeout: httpx.Timeout,
        turn: Any,
        socket: PooledSocket,
        incremental: bool,
        reused: bool,
    ) -> None:
        self._transport = transport.kind
        self._dialect = transport.dialect
        self._pool = transport.pool
        self._key = key
        self._prepared = prepared
        self._timeout = timeout
        self._turn = turn
        self.socket = socket
        self.headers: Mapping[str, str] = socket.headers
        self.socket_url = socket.socket_url
        self.incremental = incremental  # only the new input was sent (with previous_response_id)
        self.reused = reused
        self.restarted = False
        self._ended: str | None = None  # the kind of the message that ended the response
        self._chain: Any = None
        self._released = False

    async def _restart(self) -> None:
        await self.socket.abort()
        self.restarted = True
        self.incremental = False
        self.reused = False
        socket = await self._transport.connect(self._prepared, self._timeout)
        self.socket = socket
        if not socket.upgraded:
            raise TransportError(
                f"reconnecting the WebSocket to {redact_url(self._prepared.url)} was refused "
                f"(status {socket.status})",
                code="websocket_reconnect",
            )
        await socket.send_text(self._dialect.full(self._turn))

    async def chunks(self) -> AsyncIterator[bytes]:
        dialect = self._dialect
        first = True
        while True:
            message = await self.socket.next_message()
            if first and not self.restarted:
                gone = message is None and self.reused
                if gone or (message is not None and dialect.fresh_start(message, self.incremental)):
                    await self._restart()
                    continue
            if message is None:
                failure = self.socket.closed_error()
                if failure is not None:
                    raise failure  # 1011 and friends: typed, and retried before the first event
                return  # the connection ended mid-response: the protocol reports what is missing
            first = False
            kind = dialect.kind(message)
            if dialect.is_terminal(kind):
                self._ended = kind
                self._chain = dialect.chain(self._turn, message)
                yield message
                return
            yield message

    async def read_capped(self, limit: int) -> bytes:
        return b""

    async def aclose(self) -> None:
        if self._released:
            return
        self._released = True
        socket = self.socket
        if self._ended is not None and self._ended != "error" and socket.usable:
            socket.chain = self._chain
            await self._pool.give(self._key, socket)
        else:
            socket.chain = None
            await socket.abort()
