"""Transports move a prepared request and yield raw body chunks. HTTP (httpx) is the default."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Protocol

import httpx

from ..schema.errors import LLMError, TransportError
from .prepared import PreparedRequest
from .redact import redact_url

__all__ = ["HttpTransport", "Transport", "Wire", "transport_error"]


class Wire(Protocol):
    """An open response: status, headers, and the body as chunks (or messages, for WebSocket)."""

    status: int
    headers: Mapping[str, str]

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def read_capped(self, limit: int) -> bytes: ...

    async def aclose(self) -> None: ...


class Transport(Protocol):
    async def open(self, http: httpx.AsyncClient, prepared: PreparedRequest, timeout: httpx.Timeout) -> Wire: ...


def transport_error(exc: Exception, prepared: PreparedRequest) -> LLMError:
    """httpx failures -> ``TransportError`` with the redacted URL, never the headers."""
    from .errors import http_context

    kind = type(exc).__name__
    ctx = http_context(prepared.method, prepared.url, None, None)
    return TransportError(f"{kind} talking to {redact_url(prepared.url)}", http=ctx, code=kind)


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


class HttpTransport:
    name = "http"

    async def open(self, http: httpx.AsyncClient, prepared: PreparedRequest, timeout: httpx.Timeout) -> HttpWire:
        request = http.build_request(
            prepared.method, prepared.url, headers=prepared.headers, content=prepared.body, timeout=timeout
        )
        response = await http.send(request, stream=True)
        return HttpWire(response)

    def __repr__(self) -> str:
        return "HttpTransport()"
