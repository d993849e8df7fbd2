"""A loopback HTTP/1.1 server, in its own process, serving recorded SSE streams (``_workloads``).

    with serve() as base:          # "http://127.0.0.1:PORT"
        url = f"{base}/chat/bulk/20000/0/v1"

The path picks the stream: ``/{workload}/{mode}/{n}/{interval_ms}/...`` (whatever follows is the
path the client appends, ``/chat/completions``, ``/v1/messages``, ... and is ignored).

- ``bulk``: the whole body at once, in 16 KiB HTTP chunks: the client reads as fast as it can.
- ``paced``: one event per HTTP chunk, ``interval_ms`` apart, like tokens from a model.

Connections are kept alive (chunked encoding); ``GET /stats`` answers how many connections the
server holds open, so a benchmark can check that its client left none behind. The server runs in
another process so the client's CPU time (``time.process_time``) is the client's alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

CHUNK = 16 * 1024
_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@cache
def _bulk(workload: str, n: int) -> bytes:
    from tests.bench._workloads import workloads

    body = workloads()[workload].body(n)
    parts = [_chunked(body[i : i + CHUNK]) for i in range(0, len(body), CHUNK)]
    return _HEAD + b"".join(parts) + b"0\r\n\r\n"


@cache
def _paced(workload: str, n: int) -> list[bytes]:
    from tests.bench._workloads import workloads

    return [_chunked(e) for e in workloads()[workload].events(n)]


class _Server:
    def __init__(self) -> None:
        self.open = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                if length:
                    await reader.readexactly(length)
                await self.respond(path, writer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            self.open -= 1
            writer.close()

    async def respond(self, path: str, writer: asyncio.StreamWriter) -> None:
        if path == "/stats":
            body = json.dumps({"open": self.open - 1}).encode()  # not counting this one
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                % (len(body), body)
            )
            await writer.drain()
            return
        workload, mode, n, interval_ms = path.split("/")[1:5]
        if mode == "bulk":
            writer.write(_bulk(workload, int(n)))
            await writer.drain()
            return
        interval = int(interval_ms) / 1000
        writer.write(_HEAD)
        for event in _paced(workload, int(n)):
            writer.write(event)
            await writer.drain()
            await asyncio.sleep(interval)
        writer.write(b"0\r\n\r\n")
        await writer.drain()


async def _main() -> None:
    server = await asyncio.start_server(_Server().handle, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        await server.serve_forever()


@contextlib.contextmanager
def serve() -> Iterator[str]:
    """Start the server process; yields its base URL; stops it on exit."""
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", "import asyncio, tests.bench._loopback as m; asyncio.run(m._main())"],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait()
