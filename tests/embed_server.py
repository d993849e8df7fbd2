"""An OpenAI-shaped ``/v1/embeddings`` server on 127.0.0.1 whose answers depend on the request
(input ``t{i}`` gets the vector ``[i, -i, 0.5]``), for the embedding tests: it counts requests and
their concurrency, and can fail, rate-limit or hold them (``EmbedServer``)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import struct
import threading

from .reliability.server import _read_request  # pyright: ignore[reportPrivateUsage]

__all__ = ["EmbedServer", "vector"]


class EmbedServer:
    """``/v1/embeddings`` answering input ``t{i}`` with the vector ``[i, -i, 0.5]`` (base64), in
    reverse index order. Each request is held until ``hold`` requests are in flight at once (or a
    few seconds pass), so the client's concurrency shows exactly. ``fail`` maps an input to the
    status the request carrying it gets; while it is set, the other requests are never answered
    (they wait for the client to hang up, counted in ``cancelled``). ``retry_once``: inputs whose
    request gets a 429 the first time."""

    def __init__(self, hold: int = 1) -> None:
        self.hold = hold
        self.fail: dict[str, int] = {}
        self.retry_once: set[str] = set()
        self.requests = 0
        self.bodies: list[list[str]] = []  # the inputs of each request answered
        self.in_flight = 0
        self.peak = 0
        self.cancelled = 0  # requests whose client hung up before the answer
        self.all_cancelled = threading.Event()  # set when ``cancelled`` reaches ``hold - 1``
        self._full = asyncio.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0

    def __enter__(self) -> EmbedServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(5)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while (request := await _read_request(reader)) is not None:
                inputs: list[str] = json.loads(request.body)["input"]
                self.requests += 1
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
                if self.in_flight >= self.hold:
                    self._full.set()
                try:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._full.wait(), 5.0)
                    if self.fail and not self.fail.keys() & set(inputs):
                        await _until_hung_up(reader)
                        self.cancelled += 1
                        if self.cancelled == self.hold - 1:
                            self.all_cancelled.set()
                        return
                    status, body = self._answer(inputs)
                finally:
                    self.in_flight -= 1
                head = f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
                writer.write(head.encode() + body)
                await writer.drain()
        writer.close()

    def _answer(self, inputs: list[str]) -> tuple[int, bytes]:
        self.bodies.append(inputs)
        for text in inputs:
            if text in self.retry_once:
                self.retry_once.discard(text)
                return 429, b'{"error": {"message": "slow down", "type": "requests"}}'
            if text in self.fail:
                return self.fail[
                    text
                ], b'{"error": {"message": "no such luck", "type": "invalid_request_error"}}'
        data = [
            {"object": "embedding", "index": i, "embedding": _b64(float(inputs[i][1:]))}
            for i in reversed(range(len(inputs)))
        ]
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        return 200, json.dumps({"object": "list", "data": data, "model": "m", "usage": usage}).encode()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def vector(i: float) -> list[float]:
    """The vector the server answers input ``t{i}`` with."""
    return [i, -i, 0.5]


def _b64(i: float) -> str:
    return base64.b64encode(struct.pack("<3f", *vector(i))).decode()


async def _until_hung_up(reader: asyncio.StreamReader) -> None:
    """Wait (at most 10 s) for the client to close its side: a cancelled slice's connection."""
    with contextlib.suppress(TimeoutError, ConnectionError):
        await asyncio.wait_for(reader.read(1), 10.0)
