"""A scriptable HTTP/1.1 server on 127.0.0.1 for fault injection.

It runs its own asyncio loop in a thread, so the tests can drive it from asyncio or trio alike, and
it speaks real sockets: chunked transfer encoding, keep-alive, slow drips, stalls, TCP resets,
truncated bodies. Each request takes the next scripted ``Reply``; the server records what it
received and counts open connections (and disconnects it noticed while it was waiting to write).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DONE",
    "Close",
    "FaultServer",
    "Received",
    "Reply",
    "Reset",
    "Sleep",
    "Stall",
    "chat_chunk",
    "chat_error",
    "chat_stream",
]


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` (noticing if the client hangs up meanwhile)."""

    seconds: float


@dataclass(frozen=True)
class Stall:
    """Wait until the client hangs up (or the server stops)."""


@dataclass(frozen=True)
class Reset:
    """Abort the TCP connection with RST (SO_LINGER 0)."""


@dataclass(frozen=True)
class Close:
    """Close the connection cleanly at the TCP level without finishing the HTTP body."""


Part = bytes | Sleep | Stall | Reset | Close


@dataclass
class Reply:
    """One scripted response. ``before`` runs before the status line (stall or reset before the
    headers); ``parts`` after it. Bytes parts are sent as one chunk each (chunked encoding) unless
    ``chunked`` is False, in which case ``content-length`` is set from the byte parts."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    parts: Sequence[Part] = ()
    before: Sequence[Part] = ()
    chunked: bool = True


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Gone(Exception):
    """The client hung up, or the script ended the connection."""


class FaultServer:
    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.repeat: Reply | None = None  # the reply once the script is used up (else a 500)
        # decides every reply from the request when set (a fault that depends on the time, say)
        self.handler: Callable[[Received], Reply] | None = None
        self.received: list[Received] = []
        self.open_connections = 0
        self.connections = 0
        self.client_disconnects = 0  # hang-ups noticed while the server was mid-response
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-server", daemon=True)
        self.port = 0

    # lifecycle -------------------------------------------------------------------------------

    def start(self) -> FaultServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(5)
        return self

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        await asyncio.sleep(0)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def add(self, *replies: Reply) -> FaultServer:
        with self._lock:
            self.script.extend(replies)
        return self

    # connection handling ----------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self.open_connections += 1
            self.connections += 1
        self._writers.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                with self._lock:
                    self.received.append(request)
                    if self.handler is not None:
                        reply = self.handler(request)
                    else:
                        reply = self.script.pop(0) if self.script else self.repeat or _unscripted()
                await self._respond(reply, reader, writer)
        except _Gone:
            pass
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            if not writer.transport.is_closing():
                writer.close()
            with self._lock:
                self.open_connections -= 1

    async def _respond(
        self, reply: Reply, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        for part in reply.before:
            await self._part(part, reply, reader, writer)
        headers = dict(reply.headers)
        if reply.chunked:
            headers["transfer-encoding"] = "chunked"
        else:
            headers["content-length"] = str(sum(len(p) for p in reply.parts if isinstance(p, bytes)))
        head = f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        writer.write(head.encode("latin-1"))
        await writer.drain()
        for part in reply.parts:
            await self._part(part, reply, reader, writer)
        if reply.chunked:
            writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _part(
        self, part: Part, reply: Reply, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if isinstance(part, bytes):
            if not part:
                return
            writer.write(b"%x\r\n%s\r\n" % (len(part), part) if reply.chunked else part)
            try:
                await writer.drain()
            except ConnectionError:
                self._hung_up()
                raise _Gone from None
        elif isinstance(part, Sleep):
            await self._wait(reader, part.seconds)
        elif isinstance(part, Stall):
            await self._wait(reader, None)
        elif isinstance(part, Reset):
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            raise _Gone
        else:
            writer.close()
            raise _Gone

    async def _wait(self, reader: asyncio.StreamReader, seconds: float | None) -> None:
        """Sleep, but notice at once if the client closes its side (EOF or reset)."""
        try:
            data = await asyncio.wait_for(reader.read(65536), seconds)
        except TimeoutError:
            return
        except ConnectionError:
            data = b""
        if not data:
            self._hung_up()
            raise _Gone

    def _hung_up(self) -> None:
        with self._lock:
            self.client_disconnects += 1


def _unscripted() -> Reply:
    body = b'{"error": {"message": "no scripted reply left", "type": "test_error"}}'
    return Reply(500, {"content-type": "application/json"}, [body], chunked=False)


async def _read_request(reader: asyncio.StreamReader) -> Received | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0") or 0)
    body = await reader.readexactly(length) if length else b""
    return Received(method, path, headers, body)


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    408: "Request Timeout",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


# OpenAI Chat bytes -------------------------------------------------------------------------------

DONE = b"data: [DONE]\n\n"


def chat_chunk(
    content: str | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    tool: dict[str, Any] | None = None,
) -> bytes:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if tool is not None:
        delta["tool_calls"] = [tool]
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if usage is None else [],
    }
    if usage is not None:
        chunk["usage"] = usage
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def chat_error(message: str, type_: str, code: str | None = None) -> bytes:
    return (
        b"data: "
        + json.dumps({"error": {"message": message, "type": type_, "code": code}}).encode()
        + b"\n\n"
    )


def chat_stream(*texts: str, usage: bool = True) -> list[bytes]:
    """A complete OpenAI Chat stream: one chunk per text, finish, usage, [DONE]."""
    parts = [chat_chunk(t) for t in texts]
    parts.append(chat_chunk(finish="stop"))
    if usage:
        parts.append(
            chat_chunk(
                usage={"prompt_tokens": 5, "completion_tokens": len(texts), "total_tokens": 5 + len(texts)}
            )
        )
    parts.append(DONE)
    return parts
