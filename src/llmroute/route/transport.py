"""Transports move a prepared request and yield raw body chunks. HTTP (httpx) is the default.

A ``Route`` declares which kind of transport moves it (``TransportKind``; ``None``: HTTP). A
``Client`` holds its ``ClientTransports``: its HTTP transport around its ``httpx.AsyncClient``, its
``SocketPool``, and each other kind bound to them once (``TransportKind.bind``). A bound
``Transport`` owns what it sends through, as an httpx transport owns its connection pool, so
``open`` takes only the request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

import httpx

from ..schema.errors import LLMError, TimeoutError, TransportError
from .prepared import PreparedRequest
from .redact import redact_text, redact_url

if TYPE_CHECKING:
    from .socket_pool import SocketPool

__all__ = [
    "ClientTransports",
    "HttpTransport",
    "Transport",
    "TransportKind",
    "Wire",
    "may_resend",
    "transport_error",
]


class Wire(Protocol):
    """An open response: status, headers, and the body as chunks (or messages, for WebSocket)."""

    status: int
    headers: Mapping[str, str]

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def read_capped(self, limit: int) -> bytes: ...

    async def aclose(self) -> None: ...


class Transport(Protocol):
    """A transport bound to one client's resources: it sends through what it holds."""

    async def open(
        self,
        prepared: PreparedRequest,
        timeout: httpx.Timeout,  # noqa: ASYNC109 - httpx's per-phase timeouts, enforced by the stack
    ) -> Wire: ...


class TransportKind(Protocol):
    """What a ``Route`` declares: the kind of transport that moves its requests, bound once per
    client to the client's resources (``ClientTransports.for_route``)."""

    @property
    def name(self) -> str:
        """Named in errors (``"websocket"``)."""
        ...

    @property
    def streams_only(self) -> bool:
        """Every response is a stream of messages: ``stream=False`` is refused."""
        ...

    @property
    def pooled(self) -> bool:
        """Connections outlive a call (kept in the client's ``SocketPool``): a response's headers
        are its connection's, not the call's."""
        ...

    def bind(self, transports: ClientTransports) -> Transport:
        """This kind of transport, sending through ``transports``' client resources."""
        ...


_BOUND_CACHE_SIZE = 256  # kinds bound per client: a few per facade; a cap, not a working set


class ClientTransports:
    """One client's transports: ``http`` (around its ``httpx.AsyncClient``), ``sockets`` (its
    WebSocket connections), and every other kind a route declares, bound to them on first use."""

    __slots__ = ("_bound", "http", "sockets")

    def __init__(self, http: httpx.AsyncClient, sockets: SocketPool) -> None:
        self.http = HttpTransport(http)
        self.sockets = sockets
        self._bound: dict[TransportKind, Transport] = {}

    def for_route(self, kind: TransportKind | None) -> Transport:
        """The transport of this client for a route's ``transport`` (``None``: HTTP)."""
        if kind is None:
            return self.http
        bound = self._bound.get(kind)
        if bound is None:
            if len(self._bound) >= _BOUND_CACHE_SIZE:
                self._bound.clear()
            bound = self._bound[kind] = kind.bind(self)
        return bound


_TIMEOUT_PHASE = {"ConnectTimeout": "connect", "PoolTimeout": "pool"}


def transport_error(
    exc: Exception, prepared: PreparedRequest, phase: str = "first_byte", pool: int | None = None
) -> LLMError:
    """httpx failures -> ``TransportError`` (``TimeoutError`` for timeouts) with the redacted URL,
    never the headers. ``phase`` names the deadline a read timeout belongs to; ``pool`` is the
    connection pool's size, named when a request timed out waiting for a free connection."""
    from .classify import http_context

    kind = type(exc).__name__
    url = redact_url(prepared.url)
    ctx = http_context(prepared.method, prepared.url, None, None)
    detail = redact_text(str(exc), prepared.secrets).replace(prepared.url, url)
    suffix = f": {detail[:300]}" if detail else ""
    if isinstance(exc, httpx.TimeoutException):
        deadline = _TIMEOUT_PHASE.get(kind, phase)
        if deadline == "pool":
            size = f"all {pool} connections" if pool is not None else "every connection"
            return TimeoutError(
                f"pool deadline exceeded: {size} of the client's pool stayed busy, so the request "
                "was never sent (raise Client(max_connections=...) or run fewer calls at once)",
                deadline=deadline,
                http=ctx,
                code=kind,
            )
        return TimeoutError(f"{deadline} deadline exceeded ({kind})", deadline=deadline, http=ctx, code=kind)
    # The URL is in ``http`` (str() adds "(POST <url>)"): the message does not repeat it.
    return TransportError(f"{kind}{suffix}", http=ctx, code=kind)


def may_resend(exc: Exception, idempotent: bool = False) -> bool:
    """True when sending the request again cannot make the provider do (and bill) the work twice:
    the connection provably never carried a whole request (a connect failure; a write that failed
    before the body was complete), or the request carries an idempotency key the provider dedupes
    on. A reset or close after the whole request was written is ambiguous -- the server may be
    generating already -- so it is re-sent only with a key."""
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.WriteError):
        return True
    return idempotent and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError)


class _Body(httpx.AsyncByteStream, httpx.SyncByteStream):
    """The request body, one chunk, read through plain iterators: httpx's own byte stream is an
    async generator, which a send cancelled mid-write left to the GC (a ResourceWarning on trio)."""

    __slots__ = ("_body",)

    def __init__(self, body: bytes) -> None:
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        return iter((self._body,))

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _Once(self._body)


class _Once:
    __slots__ = ("_body",)

    def __init__(self, body: bytes) -> None:
        self._body: bytes | None = body

    def __aiter__(self) -> _Once:
        return self

    async def __anext__(self) -> bytes:
        body, self._body = self._body, None
        if body is None:
            raise StopAsyncIteration
        return body


class HttpWire:
    __slots__ = ("_response", "headers", "status")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.headers: Mapping[str, str] = response.headers

    def chunks(self) -> AsyncIterator[bytes]:
        return self._response.aiter_bytes()

    async def read_capped(self, limit: int) -> bytes:
        out = bytearray()
        async for chunk in self._response.aiter_bytes():
            out += chunk
            if len(out) >= limit:
                break
        return bytes(out[:limit])

    async def aclose(self) -> None:
        await self._response.aclose()


_URL_CACHE_SIZE = 256


class HttpTransport:
    """Sends through the client's ``httpx.AsyncClient`` (its connection pool)."""

    __slots__ = ("_urls", "http")

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self._urls: dict[str, httpx.URL] = {}  # parsed once: a route sends to the same few URLs

    async def open(
        self,
        prepared: PreparedRequest,
        timeout: httpx.Timeout,  # noqa: ASYNC109
    ) -> HttpWire:
        response = await self.http.send(self.request(prepared, timeout), stream=True)
        return HttpWire(response)

    def request(self, prepared: PreparedRequest, timeout: httpx.Timeout) -> httpx.Request:
        """What ``http.build_request`` would build, without its per-request work that does not
        apply to an absolute URL and no client cookies or params (parsing the URL again, merging
        ``Headers`` objects): a third of a short call's cost. A client that carries cookies or
        params gets ``build_request`` itself."""
        http = self.http
        if http.cookies or http.params:
            return http.build_request(
                prepared.method,
                prepared.url,
                headers=prepared.headers,
                content=prepared.body,
                timeout=timeout,
            )
        url = self._urls.get(prepared.url)
        if url is None:
            if len(self._urls) >= _URL_CACHE_SIZE:
                self._urls.clear()
            url = self._urls[prepared.url] = httpx.URL(prepared.url)
        headers = dict(http.headers.items())  # the client's defaults, overridden by the request's
        for key, value in prepared.headers.items():
            headers[key.lower()] = value
        request = httpx.Request(
            prepared.method,
            url,
            headers=headers,
            content=prepared.body,  # httpx derives Host and Content-Length from it
            extensions={"timeout": timeout.as_dict()},
        )
        request.stream = _Body(prepared.body)
        return request

    def __repr__(self) -> str:
        return "HttpTransport()"
